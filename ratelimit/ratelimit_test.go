package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/testenv"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/tenant"
)

func needRedis(tb testing.TB) { testenv.NeedRedis(tb) }

func randomNS() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

func newClient(tb testing.TB) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{testenv.RedisAddr()}, DisableCache: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

func newRedisLimiter(tb testing.TB, ns string, tiers Tiers) *Redis {
	tb.Helper()
	l, err := NewRedis(newClient(tb), tiers, WithNamespace(ns))
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

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

func smallTiers() Tiers {
	return Tiers{
		TierHuman:    {ClassMessage: {3, time.Minute}, ClassAPI: {1, time.Minute}},
		TierPlatform: {ClassMessage: {5, time.Minute}},
	}
}

// conformance runs the behaviour every Limiter shares.
func conformance(t *testing.T, newLimiter func(Tiers) Limiter) {
	l := newLimiter(smallTiers())
	c1, c2 := tenant.NewCommunityID(), tenant.NewCommunityID()
	k := Key{Community: c1, PubKey: pk1, Class: ClassMessage}
	for i := 0; i < 3; i++ {
		d := mustAllow(t, l, k, true)
		if d.Limit != 3 || d.Remaining != 2-i {
			t.Fatalf("decision %d = %+v", i, d)
		}
	}
	d := mustAllow(t, l, k, false)
	if d.RetryAfter <= 0 || d.RetryAfter > time.Minute {
		t.Fatalf("RetryAfter = %v", d.RetryAfter)
	}
	if !strings.HasPrefix(d.Reason(), "rate-limited: ") {
		t.Fatalf("Reason = %q", d.Reason())
	}
	// Independent streams.
	mustAllow(t, l, Key{Community: c2, PubKey: pk1, Class: ClassMessage}, true)
	mustAllow(t, l, Key{Community: c1, PubKey: pk2, Class: ClassMessage}, true)
	mustAllow(t, l, Key{Community: c1, PubKey: pk1, Class: ClassAPI}, true)
	mustAllow(t, l, Key{Community: c1, PubKey: pk1, Class: ClassAPI}, false)
	// A higher tier has more room on the same usage; a class it lacks falls
	// back to the human rule.
	mustAllow(t, l, Key{Community: c1, PubKey: pk1, Class: ClassMessage, Tier: TierPlatform}, true)
	mustAllow(t, l, Key{Community: c1, PubKey: pk1, Class: ClassAPI, Tier: TierPlatform}, false)

	for _, bad := range []Key{
		{PubKey: pk1, Class: ClassMessage},
		{Community: c1, PubKey: "AB", Class: ClassMessage},
		{Community: c1, PubKey: strings.ToUpper(pk1), Class: ClassMessage},
		{Community: c1, PubKey: pk1},
		{Community: c1, PubKey: pk1, Class: "a:b"},
	} {
		if _, err := l.Allow(context.Background(), bad); !errors.Is(err, ErrInvalidKey) {
			t.Fatalf("Allow(%+v) err = %v, want ErrInvalidKey", bad, err)
		}
	}
	if _, err := l.Allow(context.Background(), Key{Community: c1, PubKey: pk1, Class: ClassWS}); !errors.Is(err, ErrNoRule) {
		t.Fatalf("class without a rule: err = %v, want ErrNoRule", err)
	}
}

func TestMemoryConformance(t *testing.T) {
	conformance(t, func(tiers Tiers) Limiter {
		l, err := NewMemory(tiers)
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
}

func TestRedisConformance(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomNS()
	conformance(t, func(tiers Tiers) Limiter { return newRedisLimiter(t, ns, tiers) })
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

func TestRedisSharedAcrossPods(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomNS()
	tiers := Tiers{TierHuman: {ClassMessage: {4, time.Minute}}}
	podA, podB := newRedisLimiter(t, ns, tiers), newRedisLimiter(t, ns, tiers)
	k := Key{Community: tenant.NewCommunityID(), PubKey: pk1, Class: ClassMessage}
	mustAllow(t, podA, k, true)
	mustAllow(t, podA, k, true)
	mustAllow(t, podA, k, true)
	if d := mustAllow(t, podB, k, true); d.Remaining != 0 {
		t.Fatalf("pod B sees remaining %d, want 0 after pod A's 3 actions", d.Remaining)
	}
	mustAllow(t, podB, k, false)
	mustAllow(t, podA, k, false)
	// Other namespaces (deployments) do not share.
	mustAllow(t, newRedisLimiter(t, randomNS(), tiers), k, true)
}

func TestRedisConcurrentAdmissionIsExact(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomNS()
	tiers := Tiers{TierHuman: {ClassMessage: {25, time.Minute}}}
	pods := []*Redis{newRedisLimiter(t, ns, tiers), newRedisLimiter(t, ns, tiers)}
	k := Key{Community: tenant.NewCommunityID(), PubKey: pk1, Class: ClassMessage}
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(l *Redis) {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				d, err := l.Allow(context.Background(), k)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}(pods[i%2])
	}
	wg.Wait()
	if allowed != 25 {
		t.Fatalf("admitted %d of 80 concurrent actions, want exactly 25", allowed)
	}
}

func TestRedisWindowSlides(t *testing.T) {
	needRedis(t)
	t.Parallel()
	const window = 400 * time.Millisecond
	l := newRedisLimiter(t, randomNS(), Tiers{TierHuman: {ClassMessage: {2, window}}})
	k := Key{Community: tenant.NewCommunityID(), PubKey: pk1, Class: ClassMessage}
	mustAllow(t, l, k, true)
	mustAllow(t, l, k, true)
	d := mustAllow(t, l, k, false)
	if d.RetryAfter <= 0 || d.RetryAfter > window {
		t.Fatalf("RetryAfter = %v, want in (0, %v]", d.RetryAfter, window)
	}
	time.Sleep(d.RetryAfter + 50*time.Millisecond)
	mustAllow(t, l, k, true)
}

func TestRedisUnreachableFailsClosed(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a closed port
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true,
	})
	if client == nil {
		t.Fatalf("client: %v", err)
	}
	defer client.Close()
	l, err := NewRedis(client, DefaultTiers())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := l.Allow(ctx, Key{Community: tenant.NewCommunityID(), PubKey: pk1, Class: ClassMessage})
	if !errors.Is(err, ErrUnavailable) || d.Allowed {
		t.Fatalf("Allow with Redis unreachable = %+v, %v; want refusal with ErrUnavailable", d, err)
	}
	if ErrUnavailable.Error() != "rate-limited: shared admission unavailable" {
		t.Fatal("ErrUnavailable text changed")
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
	if _, err := NewRedis(nil, DefaultTiers()); err == nil {
		t.Fatal("nil client accepted")
	}
	if _, err := NewMemory(DefaultTiers(), WithClock(nil)); err == nil {
		t.Fatal("nil clock accepted")
	}
}

func BenchmarkRedisAllow(b *testing.B) {
	needRedis(b)
	l := newRedisLimiter(b, randomNS(), Tiers{TierHuman: {ClassMessage: {1 << 30, time.Second}}})
	k := Key{Community: tenant.NewCommunityID(), PubKey: pk1, Class: ClassMessage}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Allow(context.Background(), k); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkMemoryAllow(b *testing.B) {
	l, _ := NewMemory(Tiers{TierHuman: {ClassMessage: {100, time.Second}}})
	k := Key{Community: tenant.NewCommunityID(), PubKey: pk1, Class: ClassMessage}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = l.Allow(context.Background(), k)
	}
}
