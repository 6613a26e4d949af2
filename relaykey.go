package buzz

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"github.com/buzzrelay/buzz/internal/ttlcache"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// communityKeyLabel domain-separates the per-community key derivation.
const communityKeyLabel = "buzz/community-key/v1"

// communityKeys derives, from one relay master key, the key that signs a
// community's relay-signed events (NIP-29 39000–39003). Each community gets
// its own key, so state events of one community can never be passed off as
// another's, and none reveals the master key or another community's key.
//
// Derivation: HMAC-SHA256(master, "buzz/community-key/v1" || community
// UUID || counter), with counter = 0, 1, … until the result is a valid
// secp256k1 scalar (in [1, n-1]; the first try fails with probability
// about 2^-128). It is deterministic: every process with the same master
// key signs a community's state with the same key.
type communityKeys struct {
	master nostr.SecretKey
	cache  *ttlcache.Cache[string, nostr.SecretKey] // derived keys by community UUID; never stale
}

func newCommunityKeys(master nostr.SecretKey) (*communityKeys, error) {
	c, err := ttlcache.New[string, nostr.SecretKey](ttlcache.Config{})
	if err != nil {
		return nil, err
	}
	return &communityKeys{master: master, cache: c}, nil
}

// key returns community c's signing key.
func (k *communityKeys) key(c tenant.CommunityID) nostr.SecretKey {
	u := c.UUID()
	sk, _ := k.cache.Load(string(u[:]), func() (nostr.SecretKey, error) { return deriveCommunityKey(k.master, c), nil })
	return sk
}

// deriveCommunityKey implements the derivation documented on communityKeys.
func deriveCommunityKey(master nostr.SecretKey, c tenant.CommunityID) nostr.SecretKey {
	u := c.UUID()
	for counter := 0; ; counter++ {
		m := hmac.New(sha256.New, master[:])
		m.Write([]byte(communityKeyLabel))
		m.Write(u[:])
		m.Write([]byte{byte(counter >> 8), byte(counter)})
		sk, err := nostr.ParseSecretKey(hex.EncodeToString(m.Sum(nil)))
		if err == nil {
			return sk
		}
	}
}
