package buzz

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// TestFilterLimitsRefused checks that filters beyond the limits are refused
// with CLOSED and the limit named, and that NIP-11 lists them.
func TestFilterLimitsRefused(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{MaxFilters: 3, MaxFilterValues: 4, MaxSubscriptionBytes: 300, MaxConnFilterBytes: 700}))
	c := tr.dial(t)
	c.SendRaw([]byte(`["REQ","many"` + strings.Repeat(`,{}`, 174_000) + `]`))
	c.ExpectClosed("many", "invalid: too many filters (limit 3)")
	c.SendRaw([]byte(`["REQ","kinds",{"kinds":[1,2,3,4,5]}]`))
	c.ExpectClosed("kinds", "invalid: too many values in kinds (limit 4)")
	c.SendRaw([]byte(`["COUNT","tags",{"#t":["a","b","c","d","e"]}]`))
	c.ExpectClosed("tags", "invalid: too many values in #t (limit 4)")
	big := `{"#t":["` + strings.Repeat("x", 290) + `"]}`
	c.SendRaw([]byte(`["REQ","big",` + big + `]`))
	c.ExpectClosed("big", "invalid: filters too large (limit 300 bytes)")

	// Per connection: two subscriptions of ~250 bytes and one value (~320 charged) fit, a third does not
	// until one is closed.
	mid := func(id string) []byte {
		return []byte(`["REQ","` + id + `",{"#t":["` + strings.Repeat("y", 220) + `"]}]`)
	}
	for _, id := range []string{"s1", "s2"} {
		c.SendRaw(mid(id))
		c.UntilEOSE(id)
	}
	c.SendRaw(mid("s3"))
	c.ExpectClosed("s3", "restricted: this connection's subscriptions hold too many filter bytes (limit 700)")
	c.SendRaw(nostr.AppendClose(nil, "s1"))
	c.SendRaw(mid("s3"))
	c.UntilEOSE("s3")

	doc := tr.relay.NIP11Document().Limitation
	eq(t, "max_filter_values", doc.MaxFilterValues, 4)
	eq(t, "max_subscription_bytes", doc.MaxSubscriptionBytes, 300)
	eq(t, "max_connection_filter_bytes", doc.MaxConnectionFilterBytes, 700)
}

// TestMessageRateLimited checks that messages beyond the connection's rate
// are refused with "rate-limited:" and not processed.
func TestMessageRateLimited(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{MessageRate: 1, MessageBurst: 2}))
	c := tr.dial(t)
	s := newSigner(t)
	c.Subscribe("a", nostr.Filter{})
	c.Subscribe("b", nostr.Filter{})
	c.SendRaw(nostr.AppendReq(nil, "c", nostr.Filter{}))
	c.ExpectClosed("c", "rate-limited: ")
	ev := s.Event(1, now(), "too fast")
	c.SendEvent(ev)
	if ok := c.ExpectOK(ev.ID); ok.OK || !strings.HasPrefix(ok.Message, "rate-limited: ") {
		t.Fatalf("OK %v %q, want false rate-limited", ok.OK, ok.Message)
	}
	// Nothing was stored.
	other := tr.dial(t)
	if evs := other.Req("x", nostr.Filter{IDs: []string{ev.ID}}); len(evs) != 0 {
		t.Fatal("a rate-limited EVENT was stored")
	}
}

// TestConnectionAdmission checks the per-address (429) and total (503)
// connection limits, and that a closed connection frees its place.
func TestConnectionAdmission(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{MaxConnectionsPerAddress: 2, MaxConnections: 3}))
	a := tr.dial(t)
	tr.dial(t)
	dialStatus := func(header http.Header) int {
		ws, resp, err := websocket.DefaultDialer.Dial(tr.url, header)
		if err == nil {
			ws.Close()
			return 101
		}
		return resp.StatusCode
	}
	eq(t, "third from one address", dialStatus(nil), http.StatusTooManyRequests)
	a.WS.Close()
	waitFor(t, "condition", func() bool { return dialStatus(nil) == 101 })

	// Behind a trusted proxy, clients are told apart by X-Forwarded-For.
	tp := newTestRelay(t, WithTrustedProxies(netip.MustParsePrefix("127.0.0.0/8")),
		WithLimits(Limits{MaxConnectionsPerAddress: 1, MaxConnections: 2}))
	xff := func(ip string) http.Header { return http.Header{"X-Forwarded-For": {ip}} }
	dialKeep := func(h http.Header) (*websocket.Conn, int) {
		ws, resp, err := websocket.DefaultDialer.Dial(tp.url, h)
		if err != nil {
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { ws.Close() })
		return ws, 101
	}
	_, st := dialKeep(xff("203.0.113.1"))
	eq(t, "first client", st, 101)
	_, st = dialKeep(xff("203.0.113.1"))
	eq(t, "same client again", st, http.StatusTooManyRequests)
	_, st = dialKeep(xff("203.0.113.2"))
	eq(t, "second client", st, 101)
	_, st = dialKeep(xff("203.0.113.3"))
	eq(t, "beyond the total", st, http.StatusServiceUnavailable)
}

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tc := range []struct {
		remote, xff, want string
	}{
		{"192.0.2.7:1234", "", "192.0.2.7"},
		{"192.0.2.7:1234", "198.51.100.1", "192.0.2.7"},                    // untrusted peer: header ignored
		{"10.1.2.3:80", "198.51.100.1", "198.51.100.1"},                    // one trusted proxy
		{"10.1.2.3:80", "6.6.6.6, 198.51.100.1, 10.9.9.9", "198.51.100.1"}, // spoofed leftmost entry ignored
		{"10.1.2.3:80", "garbage", "10.1.2.3"},
		{"[::1]:80", "2001:db8::1", "2001:db8::1"},
		{"[::ffff:192.0.2.9]:80", "", "192.0.2.9"},
	} {
		req := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
		if tc.xff != "" {
			req.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := clientAddr(req, trusted); got.String() != tc.want {
			t.Errorf("clientAddr(%s, %q) = %s, want %s", tc.remote, tc.xff, got, tc.want)
		}
	}
}

// TestQueryGateFair checks that a community holding its whole budget, with
// more reads waiting, does not get the slot another community asks for,
// and that within a community connections are served in turn.
func TestQueryGateFair(t *testing.T) {
	g := newQueryGate(4, 3)
	ctx := context.Background()
	a, b := tenant.NewCommunityID(), tenant.NewCommunityID()
	for range 3 {
		if err := g.acquire(ctx, a, "a1"); err != nil {
			t.Fatal(err)
		}
	}
	// a is at its budget: a fourth read of a waits although a slot is free.
	var order []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	wait := func(c tenant.CommunityID, owner string) {
		wg.Add(1)
		started := make(chan struct{})
		go func() {
			defer wg.Done()
			close(started)
			if err := g.acquire(ctx, c, owner); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, owner)
			mu.Unlock()
		}()
		<-started
	}
	wait(a, "a1")
	wait(a, "a1")
	waitFor(t, "condition", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.ring) == 1 })
	wait(a, "a2")
	waitFor(t, "condition", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.comms[a].ring) == 2 })
	// b gets the free slot at once.
	done := make(chan error, 1)
	go func() { done <- g.acquire(ctx, b, "b1") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("community b waited behind a's reads")
	}
	// Freed slots of a go to a's connections in turn: a1, then a2, then a1.
	for i := range 3 {
		g.release(a)
		n := i
		waitFor(t, "condition", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == n+1 })
	}
	wg.Wait()
	eq(t, "order", strings.Join(order, ","), "a1,a2,a1")

	// A waiting read whose context ends leaves the queue.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- g.acquire(cctx, a, "a3") }()
	waitFor(t, "condition", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.ring) == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled wait got a slot")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	eq(t, "waiting communities", len(g.ring), 0)
}

// TestReplayPagesWithTies checks that a replay read in pages returns every
// stored event once, in order, when many events share one created_at
// across page boundaries.
func TestReplayPagesWithTies(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)
	base := now() - 100
	var evs []*nostr.Event
	for i := range 3*pageRecords + 7 {
		evs = append(evs, s.Event(1, base+int64(i/300), fmt.Sprint("tie ", i)))
	}
	for i := 0; i < len(evs); i += 100 {
		batch := evs[i:min(i+100, len(evs))]
		for _, ev := range batch {
			c.SendEvent(ev)
		}
		c.ExpectOKs(batch)
	}
	got := c.Req("all", nostr.Filter{Kinds: []int{1}})
	eq(t, "events", len(got), len(evs))
	seen := map[string]bool{}
	for i, ev := range got {
		if seen[ev.ID] {
			t.Fatalf("event %d returned twice", i)
		}
		seen[ev.ID] = true
		if i > 0 {
			p := got[i-1]
			if p.CreatedAt < ev.CreatedAt || p.CreatedAt == ev.CreatedAt && p.ID > ev.ID {
				t.Fatalf("out of order at %d", i)
			}
		}
	}
	// A limit is honoured across pages.
	eq(t, "limited", len(c.Req("some", nostr.Filter{Kinds: []int{1}, Limit: pageRecords + 3, LimitSet: true})), pageRecords+3)
}

// limitRecorder is the embedded store, recording the limit of every
// filter it is asked to read.
type limitRecorder struct {
	*embedded.Store
	mu     sync.Mutex
	limits []int
}

func (s *limitRecorder) QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope) iter.Seq2[store.Record, error] {
	s.mu.Lock()
	s.limits = append(s.limits, f.Limit)
	s.mu.Unlock()
	return s.Store.QueryScoped(ctx, c, f, scope)
}

// TestReplayByIDsReadsAtMostItsIDs checks that a REQ naming ids, with no
// limit or a larger one, asks the store for at most as many events as it
// names (an id names one event), and still gets every one of them.
func TestReplayByIDsReadsAtMostItsIDs(t *testing.T) {
	st := &limitRecorder{Store: openEmbedded(t, t.TempDir())}
	tr := backendRelay(t, st)
	c := tr.dial(t)
	s := newSigner(t)
	var ids []string
	for i := range 5 {
		ev := s.Event(1, now()-int64(i), fmt.Sprint("by id ", i))
		c.MustAccept(ev)
		ids = append(ids, ev.ID)
	}
	for _, f := range []nostr.Filter{
		{IDs: ids[:3]},
		{IDs: ids[:3], Limit: 400, LimitSet: true},
		{IDs: append(ids[:3:3], ids[0])}, // an id twice: still every event once
	} {
		st.mu.Lock()
		st.limits = nil
		st.mu.Unlock()
		eq(t, fmt.Sprintf("events for %d ids", len(f.IDs)), len(c.Req("ids", f)), 3)
		st.mu.Lock()
		got := slices.Clone(st.limits)
		st.mu.Unlock()
		if len(got) == 0 || slices.Max(got) > len(f.IDs) {
			t.Fatalf("ids %d, limit %d: the store was asked for %v events", len(f.IDs), f.Limit, got)
		}
	}
	// A smaller limit still applies.
	eq(t, "events for 3 ids, limit 2", len(c.Req("ids", nostr.Filter{IDs: ids[:3], Limit: 2, LimitSet: true})), 2)
}

// TestSlowReplayDoesNotHoldStore checks that clients that ask for large
// replays and never read do not hold the store's read connections: with
// more such replays than the store has readers, another client's REQ is
// still answered.
func TestSlowReplayDoesNotHoldStore(t *testing.T) {
	tr := newTestRelayWith(t, func(srv *httptest.Server) {
		srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
			if st == http.StateNew {
				_ = c.(*net.TCPConn).SetWriteBuffer(4096)
			}
		}
	})
	pub := tr.dial(t)
	s := newSigner(t)
	big := strings.Repeat("z", 4000)
	var evs []*nostr.Event
	for i := range 600 {
		evs = append(evs, s.Event(1, now()-int64(i), fmt.Sprint(big, i)))
	}
	for i := 0; i < len(evs); i += 100 {
		for _, ev := range evs[i : i+100] {
			pub.SendEvent(ev)
		}
		pub.ExpectOKs(evs[i : i+100])
	}
	slowDialer := &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(4096)
		}
		return c, err
	}}
	// 2 connections × 4 replays of 600 events, never read: twice the
	// embedded store's 4 read connections.
	for range 2 {
		slow := tr.dialWith(t, slowDialer)
		for j := range 4 {
			slow.SendRaw(nostr.AppendReq(nil, fmt.Sprint("s", j), nostr.Filter{Kinds: []int{1}}, nostr.Filter{Authors: []string{s.Pub()}}))
		}
	}
	// The replays stall: each slow connection's outbound queue is full and
	// a replay waits for room (its socket full too).
	waitFor(t, "both slow connections' replays stalled", func() bool {
		tr.relay.mu.Lock()
		conns := make([]*conn, 0, len(tr.relay.conns))
		for c := range tr.relay.conns {
			conns = append(conns, c)
		}
		tr.relay.mu.Unlock()
		stalled := 0
		for _, c := range conns {
			c.outMu.Lock()
			if c.room != nil {
				stalled++
			}
			c.outMu.Unlock()
		}
		return stalled == 2
	})
	innocent := tr.dial(t)
	_ = innocent.WS.SetReadDeadline(time.Now().Add(30 * time.Second))
	eq(t, "innocent's events", len(innocent.Req("i", nostr.Filter{Kinds: []int{1}, Limit: 10, LimitSet: true})), 10)
}

// TestAdmissionCommunityBudget checks the per-community connection limit
// and that leaving frees a place.
func TestAdmissionCommunityBudget(t *testing.T) {
	l := DefaultLimits()
	l.MaxCommunityConnections = 2
	var ad admission
	a, b := tenant.NewCommunityID(), tenant.NewCommunityID()
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}) }
	for i := range 2 {
		if err := ad.admit(&l, addr(i), a); err != nil {
			t.Fatal(err)
		}
	}
	if err := ad.admit(&l, addr(9), a); err != errTooManyCommunity {
		t.Fatalf("third connection to a: %v, want errTooManyCommunity", err)
	}
	if err := ad.admit(&l, addr(9), b); err != nil {
		t.Fatalf("another community: %v", err)
	}
	ad.leave(addr(0), a)
	if err := ad.admit(&l, addr(9), a); err != nil {
		t.Fatalf("after a leave: %v", err)
	}
}

// TestSendQueueBytesCutsOff checks that a connection whose queued frames
// exceed Limits.SendQueueBytes is disconnected, even though its queue
// holds far fewer messages than Limits.SendQueue.
func TestSendQueueBytesCutsOff(t *testing.T) {
	tr := newTestRelayWith(t, func(srv *httptest.Server) {
		srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
			if st == http.StateNew {
				_ = c.(*net.TCPConn).SetWriteBuffer(4096)
			}
		}
	}, WithLimits(Limits{SendQueue: 100_000, SendQueueBytes: 64 << 10}))
	slow := tr.dialWith(t, &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(4096)
		}
		return c, err
	}})
	slow.Subscribe("all", nostr.Filter{})
	pub := tr.dial(t)
	s := newSigner(t)
	big := strings.Repeat("z", 4000)
	for i := range 200 {
		pub.MustAccept(s.Event(1, now(), fmt.Sprint(big, i)))
	}
	// 200 × 4 KB is far more than 64 KiB of queue plus the socket buffers.
	_ = slow.WS.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := slow.WS.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Code != websocket.ClosePolicyViolation && ce.Code != websocket.CloseAbnormalClosure {
				t.Fatalf("closed with %d, want 1008 or 1006", ce.Code)
			}
			if !errors.As(err, &ce) && !isClosedErr(err) {
				t.Fatalf("slow reader: %v, want the connection closed", err)
			}
			return
		}
	}
}
