package nip98

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

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

// guardSuite runs the behaviour every ReplayGuard shares.
func guardSuite(t *testing.T, g ReplayGuard) {
	ctx := context.Background()
	a, b := communityScope(), communityScope()

	t.Run("replay in the same scope", func(t *testing.T) {
		id := eventID()
		if err := g.Mark(ctx, a, id, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := g.Mark(ctx, a, id, time.Minute); !errors.Is(err, ErrReplayed) {
			t.Fatalf("second Mark: %v, want ErrReplayed", err)
		}
	})
	t.Run("another community is not a replay", func(t *testing.T) {
		id := eventID()
		for _, s := range []ReplayScope{a, b, OperatorScope()} {
			if err := g.Mark(ctx, s, id, time.Minute); err != nil {
				t.Fatalf("scope %s: %v", s, err)
			}
		}
		for _, s := range []ReplayScope{a, b, OperatorScope()} {
			if err := g.Mark(ctx, s, id, time.Minute); !errors.Is(err, ErrReplayed) {
				t.Fatalf("scope %s replay: %v", s, err)
			}
		}
	})
	t.Run("refuses bad input", func(t *testing.T) {
		if err := g.Mark(ctx, ReplayScope{}, eventID(), time.Minute); err == nil || errors.Is(err, ErrReplayed) {
			t.Fatalf("zero scope: %v", err)
		}
		for _, id := range []string{"", "abc", strings.Repeat("A", 64), strings.Repeat("g", 64), strings.Repeat("a", 65)} {
			if err := g.Mark(ctx, a, id, time.Minute); err == nil {
				t.Fatalf("id %q accepted", id)
			}
		}
	})
	t.Run("concurrent marks: exactly one wins", func(t *testing.T) {
		id := eventID()
		var ok, replayed atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch err := g.Mark(ctx, a, id, time.Minute); {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, ErrReplayed):
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

func TestMemoryGuard(t *testing.T) {
	g, err := NewMemoryGuard(1000)
	if err != nil {
		t.Fatal(err)
	}
	guardSuite(t, g)
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

func TestRedisGuard(t *testing.T) {
	c := newRedisClient(t)
	guardSuite(t, newRedisGuard(t, c, randomNS()))
}

func TestRedisGuardKeyAndTTL(t *testing.T) {
	c := newRedisClient(t)
	ns := randomNS()
	g := newRedisGuard(t, c, ns)
	ctx := context.Background()
	comm := tenant.NewCommunityID()
	s := CommunityScope(comm)
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{{time.Second, 120}, {300 * time.Second, 300}, {10 * time.Hour, 3600}} {
		id := eventID()
		if err := g.Mark(ctx, s, id, tc.ttl); err != nil {
			t.Fatal(err)
		}
		key := ns + ":" + comm.String() + ":nip98:" + id
		if g.Key(s, id) != key {
			t.Fatalf("Key = %q, want %q", g.Key(s, id), key)
		}
		got, err := c.Do(ctx, c.B().Ttl().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if got > tc.want || got < tc.want-5 {
			t.Fatalf("TTL for %v = %d s, want %d", tc.ttl, got, tc.want)
		}
	}
	id := eventID()
	if err := g.Mark(ctx, OperatorScope(), id, time.Minute); err != nil {
		t.Fatal(err)
	}
	n, err := c.Do(ctx, c.B().Exists().Key(ns+":operator-management:nip98:"+id).Build()).AsInt64()
	if err != nil || n != 1 {
		t.Fatalf("operator key exists = %d, %v", n, err)
	}
}

// TestRedisGuardAcrossPods uses two clients, as two buzzd processes would.
func TestRedisGuardAcrossPods(t *testing.T) {
	ns := randomNS()
	podA := newRedisGuard(t, newRedisClient(t), ns)
	podB := newRedisGuard(t, newRedisClient(t), ns)
	ctx := context.Background()
	s := communityScope()
	id := eventID()
	if err := podA.Mark(ctx, s, id, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := podB.Mark(ctx, s, id, time.Minute); !errors.Is(err, ErrReplayed) {
		t.Fatalf("pod B: %v, want ErrReplayed", err)
	}
	if err := podB.Mark(ctx, communityScope(), id, time.Minute); err != nil {
		t.Fatalf("pod B, other community: %v", err)
	}
}

func TestRedisGuardUnavailableFailsClosed(t *testing.T) {
	ctx := context.Background()
	t.Run("cancelled context", func(t *testing.T) {
		g := newRedisGuard(t, newRedisClient(t), randomNS())
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := g.Mark(cancelled, communityScope(), eventID(), time.Minute); !errors.Is(err, ErrReplayUnavailable) {
			t.Fatalf("cancelled context: %v, want ErrReplayUnavailable", err)
		}
	})
	t.Run("redis goes away", func(t *testing.T) {
		proxy := startRedisProxy(t)
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.addr()}, DisableCache: true, DisableRetry: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		g, err := NewRedisGuard(c, WithNamespace(randomNS()), WithTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		sk := newKey(t)
		v := newVerifier(t, WithReplayGuard(g))
		req := Request{Authorization: baseToken(testURL, "GET").header(t, sk), Method: "GET", URL: testURL, Scope: communityScope()}
		if _, err := v.Verify(ctx, req); err != nil {
			t.Fatalf("through the proxy while Redis is up: %v", err)
		}

		proxy.stop()
		for i := 0; i < 3; i++ {
			if err := g.Mark(ctx, communityScope(), eventID(), time.Minute); !errors.Is(err, ErrReplayUnavailable) {
				t.Fatalf("Mark %d with Redis down: %v, want ErrReplayUnavailable", i, err)
			}
		}
		req.Authorization = baseToken(testURL, "GET").header(t, sk)
		_, err = v.Verify(ctx, req)
		if !errors.Is(err, ErrReplayUnavailable) {
			t.Fatalf("Verify with Redis down: %v, want ErrReplayUnavailable", err)
		}
		assertClientSafe(t, err, ErrReplayUnavailable)
		var e *Error
		if errors.As(err, &e); e.Cause == nil {
			t.Fatal("the Redis failure is not kept as the Cause for logs")
		}
	})
}

func TestVerifyWithRedisGuard(t *testing.T) {
	c := newRedisClient(t)
	ns := randomNS()
	v1 := newVerifier(t, WithReplayGuard(newRedisGuard(t, c, ns)))
	v2 := newVerifier(t, WithReplayGuard(newRedisGuard(t, newRedisClient(t), ns)))
	sk := newKey(t)
	a, b := communityScope(), communityScope()
	req := Request{Authorization: baseToken(testURL, "GET").header(t, sk), Method: "GET", URL: testURL, Scope: a}
	ctx := context.Background()

	// An invalid request does not consume the id in Redis either.
	bad := req
	bad.Method = "POST"
	if _, err := v1.Verify(ctx, bad); !errors.Is(err, ErrWrongMethod) {
		t.Fatal(err)
	}
	if _, err := v1.Verify(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Verify(ctx, req); !errors.Is(err, ErrReplayed) {
		t.Fatalf("replay on the other pod: %v, want ErrReplayed", err)
	}
	req.Scope = b
	if _, err := v2.Verify(ctx, req); err != nil {
		t.Fatalf("other community: %v", err)
	}
}

func TestNewRedisGuardRejectsBadOptions(t *testing.T) {
	if _, err := NewRedisGuard(nil); err == nil {
		t.Fatal("nil client accepted")
	}
	c := newRedisClient(t)
	for name, o := range map[string]RedisOption{
		"empty namespace": WithNamespace(""),
		"bad namespace":   WithNamespace("a:b"),
		"long namespace":  WithNamespace(strings.Repeat("a", 65)),
		"zero timeout":    WithTimeout(0),
		"nil option":      nil,
	} {
		if _, err := NewRedisGuard(c, o); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
