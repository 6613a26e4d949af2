package redislimit

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/ratelimit/ratelimittest"
	"github.com/buzzrelay/buzz/tenant"
)

func needRedis(tb testing.TB) { testenv.NeedRedis(tb) }

func randomNS() string { return testenv.RandomName("t") }

func newLimiter(tb testing.TB, ns string, tiers ratelimit.Tiers) *Limiter {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{testenv.NeedRedis(tb)}, DisableCache: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	l, err := New(c, tiers, WithNamespace(ns))
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func TestConformance(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomNS()
	ratelimittest.Run(t, func(tiers ratelimit.Tiers) ratelimit.Limiter { return newLimiter(t, ns, tiers) })
}

func TestNewValidates(t *testing.T) {
	if _, err := New(nil, ratelimit.DefaultTiers()); err == nil {
		t.Fatal("nil client accepted")
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{testenv.NeedRedis(t)}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := New(c, ratelimit.Tiers{}); err == nil {
		t.Fatal("empty tiers accepted")
	}
	for name, o := range map[string]Option{
		"empty namespace": WithNamespace(""),
		"bad namespace":   WithNamespace("a:b"),
		"nil option":      nil,
	} {
		if _, err := New(c, ratelimit.DefaultTiers(), o); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestSharedAcrossPods(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomNS()
	tiers := ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassMessage: {Limit: 4, Window: time.Minute}}}
	podA, podB := newLimiter(t, ns, tiers), newLimiter(t, ns, tiers)
	k := ratelimit.Key{Community: tenant.NewCommunityID(), PubKey: ratelimittest.PubKey1, Class: ratelimit.ClassMessage}
	ratelimittest.MustAllow(t, podA, k, true)
	ratelimittest.MustAllow(t, podA, k, true)
	ratelimittest.MustAllow(t, podA, k, true)
	if d := ratelimittest.MustAllow(t, podB, k, true); d.Remaining != 0 {
		t.Fatalf("pod B sees remaining %d, want 0 after pod A's 3 actions", d.Remaining)
	}
	ratelimittest.MustAllow(t, podB, k, false)
	ratelimittest.MustAllow(t, podA, k, false)
	// Other namespaces (deployments) do not share.
	ratelimittest.MustAllow(t, newLimiter(t, randomNS(), tiers), k, true)
}

func TestConcurrentAdmissionIsExact(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomNS()
	tiers := ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassMessage: {Limit: 25, Window: time.Minute}}}
	pods := []*Limiter{newLimiter(t, ns, tiers), newLimiter(t, ns, tiers)}
	k := ratelimit.Key{Community: tenant.NewCommunityID(), PubKey: ratelimittest.PubKey1, Class: ratelimit.ClassMessage}
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(l *Limiter) {
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

func TestWindowSlides(t *testing.T) {
	needRedis(t)
	t.Parallel()
	const window = time.Minute
	ns := randomNS()
	l := newLimiter(t, ns, ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassMessage: {Limit: 2, Window: window}}})
	k := ratelimit.Key{Community: tenant.NewCommunityID(), PubKey: ratelimittest.PubKey1, Class: ratelimit.ClassMessage}
	ratelimittest.MustAllow(t, l, k, true)
	ratelimittest.MustAllow(t, l, k, true)
	d := ratelimittest.MustAllow(t, l, k, false)
	if d.RetryAfter <= 0 || d.RetryAfter > window {
		t.Fatalf("RetryAfter = %v, want in (0, %v]", d.RetryAfter, window)
	}
	// Admissions are timed by the Redis clock: rather than wait a window,
	// move the first one back by a window, so it has left the window now.
	ctx := context.Background()
	key := ns + ":" + k.Community.String() + ":ratelimit:" + k.PubKey + ":" + string(k.Class)
	first, err := l.client.Do(ctx, l.client.B().Zrange().Key(key).Min("0").Max("0").Withscores().Build()).AsZScores()
	if err != nil || len(first) != 1 {
		t.Fatalf("the first admission: %v %v", first, err)
	}
	aged := first[0].Score - float64(window.Microseconds())
	if err := l.client.Do(ctx, l.client.B().Zadd().Key(key).ScoreMember().ScoreMember(aged, first[0].Member).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	ratelimittest.MustAllow(t, l, k, true)
	ratelimittest.MustAllow(t, l, k, false) // the second is still in the window
}

func TestUnreachableFailsClosed(t *testing.T) {
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
	l, err := New(client, ratelimit.DefaultTiers())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := l.Allow(ctx, ratelimit.Key{Community: tenant.NewCommunityID(), PubKey: ratelimittest.PubKey1, Class: ratelimit.ClassMessage})
	if !errors.Is(err, ratelimit.ErrUnavailable) || d.Allowed {
		t.Fatalf("Allow with Redis unreachable = %+v, %v; want refusal with ratelimit.ErrUnavailable", d, err)
	}
	if ratelimit.ErrUnavailable.Error() != "rate-limited: shared admission unavailable" {
		t.Fatal("ratelimit.ErrUnavailable text changed")
	}
}

func BenchmarkAllow(b *testing.B) {
	needRedis(b)
	l := newLimiter(b, randomNS(), ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassMessage: {Limit: 1 << 30, Window: time.Second}}})
	k := ratelimit.Key{Community: tenant.NewCommunityID(), PubKey: ratelimittest.PubKey1, Class: ratelimit.ClassMessage}
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
