// Package optest is the conformance suite for operator.Store: every backend
// that implements the operator plane runs Run unchanged.
//
// It must not import a store backend (the backends' tests import it) or the
// relay.
package optest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Backend is what the suite needs: the operator registry, host resolution,
// and a way to add host aliases (which the operator API does not expose).
type Backend interface {
	operator.Store
	tenant.Directory
	AddHostAlias(ctx context.Context, alias string, id tenant.CommunityID) error
	// CommunityByID finds a community, archived or not, by id (the
	// workflow engine's host lookup).
	CommunityByID(ctx context.Context, id tenant.CommunityID) (store.Community, error)
}

// Run runs the suite. open returns a fresh, empty backend (registering its
// cleanup with t.Cleanup); it is called once per subtest.
func Run(t *testing.T, open func(t *testing.T) Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"CreateAndResolve", testCreateAndResolve},
		{"CreateIdempotent", testCreateIdempotent},
		{"CreateOnly", testCreateOnly},
		{"CreateInvalidHost", testCreateInvalidHost},
		{"Quota", testQuota},
		{"QuotaConcurrent", testQuotaConcurrent},
		{"CreateSameHostConcurrent", testCreateSameHostConcurrent},
		{"OwnedCommunities", testOwned},
		{"ByHostAndAliases", testByHostAndAliases},
		{"ArchiveUnarchive", testArchive},
		{"UnarchiveQuota", testUnarchiveQuota},
		{"Transfer", testTransfer},
		{"TransferConcurrent", testTransferConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// Key returns a fresh random public key (64 lowercase hex).
func Key(tb testing.TB) string {
	tb.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		tb.Fatal(err)
	}
	return sk.PublicKey()
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustCreate(t *testing.T, b Backend, n store.NewCommunity) store.Community {
	t.Helper()
	c, created, err := b.CreateCommunity(ctx(t), n)
	if err != nil || !created {
		t.Fatalf("CreateCommunity(%+v) = created %v, %v; want created", n, created, err)
	}
	return c
}

func testCreateAndResolve(t *testing.T, b Backend) {
	owner := Key(t)
	before := time.Now().Add(-2 * time.Second)
	c := mustCreate(t, b, store.NewCommunity{Host: "a.example", OwnerPubKey: owner})
	if c.ID.IsZero() || c.Host != "a.example" || c.OwnerPubKey != owner || c.Archived() {
		t.Fatalf("created %+v", c)
	}
	if c.CreatedAt.Before(before) || c.CreatedAt.After(time.Now().Add(2*time.Second)) || c.CreatedAt.Location() != time.UTC {
		t.Fatalf("created_at %v not now in UTC", c.CreatedAt)
	}
	id, err := b.LookupHost(ctx(t), "a.example")
	if err != nil || id != c.ID {
		t.Fatalf("LookupHost = %v, %v; want %v", id, err, c.ID)
	}
	unowned := mustCreate(t, b, store.NewCommunity{Host: "b.example:8443"})
	if unowned.OwnerPubKey != "" {
		t.Fatalf("unowned community has owner %q", unowned.OwnerPubKey)
	}
}

func testCreateIdempotent(t *testing.T, b Backend) {
	owner := Key(t)
	c := mustCreate(t, b, store.NewCommunity{Host: "a.example", OwnerPubKey: owner})
	for _, n := range []store.NewCommunity{
		{Host: "a.example", OwnerPubKey: owner},
		{Host: "a.example"},
		{Host: "a.example", OwnerPubKey: owner, MaxPerOwner: 1}, // existing does not count again
	} {
		got, created, err := b.CreateCommunity(ctx(t), n)
		if err != nil || created || got.ID != c.ID || got.OwnerPubKey != owner {
			t.Fatalf("repeat %+v = %+v, created %v, %v; want existing %v", n, got, created, err, c.ID)
		}
	}
	_, _, err := b.CreateCommunity(ctx(t), store.NewCommunity{Host: "a.example", OwnerPubKey: Key(t)})
	if !errors.Is(err, store.ErrOwnerConflict) {
		t.Fatalf("create for another owner: %v; want ErrOwnerConflict", err)
	}
	// Archived communities still hold their host.
	if _, _, err := b.SetArchived(ctx(t), c.ID, owner, true, 0); err != nil {
		t.Fatal(err)
	}
	got, created, err := b.CreateCommunity(ctx(t), store.NewCommunity{Host: "a.example", OwnerPubKey: owner})
	if err != nil || created || got.ID != c.ID || !got.Archived() {
		t.Fatalf("create over archived = %+v, %v, %v", got, created, err)
	}
}

func testCreateOnly(t *testing.T, b Backend) {
	owner := Key(t)
	mustCreate(t, b, store.NewCommunity{Host: "a.example", OwnerPubKey: owner, CreateOnly: true})
	for _, o := range []string{owner, "", Key(t)} {
		_, _, err := b.CreateCommunity(ctx(t), store.NewCommunity{Host: "a.example", OwnerPubKey: o, CreateOnly: true})
		if !errors.Is(err, store.ErrCommunityExists) {
			t.Fatalf("create_only over existing (owner %q): %v; want ErrCommunityExists", o, err)
		}
	}
	owned, err := b.OwnedCommunities(ctx(t), owner)
	if err != nil || len(owned) != 1 {
		t.Fatalf("owned = %v, %v; want exactly one", owned, err)
	}
}

func testCreateInvalidHost(t *testing.T, b Backend) {
	for _, h := range []string{"", "A.example", "a.example:443", "a.example.", "https://a.example", "a.example/x", "u@a.example", "a_b.example", "a..example", "127.0.0.1", " a.example"} {
		_, _, err := b.CreateCommunity(ctx(t), store.NewCommunity{Host: h})
		if !errors.Is(err, store.ErrInvalidHost) {
			t.Errorf("CreateCommunity(%q): %v; want ErrInvalidHost", h, err)
		}
		if h != "" {
			if _, err := b.CommunityByHost(ctx(t), h); !errors.Is(err, store.ErrNoCommunity) {
				t.Errorf("CommunityByHost(%q) after refused create: %v", h, err)
			}
		}
	}
}

func testQuota(t *testing.T, b Backend) {
	owner := Key(t)
	a := mustCreate(t, b, store.NewCommunity{Host: "a.example", OwnerPubKey: owner, MaxPerOwner: 2})
	mustCreate(t, b, store.NewCommunity{Host: "b.example", OwnerPubKey: owner, MaxPerOwner: 2})
	_, _, err := b.CreateCommunity(ctx(t), store.NewCommunity{Host: "c.example", OwnerPubKey: owner, MaxPerOwner: 2})
	if !errors.Is(err, store.ErrCommunityLimit) {
		t.Fatalf("third community: %v; want ErrCommunityLimit", err)
	}
	if _, err := b.CommunityByHost(ctx(t), "c.example"); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("refused community exists: %v", err)
	}
	// Another owner and unowned creates are unaffected; 0 is no bound.
	mustCreate(t, b, store.NewCommunity{Host: "c.example", OwnerPubKey: Key(t), MaxPerOwner: 2})
	mustCreate(t, b, store.NewCommunity{Host: "d.example", MaxPerOwner: 1})
	mustCreate(t, b, store.NewCommunity{Host: "e.example", OwnerPubKey: owner})
	// Archived communities do not count.
	if _, _, err := b.SetArchived(ctx(t), a.ID, owner, true, 0); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, store.NewCommunity{Host: "f.example", OwnerPubKey: owner, MaxPerOwner: 3})
}

func testQuotaConcurrent(t *testing.T, b Backend) {
	owner := Key(t)
	const n, max = 8, 3
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		limited int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := b.CreateCommunity(context.Background(), store.NewCommunity{
				Host: fmt.Sprintf("q%d.example", i), OwnerPubKey: owner, MaxPerOwner: max})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && ok:
				created++
			case errors.Is(err, store.ErrCommunityLimit):
				limited++
			default:
				t.Errorf("create %d: created %v, %v", i, ok, err)
			}
		}()
	}
	wg.Wait()
	if created != max || limited != n-max {
		t.Fatalf("created %d, limited %d; want %d and %d", created, limited, max, n-max)
	}
	owned, err := b.OwnedCommunities(ctx(t), owner)
	if err != nil || len(owned) != max {
		t.Fatalf("owned %d, %v; want %d", len(owned), err, max)
	}
}

func testCreateSameHostConcurrent(t *testing.T, b Backend) {
	const n = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[tenant.CommunityID]bool{}
		created int
		exists  int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, ok, err := b.CreateCommunity(context.Background(), store.NewCommunity{Host: "race.example", CreateOnly: i%2 == 0})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, store.ErrCommunityExists):
				exists++
			case err != nil:
				t.Errorf("create: %v", err)
			default:
				ids[c.ID] = true
				if ok {
					created++
				}
			}
		}()
	}
	wg.Wait()
	if created != 1 || len(ids) != 1 {
		t.Fatalf("created %d times, %d distinct ids; want exactly one community", created, len(ids))
	}
}

func testOwned(t *testing.T, b Backend) {
	owner, other := Key(t), Key(t)
	got, err := b.OwnedCommunities(ctx(t), owner)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("owned of a fresh key = %#v, %v; want empty non-nil", got, err)
	}
	a := mustCreate(t, b, store.NewCommunity{Host: "a.example", OwnerPubKey: owner})
	mustCreate(t, b, store.NewCommunity{Host: "x.example", OwnerPubKey: other})
	c := mustCreate(t, b, store.NewCommunity{Host: "c.example", OwnerPubKey: owner})
	if _, _, err := b.SetArchived(ctx(t), c.ID, owner, true, 0); err != nil {
		t.Fatal(err)
	}
	got, err = b.OwnedCommunities(ctx(t), owner)
	if err != nil || len(got) != 2 || got[0].ID != a.ID || got[1].ID != c.ID || got[0].Archived() || !got[1].Archived() {
		t.Fatalf("owned = %+v, %v; want a.example then archived c.example", got, err)
	}
}

func testByHostAndAliases(t *testing.T, b Backend) {
	c := mustCreate(t, b, store.NewCommunity{Host: "a.example"})
	if _, err := b.CommunityByHost(ctx(t), "nope.example"); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("unknown host: %v", err)
	}
	if err := b.AddHostAlias(ctx(t), "alias.example", c.ID); err != nil {
		t.Fatal(err)
	}
	got, err := b.CommunityByHost(ctx(t), "alias.example")
	if err != nil || got.ID != c.ID || got.Host != "a.example" {
		t.Fatalf("by alias = %+v, %v", got, err)
	}
	if id, err := b.LookupHost(ctx(t), "alias.example"); err != nil || id != c.ID {
		t.Fatalf("LookupHost(alias) = %v, %v", id, err)
	}
	if err := b.AddHostAlias(ctx(t), "a.example", c.ID); !errors.Is(err, store.ErrCommunityExists) {
		t.Fatalf("alias equal to a host: %v", err)
	}
	if err := b.AddHostAlias(ctx(t), "alias.example", c.ID); !errors.Is(err, store.ErrCommunityExists) {
		t.Fatalf("duplicate alias: %v", err)
	}
	if err := b.AddHostAlias(ctx(t), "other.example", tenant.NewCommunityID()); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("alias of an unknown community: %v", err)
	}
	if err := b.AddHostAlias(ctx(t), "Bad.example", c.ID); !errors.Is(err, store.ErrInvalidHost) {
		t.Fatalf("invalid alias: %v", err)
	}
	// An alias is taken: creating it finds the aliased community.
	if _, _, err := b.CreateCommunity(ctx(t), store.NewCommunity{Host: "alias.example", CreateOnly: true}); !errors.Is(err, store.ErrCommunityExists) {
		t.Fatalf("create_only over an alias: %v", err)
	}
	got, created, err := b.CreateCommunity(ctx(t), store.NewCommunity{Host: "alias.example"})
	if err != nil || created || got.ID != c.ID {
		t.Fatalf("create over an alias = %+v, %v, %v", got, created, err)
	}
}

func testArchive(t *testing.T, b Backend) {
	owner := Key(t)
	c := mustCreate(t, b, store.NewCommunity{Host: "a.example", OwnerPubKey: owner})
	if err := b.AddHostAlias(ctx(t), "alias.example", c.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.SetArchived(ctx(t), c.ID, Key(t), true, 0); !errors.Is(err, store.ErrOwnerConflict) {
		t.Fatalf("archive by another owner: %v", err)
	}
	if _, _, err := b.SetArchived(ctx(t), c.ID, "", true, 0); !errors.Is(err, store.ErrOwnerConflict) {
		t.Fatalf("archive naming no owner: %v", err)
	}
	if _, _, err := b.SetArchived(ctx(t), tenant.NewCommunityID(), owner, true, 0); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("archive unknown: %v", err)
	}
	if id, err := b.LookupHost(ctx(t), "a.example"); err != nil || id != c.ID {
		t.Fatalf("refused archive changed resolution: %v, %v", id, err)
	}
	got, changed, err := b.SetArchived(ctx(t), c.ID, owner, true, 0)
	if err != nil || !changed || !got.Archived() || got.ID != c.ID {
		t.Fatalf("archive = %+v, %v, %v", got, changed, err)
	}
	for _, h := range []string{"a.example", "alias.example"} {
		if _, err := b.LookupHost(ctx(t), h); !errors.Is(err, tenant.ErrUnmappedHost) {
			t.Fatalf("LookupHost(%s) of archived: %v; want ErrUnmappedHost", h, err)
		}
	}
	if byHost, err := b.CommunityByHost(ctx(t), "a.example"); err != nil || !byHost.Archived() {
		t.Fatalf("CommunityByHost of archived = %+v, %v", byHost, err)
	}
	if byID, err := b.CommunityByID(ctx(t), c.ID); err != nil || !byID.Archived() || byID.Host != "a.example" {
		t.Fatalf("CommunityByID of archived = %+v, %v", byID, err)
	}
	if _, err := b.CommunityByID(ctx(t), tenant.NewCommunityID()); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("CommunityByID of unknown: %v; want ErrNoCommunity", err)
	}
	again, changed, err := b.SetArchived(ctx(t), c.ID, owner, true, 0)
	if err != nil || changed || !again.ArchivedAt.Equal(got.ArchivedAt) {
		t.Fatalf("archive again = %+v, %v, %v; want unchanged", again, changed, err)
	}
	un, changed, err := b.SetArchived(ctx(t), c.ID, owner, false, 0)
	if err != nil || !changed || un.Archived() {
		t.Fatalf("unarchive = %+v, %v, %v", un, changed, err)
	}
	for _, h := range []string{"a.example", "alias.example"} {
		if id, err := b.LookupHost(ctx(t), h); err != nil || id != c.ID {
			t.Fatalf("LookupHost(%s) after unarchive = %v, %v", h, id, err)
		}
	}
	if _, changed, err := b.SetArchived(ctx(t), c.ID, owner, false, 0); err != nil || changed {
		t.Fatalf("unarchive again: %v, %v", changed, err)
	}
	// An unowned community is archived by naming no owner.
	u := mustCreate(t, b, store.NewCommunity{Host: "u.example"})
	if _, changed, err := b.SetArchived(ctx(t), u.ID, "", true, 0); err != nil || !changed {
		t.Fatalf("archive unowned: %v, %v", changed, err)
	}
}

func testUnarchiveQuota(t *testing.T, b Backend) {
	owner := Key(t)
	a := mustCreate(t, b, store.NewCommunity{Host: "a.example", OwnerPubKey: owner})
	if _, _, err := b.SetArchived(ctx(t), a.ID, owner, true, 0); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, store.NewCommunity{Host: "b.example", OwnerPubKey: owner, MaxPerOwner: 1})
	if _, _, err := b.SetArchived(ctx(t), a.ID, owner, false, 1); !errors.Is(err, store.ErrCommunityLimit) {
		t.Fatalf("unarchive over quota: %v", err)
	}
	if _, err := b.LookupHost(ctx(t), "a.example"); !errors.Is(err, tenant.ErrUnmappedHost) {
		t.Fatalf("refused unarchive changed resolution: %v", err)
	}
	if _, changed, err := b.SetArchived(ctx(t), a.ID, owner, false, 2); err != nil || !changed {
		t.Fatalf("unarchive within quota: %v, %v", changed, err)
	}
}

func testTransfer(t *testing.T, b Backend) {
	alice, bob, carol := Key(t), Key(t), Key(t)
	c := mustCreate(t, b, store.NewCommunity{Host: "a.example", OwnerPubKey: alice})
	id := c.ID.UUID()
	if _, _, _, err := b.TransferCommunity(ctx(t), id, bob, carol, 0); !errors.Is(err, store.ErrOwnerConflict) {
		t.Fatalf("wrong expected owner: %v", err)
	}
	if _, _, _, err := b.TransferCommunity(ctx(t), id, bob, "", 0); !errors.Is(err, store.ErrOwnerConflict) {
		t.Fatalf("expected no owner: %v", err)
	}
	if _, _, _, err := b.TransferCommunity(ctx(t), tenant.NewCommunityID().UUID(), bob, alice, 0); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("unknown community: %v", err)
	}
	got, prev, changed, err := b.TransferCommunity(ctx(t), id, bob, alice, 0)
	if err != nil || !changed || prev != alice || got.OwnerPubKey != bob {
		t.Fatalf("transfer = %+v, prev %q, %v, %v", got, prev, changed, err)
	}
	// A retry with the now stale guard is a no-op, not a conflict.
	got, prev, changed, err = b.TransferCommunity(ctx(t), id, bob, alice, 0)
	if err != nil || changed || prev != bob || got.OwnerPubKey != bob {
		t.Fatalf("repeat = %+v, prev %q, %v, %v; want already owner", got, prev, changed, err)
	}
	if owned, _ := b.OwnedCommunities(ctx(t), alice); len(owned) != 0 {
		t.Fatalf("previous owner still lists %d communities", len(owned))
	}
	// Quota of the new owner.
	mustCreate(t, b, store.NewCommunity{Host: "c.example", OwnerPubKey: carol})
	if _, _, _, err := b.TransferCommunity(ctx(t), id, carol, bob, 1); !errors.Is(err, store.ErrCommunityLimit) {
		t.Fatalf("transfer over quota: %v", err)
	}
	// An unowned community is claimed with expected owner "".
	u := mustCreate(t, b, store.NewCommunity{Host: "u.example"})
	if _, prev, changed, err := b.TransferCommunity(ctx(t), u.ID.UUID(), alice, "", 0); err != nil || !changed || prev != "" {
		t.Fatalf("claim unowned: %q, %v, %v", prev, changed, err)
	}
}

func testTransferConcurrent(t *testing.T, b Backend) {
	alice := Key(t)
	c := mustCreate(t, b, store.NewCommunity{Host: "a.example", OwnerPubKey: alice})
	const n = 6
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		won       []string
		conflicts int
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			to := Key(t)
			_, prev, changed, err := b.TransferCommunity(context.Background(), c.ID.UUID(), to, alice, 0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && changed && prev == alice:
				won = append(won, to)
			case errors.Is(err, store.ErrOwnerConflict):
				conflicts++
			default:
				t.Errorf("transfer: prev %q changed %v, %v", prev, changed, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 || conflicts != n-1 {
		t.Fatalf("%d transfers won, %d conflicts; want 1 and %d", len(won), conflicts, n-1)
	}
	got, err := b.CommunityByHost(ctx(t), "a.example")
	if err != nil || got.OwnerPubKey != won[0] {
		t.Fatalf("owner = %q, %v; want the winner", got.OwnerPubKey, err)
	}
}
