// Package replaytest is the conformance suite of nip98.ReplayGuard
// implementations: what nip98.MemoryGuard and redisreplay.Guard share, for
// any other guard to be checked against. It imports nip98, tenant and the
// standard library only.
package replaytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/tenant"
)

// EventID returns a fresh random event id (64 lowercase hex characters).
func EventID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run checks g: a second Mark of an id in one scope is nip98.ErrReplayed,
// scopes (communities, the operator scope) are independent, invalid input
// is refused without being a replay, and of concurrent Marks of one id
// exactly one succeeds.
func Run(t *testing.T, g nip98.ReplayGuard) {
	ctx := context.Background()
	a, b := nip98.CommunityScope(tenant.NewCommunityID()), nip98.CommunityScope(tenant.NewCommunityID())

	t.Run("replay in the same scope", func(t *testing.T) {
		id := EventID()
		if err := g.Mark(ctx, a, id, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := g.Mark(ctx, a, id, time.Minute); !errors.Is(err, nip98.ErrReplayed) {
			t.Fatalf("second Mark: %v, want ErrReplayed", err)
		}
	})
	t.Run("another community is not a replay", func(t *testing.T) {
		id := EventID()
		for _, s := range []nip98.ReplayScope{a, b, nip98.OperatorScope()} {
			if err := g.Mark(ctx, s, id, time.Minute); err != nil {
				t.Fatalf("scope %s: %v", s, err)
			}
		}
		for _, s := range []nip98.ReplayScope{a, b, nip98.OperatorScope()} {
			if err := g.Mark(ctx, s, id, time.Minute); !errors.Is(err, nip98.ErrReplayed) {
				t.Fatalf("scope %s replay: %v", s, err)
			}
		}
	})
	t.Run("refuses bad input", func(t *testing.T) {
		if err := g.Mark(ctx, nip98.ReplayScope{}, EventID(), time.Minute); err == nil || errors.Is(err, nip98.ErrReplayed) {
			t.Fatalf("zero scope: %v", err)
		}
		for _, id := range []string{"", "abc", strings.Repeat("A", 64), strings.Repeat("g", 64), strings.Repeat("a", 65)} {
			if err := g.Mark(ctx, a, id, time.Minute); err == nil {
				t.Fatalf("id %q accepted", id)
			}
		}
	})
	t.Run("concurrent marks: exactly one wins", func(t *testing.T) {
		id := EventID()
		var ok, replayed atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch err := g.Mark(ctx, a, id, time.Minute); {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, nip98.ErrReplayed):
					replayed.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 1 || replayed.Load() != 15 {
			t.Fatalf("%d succeeded, %d replayed; want 1 and 15", ok.Load(), replayed.Load())
		}
	})
}
