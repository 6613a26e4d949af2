package nostr

import (
	"encoding/hex"
	"errors"
	"strings"

	"github.com/btcsuite/btcd/btcutil/bech32"
)

// NIP-19 human-readable prefixes of bare keys.
const (
	PrefixNpub = "npub"
	PrefixNsec = "nsec"
)

// EncodeNpub returns the NIP-19 "npub1…" form of a public key given as 64
// hex characters.
func EncodeNpub(pubkeyHex string) (string, error) {
	raw, err := hex.DecodeString(pubkeyHex)
	if err != nil || len(raw) != 32 {
		return "", errors.New("nostr: public key must be 64 hex characters")
	}
	return encodeBech32(PrefixNpub, raw)
}

// EncodeNsec returns the NIP-19 "nsec1…" form of sk.
func EncodeNsec(sk SecretKey) (string, error) { return encodeBech32(PrefixNsec, sk[:]) }

func encodeBech32(hrp string, raw []byte) (string, error) {
	five, err := bech32.ConvertBits(raw, 8, 5, true)
	if err != nil {
		return "", err
	}
	return bech32.Encode(hrp, five)
}

// ParsePubKey accepts a public key as 64 hex characters (either case) or as
// NIP-19 "npub1…", and returns it as 64 lowercase hex characters. It does
// not check that the key is on the curve.
func ParsePubKey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(strings.ToLower(s), PrefixNpub+"1") {
		raw, err := decodeBech32(PrefixNpub, s)
		if err != nil {
			return "", err
		}
		return hex.EncodeToString(raw), nil
	}
	if len(s) != 64 {
		return "", errors.New("nostr: a public key is 64 hex characters or npub1…")
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return "", errors.New("nostr: a public key is 64 hex characters or npub1…")
	}
	return hex.EncodeToString(raw), nil
}

// ParseSecretKeyAny accepts a secret key as 64 hex characters or as NIP-19
// "nsec1…" (see ParseSecretKey for the range check).
func ParseSecretKeyAny(s string) (SecretKey, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(strings.ToLower(s), PrefixNsec+"1") {
		raw, err := decodeBech32(PrefixNsec, s)
		if err != nil {
			return SecretKey{}, err
		}
		return ParseSecretKey(hex.EncodeToString(raw))
	}
	return ParseSecretKey(s)
}

// decodeBech32 decodes a bech32 string with prefix hrp holding 32 bytes.
func decodeBech32(hrp, s string) ([]byte, error) {
	bad := errors.New("nostr: malformed " + hrp + " (NIP-19 bech32)")
	got, five, err := bech32.Decode(s)
	if err != nil || got != hrp {
		return nil, bad
	}
	raw, err := bech32.ConvertBits(five, 5, 8, false)
	if err != nil || len(raw) != 32 {
		return nil, bad
	}
	return raw, nil
}
