package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// MessagingBackend is a backend with per-community kind allow-lists and
// agent owners.
type MessagingBackend interface {
	store.Backend
	store.CommunityKindsStore
	store.AgentOwnerStore
}

// RunMessaging is the conformance suite of store.CommunityKindsStore and
// store.AgentOwnerStore.
func RunMessaging(t *testing.T, open func(t *testing.T) MessagingBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b MessagingBackend)
	}{
		{"CommunityKinds", testCommunityKinds},
		{"AgentOwners", testAgentOwners},
		{"ConcurrentAgentOwners", testAgentOwnersConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func testCommunityKinds(t *testing.T, b MessagingBackend) {
	ca, _, err := b.EnsureCommunity(ctxb(), "kinds-a.example")
	if err != nil {
		t.Fatal(err)
	}
	cb, _, err := b.EnsureCommunity(ctxb(), "kinds-b.example")
	if err != nil {
		t.Fatal(err)
	}
	if k, err := b.CommunityKinds(ctxb(), ca); err != nil || k != "" {
		t.Fatalf("new community's kinds = %q, %v; want \"\"", k, err)
	}
	if err := b.SetCommunityKinds(ctxb(), ca, "buzz,30023"); err != nil {
		t.Fatal(err)
	}
	if k, err := b.CommunityKinds(ctxb(), ca); err != nil || k != "buzz,30023" {
		t.Fatalf("kinds after set = %q, %v", k, err)
	}
	if k, _ := b.CommunityKinds(ctxb(), cb); k != "" {
		t.Fatalf("another community's kinds changed to %q", k)
	}
	if err := b.SetCommunityKinds(ctxb(), ca, ""); err != nil {
		t.Fatal(err)
	}
	if k, _ := b.CommunityKinds(ctxb(), ca); k != "" {
		t.Fatalf("kinds after reset = %q", k)
	}
	long := make([]byte, store.MaxKindsSetting+1)
	for i := range long {
		long[i] = '1'
	}
	if err := b.SetCommunityKinds(ctxb(), ca, string(long)); err == nil {
		t.Fatal("a setting over MaxKindsSetting was stored")
	}
	missing := tenant.NewCommunityID()
	if _, err := b.CommunityKinds(ctxb(), missing); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("kinds of a missing community: %v, want ErrNoCommunity", err)
	}
}

func testAgentOwners(t *testing.T, b MessagingBackend) {
	ca, _, err := b.EnsureCommunity(ctxb(), "agents-a.example")
	if err != nil {
		t.Fatal(err)
	}
	cb, _, err := b.EnsureCommunity(ctxb(), "agents-b.example")
	if err != nil {
		t.Fatal(err)
	}
	agent, owner, other := NewAuthor(t).PubKey, NewAuthor(t).PubKey, NewAuthor(t).PubKey
	at := time.Unix(1_700_000_000, 0)
	if _, ok, err := b.AgentOwnerOf(ctxb(), ca, agent); err != nil || ok {
		t.Fatalf("owner before any record: %v %v", ok, err)
	}
	got, ok, err := b.RecordAgentOwner(ctxb(), ca, agent, owner, at)
	if err != nil || !ok || got.Owner != owner || !got.RecordedAt.Equal(at) {
		t.Fatalf("first record: %+v %v %v", got, ok, err)
	}
	// The first owner stays.
	got, ok, err = b.RecordAgentOwner(ctxb(), ca, agent, other, at.Add(time.Hour))
	if err != nil || ok || got.Owner != owner || !got.RecordedAt.Equal(at) {
		t.Fatalf("second record: %+v %v %v, want the first owner", got, ok, err)
	}
	if o, ok, err := b.AgentOwnerOf(ctxb(), ca, agent); err != nil || !ok || o.Owner != owner {
		t.Fatalf("owner: %+v %v %v", o, ok, err)
	}
	// Per community.
	if _, ok, _ := b.AgentOwnerOf(ctxb(), cb, agent); ok {
		t.Fatal("the owner recorded in one community is seen in another")
	}
	if got, ok, err := b.RecordAgentOwner(ctxb(), cb, agent, other, at); err != nil || !ok || got.Owner != other {
		t.Fatalf("record in another community: %+v %v %v", got, ok, err)
	}
	if o, _, _ := b.AgentOwnerOf(ctxb(), ca, agent); o.Owner != owner {
		t.Fatalf("owner in the first community became %s", o.Owner)
	}
	if _, ok, err := b.AgentOwnerOf(ctxb(), tenant.NewCommunityID(), agent); err != nil || ok {
		t.Fatalf("owner in a missing community: %v %v", ok, err)
	}
}

func testAgentOwnersConcurrent(t *testing.T, b MessagingBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "agents-race.example")
	if err != nil {
		t.Fatal(err)
	}
	agent := NewAuthor(t).PubKey
	const n = 8
	owners := make([]string, n)
	for i := range owners {
		owners[i] = NewAuthor(t).PubKey
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		recorded int
		seen     = map[string]bool{}
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, ok, err := b.RecordAgentOwner(ctxb(), c, agent, owners[i], time.Unix(1_700_000_000, 0))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if ok {
				recorded++
			}
			seen[got.Owner] = true
		}()
	}
	wg.Wait()
	if recorded != 1 || len(seen) != 1 {
		t.Fatalf("%d calls recorded an owner, %d owners answered; want 1 and 1", recorded, len(seen))
	}
}
