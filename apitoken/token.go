package apitoken

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Prefix starts every token: Buzz's format is a prefix and 32 random
// bytes in lowercase hex (Sprout's "sprout_", buzz's "buzz_").
const Prefix = "buzz_"

// TokenLen is the length of a token: the prefix and 64 hex characters.
const TokenLen = len(Prefix) + 64

// Generate returns a new token and its SHA-256. The 256 bits come from
// crypto/rand.
func Generate() (token string, hash [32]byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	token = Prefix + hex.EncodeToString(b[:])
	return token, Hash(token)
}

// Hash is the SHA-256 of token: what the store keeps and looks up.
//
// A token carries 256 random bits, so its hash needs no salt or slow key
// derivation, and the lookup by hash needs no constant-time comparison:
// the store finds the row by an index on the hash, and what a timing
// difference could reveal is how many leading bytes of a guessed hash
// match a stored one — which tells nothing about any token, since SHA-256
// cannot be inverted.
func Hash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// WellFormed reports whether token has the form Generate gives it.
func WellFormed(token string) bool {
	if len(token) != TokenLen || !strings.HasPrefix(token, Prefix) {
		return false
	}
	for i := len(Prefix); i < len(token); i++ {
		c := token[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// FromAuthorization returns the token of an "Authorization: Bearer <token>"
// header value; bearer is false for another scheme (a NIP-98 "Nostr"
// header, none at all). A Bearer header whose value is not a well-formed
// token returns bearer true and an empty token.
func FromAuthorization(header string) (token string, bearer bool) {
	scheme, value, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	value = strings.TrimSpace(value)
	if !WellFormed(value) {
		return "", true
	}
	return value, true
}
