package nip59

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
	gonip44 "github.com/nbd-wtf/go-nostr/nip44"
	gonip59 "github.com/nbd-wtf/go-nostr/nip59"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip44"
)

func newKey(t *testing.T) nostr.SecretKey {
	t.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func newVerifier(t *testing.T) *nostr.Verifier {
	t.Helper()
	v, err := nostr.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

func TestWrapUnwrap(t *testing.T) {
	sender, recipient, stranger := newKey(t), newKey(t), newKey(t)
	v := newVerifier(t)
	now := time.Unix(1_800_000_000, 0)
	rumor := nostr.Event{CreatedAt: now.Unix(), Kind: 14, Tags: nostr.Tags{{"p", recipient.PublicKey()}}, Content: "hi <there> & \"you\""}
	wrap, err := wrapAt(rumor, sender, recipient.PublicKey(), now, bytes.NewReader(bytes.Repeat([]byte{0xff}, 16)))
	if err != nil {
		t.Fatal(err)
	}
	if wrap.Kind != nostr.KindGiftWrap || len(wrap.Tags) != 1 || wrap.Tags[0][0] != "p" || wrap.Tags[0][1] != recipient.PublicKey() {
		t.Fatalf("wrap shape: kind %d tags %v", wrap.Kind, wrap.Tags)
	}
	if wrap.PubKey == sender.PublicKey() || wrap.PubKey == recipient.PublicKey() {
		t.Fatal("wrap is not signed by a fresh key")
	}
	if err := v.Verify(wrap); err != nil {
		t.Fatalf("wrap signature: %v", err)
	}
	if wrap.CreatedAt > now.Unix() || wrap.CreatedAt <= now.Add(-maxTweak).Unix() {
		t.Fatalf("wrap created_at %d is outside the two days before %d", wrap.CreatedAt, now.Unix())
	}
	if strings.Contains(wrap.Content, "there") {
		t.Fatal("wrap content is not encrypted")
	}
	got, err := Unwrap(wrap, recipient, v)
	if err != nil {
		t.Fatal(err)
	}
	if got.PubKey != sender.PublicKey() || got.Content != rumor.Content || got.Kind != 14 || got.CreatedAt != rumor.CreatedAt || got.Sig != "" {
		t.Fatalf("rumor = %+v", got)
	}
	if _, err := Unwrap(wrap, stranger, v); err == nil {
		t.Fatal("a stranger opened the wrap")
	}
	if _, err := Unwrap(wrap, sender, v); err == nil {
		t.Fatal("the sender opened the recipient's wrap")
	}
}

// TestUnwrapRefusesForgedSeal: a seal whose rumor claims another author,
// or a seal signed by nobody, does not unwrap.
func TestUnwrapRefusesForgedSeal(t *testing.T) {
	sender, recipient, victim := newKey(t), newKey(t), newKey(t)
	v := newVerifier(t)
	rumor := nostr.Event{PubKey: victim.PublicKey(), CreatedAt: 1, Kind: 14, Tags: nostr.Tags{}, Content: "I am the victim"}
	rumor.ID = rumor.ComputeID()
	ck, _ := nip44.NewConversationKey(sender, recipient.PublicKey())
	raw, _ := toJSON(&rumor)
	sealContent, _ := nip44.Encrypt(raw, ck)
	seal := nostr.Event{CreatedAt: 1, Kind: nostr.KindSeal, Tags: nostr.Tags{}, Content: sealContent}
	if err := seal.Sign(sender); err != nil {
		t.Fatal(err)
	}
	eph := newKey(t)
	wck, _ := nip44.NewConversationKey(eph, recipient.PublicKey())
	wc, _ := nip44.Encrypt(string(seal.AppendJSON(nil)), wck)
	wrap := &nostr.Event{CreatedAt: 1, Kind: nostr.KindGiftWrap, Tags: nostr.Tags{{"p", recipient.PublicKey()}}, Content: wc}
	if err := wrap.Sign(eph); err != nil {
		t.Fatal(err)
	}
	if _, err := Unwrap(wrap, recipient, v); err == nil || !strings.Contains(err.Error(), "pubkey") {
		t.Fatalf("forged rumor author: err = %v", err)
	}

	seal.Sig = strings.Repeat("0", 128)
	wc, _ = nip44.Encrypt(string(seal.AppendJSON(nil)), wck)
	wrap.Content = wc
	if _, err := Unwrap(wrap, recipient, v); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("unsigned seal: err = %v", err)
	}
}

// TestCrossCheckGoNostr: go-nostr unwraps our wraps, and we unwrap its.
func TestCrossCheckGoNostr(t *testing.T) {
	sender, recipient := newKey(t), newKey(t)
	v := newVerifier(t)
	rumor := nostr.Event{CreatedAt: time.Now().Unix(), Kind: 14, Tags: nostr.Tags{{"p", recipient.PublicKey()}}, Content: "from buzz"}
	wrap, err := Wrap(rumor, sender, recipient.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	gw := toGoNostr(wrap)
	if ok, err := gw.CheckSignature(); !ok || err != nil {
		t.Fatalf("go-nostr rejects the wrap's signature: %v", err)
	}
	decrypt := func(other, ciphertext string) (string, error) {
		ck, err := gonip44.GenerateConversationKey(other, recipient.Hex())
		if err != nil {
			return "", err
		}
		return gonip44.Decrypt(ciphertext, ck)
	}
	got, err := gonip59.GiftUnwrap(gw, decrypt)
	if err != nil {
		t.Fatalf("go-nostr cannot unwrap ours: %v", err)
	}
	if got.PubKey != sender.PublicKey() || got.Content != "from buzz" || int(got.Kind) != 14 {
		t.Fatalf("go-nostr unwrapped %+v", got)
	}

	// The other way: go-nostr wraps, we unwrap.
	grumor := gonostr.Event{Kind: 14, CreatedAt: gonostr.Now(), Tags: gonostr.Tags{{"p", recipient.PublicKey()}}, Content: "from go-nostr", PubKey: sender.PublicKey()}
	encrypt := func(plain string) (string, error) {
		ck, err := gonip44.GenerateConversationKey(recipient.PublicKey(), sender.Hex())
		if err != nil {
			return "", err
		}
		return gonip44.Encrypt(plain, ck)
	}
	sign := func(e *gonostr.Event) error { return e.Sign(sender.Hex()) }
	theirs, err := gonip59.GiftWrap(grumor, recipient.PublicKey(), encrypt, sign, nil)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := nostr.ParseEvent([]byte(theirs.String()))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Unwrap(ours, recipient, v)
	if err != nil {
		t.Fatalf("we cannot unwrap go-nostr's: %v", err)
	}
	if r.PubKey != sender.PublicKey() || r.Content != "from go-nostr" {
		t.Fatalf("unwrapped %+v", r)
	}
}

func toGoNostr(e *nostr.Event) gonostr.Event {
	g := gonostr.Event{ID: e.ID, PubKey: e.PubKey, CreatedAt: gonostr.Timestamp(e.CreatedAt), Kind: e.Kind, Content: e.Content, Sig: e.Sig}
	for _, tag := range e.Tags {
		g.Tags = append(g.Tags, gonostr.Tag(tag))
	}
	return g
}

func toJSON(e *nostr.Event) (string, error) {
	b, err := json.Marshal(toWire(e))
	return string(b), err
}
