package workflowhost

// Test helpers: a relay served over a real HTTP server on each backend and
// raw WebSocket clients, as the relay package's own tests drive it.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/checker"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/sqlite"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// dialHost connects with the given Host header (another community of the
// same relay).
func (tr *testRelay) dialHost(t testing.TB, host string) *rawClient {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(tr.url, http.Header{"Host": {host}})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", host, err, status)
	}
	t.Cleanup(func() { _ = ws.Close() })
	c := &rawClient{t: t, ws: ws, relay: "ws://" + host}
	m := c.next()
	ch, ok := m.(*nostr.AuthChallengeMessage)
	if !ok {
		t.Fatalf("first message = %#v, want AUTH challenge", m)
	}
	c.challenge = ch.Challenge
	return c
}

// authAs authenticates c as s for host (ws://host).
func (c *rawClient) authAs(s *signer, host string) {
	c.t.Helper()
	ev := s.event(nostr.KindClientAuth, now(), "", nostr.Tag{"challenge", c.challenge}, nostr.Tag{"relay", "ws://" + host})
	if ok := c.auth(ev); !ok.OK {
		c.t.Fatalf("AUTH refused: %s", ok.Message)
	}
}

func chanTag(id channel.ID) nostr.Tag { return nostr.Tag{"h", id.String()} }

// createChannel publishes a 9007 through c and returns the new id.
func (c *rawClient) createChannel(s *signer, name string, vis channel.Visibility) channel.ID {
	c.t.Helper()
	id := storetest.NewChannelID()
	c.mustAccept(s.event(nostr.KindCreateChannel, now(), "", chanTag(id), nostr.Tag{"name", name}, nostr.Tag{"visibility", string(vis)}))
	return id
}

func (c *rawClient) command(s *signer, kind int, id channel.ID, tags ...nostr.Tag) *nostr.OKMessage {
	c.t.Helper()
	return c.publish(s.event(kind, now(), "", append([]nostr.Tag{chanTag(id)}, tags...)...))
}

var testMaster = func() nostr.SecretKey {
	sk, err := nostr.ParseSecretKey(strings.Repeat("3c", 32))
	if err != nil {
		panic(err)
	}
	return sk
}()

// nextEvent waits for a live EVENT on sub, skipping other subscriptions'.
func (c *rawClient) nextLive(sub string) *nostr.Event {
	c.t.Helper()
	for {
		switch m := c.next().(type) {
		case *nostr.EventMessage:
			if m.SubID == sub {
				return m.Event
			}
		case *nostr.OKMessage, *nostr.AuthChallengeMessage:
		default:
			c.t.Fatalf("got %#v, want an event for %q", m, sub)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// backendRelay is a relay on st served over a real HTTP server, its host
// mapped to a community. The testRelay it returns has no sqlite store
// (store is nil): use it for dialing only.
func backendRelay(t testing.TB, st store.Backend, opts ...buzz.Option) *testRelay {
	t.Helper()
	ctx := context.Background()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
		t.Fatal(err)
	}
	relay, err := buzz.New(append([]buzz.Option{buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithChannels(), buzz.WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h = relay
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = relay.Shutdown(ctx)
		srv.Close()
	})
	tc, err := tenant.Bind(ctx, st, host)
	if err != nil {
		t.Fatal(err)
	}
	return &testRelay{t: t, relay: relay, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http"), host: host, tc: tc}
}

// forBackends runs fn on a relay over the embedded store as buzzd opens it
// by default and over PostgreSQL (which pgtest requires under CI=true).
func forBackends(t *testing.T, fn func(t *testing.T, st store.Backend)) {
	t.Run("embedded", func(t *testing.T) {
		fn(t, openEmbedded(t, t.TempDir()))
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		fn(t, st)
	})
}

// testRelay is a buzz.Relay on store/sqlite in a temp dir, served over a real
// HTTP server, with the server's host mapped to a community.
type testRelay struct {
	t     testing.TB
	relay *buzz.Relay
	wf    *Feature // the workflow host, when mounted (workflowRelay)
	srv   *httptest.Server
	store *sqlite.Store
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

func newTestRelay(t testing.TB, opts ...buzz.Option) *testRelay {
	t.Helper()
	return newTestRelayWith(t, nil, opts...)
}

// newTestRelayWith is newTestRelay with a hook that may adjust the server
// before it starts.
func newTestRelayWith(t testing.TB, prepare func(*httptest.Server), opts ...buzz.Option) *testRelay {
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
	all := append([]buzz.Option{buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithChannels(), buzz.WithLogger(quietLogger())}, opts...)
	tr.relay, err = buzz.New(all...)
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
var testKeys sync.Map

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

// expectSilence checks nothing arrives for d.
func (c *rawClient) expectSilence(d time.Duration) {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(d))
	_, b, err := c.ws.ReadMessage()
	if err == nil {
		c.t.Fatalf("unexpected message %s", b)
	}
	// A read deadline poisons a gorilla connection; callers must not read after.
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

// openEmbedded opens the embedded store in dir as buzzd opens it by default
// (metadata in SQLite, events in the LSM engine) and closes it at the end of
// the test.
func openEmbedded(t testing.TB, dir string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), dir, append([]sqlite.Option{sqlite.WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatalf("open the embedded store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func checkTraces(t *testing.T, rec *trace.Recorder, requireAll bool) map[string]bool {
	t.Helper()
	ck, err := checker.New()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	traces := rec.Traces()
	if len(traces) == 0 {
		t.Fatal("no trace recorded")
	}
	for _, tr := range traces {
		rep := ck.CheckBytes(tr.JSONL)
		if !rep.OK() {
			t.Errorf("trace of %s rejected: %v\n%s", tr.Host, rep.Violations, tr.JSONL)
		}
		for _, a := range checker.Actions() {
			if bytes.Contains(tr.JSONL, []byte(`"type":"`+a+`"`)) {
				seen[a] = true
			}
		}
	}
	if requireAll {
		for _, a := range checker.Actions() {
			if a != checker.ActionImplBug && !seen[a] {
				t.Errorf("the scenario never exercised %s", a)
			}
		}
	}
	return seen
}

func scrapeRegistry(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// sample returns the value of family name's series whose labels include
// all of want (name, value pairs).
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no %s", name)
	}
outer:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(want); i += 2 {
			ok := false
			for _, l := range m.GetLabel() {
				ok = ok || l.GetName() == want[i] && l.GetValue() == want[i+1]
			}
			if !ok {
				continue outer
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("%s%v: no series", name, want)
	return 0
}

func expTag(t time.Time) nostr.Tag { return nostr.Tag{"expiration", strconv.FormatInt(t.Unix(), 10)} }

// logCapture is a slog.Handler keeping every record, for tests.
type logCapture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *logCapture) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h *logCapture) WithGroup(string) slog.Handler { return h }

// lines returns the records with message msg, each as its attributes
// (and "level").
func (h *logCapture) lines(msg string) []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range h.recs {
		if r.Message != msg {
			continue
		}
		m := map[string]string{"level": r.Level.String()}
		r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
		out = append(out, m)
	}
	return out
}

// quietHost is a buzz.Host with a quiet logger only, for unit tests of
// what needs no relay.
type quietHost struct{ buzz.Host }

func (quietHost) Logger() *slog.Logger { return quietLogger() }

// from auth_test.go
func (c *rawClient) auth(ev *nostr.Event) *nostr.OKMessage {
	c.t.Helper()
	c.sendRaw(nostr.AppendAuth(nil, ev.AppendJSON(nil)))
	return c.expectOK(ev.ID)
}
