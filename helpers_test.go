package buzz

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// testRelay is a Relay on store/embedded in a temp dir, served over a real
// HTTP server, with the server's host mapped to a community.
type testRelay struct {
	t     testing.TB
	relay *Relay
	srv   *httptest.Server
	store *embedded.Store
	url   string // ws://127.0.0.1:port
	host  string // normalized host, e.g. localhost:port
	tc    tenant.TenantContext
	// leak leaves the relay, server and store running after the test:
	// go-nostr v0.52.3 has a data race on every connection close (its
	// writer goroutine clears Relay.Connection while close() reads it), so
	// tests using it never close their go-nostr connections.
	leak bool
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newTestRelay(t testing.TB, opts ...Option) *testRelay {
	t.Helper()
	return newTestRelayWith(t, nil, opts...)
}

// newTestRelayWith is newTestRelay with a hook that may adjust the server
// before it starts.
func newTestRelayWith(t testing.TB, prepare func(*httptest.Server), opts ...Option) *testRelay {
	t.Helper()
	ctx := context.Background()
	st := openEmbedded(t, t.TempDir())
	tr := &testRelay{t: t, store: st}
	// The server starts before the relay exists so its host can be mapped;
	// the handler is installed right after.
	var h http.Handler
	tr.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	if prepare != nil {
		prepare(tr.srv)
	}
	tr.srv.Start()
	tr.url = "ws" + strings.TrimPrefix(tr.srv.URL, "http")
	var err error
	tr.host, err = tenant.NormalizeHost(strings.TrimPrefix(tr.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(ctx, tr.host); err != nil {
		t.Fatalf("EnsureCommunity: %v", err)
	}
	tr.tc, err = tenant.Bind(ctx, st, tr.host)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]Option{WithStore(st), WithDirectory(st), WithChannels(), WithLogger(quietLogger())}, opts...)
	tr.relay, err = New(all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h = tr.relay
	t.Cleanup(func() {
		if tr.leak {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tr.relay.Shutdown(ctx)
		tr.srv.Close()
		_ = st.Close()
	})
	return tr
}

// rawClient is a WebSocket client speaking raw frames.
type rawClient struct {
	t         testing.TB
	ws        *websocket.Conn
	challenge string
	mu        sync.Mutex
	// relay is the URL the connection's AUTH events name ("" when
	// unknown: publish then never authenticates by itself).
	relay string
}

// testKeys holds the secret key of every test signer, by public key, so
// that a client asked to authenticate as an event's author can (see
// publish).
var testKeys sync.Map // pubkey -> nostr.SecretKey

// registerKey makes sk known to clients that authenticate on demand.
func registerKey(sk nostr.SecretKey) { testKeys.Store(sk.PublicKey(), sk) }

func (tr *testRelay) dial(t testing.TB) *rawClient {
	t.Helper()
	return tr.dialWith(t, websocket.DefaultDialer)
}

func (tr *testRelay) dialWith(t testing.TB, d *websocket.Dialer) *rawClient {
	t.Helper()
	ws, _, err := d.Dial(tr.url, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	c := &rawClient{t: t, ws: ws, relay: tr.url}
	m := c.next()
	ch, ok := m.(*nostr.AuthChallengeMessage)
	if !ok {
		t.Fatalf("first message = %#v, want AUTH challenge", m)
	}
	if len(ch.Challenge) != 64 {
		t.Fatalf("challenge %q is not 32 bytes of hex", ch.Challenge)
	}
	c.challenge = ch.Challenge
	return c
}

func (c *rawClient) sendRaw(b []byte) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send writes a JSON array of the given elements.
func (c *rawClient) send(elems ...any) {
	c.t.Helper()
	b, err := json.Marshal(elems)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(b)
}

func (c *rawClient) sendEvent(ev *nostr.Event) {
	c.t.Helper()
	c.sendRaw(nostr.AppendEventEnvelope(nil, ev.AppendJSON(nil)))
}

// nextRaw reads one frame.
func (c *rawClient) nextRaw() ([]byte, error) {
	_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := c.ws.ReadMessage()
	return b, err
}

func (c *rawClient) next() nostr.RelayMessage {
	c.t.Helper()
	b, err := c.nextRaw()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	m, err := nostr.ParseRelayMessage(b)
	if err != nil {
		c.t.Fatalf("relay sent unparsable %q: %v", b, err)
	}
	return m
}

func (c *rawClient) expectOK(id string) *nostr.OKMessage {
	c.t.Helper()
	for {
		m := c.next()
		if ok, isOK := m.(*nostr.OKMessage); isOK {
			if ok.EventID != id {
				c.t.Fatalf("OK for %s, want %s", ok.EventID, id)
			}
			return ok
		}
		if _, isAuth := m.(*nostr.AuthChallengeMessage); isAuth {
			continue
		}
		c.t.Fatalf("got %#v, want OK", m)
	}
}

// publish sends ev and returns its OK. Like a standard client (nostr-tools
// with onauth, go-nostr), when the relay answers that ev needs its author
// authenticated (an authority event: ingest.MsgAuthorityAuth, or
// MsgAuthorityNotAuthor on a connection authenticated as someone else), it
// authenticates as ev's author — if that key is a test signer's — with the
// connection's challenge (a connection may hold several), and sends ev
// again. An attacker's client, which cannot sign as the author, is
// publishOnce.
func (c *rawClient) publish(ev *nostr.Event) *nostr.OKMessage {
	c.t.Helper()
	ok := c.publishOnce(ev)
	if ok.OK || (ok.Message != ingest.MsgAuthorityAuth && ok.Message != ingest.MsgAuthorityNotAuthor) || c.relay == "" {
		return ok
	}
	v, known := testKeys.Load(ev.PubKey)
	if !known {
		return ok
	}
	sk := v.(nostr.SecretKey)
	auth := &nostr.Event{Kind: nostr.KindClientAuth, CreatedAt: time.Now().Unix(),
		Tags: nostr.Tags{{"challenge", c.challenge}, {"relay", c.relay}}}
	if err := auth.Sign(sk); err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(nostr.AppendAuth(nil, auth.AppendJSON(nil)))
	if a := c.expectOK(auth.ID); !a.OK {
		c.t.Fatalf("AUTH as the author of %s refused: %s", ev.ID, a.Message)
	}
	return c.publishOnce(ev)
}

// publishOnce sends ev and returns its OK, as a client that never
// authenticates by itself.
func (c *rawClient) publishOnce(ev *nostr.Event) *nostr.OKMessage {
	c.t.Helper()
	c.sendEvent(ev)
	return c.expectOK(ev.ID)
}

func (c *rawClient) mustAccept(ev *nostr.Event) {
	c.t.Helper()
	if ok := c.publish(ev); !ok.OK {
		c.t.Fatalf("event refused: %q", ok.Message)
	}
}

// req sends a REQ, collects the stored events up to EOSE and CLOSEs the
// subscription. It fails on CLOSED.
func (c *rawClient) req(sub string, filters ...nostr.Filter) []*nostr.Event {
	c.t.Helper()
	evs := c.subscribe(sub, filters...)
	c.sendRaw(nostr.AppendClose(nil, sub))
	return evs
}

// subscribe is req without the CLOSE: the subscription stays open.
func (c *rawClient) subscribe(sub string, filters ...nostr.Filter) []*nostr.Event {
	c.t.Helper()
	c.sendRaw(nostr.AppendReq(nil, sub, filters...))
	return c.untilEOSE(sub)
}

// expectOKs reads one OK for each of evs, in any order.
func (c *rawClient) expectOKs(evs []*nostr.Event) {
	c.t.Helper()
	want := make(map[string]bool, len(evs))
	for _, e := range evs {
		want[e.ID] = true
	}
	for len(want) > 0 {
		m := c.next()
		ok, isOK := m.(*nostr.OKMessage)
		if !isOK {
			c.t.Fatalf("got %#v, want OK", m)
		}
		if !want[ok.EventID] {
			c.t.Fatalf("unexpected OK for %s", ok.EventID)
		}
		if !ok.OK {
			c.t.Fatalf("event %s refused: %s", ok.EventID, ok.Message)
		}
		delete(want, ok.EventID)
	}
}

func (c *rawClient) untilEOSE(sub string) []*nostr.Event {
	c.t.Helper()
	var evs []*nostr.Event
	for {
		switch m := c.next().(type) {
		case *nostr.EventMessage:
			if m.SubID != sub {
				c.t.Fatalf("event for sub %q, want %q", m.SubID, sub)
			}
			evs = append(evs, m.Event)
		case *nostr.EOSEMessage:
			if m.SubID != sub {
				c.t.Fatalf("EOSE for %q, want %q", m.SubID, sub)
			}
			return evs
		default:
			c.t.Fatalf("got %#v while waiting for EOSE of %q", m, sub)
		}
	}
}

// expectClosed reads the next message and checks it is CLOSED for sub with
// the given prefix.
func (c *rawClient) expectClosed(sub, prefix string) string {
	c.t.Helper()
	for {
		m := c.next()
		if _, isAuth := m.(*nostr.AuthChallengeMessage); isAuth {
			continue
		}
		cl, ok := m.(*nostr.ClosedMessage)
		if !ok {
			c.t.Fatalf("got %#v, want CLOSED", m)
		}
		if cl.SubID != sub || !strings.HasPrefix(cl.Message, prefix) {
			c.t.Fatalf("CLOSED %q %q, want sub %q prefix %q", cl.SubID, cl.Message, sub, prefix)
		}
		return cl.Message
	}
}

// expectNext checks that the next message is the event id on sub. Tests
// use it as a barrier for a negative check: publish a sentinel the
// subscription matches after whatever must not be delivered; any such
// delivery arrives before the sentinel (a connection's messages are
// ordered) and fails here, with no wait for a silence.
func (c *rawClient) expectNext(sub, id string) {
	c.t.Helper()
	m, ok := c.next().(*nostr.EventMessage)
	if !ok || m.SubID != sub || m.Event.ID != id {
		c.t.Fatalf("got %#v, want the sentinel %s on %q", m, id, sub)
	}
}

// signer creates signed events for one key.
type signer struct {
	t  testing.TB
	sk nostr.SecretKey
}

func newSigner(t testing.TB) *signer {
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	registerKey(sk)
	return &signer{t: t, sk: sk}
}

func (s *signer) pub() string { return s.sk.PublicKey() }

func (s *signer) event(kind int, createdAt int64, content string, tags ...nostr.Tag) *nostr.Event {
	s.t.Helper()
	if tags == nil {
		tags = nostr.Tags{}
	}
	ev := &nostr.Event{Kind: kind, CreatedAt: createdAt, Content: content, Tags: tags}
	if err := ev.Sign(s.sk); err != nil {
		s.t.Fatal(err)
	}
	return ev
}

func now() int64 { return time.Now().Unix() }

func ids(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func eq[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func mustPrefix(t testing.TB, what, got, prefix string) {
	t.Helper()
	if !strings.HasPrefix(got, prefix) {
		t.Fatalf("%s = %q, want prefix %q", what, got, prefix)
	}
}

var _ = fmt.Sprintf

// awaitSignal waits up to 5 s for a value on ch: a barrier a hook or a
// test double signals.
func awaitSignal[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// openEmbedded opens the embedded store in dir as buzzd opens it by default
// (metadata in SQLite, events in the LSM engine) and closes it at the end of
// the test.
func openEmbedded(t testing.TB, dir string, opts ...embedded.Option) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(context.Background(), dir, append([]embedded.Option{embedded.WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatalf("open the embedded store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
