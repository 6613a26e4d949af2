package ratelimit

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

var (
	pk1 = strings.Repeat("a1", 32)
	pk2 = strings.Repeat("b2", 32)
)

func mustAllow(tb testing.TB, l Limiter, k Key, want bool) Decision {
	tb.Helper()
	d, err := l.Allow(context.Background(), k)
	if err != nil {
		tb.Fatalf("Allow: %v", err)
	}
	if d.Allowed != want {
		tb.Fatalf("Allow(%s/%s) = %v, want %v", k.PubKey[:4], k.Class, d.Allowed, want)
	}
	return d
}

func TestMemoryWindowSlides(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	l, err := NewMemory(Tiers{TierHuman: {ClassMessage: {2, 10 * time.Second}}}, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Community: tenant.NewCommunityID(), PubKey: pk1, Class: ClassMessage}
	mustAllow(t, l, k, true)
	advance(4 * time.Second)
	mustAllow(t, l, k, true)
	if d := mustAllow(t, l, k, false); d.RetryAfter != 6*time.Second {
		t.Fatalf("RetryAfter = %v, want 6s (the first action leaves the window)", d.RetryAfter)
	}
	advance(6 * time.Second)
	mustAllow(t, l, k, true) // the first action slid out
	mustAllow(t, l, k, false)
	advance(4 * time.Second)
	mustAllow(t, l, k, true) // the second one slid out

	// Idle keys are swept.
	advance(time.Hour)
	for i := 0; i < sweepEvery; i++ {
		mustAllow(t, l, Key{Community: tenant.NewCommunityID(), PubKey: pk2, Class: ClassMessage}, true)
	}
	l.mu.Lock()
	n := len(l.windows)
	l.mu.Unlock()
	if n > sweepEvery {
		t.Fatalf("idle windows not swept: %d", n)
	}
}

func TestConstructorsValidate(t *testing.T) {
	for _, bad := range []Tiers{
		{},
		{TierAgent: {ClassMessage: {1, time.Second}}},
		{TierHuman: {ClassMessage: {0, time.Second}}},
		{TierHuman: {ClassMessage: {1, 0}}},
		{TierHuman: {ClassMessage: {1, 48 * time.Hour}}},
	} {
		if _, err := NewMemory(bad); err == nil {
			t.Fatalf("NewMemory(%v) accepted", bad)
		}
	}
	if err := DefaultTiers().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMemory(DefaultTiers(), WithClock(nil)); err == nil {
		t.Fatal("nil clock accepted")
	}
}

func BenchmarkMemoryAllow(b *testing.B) {
	l, _ := NewMemory(Tiers{TierHuman: {ClassMessage: {100, time.Second}}})
	k := Key{Community: tenant.NewCommunityID(), PubKey: pk1, Class: ClassMessage}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = l.Allow(context.Background(), k)
	}
}
