package buzz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

func TestNIP11(t *testing.T) {
	pub := strings.Repeat("ab", 32)
	tr := newTestRelay(t,
		WithInfo(Info{Name: "buzz test", Description: "d", PubKey: pub, Contact: "c", Software: "s", Version: "v", Icon: "i"}),
		WithLimits(Limits{MaxFrameBytes: 100000, MaxSubscriptions: 7, MaxFilters: 3, MaxSubIDLength: 20, MaxLimit: 50, MaxContentBytes: 999, MaxFutureSkew: time.Minute}),
	)
	get := func(host string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest("GET", tr.srv.URL, nil)
		req.Host = host
		req.Header.Set("Accept", "application/nostr+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return resp, doc
	}
	resp, doc := get(tr.host)
	eq(t, "status", resp.StatusCode, 200)
	eq(t, "content type", resp.Header.Get("Content-Type"), "application/nostr+json")
	eq(t, "CORS", resp.Header.Get("Access-Control-Allow-Origin"), "*")
	eq(t, "name", doc["name"], any("buzz test"))
	eq(t, "pubkey", doc["pubkey"], any(pub))
	nips, _ := json.Marshal(doc["supported_nips"])
	eq(t, "supported_nips", string(nips), "[1,9,11,17,25,29,40,42,45,50,56,59,77]") // NIP-05 is a feature (package nip05)
	lim, _ := json.Marshal(doc["limitation"])
	eq(t, "limitation", string(lim), `{"auth_required":false,"created_at_upper_limit":60,"default_limit":50,"due_delivery_mode":"push","max_connection_filter_bytes":1048576,"max_content_length":999,"max_filter_values":1000,"max_filters":3,"max_limit":50,"max_message_length":100000,"max_message_rate":1000,"max_not_before_delta":31536000,"max_query_seconds":10,"max_subid_length":20,"max_subscription_bytes":131072,"max_subscriptions":7,"restricted_writes":false}`)
	// NIP-ER is a draft without a number: an extension, not a NIP.
	exts, _ := json.Marshal(doc["supported_extensions"])
	eq(t, "supported_extensions", string(exts), `["nip-er"]`)

	// Fail-open: an unmapped host gets the same (relay-wide) document.
	resp, doc2 := get("unmapped.example")
	eq(t, "unmapped status", resp.StatusCode, 200)
	eq(t, "unmapped name", doc2["name"], doc["name"])

	// The limits advertised are the limits enforced.
	c := tr.dial(t)
	c.SendRaw(nostr.AppendReq(nil, strings.Repeat("x", 21), nostr.Filter{}))
	c.ExpectClosed(strings.Repeat("x", 21), "invalid:")
	c.SendRaw(nostr.AppendReq(nil, "f", nostr.Filter{}, nostr.Filter{}, nostr.Filter{}, nostr.Filter{}))
	c.ExpectClosed("f", "invalid:")
	s := newSigner(t)
	ok := c.Publish(s.Event(1, now(), strings.Repeat("a", 1000)))
	mustPrefix(t, "content", ok.Message, "invalid: content too long")
	ok = c.Publish(s.Event(1, now()+300, "x")) // far past the 1 min skew, however slow the machine
	eq(t, "future", ok.Message, "invalid: created_at too far in the future")
}

// keylessStore is a backend that keeps no relay key.
type keylessStore struct{ store.Backend }

// TestNIP11PubkeyOmitted: without an administrator's key, WithRelayKey or a
// store that keeps a relay key, NIP-11 names no pubkey; a malformed
// administrator key is refused.
func TestNIP11PubkeyOmitted(t *testing.T) {
	st := keylessStore{newTestRelay(t).store}
	for _, pk := range []string{"", strings.Repeat("AB", 32), "abc"} {
		r, err := New(WithStore(st), WithDirectory(st), WithInfo(Info{PubKey: pk}), WithLogger(quietLogger()))
		if pk == "" {
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(r.NIP11Document())
			if strings.Contains(string(b), "pubkey") {
				t.Fatalf("document %s contains a pubkey", b)
			}
			_ = r.Shutdown(context.Background())
			continue
		}
		if err == nil {
			t.Fatalf("malformed pubkey %q accepted", pk)
		}
	}
}

// TestRelayKeyFromStore: without WithRelayKey a relay signs with the key
// its store keeps for the deployment, so two relays on one store (two
// pods, or one restarted) name the same key; WithRelayKey overrides it.
func TestRelayKeyFromStore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		st := b.open(t)
		self := func(opts ...Option) string {
			r, err := New(append([]Option{WithStore(st), WithDirectory(st), WithChannels(), WithLogger(quietLogger())}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Shutdown(context.Background())
			return r.NIP11Document().Self
		}
		first, second := self(), self()
		if !nostr.IsLowerHex(first, 64) || first != second {
			t.Fatalf("self = %q then %q, want one stored key", first, second)
		}
		stored, err := st.(relayKeyStore).RelayKey(context.Background(), testMaster)
		if err != nil || stored.PublicKey() != first {
			t.Fatalf("the store keeps %v (%v), the relay names %s", stored.PublicKey(), err, first)
		}
		if got := self(WithRelayKey(testMaster)); got != testMaster.PublicKey() {
			t.Fatalf("WithRelayKey: self = %s, want %s", got, testMaster.PublicKey())
		}
	})
}

func TestOptionsValidated(t *testing.T) {
	st := newTestRelay(t).store
	bad := [][]Option{
		{WithDirectory(st)},
		{WithStore(st)},
		{WithStore(st), WithDirectory(st), WithLimits(Limits{MaxFilters: -1})},
		{WithStore(st), WithDirectory(st), WithLimits(Limits{MaxFrameBytes: 10})},
		{WithStore(st), WithDirectory(st), WithRelayURL("http://x")},
		{WithStore(st), WithDirectory(st), WithRelayURL("ws://")},
		{WithStore(st), WithDirectory(st), WithAuth(AuthPolicy(7))},
		{WithStore(st), WithDirectory(st), WithEventPolicy(nil)},
		{WithStore(st), WithDirectory(st), nil},
	}
	for i, opts := range bad {
		if r, err := New(opts...); err == nil {
			_ = r.Shutdown(context.Background())
			t.Fatalf("options %d accepted", i)
		}
	}
	d := DefaultLimits()
	r, err := New(WithStore(st), WithDirectory(st), WithLimits(Limits{MaxFilters: 3}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(context.Background())
	l := r.NIP11Document().Limitation
	eq(t, "max_filters", l.MaxFilters, 3)
	eq(t, "default frame", l.MaxMessageLength, d.MaxFrameBytes)
	eq(t, "default subs", l.MaxSubscriptions, 1024)
	eq(t, "default subid", l.MaxSubIDLength, 256)
	eq(t, "default limit", l.MaxLimit, 1000)
	eq(t, "default content", l.MaxContentLength, 256<<10)
	eq(t, "default skew", l.CreatedAtUpperLimit, int64(900))
}

func TestUnmappedHost(t *testing.T) {
	tr := newTestRelay(t)
	for _, host := range []string{"unmapped.example", "bad host", "localhost:1"} {
		// Dial the server but claim another Host.
		req, _ := http.NewRequest("GET", tr.srv.URL, nil)
		req.Host = host
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		eq(t, "status for "+host, resp.StatusCode, 404)
		eq(t, "body for "+host, strings.TrimSpace(string(body)), "relay: no community is configured for this host")
		if strings.Contains(string(body), host) {
			t.Fatal("the body echoes the host")
		}
	}
	// Mapped host with a different spelling binds to the same community.
	ws, _, err := websocket.DefaultDialer.Dial(strings.Replace(tr.url, "127.0.0.1", "LOCALHOST", 1), nil)
	if err != nil {
		t.Fatalf("dial with an equivalent host: %v", err)
	}
	ws.Close()
}

func TestTenantIsolation(t *testing.T) {
	tr := newTestRelay(t)
	// Map a second host to a second community on the same relay.
	ctx := context.Background()
	if _, _, err := tr.store.EnsureCommunity(ctx, "other.example"); err != nil {
		t.Fatal(err)
	}
	a := tr.dial(t)
	b := tr.dialHost(t, "other.example")
	s := newSigner(t)
	b.Subscribe("live", nostr.Filter{})
	ev := s.Event(1, now(), "community A only")
	a.MustAccept(ev)
	eq(t, "A sees it", len(a.Req("q", nostr.Filter{})), 1)
	eq(t, "B stored", len(b.Req("q", nostr.Filter{})), 0)
	// The same event is new in B, not a duplicate; B's live subscription
	// gets B's copy (and saw nothing of A's).
	b.SendEvent(ev)
	if m, isEv := b.Next().(*nostr.EventMessage); !isEv || m.SubID != "live" || m.Event.ID != ev.ID {
		t.Fatalf("got %#v, want the live event", m)
	}
	if ok := b.ExpectOK(ev.ID); !ok.OK || ok.Message != "" {
		t.Fatalf("same event in B: %+v", ok)
	}
	// AUTH naming A's host is refused on B.
	ok := b.Auth(b.authEvent(s, now(), nostr.Tag{"challenge", b.Challenge}, nostr.Tag{"relay", tr.url}))
	eq(t, "cross-host AUTH", ok.OK, false)
	// Nothing of A's reached B's live subscription before B's own next
	// event.
	sentinel := s.Event(1, now(), "B's sentinel")
	b.SendEvent(sentinel)
	b.ExpectNext("live", sentinel.ID)
	_ = tenant.ErrUnmappedHost
}

func TestHostileInput(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)

	notices := []string{
		`not json`,
		`{"a":1}`,
		`[]`,
		`["HELLO"]`,
		`[1,2]`,
		`["EVENT"]`,
		`["EVENT",{"id":"short"}]`,
		`["CLOSE"]`,
		`["REQ"]`,
		`["REQ",5,{}]`,
		"\x00\x01",
	}
	for _, in := range notices {
		c.SendRaw([]byte(in))
		m, ok := c.Next().(*nostr.NoticeMessage)
		if !ok || !strings.HasPrefix(m.Message, "invalid:") {
			t.Fatalf("%q: got %#v, want NOTICE invalid:", in, m)
		}
	}

	// A broken event whose id can be read gets OK false with that id.
	ev := s.Event(1, now(), "x")
	raw := strings.Replace(string(ev.AppendJSON(nil)), `"kind":1`, `"kind":"1"`, 1)
	c.SendRaw([]byte(`["EVENT",` + raw + `]`))
	ok := c.ExpectOK(ev.ID)
	eq(t, "broken event ok", ok.OK, false)
	mustPrefix(t, "broken event", ok.Message, "invalid:")

	// Binary frames: valid UTF-8 JSON is handled, anything else refused.
	good := s.Event(1, now(), "binary")
	if err := c.WS.WriteMessage(websocket.BinaryMessage, nostr.AppendEventEnvelope(nil, good.AppendJSON(nil))); err != nil {
		t.Fatal(err)
	}
	if ok := c.ExpectOK(good.ID); !ok.OK {
		t.Fatalf("binary EVENT refused: %q", ok.Message)
	}
	if err := c.WS.WriteMessage(websocket.BinaryMessage, []byte{0xff, 0xfe, '['}); err != nil {
		t.Fatal(err)
	}
	if m, isN := c.Next().(*nostr.NoticeMessage); !isN || !strings.HasPrefix(m.Message, "invalid:") {
		t.Fatalf("got %#v, want NOTICE invalid:", m)
	}
	// Nothing broken was stored, and the connection still works.
	got := c.Req("q", nostr.Filter{})
	if len(got) != 1 || got[0].ID != good.ID {
		t.Fatalf("stored %v", ids(got))
	}
}

// TestGarbageFramesNeverCrash sends random frames, some mutated from valid
// messages, and checks every answer is a prefixed NOTICE, OK or CLOSED (or an
// EOSE/EVENT/COUNT for frames that happen to be valid), and that the
// connection keeps working.
func TestGarbageFramesNeverCrash(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)
	ev := s.Event(1, now(), "seed", nostr.Tag{"t", "x"})
	seeds := []string{
		string(nostr.AppendEventEnvelope(nil, ev.AppendJSON(nil))),
		string(nostr.AppendReq(nil, "s", nostr.Filter{Kinds: []int{1}, Limit: 2, LimitSet: true})),
		string(nostr.AppendCount(nil, "c", nostr.Filter{Authors: []string{s.Pub()}})),
		`["CLOSE","s"]`,
		string(nostr.AppendAuth(nil, ev.AppendJSON(nil))),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`[]{}",:0123456789abcdefEVENTREQCOUNTCLOSEAUTH \\u-.e+`)
	for i := range 300 {
		b := []byte(seeds[rng.IntN(len(seeds))])
		switch rng.IntN(4) {
		case 0: // random bytes
			b = make([]byte, rng.IntN(64))
			for j := range b {
				b[j] = alphabet[rng.IntN(len(alphabet))]
			}
		case 1: // flip a byte
			if len(b) > 0 {
				b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
			}
		case 2: // truncate
			b = b[:rng.IntN(len(b)+1)]
		case 3: // insert
			j := rng.IntN(len(b) + 1)
			b = append(b[:j], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[j:]...)...)
		}
		c.SendRaw(b)
		// A probe whose answer marks the end of this frame's answers. COUNT
		// on an unusual id is answered after any REQ replay of the same frame
		// only if queries are ordered, so use a NOTICE-producing frame.
		c.SendRaw([]byte(`["PROBE"]`))
		for {
			raw, err := c.NextRaw()
			if err != nil {
				t.Fatalf("frame %d %q: connection lost: %v", i, b, err)
			}
			m, err := nostr.ParseRelayMessage(raw)
			if err != nil {
				t.Fatalf("frame %d: relay sent unparsable %q", i, raw)
			}
			var msg string
			switch m := m.(type) {
			case *nostr.NoticeMessage:
				msg = m.Message
				if msg == "invalid: unknown message type" && string(b) != `["PROBE"]` {
					// Possibly our probe; frames answered asynchronously
					// (EVENT, REQ, COUNT) may still be on their way.
				}
			case *nostr.OKMessage:
				if !m.OK {
					msg = m.Message
				}
			case *nostr.ClosedMessage:
				msg = m.Message
			}
			if msg != "" && !hasPrefix(msg) {
				t.Fatalf("frame %d %q: unprefixed %q", i, b, msg)
			}
			if n, ok := m.(*nostr.NoticeMessage); ok && n.Message == "invalid: unknown message type" {
				break
			}
		}
	}
	// Once the fuzzed connection is closed and torn down (every frame's
	// work has ended), the relay still serves.
	_ = c.WS.Close()
	waitFor(t, "the fuzzed connection torn down", func() bool { return tr.relay.connCount() == 0 })
	c2 := tr.dial(t)
	c2.MustAccept(s.Event(1, now(), "still alive"))
}

func hasPrefix(msg string) bool {
	for _, p := range []string{"invalid:", "duplicate:", "blocked:", "restricted:", "rate-limited:", "auth-required:", "pow:", "error:"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func TestOversizedFrame(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{MaxFrameBytes: 4096}))
	c := tr.dial(t)
	// Exactly at the limit is fine (answered with a NOTICE: not JSON).
	c.SendRaw([]byte(strings.Repeat("x", 4096)))
	if m, ok := c.Next().(*nostr.NoticeMessage); !ok || !strings.HasPrefix(m.Message, "invalid:") {
		t.Fatalf("got %#v", m)
	}
	c.SendRaw([]byte(strings.Repeat("x", 4097)))
	m, ok := c.Next().(*nostr.NoticeMessage)
	if !ok || m.Message != "error: frame too large (limit 4096 bytes)" {
		t.Fatalf("got %#v, want the frame-too-large NOTICE", m)
	}
	_, err := c.NextRaw()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("after NOTICE: %v, want close 1009", err)
	}
}

func TestSlowReaderCutOff(t *testing.T) {
	t0 := time.Now()
	// Small socket buffers on both sides, so that a client that stops
	// reading fills them, and then its queue, quickly.
	tr := newTestRelayWith(t, func(srv *httptest.Server) {
		srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
			if st == http.StateNew {
				_ = c.(*net.TCPConn).SetWriteBuffer(4096)
			}
		}
	}, WithLimits(Limits{SendQueue: 64}))
	slow := tr.dialWith(t, &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(4096) // fill up quickly
		}
		return c, err
	}})
	slow.Subscribe("all", nostr.Filter{})
	fast := tr.dial(t)
	fast.Subscribe("all", nostr.Filter{})
	// The slow client stops reading; its socket buffers fill, then its queue.
	pub := tr.dial(t)
	s := newSigner(t)
	big := strings.Repeat("z", 4000)
	const n = 150
	var evs []*nostr.Event
	for i := range n {
		evs = append(evs, s.Event(1, now(), big+string(rune('a'+i%26))+strings.Repeat("!", i)))
	}
	var received atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for received.Load() < n {
			raw, err := fast.NextRaw()
			if err != nil {
				return
			}
			if strings.HasPrefix(string(raw), `["EVENT"`) {
				received.Add(1)
			}
		}
	}()
	t.Logf("setup+sign %v", time.Since(t0))
	start := time.Now()
	// One at a time: the fast reader has the whole queue (64) of slack
	// however the shared machine schedules it, while the slow one, whose
	// socket holds a few events, overflows its queue.
	for _, ev := range evs {
		pub.MustAccept(ev)
	}
	t.Logf("published in %v", time.Since(start))
	wg.Wait()
	t.Logf("received in %v", time.Since(start))
	eq(t, "fast reader received", int(received.Load()), n)

	t.Logf("to cutoff check %v", time.Since(t0))
	// The slow one was disconnected with 1008.
	_ = slow.WS.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := slow.WS.ReadMessage()
		if err == nil {
			continue
		}
		// 1008 when the close frame got through; usually the socket is
		// too full for it and the client sees the connection end (1006).
		var ce *websocket.CloseError
		if errors.As(err, &ce) && ce.Code != websocket.ClosePolicyViolation && ce.Code != websocket.CloseAbnormalClosure {
			t.Fatalf("slow reader closed with %d, want 1008 or 1006", ce.Code)
		}
		if !errors.As(err, &ce) && !isClosedErr(err) {
			t.Fatalf("slow reader: %v", err)
		}
		break
	}
}

func isClosedErr(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "reset") || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "closed"))
}

func TestShutdown(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)
	// Pipeline events and shut down while they are in flight: every OK
	// that arrives is true and the event is stored; the close code is 1012.
	var evs []*nostr.Event
	for i := range 30 {
		evs = append(evs, s.Event(1, now(), "in flight "+string(rune('a'+i))))
	}
	for _, ev := range evs {
		c.SendEvent(ev)
	}
	// Shutdown starts as the first OK arrives: the relay has read at least
	// one event, and the rest are on their way.
	var shutdown sync.Once
	acked := map[string]bool{}
	var closeCode int
	for {
		raw, err := c.NextRaw()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				closeCode = ce.Code
			} else {
				t.Fatalf("read: %v", err)
			}
			break
		}
		m, _ := nostr.ParseRelayMessage(raw)
		if ok, isOK := m.(*nostr.OKMessage); isOK {
			if !ok.OK {
				t.Fatalf("refused during shutdown: %q", ok.Message)
			}
			acked[ok.EventID] = true
			shutdown.Do(func() {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					_ = tr.relay.Shutdown(ctx)
				}()
			})
		}
	}
	eq(t, "close code", closeCode, websocket.CloseServiceRestart)
	// Every acknowledged event is stored.
	for id := range acked {
		n, err := tr.store.Count(context.Background(), tr.tc.Community(), []nostr.Filter{{IDs: []string{id}}})
		if err != nil || n != 1 {
			t.Fatalf("acknowledged %s not stored (n=%d, err=%v)", id, n, err)
		}
	}
	// New upgrades are refused with 503.
	_, resp, err := websocket.DefaultDialer.Dial(tr.url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("upgrade after Shutdown: %v %v", err, resp)
	}
	// Idempotent.
	if err := tr.relay.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyHooks(t *testing.T) {
	var stored atomic.Int32
	tr := newTestRelay(t,
		WithEventPolicy(func(_ context.Context, tc tenant.TenantContext, ev *nostr.Event) error {
			if tc.IsZero() {
				return errors.New("no tenant")
			}
			if ev.Content == "spam" {
				return errors.New("no spam")
			}
			return nil
		}),
		WithEventPolicy(func(_ context.Context, _ tenant.TenantContext, ev *nostr.Event) error {
			if ev.Content == "slow down" {
				return errors.New("rate-limited: too fast")
			}
			return nil
		}),
		WithFilterPolicy(func(_ context.Context, _ tenant.TenantContext, f nostr.Filter) error {
			if len(f.Kinds) == 1 && f.Kinds[0] == 4 {
				return errors.New("restricted: no DMs")
			}
			if f.IDs == nil && f.Authors == nil && f.Kinds == nil && f.Tags == nil {
				return errors.New("too broad")
			}
			return nil
		}),
		WithOnStored(func(_ context.Context, _ tenant.TenantContext, ev *nostr.Event) { stored.Add(1) }),
	)
	c := tr.dial(t)
	s := newSigner(t)
	ok := c.Publish(s.Event(1, now(), "spam"))
	eq(t, "policy message", ok.Message, "blocked: no spam")
	ok = c.Publish(s.Event(1, now(), "slow down"))
	eq(t, "prefixed policy message", ok.Message, "rate-limited: too fast")
	c.MustAccept(s.Event(1, now(), "fine"))
	eq(t, "OnStored calls", stored.Load(), int32(1))

	c.SendRaw(nostr.AppendReq(nil, "dm", nostr.Filter{Kinds: []int{4}}))
	c.ExpectClosed("dm", "restricted: no DMs")
	c.SendRaw(nostr.AppendReq(nil, "all", nostr.Filter{Kinds: []int{1}}, nostr.Filter{}))
	c.ExpectClosed("all", "blocked: too broad")
	eq(t, "kinds 1", len(c.Req("ok", nostr.Filter{Kinds: []int{1}})), 1)
	eq(t, "restricted_writes", tr.relay.NIP11Document().Limitation.RestrictedWrites, true)
}

func TestMuxReceivesOtherRequests(t *testing.T) {
	tr := newTestRelay(t)
	tr.relay.Mux().HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		tc, err := tr.relay.Bind(r)
		if err != nil {
			http.Error(w, err.Error(), 404)
			return
		}
		_, _ = io.WriteString(w, "hello "+tc.Host())
	})
	resp, err := http.Get(tr.srv.URL + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	eq(t, "mux body", string(b), "hello "+tr.host)
}

func TestHandleCommunityBindsHost(t *testing.T) {
	tr := newTestRelay(t)
	tr.relay.HandleCommunity("GET /whoami", func(w http.ResponseWriter, r *http.Request, tc tenant.TenantContext) {
		_, _ = io.WriteString(w, tc.Community().String())
	})
	get := func(host string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, tr.srv.URL+"/whoami", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get(tr.host)
	eq(t, "mapped status", code, http.StatusOK)
	eq(t, "mapped body", body, tr.tc.Community().String())
	for _, h := range []string{"unmapped.example", "other.example:8080"} {
		code, body = get(h)
		eq(t, "unmapped status "+h, code, http.StatusNotFound)
		eq(t, "unmapped body "+h, body, tenant.ErrUnmappedHost.Error()+"\n")
	}
}

// TestKeepalivePings: the writer pings every PingInterval while the
// connection is idle and while it is writing; a client that answers stays
// connected, and one that never answers is closed once PongTimeout passes.
func TestKeepalivePings(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{PingInterval: 20 * time.Millisecond, PongTimeout: 300 * time.Millisecond}))

	answering := tr.dial(t)
	var pings atomic.Int32
	pinged := make(chan struct{}, 1)
	answering.WS.SetPingHandler(func(data string) error {
		pings.Add(1)
		select {
		case pinged <- struct{}{}:
		default:
		}
		return answering.WS.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	answering.Subscribe("live", nostr.Filter{Kinds: []int{1}})
	pub := tr.dial(t)
	s := newSigner(t)
	got := make(chan struct{}, 64)
	go func() {
		for {
			_, m, err := answering.WS.ReadMessage()
			if err != nil {
				close(got)
				return
			}
			if strings.HasPrefix(string(m), `["EVENT","live"`) {
				got <- struct{}{}
			}
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; pings.Load() < 10 || i < 10; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d pings and %d events in 5s, want 10 of each", pings.Load(), i)
		}
		pub.Publish(s.Event(1, now(), fmt.Sprint("keepalive ", i)))
		select {
		case _, ok := <-got:
			if !ok {
				t.Fatalf("answering client disconnected after %d pings", pings.Load())
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("event %d not delivered", i)
		}
		// The next publication follows a ping: pings interleave with writes.
		select {
		case <-pinged:
		case <-time.After(2 * time.Second):
			t.Fatalf("no ping after event %d", i)
		}
	}

	silent := tr.dial(t)
	silent.WS.SetPingHandler(func(string) error { return nil }) // never answers
	_ = silent.WS.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	for {
		if _, _, err := silent.WS.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) || time.Since(start) < 5*time.Second {
				break // closed by the relay (close frame or reset), not by our deadline
			}
			t.Fatalf("silent client still connected after 5s: %v", err)
		}
	}
}
