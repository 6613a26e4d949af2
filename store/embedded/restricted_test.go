package embedded_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestRestrictionsFound: PubkeyRestrictions finds a restriction however it
// came into the database — a ban through Moderate, a restore
// (RestoreRestriction), or either made before the store was reopened — and
// answers none in a community that never held one.
func TestRestrictionsFound(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	a := storetest.Community(t, s, "banned.example")
	b := storetest.Community(t, s, "restored.example")
	quiet := storetest.Community(t, s, "quiet.example")
	key := func(n int) string { return fmt.Sprintf("%064x", n) }
	mod, target := key(1), key(2)
	now := time.Unix(1_800_000_000, 0)

	check := func(s *embedded.Store, when string) {
		t.Helper()
		for _, c := range []struct {
			name string
			want int
			at   func() (int, error)
		}{
			{"banned", 1, func() (int, error) { rs, err := s.PubkeyRestrictions(ctx, a, target, now); return len(rs), err }},
			{"restored", 1, func() (int, error) { rs, err := s.PubkeyRestrictions(ctx, b, target, now); return len(rs), err }},
			{"quiet", 0, func() (int, error) { rs, err := s.PubkeyRestrictions(ctx, quiet, target, now); return len(rs), err }},
		} {
			if n, err := c.at(); err != nil || n != c.want {
				t.Fatalf("%s: %s community: %d restrictions, %v; want %d", when, c.name, n, err, c.want)
			}
		}
	}

	// Both communities are asked about before they hold anything.
	if rs, err := s.PubkeyRestrictions(ctx, a, target, now); err != nil || len(rs) != 0 {
		t.Fatalf("before the ban: %+v, %v", rs, err)
	}
	if rs, err := s.PubkeyRestrictions(ctx, b, target, now); err != nil || len(rs) != 0 {
		t.Fatalf("before the restore: %+v, %v", rs, err)
	}
	if _, err := s.Moderate(ctx, a, store.ModerationAction{Action: store.ActionBan, Actor: mod, Target: target, Reason: "spam"}, now); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RestoreRestriction(ctx, b, store.Restriction{PubKey: target, Kind: store.RestrictionBan, Actor: mod, Reason: "restored", CreatedAt: now}); err != nil || !ok {
		t.Fatalf("restore = %v, %v", ok, err)
	}
	check(s, "after the writes")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	check(s2, "after reopening")
}
