package buzz

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store/embedded"
)

func TestReqOrderingAndLimit(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)
	base := now() - 1000
	var all []*nostr.Event
	for i := range 4 {
		ev := s.event(1, base+int64(i), fmt.Sprint("t", i))
		c.mustAccept(ev)
		all = append(all, ev)
	}
	// Three events sharing one created_at: ties go to the lowest id first.
	var tie []*nostr.Event
	for i := range 3 {
		ev := s.event(1, base+10, fmt.Sprint("tie", i))
		c.mustAccept(ev)
		tie = append(tie, ev)
	}
	sort.Slice(tie, func(i, j int) bool { return tie[i].ID < tie[j].ID })
	want := ids(tie)
	for i := len(all) - 1; i >= 0; i-- {
		want = append(want, all[i].ID)
	}

	got := c.req("s", nostr.Filter{Authors: []string{s.pub()}})
	if !slices.Equal(ids(got), want) {
		t.Fatalf("order\n got %v\nwant %v", ids(got), want)
	}
	got = c.req("l", nostr.Filter{Authors: []string{s.pub()}, Limit: 4, LimitSet: true})
	if !slices.Equal(ids(got), want[:4]) {
		t.Fatalf("limit 4\n got %v\nwant %v", ids(got), want[:4])
	}
	// limit 0: no stored events, straight to EOSE.
	got = c.req("z", nostr.Filter{Authors: []string{s.pub()}, Limit: 0, LimitSet: true})
	eq(t, "limit 0 events", len(got), 0)
}

func TestReqMaxLimitClamps(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{MaxLimit: 2}))
	c := tr.dial(t)
	s := newSigner(t)
	for i := range 4 {
		c.mustAccept(s.event(1, now()-int64(i), fmt.Sprint(i)))
	}
	eq(t, "absent limit", len(c.req("a", nostr.Filter{})), 2)
	eq(t, "large limit", len(c.req("b", nostr.Filter{Limit: 100, LimitSet: true})), 2)
	eq(t, "NIP-11 max_limit", tr.relay.NIP11Document().Limitation.MaxLimit, 2)
}

func TestReqMultiFilterDedupe(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	a, b := newSigner(t), newSigner(t)
	e1 := a.event(1, now()-3, "a1", nostr.Tag{"t", "x"})
	e2 := b.event(1, now()-2, "b1", nostr.Tag{"t", "x"})
	e3 := b.event(7, now()-1, "b7", nostr.Tag{"e", e1.ID})
	for _, e := range []*nostr.Event{e1, e2, e3} {
		c.mustAccept(e)
	}
	got := c.req("m",
		nostr.Filter{Authors: []string{a.pub()}},
		nostr.Filter{Tags: map[string][]string{"t": {"x"}}},
		nostr.Filter{Kinds: []int{7}},
	)
	g := ids(got)
	slices.Sort(g)
	w := []string{e1.ID, e2.ID, e3.ID}
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("got %v, want each of %v once", g, w)
	}

	// COUNT with several filters is one OR-ed count.
	c.sendRaw(nostr.AppendCount(nil, "c",
		nostr.Filter{Authors: []string{a.pub()}},
		nostr.Filter{Tags: map[string][]string{"t": {"x"}}}))
	m, ok := c.next().(*nostr.CountMessage)
	if !ok || m.SubID != "c" || m.Count != 2 {
		t.Fatalf("COUNT = %#v, want 2", m)
	}
}

func TestReqRefusals(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{MaxFilters: 2, MaxSubIDLength: 8, MaxSubscriptions: 2}))
	c := tr.dial(t)

	c.sendRaw(nostr.AppendReq(nil, "123456789", nostr.Filter{}))
	c.expectClosed("123456789", "invalid: subscription id too long")

	c.sendRaw(nostr.AppendReq(nil, "f", nostr.Filter{}, nostr.Filter{}, nostr.Filter{}))
	c.expectClosed("f", "invalid: too many filters")

	c.sendRaw(nostr.AppendCount(nil, "cf", nostr.Filter{}, nostr.Filter{}, nostr.Filter{}))
	c.expectClosed("cf", "invalid: too many filters")

	// A filter with a wrong type: CLOSED with the sub id, nothing else.
	c.sendRaw([]byte(`["REQ","bad",{"kinds":"1"}]`))
	c.expectClosed("bad", "invalid:")
	c.sendRaw([]byte(`["REQ","bad2",{"authors":["xyz"]}]`))
	c.expectClosed("bad2", "invalid:")
	c.sendRaw([]byte(`["COUNT","bad3",{"since":-1}]`))
	c.expectClosed("bad3", "invalid:")

	c.subscribe("a", nostr.Filter{})
	c.subscribe("b", nostr.Filter{})
	c.sendRaw(nostr.AppendReq(nil, "c", nostr.Filter{}))
	c.expectClosed("c", "error: too many subscriptions")
	// Replacing an open one is not an extra subscription.
	c.subscribe("b", nostr.Filter{Kinds: []int{1}})
	// After CLOSE there is room again.
	c.sendRaw(nostr.AppendClose(nil, "a"))
	c.subscribe("c", nostr.Filter{})
	// CLOSE of an unknown id is ignored (no reply); the connection still works.
	c.sendRaw(nostr.AppendClose(nil, "nope"))
	c.sendRaw(nostr.AppendReq(nil, "d", nostr.Filter{}))
	c.expectClosed("d", "error: too many subscriptions")
}

func TestReqReplaceAndClose(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	pub := tr.dial(t)
	s := newSigner(t)

	c.subscribe("s", nostr.Filter{Kinds: []int{1}})
	c.subscribe("s", nostr.Filter{Kinds: []int{2}}) // replaces: kind 1 no longer delivered
	pub.mustAccept(s.event(1, now(), "one"))
	k2 := s.event(2, now(), "two")
	pub.mustAccept(k2)
	m, ok := c.next().(*nostr.EventMessage)
	if !ok || m.Event.ID != k2.ID || m.SubID != "s" {
		t.Fatalf("got %#v, want only the kind 2 event", m)
	}
	c.sendRaw(nostr.AppendClose(nil, "s"))
	// A later REQ on another id proves the CLOSE was processed in order.
	c.subscribe("probe", nostr.Filter{Kinds: []int{9999}})
	pub.mustAccept(s.event(2, now(), "after close"))
	sentinel := s.event(9999, now(), "sentinel")
	pub.mustAccept(sentinel)
	c.expectNext("probe", sentinel.ID)
}

// TestLiveNoLossNoDuplicates publishes continuously while REQs open: every
// event accepted after the REQ is delivered exactly once, before or after
// EOSE, and an event is never delivered twice.
func TestLiveNoLossNoDuplicates(t *testing.T) {
	tr := newTestRelay(t)
	s := newSigner(t)
	pub := tr.dial(t)
	const rounds, perRound = 4, 40
	for r := range rounds {
		sub := tr.dial(t)
		tag := fmt.Sprint("round", r)
		var wg sync.WaitGroup
		published := make([]*nostr.Event, perRound)
		for i := range perRound {
			published[i] = s.event(1, now(), fmt.Sprint(r, "-", i), nostr.Tag{"t", tag})
		}
		// Open the REQ while events are flowing: after a later share of
		// them each round has been sent.
		flowing := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, ev := range published {
				if i == r*perRound/rounds {
					close(flowing)
				}
				pub.sendEvent(ev)
			}
		}()
		<-flowing
		sub.sendRaw(nostr.AppendReq(nil, "live", nostr.Filter{Tags: map[string][]string{"t": {tag}}}))
		wg.Wait()
		pub.expectOKs(published)
		seen := map[string]int{}
		eose := false
		for len(seen) < perRound {
			switch m := sub.next().(type) {
			case *nostr.EventMessage:
				seen[m.Event.ID]++
				if seen[m.Event.ID] > 1 {
					t.Fatalf("round %d: event %s delivered twice (eose=%v)", r, m.Event.ID, eose)
				}
			case *nostr.EOSEMessage:
				if eose {
					t.Fatal("two EOSE")
				}
				eose = true
			default:
				t.Fatalf("unexpected %#v", m)
			}
		}
		if !eose {
			if _, ok := sub.next().(*nostr.EOSEMessage); !ok {
				t.Fatal("no EOSE")
			}
		}
		sentinel := s.event(1, now(), "sentinel", nostr.Tag{"t", tag})
		pub.mustAccept(sentinel)
		sub.expectNext("live", sentinel.ID) // nothing delivered twice before it
	}
}

func TestEphemeral(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	pub := tr.dial(t)
	s := newSigner(t)
	c.subscribe("e", nostr.Filter{Kinds: []int{20001}})
	ev := s.event(20001, now(), "typing")
	pub.mustAccept(ev)
	m, ok := c.next().(*nostr.EventMessage)
	if !ok || m.Event.ID != ev.ID {
		t.Fatalf("got %#v, want the ephemeral event live", m)
	}
	eq(t, "stored ephemeral", len(pub.req("q", nostr.Filter{Kinds: []int{20001}})), 0)
	// Publishing it again is not a duplicate: it was never stored.
	if ok := pub.publish(ev); !ok.OK || ok.Message != "" {
		t.Fatalf("repeat ephemeral: %+v", ok)
	}
}

func TestReplaceableAndAddressable(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)
	t0 := now() - 100

	old := s.event(0, t0, `{"name":"old"}`)
	newer := s.event(0, t0+10, `{"name":"new"}`)
	c.mustAccept(old)
	c.mustAccept(newer)
	late := s.event(0, t0+5, `{"name":"late"}`)
	ok := c.publish(late)
	eq(t, "older replaceable ok", ok.OK, false)
	mustPrefix(t, "older replaceable", ok.Message, "invalid:")
	got := c.req("p", nostr.Filter{Kinds: []int{0}, Authors: []string{s.pub()}})
	if len(got) != 1 || got[0].ID != newer.ID {
		t.Fatalf("kind 0 = %v, want only %s", ids(got), newer.ID)
	}

	// Addressable: keyed by d; a missing d equals "".
	a1 := s.event(30023, t0, "a1", nostr.Tag{"d", "post"})
	a2 := s.event(30023, t0+1, "a2", nostr.Tag{"d", "post"})
	other := s.event(30023, t0, "other", nostr.Tag{"d", "other"})
	noD := s.event(30023, t0, "noD")
	emptyD := s.event(30023, t0+1, "emptyD", nostr.Tag{"d", ""})
	for _, e := range []*nostr.Event{a1, a2, other, noD, emptyD} {
		c.mustAccept(e)
	}
	ok = c.publish(s.event(30023, t0, "stale", nostr.Tag{"d", "post"}))
	eq(t, "older addressable ok", ok.OK, false)
	mustPrefix(t, "older addressable", ok.Message, "invalid:")
	got = c.req("a", nostr.Filter{Kinds: []int{30023}})
	g := ids(got)
	slices.Sort(g)
	w := []string{a2.ID, other.ID, emptyD.ID}
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("addressable = %v, want %v", g, w)
	}
}

func TestDeletion(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)
	mallory := newSigner(t)
	t0 := now() - 100

	note := s.event(1, t0, "to delete")
	keep := s.event(1, t0, "keep")
	c.mustAccept(note)
	c.mustAccept(keep)

	// Someone else's deletion does nothing.
	c.mustAccept(mallory.event(5, t0+1, "", nostr.Tag{"e", note.ID}))
	eq(t, "after foreign deletion", len(c.req("x", nostr.Filter{IDs: []string{note.ID}})), 1)

	del := s.event(5, t0+2, "", nostr.Tag{"e", note.ID})
	c.mustAccept(del)
	eq(t, "after deletion", len(c.req("y", nostr.Filter{IDs: []string{note.ID}})), 0)
	eq(t, "kept", len(c.req("k", nostr.Filter{IDs: []string{keep.ID}})), 1)
	// A deleted event cannot be re-added.
	ok := c.publish(note)
	eq(t, "re-add ok", ok.OK, false)
	eq(t, "re-add message", ok.Message, "blocked: this event was deleted by its author")

	// Deleting the deletion has no effect.
	c.mustAccept(s.event(5, t0+3, "", nostr.Tag{"e", del.ID}))
	eq(t, "deletion kept", len(c.req("d", nostr.Filter{IDs: []string{del.ID}})), 1)
	eq(t, "still deleted", len(c.req("d2", nostr.Filter{IDs: []string{note.ID}})), 0)

	// Deletion by coordinate, with a watermark against late older versions.
	v1 := s.event(30000, t0, "v1", nostr.Tag{"d", "list"})
	c.mustAccept(v1)
	coord := fmt.Sprintf("30000:%s:list", s.pub())
	c.mustAccept(s.event(5, t0+10, "", nostr.Tag{"a", coord}))
	eq(t, "after a deletion", len(c.req("a", nostr.Filter{Kinds: []int{30000}})), 0)
	late := s.event(30000, t0+5, "late older version", nostr.Tag{"d", "list"})
	ok = c.publish(late)
	eq(t, "late older version ok", ok.OK, false)
	mustPrefix(t, "late older version", ok.Message, "blocked:")
	fresh := s.event(30000, t0+11, "newer than the deletion", nostr.Tag{"d", "list"})
	c.mustAccept(fresh)
	eq(t, "newer version", len(c.req("a2", nostr.Filter{Kinds: []int{30000}})), 1)

	// Malformed deletion requests are refused.
	for name, tags := range map[string]nostr.Tags{
		"no target":   {{"p", s.pub()}},
		"bad e":       {{"e", "zz"}},
		"bad a":       {{"a", "notacoordinate"}},
		"foreign a":   {{"a", fmt.Sprintf("30000:%s:list", mallory.pub())}},
		"a bad kind":  {{"a", fmt.Sprintf("x:%s:list", s.pub())}},
		"a short key": {{"a", "30000:abc:list"}},
	} {
		ok := c.publish(s.event(5, now(), "", tags...))
		if ok.OK || !strings.HasPrefix(ok.Message, "invalid:") {
			t.Fatalf("%s: OK %v %q, want invalid", name, ok.OK, ok.Message)
		}
	}
}

func TestExpiredNotServedNorDelivered(t *testing.T) {
	// The relay's clock runs an hour behind the store's (the wall clock):
	// an event the relay accepts as alive may have expired for the store,
	// so expiry is reached with no wait.
	clk := &fakeClock{t: time.Now().Add(-time.Hour)}
	tr := newTestRelay(t, WithClock(clk.Now))
	c := tr.dial(t)
	sub := tr.dial(t)
	s := newSigner(t)
	at := clk.Now().Unix()
	expiration := func(unix int64) nostr.Tag { return nostr.Tag{"expiration", fmt.Sprint(unix)} }
	alive := s.event(1, at, "alive", expiration(now()+3600))
	expired := s.event(1, at, "expired since", expiration(now()-1))
	c.mustAccept(alive)
	c.mustAccept(expired)
	got := c.req("a", nostr.Filter{})
	if len(got) != 1 || got[0].ID != alive.ID {
		t.Fatalf("served %v, want only %s", ids(got), alive.ID)
	}
	sub.subscribe("live", nostr.Filter{})

	// An event that expired in transit (e.g. published by another process)
	// is never delivered live.
	stale := s.event(1, at, "expired in transit", expiration(at-1))
	if err := tr.relay.cfg.broker.Publish(context.Background(), pubsub.Message{
		Community: tr.tc.Community(), Event: stale, Raw: stale.AppendJSON(nil),
	}); err != nil {
		t.Fatal(err)
	}
	sentinel := s.event(1, at, "sentinel")
	c.mustAccept(sentinel)
	sub.expectNext("live", sentinel.ID) // not the expired event before it
}

// sweepCounter counts DeleteExpired calls; the third one holds until its
// context ends.
type sweepCounter struct {
	*embedded.Store
	calls    atomic.Int32
	held     chan struct{} // closed when the third call starts
	released atomic.Bool   // the held call saw its context end
}

func (s *sweepCounter) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	if s.calls.Add(1) == 3 {
		close(s.held)
		<-ctx.Done()
		s.released.Store(true)
		return 0, ctx.Err()
	}
	return s.Store.DeleteExpired(ctx, now)
}

// TestExpirySweeper: the sweeper runs every ExpirySweepInterval, and
// Shutdown ends the sweep in progress and waits for the sweeper.
func TestExpirySweeper(t *testing.T) {
	st := openEmbedded(t, t.TempDir())
	sc := &sweepCounter{Store: st, held: make(chan struct{})}
	r, err := New(WithStore(sc), WithDirectory(st), WithChannels(), WithLogger(quietLogger()),
		WithLimits(Limits{ExpirySweepInterval: 10 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	awaitSignal(t, sc.held, "a third sweep")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a sweep in progress: %v", err)
	}
	if !sc.released.Load() {
		t.Fatal("Shutdown returned before the sweep in progress ended")
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func TestByteForByteRoundTrip(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)
	contents := []string{
		"quote \" backslash \\ slash / newline \n tab \t cr \r",
		"control \u0001\u001f del \u007f",
		"unicode é 漢字 🎉 \u2028\u2029 zero-width \u200d",
		"html <script>&amp;</script>",
		"",
	}
	for i, content := range contents {
		ev := s.event(1, now()-int64(i), content, nostr.Tag{"t", content}, nostr.Tag{"x", "é\"\\"})
		c.mustAccept(ev)
		c.sendRaw(nostr.AppendReq(nil, "r", nostr.Filter{IDs: []string{ev.ID}}))
		raw, err := c.nextRaw()
		if err != nil {
			t.Fatal(err)
		}
		want := nostr.AppendEventMessage(nil, "r", ev.AppendJSON(nil))
		if string(raw) != string(want) {
			t.Fatalf("round trip %d\n got %s\nwant %s", i, raw, want)
		}
		if _, ok := c.next().(*nostr.EOSEMessage); !ok {
			t.Fatal("no EOSE")
		}
	}
}
