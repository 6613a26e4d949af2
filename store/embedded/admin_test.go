package embedded_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/operator/optest"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
)

var _ operator.Store = (*embedded.Store)(nil)

func TestOperatorStore(t *testing.T) {
	optest.Run(t, func(t *testing.T) optest.Backend {
		s, err := embedded.Open(context.Background(), filepath.Join(t.TempDir(), "admin.db"))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestOperatorStateSurvivesReopen checks that owner, archive state and
// aliases are durable.
func TestOperatorStateSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "admin.db")
	s, err := embedded.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	owner := optest.Key(t)
	c, _, err := s.CreateCommunity(ctx, storeNew("a.example", owner))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddHostAlias(ctx, "alias.example", c.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SetArchived(ctx, c.ID, owner, true, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = embedded.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.CommunityByHost(ctx, "alias.example")
	if err != nil || got.ID != c.ID || got.OwnerPubKey != owner || !got.Archived() {
		t.Fatalf("after reopen = %+v, %v", got, err)
	}
}

func storeNew(host, owner string) store.NewCommunity {
	return store.NewCommunity{Host: host, OwnerPubKey: owner}
}

func TestHostAliases(t *testing.T) {
	optest.RunAliases(t, func(t *testing.T) optest.AliasBackend {
		s, err := embedded.Open(context.Background(), filepath.Join(t.TempDir(), "aliases.db"))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
