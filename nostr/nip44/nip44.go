// Package nip44 implements NIP-44 version 2 payload encryption: a
// conversation key from secp256k1 ECDH and HKDF, per-message keys from a
// random nonce, ChaCha20 over a length-prefixed, padded plaintext, and an
// HMAC-SHA256 over nonce and ciphertext, base64-encoded with a version byte.
//
// The package is verified against the official test vectors
// (testdata/nip44.vectors.json, sha256
// 269ed0f69e4c192512cc779e78c555090cebc7c785b609e338a62afc3ce25040).
//
// It depends on nostr only; it must not import tenant or the relay.
package nip44

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/hkdf"

	"github.com/buzzrelay/buzz/nostr"
)

const version = 2

// Plaintext size bounds, in bytes, of a version 2 payload.
const (
	MinPlaintextSize = 1
	MaxPlaintextSize = 65535
)

// Payload size bounds: base64 of version, nonce, at least 34 padded bytes
// and the MAC; and of the largest padded plaintext.
const (
	minPayloadLen = 132
	maxPayloadLen = 87472
	minDecodedLen = 99
	maxDecodedLen = 65603
)

// ErrDecrypt is wrapped by every error Decrypt returns for a payload that
// is not a valid version 2 ciphertext under the key.
var ErrDecrypt = errors.New("nip44: cannot decrypt")

// ConversationKey is the 32-byte secret two parties share: the HKDF-extract
// (SHA-256, salt "nip44-v2") of the x coordinate of their ECDH point. It is
// symmetric: ConversationKey(a, B) == ConversationKey(b, A).
type ConversationKey [32]byte

// NewConversationKey derives the conversation key of sk and the x-only
// public key pub (64 hex characters). It fails for a secret key out of
// 1..n-1 or a public key that is not on the curve.
func NewConversationKey(sk nostr.SecretKey, pub string) (ConversationKey, error) {
	var ck ConversationKey
	var k btcec.ModNScalar
	if overflow := k.SetBytes((*[32]byte)(&sk)); overflow != 0 || k.IsZero() {
		return ck, errors.New("nip44: secret key is out of range")
	}
	priv := btcec.PrivKeyFromScalar(&k)
	defer priv.Zero()
	raw, err := hex.DecodeString(pub)
	if err != nil || len(raw) != 32 {
		return ck, errors.New("nip44: public key must be 64 hex characters")
	}
	pk, err := schnorr.ParsePubKey(raw)
	if err != nil {
		return ck, fmt.Errorf("nip44: public key: %w", err)
	}
	shared := btcec.GenerateSharedSecret(priv, pk)
	copy(ck[:], hkdf.Extract(sha256.New, shared, []byte("nip44-v2")))
	clear(shared)
	return ck, nil
}

// messageKeys expands the conversation key and a nonce into the ChaCha20
// key, the ChaCha20 nonce and the HMAC key.
func messageKeys(ck ConversationKey, nonce *[32]byte) (chachaKey [32]byte, chachaNonce [12]byte, hmacKey [32]byte) {
	var okm [76]byte
	r := hkdf.Expand(sha256.New, ck[:], nonce[:])
	if _, err := io.ReadFull(r, okm[:]); err != nil {
		// HKDF-SHA256 yields up to 255*32 bytes; 76 cannot fail.
		panic("nip44: hkdf expand: " + err.Error())
	}
	copy(chachaKey[:], okm[0:32])
	copy(chachaNonce[:], okm[32:44])
	copy(hmacKey[:], okm[44:76])
	return
}

// CalcPaddedLen returns the padded length of a plaintext of n bytes
// (1 ≤ n ≤ 65535): 32 up to 32 bytes, then multiples of a chunk that grows
// with the next power of two (a quarter of it, at least 32).
func CalcPaddedLen(n int) int {
	if n <= 32 {
		return 32
	}
	nextPower := 1
	for nextPower < n {
		nextPower <<= 1
	}
	chunk := 32
	if nextPower > 256 {
		chunk = nextPower / 8
	}
	return chunk * ((n-1)/chunk + 1)
}

// Encrypt encrypts plaintext (1..65535 bytes) under ck with a fresh random
// nonce and returns the base64 payload.
func Encrypt(plaintext string, ck ConversationKey) (string, error) {
	var nonce [32]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("nip44: nonce: %w", err)
	}
	return encrypt(plaintext, ck, &nonce)
}

// encrypt is Encrypt with a given nonce (the test vectors fix it).
func encrypt(plaintext string, ck ConversationKey, nonce *[32]byte) (string, error) {
	n := len(plaintext)
	if n < MinPlaintextSize || n > MaxPlaintextSize {
		return "", fmt.Errorf("nip44: plaintext must be %d to %d bytes, not %d", MinPlaintextSize, MaxPlaintextSize, n)
	}
	chachaKey, chachaNonce, hmacKey := messageKeys(ck, nonce)
	padded := make([]byte, 2+CalcPaddedLen(n))
	binary.BigEndian.PutUint16(padded, uint16(n))
	copy(padded[2:], plaintext)
	if err := xorChaCha(padded, &chachaKey, &chachaNonce); err != nil {
		return "", err
	}
	raw := make([]byte, 0, 1+32+len(padded)+32)
	raw = append(raw, version)
	raw = append(raw, nonce[:]...)
	raw = append(raw, padded...)
	raw = append(raw, mac(&hmacKey, nonce[:], padded)...)
	return base64.StdEncoding.EncodeToString(raw), nil
}

// Decrypt decrypts a base64 version 2 payload under ck. It checks the
// version, the sizes, the MAC (in constant time, before decrypting) and
// the padding; every failure wraps ErrDecrypt.
func Decrypt(payload string, ck ConversationKey) (string, error) {
	if len(payload) == 0 || payload[0] == '#' {
		return "", fmt.Errorf("%w: unknown version", ErrDecrypt)
	}
	if len(payload) < minPayloadLen || len(payload) > maxPayloadLen {
		return "", fmt.Errorf("%w: invalid payload size", ErrDecrypt)
	}
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", fmt.Errorf("%w: invalid base64", ErrDecrypt)
	}
	if len(raw) < minDecodedLen || len(raw) > maxDecodedLen {
		return "", fmt.Errorf("%w: invalid data size", ErrDecrypt)
	}
	if raw[0] != version {
		return "", fmt.Errorf("%w: unknown version %d", ErrDecrypt, raw[0])
	}
	var nonce [32]byte
	copy(nonce[:], raw[1:33])
	ciphertext := raw[33 : len(raw)-32]
	chachaKey, chachaNonce, hmacKey := messageKeys(ck, &nonce)
	if !hmac.Equal(mac(&hmacKey, nonce[:], ciphertext), raw[len(raw)-32:]) {
		return "", fmt.Errorf("%w: invalid MAC", ErrDecrypt)
	}
	padded := make([]byte, len(ciphertext))
	copy(padded, ciphertext)
	if err := xorChaCha(padded, &chachaKey, &chachaNonce); err != nil {
		return "", err
	}
	n := int(binary.BigEndian.Uint16(padded))
	if n < MinPlaintextSize || 2+n > len(padded) || len(padded) != 2+CalcPaddedLen(n) {
		return "", fmt.Errorf("%w: invalid padding", ErrDecrypt)
	}
	return string(padded[2 : 2+n]), nil
}

func xorChaCha(buf []byte, key *[32]byte, nonce *[12]byte) error {
	c, err := chacha20.NewUnauthenticatedCipher(key[:], nonce[:])
	if err != nil {
		return fmt.Errorf("nip44: chacha20: %w", err)
	}
	c.XORKeyStream(buf, buf)
	return nil
}

func mac(key *[32]byte, aad, msg []byte) []byte {
	h := hmac.New(sha256.New, key[:])
	h.Write(aad)
	h.Write(msg)
	return h.Sum(nil)
}
