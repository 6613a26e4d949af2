package nostr

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// SecretKey is a secp256k1 secret key. The zero value is not a valid key.
type SecretKey [32]byte

// GenerateSecretKey returns a new random secret key drawn from crypto/rand.
func GenerateSecretKey() (SecretKey, error) {
	priv, err := btcec.NewPrivateKey()
	if err != nil {
		return SecretKey{}, fmt.Errorf("nostr: generate secret key: %w", err)
	}
	var sk SecretKey
	priv.Key.PutBytes((*[32]byte)(&sk))
	priv.Zero()
	return sk, nil
}

// ParseSecretKey decodes a secret key from 64 hex characters (either case).
// The key must be in 1..n-1, n being the curve order.
func ParseSecretKey(s string) (SecretKey, error) {
	var sk SecretKey
	if len(s) != 64 {
		return sk, errors.New("nostr: secret key must be 64 hex characters")
	}
	for i := range sk {
		hi, ok1 := anyHexVal(s[2*i])
		lo, ok2 := anyHexVal(s[2*i+1])
		if !ok1 || !ok2 {
			return SecretKey{}, errors.New("nostr: secret key must be 64 hex characters")
		}
		sk[i] = hi<<4 | lo
	}
	var k btcec.ModNScalar
	if overflow := k.SetBytes((*[32]byte)(&sk)); overflow != 0 || k.IsZero() {
		return SecretKey{}, errors.New("nostr: secret key is out of range")
	}
	return sk, nil
}

func anyHexVal(c byte) (byte, bool) {
	if c >= 'A' && c <= 'F' {
		return c - 'A' + 10, true
	}
	return lowerHexVal(c)
}

// privateKey converts sk, failing for the zero key or one >= n.
func (sk SecretKey) privateKey() (*btcec.PrivateKey, error) {
	var k btcec.ModNScalar
	if overflow := k.SetBytes((*[32]byte)(&sk)); overflow != 0 || k.IsZero() {
		return nil, errors.New("nostr: secret key is out of range")
	}
	return btcec.PrivKeyFromScalar(&k), nil
}

// Hex returns the key as 64 lowercase hex characters.
func (sk SecretKey) Hex() string {
	return string(appendHex(make([]byte, 0, 64), sk[:]))
}

// PublicKey returns the BIP-340 x-only public key as 64 lowercase hex
// characters, or "" if sk is not a valid key.
func (sk SecretKey) PublicKey() string {
	priv, err := sk.privateKey()
	if err != nil {
		return ""
	}
	return string(appendHex(make([]byte, 0, 64), schnorr.SerializePubKey(priv.PubKey())))
}

// Sign sets e.PubKey to sk's public key, e.ID to the computed id and e.Sig
// to a BIP-340 signature of the id, with auxiliary randomness from
// crypto/rand. Every other field must be final before calling Sign.
func (e *Event) Sign(sk SecretKey) error {
	priv, err := sk.privateKey()
	if err != nil {
		return err
	}
	defer priv.Zero()
	e.PubKey = string(appendHex(make([]byte, 0, 64), schnorr.SerializePubKey(priv.PubKey())))
	h := e.hash()
	var aux [32]byte
	if _, err := rand.Read(aux[:]); err != nil {
		return fmt.Errorf("nostr: sign: %w", err)
	}
	sig, err := signHash(priv, &h, &aux)
	if err != nil {
		return err
	}
	e.ID = string(appendHex(make([]byte, 0, 64), h[:]))
	e.Sig = string(appendHex(make([]byte, 0, 128), sig[:]))
	return nil
}

// signHash makes the BIP-340 signature of a 32-byte message with the given
// auxiliary randomness. The signature is not re-verified after signing
// (schnorr.FastSign): the algorithm is deterministic given aux and the tests
// check it against the BIP-340 vectors.
func signHash(priv *btcec.PrivateKey, msg, aux *[32]byte) ([64]byte, error) {
	var out [64]byte
	sig, err := schnorr.Sign(priv, msg[:], schnorr.CustomNonce(*aux), schnorr.FastSign())
	if err != nil {
		return out, fmt.Errorf("nostr: sign: %w", err)
	}
	copy(out[:], sig.Serialize())
	return out, nil
}

// SignDigest returns sk's BIP-340 signature of a 32-byte digest (128
// lowercase hex characters), with auxiliary randomness from crypto/rand.
func (sk SecretKey) SignDigest(digest [32]byte) (string, error) {
	priv, err := sk.privateKey()
	if err != nil {
		return "", err
	}
	defer priv.Zero()
	var aux [32]byte
	if _, err := rand.Read(aux[:]); err != nil {
		return "", fmt.Errorf("nostr: sign: %w", err)
	}
	sig, err := signHash(priv, &digest, &aux)
	if err != nil {
		return "", err
	}
	return string(appendHex(make([]byte, 0, 128), sig[:])), nil
}
