package relaykey_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/relaykey"
	"github.com/buzzrelay/buzz/tenant"
)

func key(t *testing.T, hexKey string) nostr.SecretKey {
	t.Helper()
	sk, err := nostr.ParseSecretKey(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// TestDeriveVectors pins the derivation: HMAC-SHA256(master,
// "buzz/community-key/v1" || UUID || 0x0000), computed independently
// (Python's hmac). Changing it would change every community's published
// state key.
func TestDeriveVectors(t *testing.T) {
	var u [16]byte
	for i := range u {
		u[i] = byte(i)
	}
	c := tenant.FromUUID(u)
	for _, tc := range []struct{ master, want string }{
		{strings.Repeat("01", 32), "7fb0eb871f8dad6b5cd2a5ee446c8f0cc813fae724f9955ce20d692713e4b468"},
		{strings.Repeat("02", 32), "4dde524112477048344635be3605a5f0d3c04772dcb6db5f182cbf3a5057fc0a"},
	} {
		if got := relaykey.Derive(key(t, tc.master), c).Hex(); got != tc.want {
			t.Errorf("Derive(%s…) = %s, want %s", tc.master[:8], got, tc.want)
		}
	}
}

// TestKeysPerCommunity: one key per community and master, the same from
// Keys and Derive, on every call and goroutine.
func TestKeysPerCommunity(t *testing.T) {
	master, other := key(t, strings.Repeat("01", 32)), key(t, strings.Repeat("02", 32))
	a, b := tenant.NewCommunityID(), tenant.NewCommunityID()
	keys, err := relaykey.New(master)
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	seen := map[nostr.SecretKey]string{}
	for name, sk := range map[string]nostr.SecretKey{
		"master": master, "a": relaykey.Derive(master, a), "b": relaykey.Derive(master, b),
		"a under another master": relaykey.Derive(other, a),
	} {
		if prev, dup := seen[sk]; dup {
			t.Fatalf("%s and %s share a key", name, prev)
		}
		seen[sk] = name
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if keys.For(a) != relaykey.Derive(master, a) || keys.For(b) != relaykey.Derive(master, b) {
					t.Error("Keys.For differs from Derive")
					return
				}
			}
		})
	}
	wg.Wait()
}
