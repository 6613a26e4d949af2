package nip98

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/testenv"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// testNow is the fixed time every test verifier sees.
var testNow = time.Unix(1_750_000_000, 0)

func fixedClock() time.Time { return testNow }

func newKey(tb testing.TB) nostr.SecretKey {
	tb.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		tb.Fatal(err)
	}
	return sk
}

// token describes one NIP-98 event before signing.
type token struct {
	kind      int
	createdAt int64
	tags      nostr.Tags
}

func baseToken(url, method string) token {
	return token{
		kind:      nostr.KindHTTPAuth,
		createdAt: testNow.Unix(),
		tags:      nostr.Tags{{"u", url}, {"method", method}, {"nonce", randHex(8)}},
	}
}

func (t token) with(tag ...string) token {
	t.tags = append(append(nostr.Tags{}, t.tags...), nostr.Tag(tag))
	return t
}

func (t token) without(name string) token {
	var out nostr.Tags
	for _, tg := range t.tags {
		if tg[0] != name {
			out = append(out, tg)
		}
	}
	t.tags = out
	return t
}

func (t token) event(tb testing.TB, sk nostr.SecretKey) *nostr.Event {
	tb.Helper()
	ev := &nostr.Event{CreatedAt: t.createdAt, Kind: t.kind, Tags: t.tags}
	if err := ev.Sign(sk); err != nil {
		tb.Fatal(err)
	}
	return ev
}

func header(ev *nostr.Event) string {
	return "Nostr " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil))
}

func (t token) header(tb testing.TB, sk nostr.SecretKey) string {
	tb.Helper()
	return header(t.event(tb, sk))
}

func payloadOf(body []byte) string {
	s := sha256.Sum256(body)
	return hex.EncodeToString(s[:])
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newVerifier(tb testing.TB, opts ...Option) *Verifier {
	tb.Helper()
	v, err := NewVerifier(append([]Option{WithClock(fixedClock)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func needRedis(tb testing.TB) { testenv.NeedRedis(tb) }

func newRedisClient(tb testing.TB) rueidis.Client {
	tb.Helper()
	needRedis(tb)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{testenv.RedisAddr()}, DisableCache: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

func randomNS() string { return "t" + randHex(6) }

func newRedisGuard(tb testing.TB, client rueidis.Client, ns string) *RedisGuard {
	tb.Helper()
	g, err := NewRedisGuard(client, WithNamespace(ns))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		// Remove this test's keys.
		ctx := context.Background()
		keys, err := client.Do(ctx, client.B().Keys().Pattern(ns+":*").Build()).AsStrSlice()
		if err == nil && len(keys) > 0 {
			client.Do(ctx, client.B().Del().Key(keys...).Build())
		}
	})
	return g
}

func communityScope() ReplayScope { return CommunityScope(tenant.NewCommunityID()) }

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
	needRedis(tb)
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
			up, err := net.Dial("tcp", testenv.RedisAddr())
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
