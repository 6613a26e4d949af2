package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/testenv"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/tenant"
)

// needRedis fails (CI=true) or skips the test when the local Redis is not
// reachable.
func needRedis(tb testing.TB) { testenv.NeedRedis(tb) }

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// logRecorder is a slog handler that keeps messages for assertions.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, rec.Message)
	r.mu.Unlock()
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }
func (r *logRecorder) count(sub string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

type pod struct {
	*Broker
	name string
	logs *logRecorder
	got  *collector
}

// newPod starts a broker on the test Redis in namespace ns, named so its
// connections can be found in CLIENT LIST.
func newPod(tb testing.TB, ns string, opts ...Option) *pod {
	return newPodAt(tb, "redis://"+testenv.RedisAddr(), ns, opts...)
}

func newPodAt(tb testing.TB, url, ns string, opts ...Option) *pod {
	tb.Helper()
	name := randomName("buzztest-")
	logs := &logRecorder{}
	all := append([]Option{
		WithNamespace(ns), WithClientName(name), WithLogger(slog.New(logs)),
		WithReconnectBackoff(20*time.Millisecond, 200*time.Millisecond), WithTopicFunc(HTagTopic),
	}, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := New(ctx, url, all...)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	p := &pod{Broker: b, name: name, logs: logs, got: newCollector()}
	stop := b.Listen(p.got.add)
	tb.Cleanup(stop)
	return p
}

// collector counts deliveries per (community, event id).
type collector struct {
	mu     sync.Mutex
	counts map[string]int
	total  int
	notify chan struct{}
}

func newCollector() *collector {
	return &collector{counts: map[string]int{}, notify: make(chan struct{}, 1)}
}

func ckey(c tenant.CommunityID, id string) string { return c.String() + "/" + id }

func (c *collector) add(m pubsub.Message) {
	if m.Event == nil || len(m.Raw) == 0 {
		panic("delivered message without event or raw")
	}
	c.mu.Lock()
	c.counts[ckey(m.Community, m.Event.ID)]++
	c.total++
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *collector) count(comm tenant.CommunityID, id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[ckey(comm, id)]
}

func (c *collector) totalCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// waitTotal waits until at least n deliveries were counted.
func (c *collector) waitTotal(tb testing.TB, n int) {
	tb.Helper()
	deadline := time.After(10 * time.Second)
	for c.totalCount() < n {
		select {
		case <-c.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			tb.Fatalf("timed out waiting for %d deliveries; got %d", n, c.totalCount())
		}
	}
}

// eventually polls cond until it holds or fails the test after 10 s.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// within reports whether cond holds within d, polling it.
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

var testKey = sync.OnceValue(func() nostr.SecretKey {
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		panic(err)
	}
	return sk
})

// newEvent returns a signed event; channel != "" adds an "h" tag.
func newEvent(tb testing.TB, kind int, channel, content string) *nostr.Event {
	tb.Helper()
	ev := &nostr.Event{CreatedAt: time.Now().Unix(), Kind: kind, Content: content, Tags: nostr.Tags{}}
	if channel != "" {
		ev.Tags = append(ev.Tags, nostr.Tag{"h", channel})
	}
	if err := ev.Sign(testKey()); err != nil {
		tb.Fatal(err)
	}
	return ev
}

func msgOf(c tenant.CommunityID, ev *nostr.Event) pubsub.Message {
	return pubsub.Message{Community: c, Event: ev, Raw: ev.AppendJSON(nil)}
}

// rawClient is a plain client for inspecting Redis in tests.
func rawClient(tb testing.TB) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{testenv.RedisAddr()}, DisableCache: true})
	if err != nil {
		tb.Fatalf("redis client: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

func pubsubChannels(tb testing.TB, c rueidis.Client, ns string) map[string]bool {
	tb.Helper()
	chs, err := c.Do(context.Background(), c.B().PubsubChannels().Pattern(ns+":*").Build()).AsStrSlice()
	if err != nil {
		tb.Fatalf("PUBSUB CHANNELS: %v", err)
	}
	out := map[string]bool{}
	for _, ch := range chs {
		out[ch] = true
	}
	return out
}

// killClients kills every Redis connection named name and returns how many.
func killClients(tb testing.TB, c rueidis.Client, name string) int {
	tb.Helper()
	ctx := context.Background()
	list, err := c.Do(ctx, c.B().ClientList().Build()).ToString()
	if err != nil {
		tb.Fatalf("CLIENT LIST: %v", err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		var id, nm string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id = v
			} else if v, ok := strings.CutPrefix(f, "name="); ok {
				nm = v
			}
		}
		if nm != name || id == "" {
			continue
		}
		if err := c.Do(ctx, c.B().Arbitrary("CLIENT", "KILL", "ID", id).Build()).Error(); err == nil {
			n++
		}
	}
	return n
}

// tcpProxy forwards a local port to the test Redis and can be cut and
// restored, simulating a Redis outage for the brokers behind it only.
type tcpProxy struct {
	tb    testing.TB
	addr  string
	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

func newProxy(tb testing.TB) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &tcpProxy{tb: tb, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	tb.Cleanup(p.down)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
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
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close(); c.Close() }()
			go func() { _, _ = io.Copy(c, up); up.Close(); c.Close() }()
		}
	}()
}

// down closes the listener and every forwarded connection.
func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// up listens again on the same address.
func (p *tcpProxy) up() {
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.tb.Fatalf("proxy relisten: %v", err)
	}
	p.serve(ln)
}
