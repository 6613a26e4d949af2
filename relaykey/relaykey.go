// Package relaykey derives the keys a relay signs its own events with:
// from one master key (buzz.WithRelayKey), one key per community, which
// signs that community's relay-signed events — the NIP-29 channel state
// (39000–39003, published by ingest through ingest.Channels.StateKey),
// workflow messages and the "self" of its NIP-11 document. Every frontend
// and process holding the same master key signs a community's events with
// the same key, so a custom frontend publishes the state the relay would.
//
// It depends only on nostr and tenant (and an internal cache); it must not
// import store, ingest, pubsub or the root package buzz.
package relaykey

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"github.com/buzzrelay/buzz/internal/ttlcache"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// label domain-separates the per-community key derivation.
const label = "buzz/community-key/v1"

// Derive returns community c's signing key under master. Each community
// gets its own key, so the state events of one community can never be
// passed off as another's, and no key reveals the master key or another
// community's key.
//
// Derivation: HMAC-SHA256(master, "buzz/community-key/v1" || community
// UUID || counter as two big-endian bytes), with counter = 0, 1, … until
// the result is a valid secp256k1 scalar (in [1, n-1]; the first try fails
// with probability about 2^-128). It is deterministic and will not change:
// keys already published by communities depend on it.
func Derive(master nostr.SecretKey, c tenant.CommunityID) nostr.SecretKey {
	u := c.UUID()
	for counter := 0; ; counter++ {
		m := hmac.New(sha256.New, master[:])
		m.Write([]byte(label))
		m.Write(u[:])
		m.Write([]byte{byte(counter >> 8), byte(counter)})
		sk, err := nostr.ParseSecretKey(hex.EncodeToString(m.Sum(nil)))
		if err == nil {
			return sk
		}
	}
}

// Keys is Derive under one master key, with the derived keys cached. It is
// safe for concurrent use; Close releases its cache.
type Keys struct {
	master nostr.SecretKey
	cache  *ttlcache.Cache[string, nostr.SecretKey] // by community UUID; never stale
}

// cachedKeys bounds the communities whose derived key is cached at once (a
// miss derives it again; ttlcache.Config.MaxEntries sizes the cache's
// memory).
const cachedKeys = 10_000

// New returns the keys derived from master.
func New(master nostr.SecretKey) (*Keys, error) {
	c, err := ttlcache.New[string, nostr.SecretKey](ttlcache.Config{MaxEntries: cachedKeys})
	if err != nil {
		return nil, err
	}
	return &Keys{master: master, cache: c}, nil
}

// For returns community c's signing key (Derive(master, c)). Its signature
// suits ingest.Channels.StateKey.
func (k *Keys) For(c tenant.CommunityID) nostr.SecretKey {
	u := c.UUID()
	sk, _ := k.cache.Load(string(u[:]), func() (nostr.SecretKey, error) { return Derive(k.master, c), nil })
	return sk
}

// Close releases the cache; k must not be used after.
func (k *Keys) Close() { k.cache.Close() }
