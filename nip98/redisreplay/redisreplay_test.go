package redisreplay

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nip98/replaytest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

const testURL = "https://relay.example/api/things"

func newClient(tb testing.TB) rueidis.Client {
	tb.Helper()
	addr := testenv.NeedRedis(tb)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

func randomNS() string { return testenv.RandomName("t") }

// newGuard returns a guard in ns over client and removes ns's keys when the
// test ends.
func newGuard(tb testing.TB, client rueidis.Client, ns string) *Guard {
	tb.Helper()
	g, err := New(client, WithNamespace(ns))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx := context.Background()
		keys, err := client.Do(ctx, client.B().Keys().Pattern(ns+":*").Build()).AsStrSlice()
		if err == nil && len(keys) > 0 {
			client.Do(ctx, client.B().Del().Key(keys...).Build())
		}
	})
	return g
}

func communityScope() nip98.ReplayScope { return nip98.CommunityScope(tenant.NewCommunityID()) }

// authHeader is a fresh NIP-98 Authorization header for GET testURL.
func authHeader(t *testing.T, sk nostr.SecretKey) string {
	t.Helper()
	ev := &nostr.Event{Kind: nostr.KindHTTPAuth, CreatedAt: time.Now().Unix(),
		Tags: nostr.Tags{{"u", testURL}, {"method", "GET"}}}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return nip98.Scheme + " " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil))
}

func newVerifier(t *testing.T, g nip98.ReplayGuard) *nip98.Verifier {
	t.Helper()
	v, err := nip98.NewVerifier(nip98.WithReplayGuard(g))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestGuardConformance(t *testing.T) {
	replaytest.Run(t, newGuard(t, newClient(t), randomNS()))
}

func TestGuardKeyAndTTL(t *testing.T) {
	c := newClient(t)
	ns := randomNS()
	g := newGuard(t, c, ns)
	ctx := context.Background()
	comm := tenant.NewCommunityID()
	s := nip98.CommunityScope(comm)
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{{time.Second, 120}, {300 * time.Second, 300}, {10 * time.Hour, 3600}} {
		id := replaytest.EventID()
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
	id := replaytest.EventID()
	if err := g.Mark(ctx, nip98.OperatorScope(), id, time.Minute); err != nil {
		t.Fatal(err)
	}
	n, err := c.Do(ctx, c.B().Exists().Key(ns+":operator-management:nip98:"+id).Build()).AsInt64()
	if err != nil || n != 1 {
		t.Fatalf("operator key exists = %d, %v", n, err)
	}
}

// TestGuardAcrossPods uses two clients, as two buzzd processes would.
func TestGuardAcrossPods(t *testing.T) {
	ns := randomNS()
	podA := newGuard(t, newClient(t), ns)
	podB := newGuard(t, newClient(t), ns)
	ctx := context.Background()
	s := communityScope()
	id := replaytest.EventID()
	if err := podA.Mark(ctx, s, id, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := podB.Mark(ctx, s, id, time.Minute); !errors.Is(err, nip98.ErrReplayed) {
		t.Fatalf("pod B: %v, want ErrReplayed", err)
	}
	if err := podB.Mark(ctx, communityScope(), id, time.Minute); err != nil {
		t.Fatalf("pod B, other community: %v", err)
	}
}

func TestGuardUnavailableFailsClosed(t *testing.T) {
	ctx := context.Background()
	t.Run("cancelled context", func(t *testing.T) {
		g := newGuard(t, newClient(t), randomNS())
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := g.Mark(cancelled, communityScope(), replaytest.EventID(), time.Minute); !errors.Is(err, nip98.ErrReplayUnavailable) {
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
		g, err := New(c, WithNamespace(randomNS()), WithTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		sk, err := nostr.GenerateSecretKey()
		if err != nil {
			t.Fatal(err)
		}
		v := newVerifier(t, g)
		req := nip98.Request{Authorization: authHeader(t, sk), Method: "GET", URL: testURL, Scope: communityScope()}
		if _, err := v.Verify(ctx, req); err != nil {
			t.Fatalf("through the proxy while Redis is up: %v", err)
		}

		proxy.stop()
		for i := 0; i < 3; i++ {
			if err := g.Mark(ctx, communityScope(), replaytest.EventID(), time.Minute); !errors.Is(err, nip98.ErrReplayUnavailable) {
				t.Fatalf("Mark %d with Redis down: %v, want ErrReplayUnavailable", i, err)
			}
		}
		req.Authorization = authHeader(t, sk)
		_, err = v.Verify(ctx, req)
		if !errors.Is(err, nip98.ErrReplayUnavailable) {
			t.Fatalf("Verify with Redis down: %v, want ErrReplayUnavailable", err)
		}
		var e *nip98.Error
		if !errors.As(err, &e) || err.Error() != nip98.ErrReplayUnavailable.Error() {
			t.Fatalf("Verify's error %q is not the client-safe refusal", err)
		}
		if e.Cause == nil {
			t.Fatal("the Redis failure is not kept as the Cause for logs")
		}
	})
}

func TestVerifyWithGuard(t *testing.T) {
	c := newClient(t)
	ns := randomNS()
	v1 := newVerifier(t, newGuard(t, c, ns))
	v2 := newVerifier(t, newGuard(t, newClient(t), ns))
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	a, b := communityScope(), communityScope()
	req := nip98.Request{Authorization: authHeader(t, sk), Method: "GET", URL: testURL, Scope: a}
	ctx := context.Background()

	// An invalid request does not consume the id in Redis either.
	bad := req
	bad.Method = "POST"
	if _, err := v1.Verify(ctx, bad); !errors.Is(err, nip98.ErrWrongMethod) {
		t.Fatal(err)
	}
	if _, err := v1.Verify(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Verify(ctx, req); !errors.Is(err, nip98.ErrReplayed) {
		t.Fatalf("replay on the other pod: %v, want ErrReplayed", err)
	}
	req.Scope = b
	if _, err := v2.Verify(ctx, req); err != nil {
		t.Fatalf("other community: %v", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Fatal("nil client accepted")
	}
	c := newClient(t)
	for name, o := range map[string]Option{
		"empty namespace": WithNamespace(""),
		"bad namespace":   WithNamespace("a:b"),
		"long namespace":  WithNamespace(strings.Repeat("a", 65)),
		"zero timeout":    WithTimeout(0),
		"nil option":      nil,
	} {
		if _, err := New(c, o); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func BenchmarkGuardMark(b *testing.B) {
	g := newGuard(b, newClient(b), randomNS())
	scope := communityScope()
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = replaytest.EventID()
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := g.Mark(ctx, scope, ids[i], nip98.MinReplayTTL); err != nil {
			b.Fatal(err)
		}
	}
}

// redisProxy forwards TCP connections to the test Redis until stopped, so a
// test can make Redis unreachable for one client: after stop, established
// connections are cut and new ones refused.
type redisProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  bool
}

func startRedisProxy(tb testing.TB) *redisProxy {
	tb.Helper()
	addr := testenv.NeedRedis(tb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &redisProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.done {
				p.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	tb.Cleanup(p.stop)
	return p
}

func (p *redisProxy) addr() string { return p.ln.Addr().String() }

func (p *redisProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}
