package optest

import (
	"context"
	"errors"
	"testing"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// AliasBackend is a Backend whose host aliases the operator API manages,
// with the audit chains that record alias changes.
type AliasBackend interface {
	Backend
	operator.AliasStore
	store.AuditLog
}

// RunAliases runs the host-alias suite: add and remove, uniqueness across
// hosts and aliases of every community, resolution, and an audit entry per
// change in the community's chain.
func RunAliases(t *testing.T, open func(t *testing.T) AliasBackend) {
	t.Run("AddRemove", func(t *testing.T) { testAliasAddRemove(t, open(t)) })
}

func testAliasAddRemove(t *testing.T, b AliasBackend) {
	ctx := audit.WithActor(context.Background(), Key(t))
	a, _, err := b.CreateCommunity(ctx, store.NewCommunity{Host: "a.example"})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := b.CreateCommunity(ctx, store.NewCommunity{Host: "b.example"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddHostAlias(ctx, "alias.example", a.ID); err != nil {
		t.Fatal(err)
	}
	for _, taken := range []string{"alias.example", "b.example"} {
		if err := b.AddHostAlias(ctx, taken, other.ID); !errors.Is(err, store.ErrCommunityExists) {
			t.Fatalf("alias %s taken: %v, want ErrCommunityExists", taken, err)
		}
	}
	if id, err := b.LookupHost(ctx, "alias.example"); err != nil || id != a.ID {
		t.Fatalf("LookupHost(alias) = %v, %v", id, err)
	}
	id, err := b.RemoveHostAlias(ctx, "alias.example")
	if err != nil || id != a.ID {
		t.Fatalf("remove = %v, %v", id, err)
	}
	if _, err := b.LookupHost(ctx, "alias.example"); !errors.Is(err, tenant.ErrUnmappedHost) {
		t.Fatalf("LookupHost after removal: %v", err)
	}
	if _, err := b.RemoveHostAlias(ctx, "alias.example"); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("second remove: %v", err)
	}
	if _, err := b.RemoveHostAlias(ctx, "a.example"); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("removing a primary host as an alias: %v", err)
	}
	// Now free: another community may take it.
	if err := b.AddHostAlias(ctx, "alias.example", other.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.SyncAudit(ctx); err != nil {
		t.Fatal(err)
	}
	count := func(c tenant.CommunityID, action audit.Action) int {
		es, err := b.AuditEntries(ctx, c, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range es {
			if e.Action == action && e.Object == c.String() && e.Actor == audit.ActorFrom(ctx) {
				n++
			}
		}
		return n
	}
	if count(a.ID, store.AuditAliasAdded) != 1 || count(a.ID, store.AuditAliasRemoved) != 1 || count(other.ID, store.AuditAliasAdded) != 1 {
		t.Fatalf("audit: a added %d removed %d, b added %d", count(a.ID, store.AuditAliasAdded),
			count(a.ID, store.AuditAliasRemoved), count(other.ID, store.AuditAliasAdded))
	}
}
