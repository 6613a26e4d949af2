package nip98

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

func eventID() string { return randHex(32) }

func TestReplayScope(t *testing.T) {
	c := tenant.NewCommunityID()
	if s := CommunityScope(c); s.String() != c.String() || s.IsZero() {
		t.Fatalf("community scope %q", s.String())
	}
	if s := OperatorScope(); s.String() != OperatorScopeName || s.IsZero() {
		t.Fatalf("operator scope %q", s.String())
	}
	if s := (ReplayScope{}); !s.IsZero() || s.String() != "" {
		t.Fatal("zero scope is not zero")
	}
	if !CommunityScope(tenant.CommunityID{}).IsZero() {
		t.Fatal("scope of the zero community is not zero")
	}
	if CommunityScope(c) == OperatorScope() || CommunityScope(c) == CommunityScope(tenant.NewCommunityID()) {
		t.Fatal("distinct scopes compare equal")
	}
}

func TestMemoryGuardExpiryAndClamp(t *testing.T) {
	now := testNow
	g, err := NewMemoryGuard(10, WithMemoryClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := communityScope()
	short, long, mid := eventID(), eventID(), eventID()
	for id, ttl := range map[string]time.Duration{short: time.Second, long: 10 * time.Hour, mid: 300 * time.Second} {
		if err := g.Mark(ctx, s, id, ttl); err != nil {
			t.Fatal(err)
		}
	}
	check := func(id string, replay bool) {
		t.Helper()
		err := g.Mark(ctx, s, id, time.Second)
		if replay && !errors.Is(err, ErrReplayed) {
			t.Fatalf("at +%v: %v, want ErrReplayed", now.Sub(testNow), err)
		}
		if !replay && err != nil {
			t.Fatalf("at +%v: %v, want a fresh mark", now.Sub(testNow), err)
		}
	}
	// A 1 s TTL is raised to MinReplayTTL.
	now = testNow.Add(MinReplayTTL - time.Second)
	check(short, true)
	now = testNow.Add(MinReplayTTL)
	check(short, false) // expired exactly at the floor, so a fresh mark
	now = testNow.Add(300*time.Second - time.Second)
	check(mid, true)
	now = testNow.Add(300 * time.Second)
	check(mid, false)
	// A 10 h TTL is cut to MaxReplayTTL.
	now = testNow.Add(MaxReplayTTL - time.Second)
	check(long, true)
	now = testNow.Add(MaxReplayTTL)
	check(long, false)
}

func TestMemoryGuardFullFailsClosed(t *testing.T) {
	now := testNow
	g, err := NewMemoryGuard(3, WithMemoryClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := communityScope()
	ids := []string{eventID(), eventID(), eventID()}
	for i, id := range ids {
		ttl := MinReplayTTL
		if i == 0 {
			ttl = 2 * MinReplayTTL
		}
		if err := g.Mark(ctx, s, id, ttl); err != nil {
			t.Fatal(err)
		}
	}
	// Full of live ids: refuse, and evict nothing.
	if err := g.Mark(ctx, s, eventID(), time.Minute); !errors.Is(err, ErrReplayUnavailable) {
		t.Fatalf("full guard: %v, want ErrReplayUnavailable", err)
	}
	if err := g.Mark(ctx, communityScope(), eventID(), time.Minute); !errors.Is(err, ErrReplayUnavailable) {
		t.Fatalf("full guard, other scope: %v, want ErrReplayUnavailable", err)
	}
	for _, id := range ids {
		if err := g.Mark(ctx, s, id, time.Minute); !errors.Is(err, ErrReplayed) {
			t.Fatalf("a live id was evicted: %v", err)
		}
	}
	// Once two entries expire, their room is reclaimed; the live one stays.
	now = testNow.Add(MinReplayTTL)
	if err := g.Mark(ctx, s, eventID(), time.Minute); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if got := g.Len(); got != 2 {
		t.Fatalf("Len = %d, want 2", got)
	}
	if err := g.Mark(ctx, s, ids[0], time.Minute); !errors.Is(err, ErrReplayed) {
		t.Fatalf("the still-live id: %v, want ErrReplayed", err)
	}
}

func TestNewMemoryGuardRejectsBadOptions(t *testing.T) {
	if _, err := NewMemoryGuard(0); err == nil {
		t.Fatal("capacity 0 accepted")
	}
	if _, err := NewMemoryGuard(1, WithMemoryClock(nil)); err == nil {
		t.Fatal("nil clock accepted")
	}
	if _, err := NewMemoryGuard(1, nil); err == nil {
		t.Fatal("nil option accepted")
	}
}
