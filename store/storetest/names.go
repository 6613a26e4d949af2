package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
)

// NameBackend is a backend with NIP-05 names.
type NameBackend interface {
	store.Backend
	store.NameStore
	store.AuditLog
}

// RunNames is the conformance suite of store.NameStore.
func RunNames(t *testing.T, open func(t *testing.T) NameBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b NameBackend)
	}{
		{"ClaimLookupRelease", testNameClaim},
		{"CaseInsensitive", testNameCase},
		{"PerCommunity", testNamePerCommunity},
		{"ConcurrentClaims", testNameConcurrent},
		{"Invalid", testNameInvalid},
		{"Audit", testNameAudit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func testNameClaim(t *testing.T, b NameBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "names.example")
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := NewAuthor(t), NewAuthor(t)
	if _, err := b.NameOwner(ctxb(), c, "alice"); !errors.Is(err, store.ErrNoName) {
		t.Fatalf("unclaimed name: %v", err)
	}
	mustNil(t, b.SetName(ctxb(), c, alice.PubKey, "alice"))
	mustNil(t, b.SetName(ctxb(), c, alice.PubKey, "alice")) // a repeat changes nothing
	if err := b.SetName(ctxb(), c, bob.PubKey, "alice"); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("claim of a held name: %v", err)
	}
	owner, err := b.NameOwner(ctxb(), c, "alice")
	if err != nil || owner != alice.PubKey {
		t.Fatalf("owner %q %v", owner, err)
	}
	if n, err := b.PubKeyName(ctxb(), c, alice.PubKey); err != nil || n != "alice" {
		t.Fatalf("name of alice: %q %v", n, err)
	}
	if _, err := b.PubKeyName(ctxb(), c, bob.PubKey); !errors.Is(err, store.ErrNoName) {
		t.Fatalf("name of bob: %v", err)
	}
	// A new name replaces the old one, which becomes free.
	mustNil(t, b.SetName(ctxb(), c, alice.PubKey, "al"))
	if _, err := b.NameOwner(ctxb(), c, "alice"); !errors.Is(err, store.ErrNoName) {
		t.Fatalf("old name still held: %v", err)
	}
	mustNil(t, b.SetName(ctxb(), c, bob.PubKey, "alice"))
	if _, err := b.ReleaseName(ctxb(), c, "alice", alice.PubKey); !errors.Is(err, store.ErrNoName) {
		t.Fatalf("release on behalf of a non-holder: %v", err)
	}
	holder, err := b.ReleaseName(ctxb(), c, "alice", bob.PubKey)
	if err != nil || holder != bob.PubKey {
		t.Fatalf("release: %q %v", holder, err)
	}
	if _, err := b.ReleaseName(ctxb(), c, "alice", ""); !errors.Is(err, store.ErrNoName) {
		t.Fatalf("second release: %v", err)
	}
	if _, err := b.PubKeyName(ctxb(), c, bob.PubKey); !errors.Is(err, store.ErrNoName) {
		t.Fatalf("released holder still named: %v", err)
	}
}

func testNameCase(t *testing.T, b NameBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "names.example")
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := NewAuthor(t), NewAuthor(t)
	mustNil(t, b.SetName(ctxb(), c, alice.PubKey, "Alice"))
	if err := b.SetName(ctxb(), c, bob.PubKey, "ALICE"); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("case variant of a held name: %v", err)
	}
	for _, n := range []string{"alice", "ALICE", "aLiCe"} {
		if owner, err := b.NameOwner(ctxb(), c, n); err != nil || owner != alice.PubKey {
			t.Fatalf("lookup %s: %q %v", n, owner, err)
		}
	}
	if n, _ := b.PubKeyName(ctxb(), c, alice.PubKey); n != "alice" {
		t.Fatalf("stored as %q, want lower case", n)
	}
}

func testNamePerCommunity(t *testing.T, b NameBackend) {
	ca, _, err := b.EnsureCommunity(ctxb(), "names-a.example")
	if err != nil {
		t.Fatal(err)
	}
	cb, _, err := b.EnsureCommunity(ctxb(), "names-b.example")
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := NewAuthor(t), NewAuthor(t)
	mustNil(t, b.SetName(ctxb(), ca, alice.PubKey, "alice"))
	if _, err := b.NameOwner(ctxb(), cb, "alice"); !errors.Is(err, store.ErrNoName) {
		t.Fatalf("name of A visible in B: %v", err)
	}
	if _, err := b.ReleaseName(ctxb(), cb, "alice", ""); !errors.Is(err, store.ErrNoName) {
		t.Fatalf("B released A's name: %v", err)
	}
	mustNil(t, b.SetName(ctxb(), cb, bob.PubKey, "alice"))
	if owner, err := b.ReleaseName(ctxb(), ca, "ALICE", ""); err != nil || owner != alice.PubKey {
		t.Fatalf("release in A: %q %v", owner, err)
	}
	mustNil(t, b.SetName(ctxb(), ca, alice.PubKey, "alice"))
	if owner, _ := b.NameOwner(ctxb(), ca, "alice"); owner != alice.PubKey {
		t.Fatalf("A's alice is %q", owner)
	}
	if owner, _ := b.NameOwner(ctxb(), cb, "alice"); owner != bob.PubKey {
		t.Fatalf("B's alice is %q", owner)
	}
}

func testNameConcurrent(t *testing.T, b NameBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "names.example")
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	authors := NewAuthors(t, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = b.SetName(ctxb(), c, authors[i].PubKey, "popular") })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
			if owner, _ := b.NameOwner(ctxb(), c, "popular"); owner != authors[i].PubKey {
				t.Fatalf("winner %d does not hold the name", i)
			}
		case !errors.Is(err, store.ErrNameTaken):
			t.Fatalf("claim %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d claims won, want 1", won)
	}
}

func testNameInvalid(t *testing.T, b NameBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "names.example")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAuthor(t)
	for _, n := range []string{"", "a b", "ümlaut", "a@b", string(make([]byte, 65))} {
		if err := b.SetName(ctxb(), c, a.PubKey, n); !errors.Is(err, store.ErrInvalidName) {
			t.Fatalf("name %q: %v", n, err)
		}
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testNameAudit(t *testing.T, b NameBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "names.example")
	if err != nil {
		t.Fatal(err)
	}
	admin, alice := NewAuthor(t), NewAuthor(t)
	ctx := audit.WithActor(ctxb(), admin.PubKey)
	mustNil(t, b.SetName(ctx, c, alice.PubKey, "Alice"))
	mustNil(t, b.SetName(ctx, c, alice.PubKey, "alice")) // no change, no entry
	if _, err := b.ReleaseName(ctx, c, "alice", ""); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range AuditChain(t, b, c) {
		if e.Action == store.AuditNameSet || e.Action == store.AuditNameReleased {
			got = append(got, string(e.Action)+" "+e.Object+" "+e.Actor)
		}
	}
	want := []string{"nip05_name_set alice " + admin.PubKey, "nip05_name_released alice " + admin.PubKey}
	if !slices.Equal(got, want) {
		t.Fatalf("audit entries %q, want %q", got, want)
	}
}
