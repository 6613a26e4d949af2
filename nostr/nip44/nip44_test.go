package nip44

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	gonip44 "github.com/nbd-wtf/go-nostr/nip44"

	"github.com/buzzrelay/buzz/nostr"
)

// vectors is the official NIP-44 v2 test vector file
// (github.com/paulmillr/nip44, sha256 269ed0f6…25040).
type vectors struct {
	V2 struct {
		Valid struct {
			GetConversationKey []struct {
				Sec1, Pub2      string
				ConversationKey string `json:"conversation_key"`
			} `json:"get_conversation_key"`
			GetMessageKeys struct {
				ConversationKey string `json:"conversation_key"`
				Keys            []struct {
					Nonce       string
					ChachaKey   string `json:"chacha_key"`
					ChachaNonce string `json:"chacha_nonce"`
					HmacKey     string `json:"hmac_key"`
				}
			} `json:"get_message_keys"`
			CalcPaddedLen  [][2]int `json:"calc_padded_len"`
			EncryptDecrypt []struct {
				Sec1, Sec2      string
				ConversationKey string `json:"conversation_key"`
				Nonce           string
				Plaintext       string
				Payload         string
			} `json:"encrypt_decrypt"`
			EncryptDecryptLongMsg []struct {
				ConversationKey string `json:"conversation_key"`
				Nonce           string
				Pattern         string
				Repeat          int
				PlaintextSHA256 string `json:"plaintext_sha256"`
				PayloadSHA256   string `json:"payload_sha256"`
			} `json:"encrypt_decrypt_long_msg"`
		}
		Invalid struct {
			EncryptMsgLengths  []int `json:"encrypt_msg_lengths"`
			GetConversationKey []struct {
				Sec1, Pub2, Note string
			} `json:"get_conversation_key"`
			Decrypt []struct {
				ConversationKey string `json:"conversation_key"`
				Nonce           string
				Plaintext       string
				Payload         string
				Note            string
			}
		}
	}
}

const vectorsSHA256 = "269ed0f69e4c192512cc779e78c555090cebc7c785b609e338a62afc3ce25040"

func loadVectors(t *testing.T) *vectors {
	t.Helper()
	raw, err := os.ReadFile("testdata/nip44.vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != vectorsSHA256 {
		t.Fatalf("testdata/nip44.vectors.json is not the official file (sha256 %x)", sum)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func unhex32(t *testing.T, s string) [32]byte {
	t.Helper()
	var out [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("bad hex32 %q", s)
	}
	copy(out[:], b)
	return out
}

func mustSecret(t *testing.T, s string) nostr.SecretKey {
	t.Helper()
	sk, err := nostr.ParseSecretKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func TestConversationKeyVectors(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.V2.Valid.GetConversationKey {
		ck, err := NewConversationKey(mustSecret(t, c.Sec1), c.Pub2)
		if err != nil {
			t.Fatalf("%s/%s: %v", c.Sec1, c.Pub2, err)
		}
		if got := hex.EncodeToString(ck[:]); got != c.ConversationKey {
			t.Errorf("%s/%s: conversation key %s, want %s", c.Sec1, c.Pub2, got, c.ConversationKey)
		}
	}
	for _, c := range v.V2.Invalid.GetConversationKey {
		// The raw bytes, not ParseSecretKey: the vectors include keys it
		// rejects, and NewConversationKey must reject them on its own.
		sk := nostr.SecretKey(unhex32(t, c.Sec1))
		if _, err := NewConversationKey(sk, c.Pub2); err == nil {
			t.Errorf("%s: accepted", c.Note)
		}
	}
}

func TestMessageKeyVectors(t *testing.T) {
	v := loadVectors(t)
	ck := ConversationKey(unhex32(t, v.V2.Valid.GetMessageKeys.ConversationKey))
	for _, c := range v.V2.Valid.GetMessageKeys.Keys {
		nonce := unhex32(t, c.Nonce)
		key, cn, hk := messageKeys(ck, &nonce)
		if hex.EncodeToString(key[:]) != c.ChachaKey || hex.EncodeToString(cn[:]) != c.ChachaNonce || hex.EncodeToString(hk[:]) != c.HmacKey {
			t.Errorf("nonce %s: keys %x %x %x", c.Nonce, key, cn, hk)
		}
	}
}

func TestCalcPaddedLenVectors(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.V2.Valid.CalcPaddedLen {
		if got := CalcPaddedLen(c[0]); got != c[1] {
			t.Errorf("CalcPaddedLen(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

func TestEncryptDecryptVectors(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.V2.Valid.EncryptDecrypt {
		sk1, sk2 := mustSecret(t, c.Sec1), mustSecret(t, c.Sec2)
		ck, err := NewConversationKey(sk1, sk2.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(ck[:]) != c.ConversationKey {
			t.Fatalf("conversation key %x, want %s", ck, c.ConversationKey)
		}
		ck2, err := NewConversationKey(sk2, sk1.PublicKey())
		if err != nil || ck2 != ck {
			t.Fatalf("conversation key is not symmetric: %x %x %v", ck, ck2, err)
		}
		nonce := unhex32(t, c.Nonce)
		payload, err := encrypt(c.Plaintext, ck, &nonce)
		if err != nil {
			t.Fatal(err)
		}
		if payload != c.Payload {
			t.Errorf("%q: payload\n%s\nwant\n%s", c.Plaintext, payload, c.Payload)
		}
		plain, err := Decrypt(c.Payload, ck2)
		if err != nil || plain != c.Plaintext {
			t.Errorf("Decrypt = %q, %v; want %q", plain, err, c.Plaintext)
		}
	}
}

func TestLongMessageVectors(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.V2.Valid.EncryptDecryptLongMsg {
		ck := ConversationKey(unhex32(t, c.ConversationKey))
		nonce := unhex32(t, c.Nonce)
		plain := strings.Repeat(c.Pattern, c.Repeat)
		if sum := sha256.Sum256([]byte(plain)); hex.EncodeToString(sum[:]) != c.PlaintextSHA256 {
			t.Fatalf("plaintext sha256 mismatch for pattern %q", c.Pattern)
		}
		payload, err := encrypt(plain, ck, &nonce)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256([]byte(payload)); hex.EncodeToString(sum[:]) != c.PayloadSHA256 {
			t.Errorf("pattern %q: payload sha256 %x, want %s", c.Pattern, sum, c.PayloadSHA256)
		}
		if got, err := Decrypt(payload, ck); err != nil || got != plain {
			t.Errorf("pattern %q: round trip failed: %v", c.Pattern, err)
		}
	}
}

func TestInvalidVectors(t *testing.T) {
	v := loadVectors(t)
	var ck ConversationKey
	for _, n := range v.V2.Invalid.EncryptMsgLengths {
		if _, err := Encrypt(strings.Repeat("a", n), ck); err == nil {
			t.Errorf("Encrypt accepted a %d-byte plaintext", n)
		}
	}
	for _, c := range v.V2.Invalid.Decrypt {
		ck := ConversationKey(unhex32(t, c.ConversationKey))
		if got, err := Decrypt(c.Payload, ck); !errors.Is(err, ErrDecrypt) {
			t.Errorf("%s: Decrypt = %q, %v; want ErrDecrypt", c.Note, got, err)
		}
	}
}

// TestCrossCheckGoNostr encrypts with each implementation and decrypts with
// the other (go-nostr is independent of this package).
func TestCrossCheckGoNostr(t *testing.T) {
	a, _ := nostr.GenerateSecretKey()
	b, _ := nostr.GenerateSecretKey()
	ours, err := NewConversationKey(a, b.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := gonip44.GenerateConversationKey(a.PublicKey(), b.Hex())
	if err != nil {
		t.Fatal(err)
	}
	if ours != theirs {
		t.Fatalf("conversation keys differ: %x vs %x", ours, theirs)
	}
	for _, msg := range []string{"x", "hello, gift wrap", strings.Repeat("ü", 3000), strings.Repeat("z", MaxPlaintextSize)} {
		p, err := Encrypt(msg, ours)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := gonip44.Decrypt(p, theirs); err != nil || got != msg {
			t.Fatalf("go-nostr cannot decrypt ours: %v", err)
		}
		q, err := gonip44.Encrypt(msg, theirs)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Decrypt(q, ours); err != nil || got != msg {
			t.Fatalf("we cannot decrypt go-nostr's: %v", err)
		}
	}
}

func FuzzDecrypt(f *testing.F) {
	ck := ConversationKey{1, 2, 3}
	good, _ := Encrypt("seed", ck)
	f.Add(good)
	f.Add("")
	f.Add("#abc")
	f.Add(strings.Repeat("A", 200))
	f.Fuzz(func(t *testing.T, payload string) {
		plain, err := Decrypt(payload, ck)
		if err != nil {
			if !errors.Is(err, ErrDecrypt) {
				t.Fatalf("error %v does not wrap ErrDecrypt", err)
			}
			return
		}
		// Anything that decrypts must re-encrypt to a payload that decrypts
		// to the same plaintext.
		again, err := Encrypt(plain, ck)
		if err != nil {
			t.Fatal(err)
		}
		if p2, err := Decrypt(again, ck); err != nil || p2 != plain {
			t.Fatalf("round trip of %q failed", plain)
		}
	})
}
