package postgres_test

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/operator/optest"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

var _ operator.Store = (*postgres.Store)(nil)

// TestOperatorStore runs the operator registry suite, each subtest on a
// fresh database, as the RLS role buzzd uses.
func TestOperatorStore(t *testing.T) {
	optest.Run(t, func(t *testing.T) optest.Backend {
		s, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestHostAliases runs the host-alias suite as the RLS role buzzd uses.
func TestHostAliases(t *testing.T) {
	optest.RunAliases(t, func(t *testing.T) optest.AliasBackend {
		s, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
