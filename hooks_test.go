package buzz

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/internal/rawclient"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// dialFrom dials tr through a (trusted) proxy that forwarded for client.
func dialFrom(t *testing.T, tr *testRelay, client string) *rawClient {
	t.Helper()
	return &rawClient{rawclient.Dial(t, nil, tr.url, http.Header{"X-Forwarded-For": {client}}, tr.url)}
}

// seen is what one hook call saw through ConnFrom.
type seen struct {
	hook    string
	ok      bool
	addr    netip.Addr
	pubkeys []string
	subID   string
	ws      bool
}

type hookLog struct {
	mu    sync.Mutex
	calls []seen
	gone  chan seen
}

func (l *hookLog) record(ctx context.Context, hook string) seen {
	v, ok := ConnFrom(ctx)
	s := seen{hook: hook, ok: ok, addr: v.RemoteAddr(), pubkeys: v.Pubkeys(), subID: v.SubscriptionID(), ws: v.WebSocket()}
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
	return s
}

func (l *hookLog) last(hook string) seen {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.calls) - 1; i >= 0; i-- {
		if l.calls[i].hook == hook {
			return l.calls[i]
		}
	}
	return seen{}
}

func TestConnViewInHooks(t *testing.T) {
	blockedAddr := netip.MustParseAddr("198.51.100.9")
	client := netip.MustParseAddr("203.0.113.7")
	banned := newSigner(t)
	log := &hookLog{gone: make(chan seen, 4)}
	tr := newTestRelay(t,
		WithTrustedProxies(netip.MustParsePrefix("127.0.0.0/8")),
		WithOnConnect(func(ctx context.Context, _ tenant.TenantContext) error {
			if log.record(ctx, "connect").addr == blockedAddr {
				return errors.New("your network is not welcome")
			}
			return nil
		}),
		WithOnAuth(func(ctx context.Context, _ tenant.TenantContext, pubkey string) error {
			log.record(ctx, "auth")
			if pubkey == banned.Pub() {
				return errors.New("not on the list")
			}
			return nil
		}),
		WithEventPolicy(func(ctx context.Context, _ tenant.TenantContext, ev *nostr.Event) error {
			v := log.record(ctx, "event")
			// A write rule on the connection: kind 1 only from an
			// authenticated author.
			if ev.Kind == 1 && !slices.Contains(v.pubkeys, ev.PubKey) {
				return errors.New("restricted: authenticate as the author")
			}
			return nil
		}),
		WithFilterPolicy(func(ctx context.Context, _ tenant.TenantContext, f nostr.Filter) error {
			log.record(ctx, "filter")
			return nil
		}),
		WithOnDisconnect(func(ctx context.Context, _ tenant.TenantContext) {
			if ctx.Err() != nil {
				t.Error("OnDisconnect's ctx is cancelled")
			}
			log.gone <- log.record(ctx, "disconnect")
		}),
	)

	// OnConnect refuses before the upgrade, on the forwarded address.
	_, resp, err := websocket.DefaultDialer.Dial(tr.url, http.Header{"X-Forwarded-For": {blockedAddr.String()}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("upgrade from a refused address: err %v resp %v", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	mustPrefix(t, "refusal", string(body), "blocked: your network is not welcome")

	c := dialFrom(t, tr, client.String())
	if s := log.last("connect"); !s.ok || s.addr != client || len(s.pubkeys) != 0 || !s.ws {
		t.Fatalf("OnConnect saw %+v", s)
	}

	// Unauthenticated: the write rule refuses, the hook saw no pubkeys.
	author := newSigner(t)
	ok := c.Publish(author.Event(1, now(), "hello"))
	if ok.OK || ok.Message != "restricted: authenticate as the author" {
		t.Fatalf("unauthenticated write: %v %q", ok.OK, ok.Message)
	}
	if s := log.last("event"); !s.ok || s.addr != client || len(s.pubkeys) != 0 || s.subID != "" {
		t.Fatalf("EventPolicy saw %+v", s)
	}

	// OnAuth refuses one pubkey and sees what was authenticated before.
	relayTag := nostr.Tag{"relay", tr.url}
	chTag := nostr.Tag{"challenge", c.Challenge}
	if ok := c.Auth(c.authEvent(author, now(), chTag, relayTag)); !ok.OK {
		t.Fatalf("AUTH refused: %q", ok.Message)
	}
	if s := log.last("auth"); len(s.pubkeys) != 0 {
		t.Fatalf("OnAuth saw %v before the first AUTH", s.pubkeys)
	}
	ok = c.Auth(c.authEvent(banned, now(), chTag, relayTag))
	if ok.OK || ok.Message != "restricted: not on the list" {
		t.Fatalf("refused AUTH: %v %q", ok.OK, ok.Message)
	}
	if s := log.last("auth"); !slices.Equal(s.pubkeys, []string{author.Pub()}) {
		t.Fatalf("OnAuth saw %v", s.pubkeys)
	}
	if c.relayConn(tr).isAuthed(banned.Pub()) {
		t.Fatal("a pubkey OnAuth refused was authenticated")
	}

	// Authenticated: the same rule admits, and sees the pubkey.
	c.MustAccept(author.Event(1, now(), "hello"))
	if s := log.last("event"); !slices.Equal(s.pubkeys, []string{author.Pub()}) {
		t.Fatalf("EventPolicy saw %v", s.pubkeys)
	}

	// FilterPolicy sees the subscription id, on REQ and on COUNT.
	c.Req("timeline", nostr.Filter{Kinds: []int{1}})
	if s := log.last("filter"); s.subID != "timeline" || s.addr != client || !slices.Equal(s.pubkeys, []string{author.Pub()}) {
		t.Fatalf("FilterPolicy on REQ saw %+v", s)
	}
	c.Send("COUNT", "n", nostr.Filter{Kinds: []int{1}})
	if _, ok := c.Next().(*nostr.CountMessage); !ok {
		t.Fatal("COUNT not answered")
	}
	if s := log.last("filter"); s.subID != "n" {
		t.Fatalf("FilterPolicy on COUNT saw %+v", s)
	}

	// OnDisconnect runs once the socket has closed, with what it was.
	_ = c.WS.Close()
	select {
	case s := <-log.gone:
		if !s.ok || s.addr != client || !slices.Equal(s.pubkeys, []string{author.Pub()}) {
			t.Fatalf("OnDisconnect saw %+v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnDisconnect not called")
	}
}

func TestConnViewOnHTTPAPI(t *testing.T) {
	var mu sync.Mutex
	var got []seen
	rec := func(ctx context.Context, hook string) {
		v, ok := ConnFrom(ctx)
		mu.Lock()
		got = append(got, seen{hook: hook, ok: ok, pubkeys: v.Pubkeys(), ws: v.WebSocket(), subID: v.SubscriptionID()})
		mu.Unlock()
	}
	st := openEmbedded(t, t.TempDir())
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	p := startPod(t, st, "a.example", withHTTPAPI(v),
		WithEventPolicy(func(ctx context.Context, _ tenant.TenantContext, _ *nostr.Event) error {
			rec(ctx, "event")
			return nil
		}),
		WithFilterPolicy(func(ctx context.Context, _ tenant.TenantContext, _ nostr.Filter) error {
			rec(ctx, "filter")
			return nil
		}))
	s := newSigner(t)
	ev := s.Event(1, now(), "over HTTP")
	if code, body := p.api(t, s, "a.example", eventsPath, ev.AppendJSON(nil)); code != http.StatusOK {
		t.Fatalf("POST /events: %d %s", code, body)
	}
	if code, body := p.api(t, s, "a.example", queryPath, []byte(`{"kinds":[1]}`)); code != http.StatusOK {
		t.Fatalf("POST /query: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("hooks ran %d times", len(got))
	}
	for _, g := range got {
		if !g.ok || g.ws || !slices.Equal(g.pubkeys, []string{s.Pub()}) || g.subID != "" {
			t.Fatalf("%s hook on the HTTP API saw %+v", g.hook, g)
		}
	}
}

func TestHookOptionsValidated(t *testing.T) {
	st := newTestRelay(t).store
	for i, o := range []Option{WithOnConnect(nil), WithOnDisconnect(nil), WithOnAuth(nil)} {
		if r, err := New(WithStore(st), WithDirectory(st), o); err == nil {
			_ = r.Shutdown(context.Background())
			t.Fatalf("nil hook %d accepted", i)
		}
	}
	if _, ok := ConnFrom(context.Background()); ok {
		t.Fatal("ConnFrom found a connection in a bare context")
	}
}
