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

	"github.com/buzzrelay/buzz/internal/fakeclock"
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
		ev := s.Event(1, base+int64(i), fmt.Sprint("t", i))
		c.MustAccept(ev)
		all = append(all, ev)
	}
	// Three events sharing one created_at: ties go to the lowest id first.
	var tie []*nostr.Event
	for i := range 3 {
		ev := s.Event(1, base+10, fmt.Sprint("tie", i))
		c.MustAccept(ev)
		tie = append(tie, ev)
	}
	sort.Slice(tie, func(i, j int) bool { return tie[i].ID < tie[j].ID })
	want := ids(tie)
	for i := len(all) - 1; i >= 0; i-- {
		want = append(want, all[i].ID)
	}

	got := c.Req("s", nostr.Filter{Authors: []string{s.Pub()}})
	if !slices.Equal(ids(got), want) {
		t.Fatalf("order\n got %v\nwant %v", ids(got), want)
	}
	got = c.Req("l", nostr.Filter{Authors: []string{s.Pub()}, Limit: 4, LimitSet: true})
	if !slices.Equal(ids(got), want[:4]) {
		t.Fatalf("limit 4\n got %v\nwant %v", ids(got), want[:4])
	}
	// limit 0: no stored events, straight to EOSE.
	got = c.Req("z", nostr.Filter{Authors: []string{s.Pub()}, Limit: 0, LimitSet: true})
	eq(t, "limit 0 events", len(got), 0)
}

func TestReqMaxLimitClamps(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{MaxLimit: 2}))
	c := tr.dial(t)
	s := newSigner(t)
	for i := range 4 {
		c.MustAccept(s.Event(1, now()-int64(i), fmt.Sprint(i)))
	}
	eq(t, "absent limit", len(c.Req("a", nostr.Filter{})), 2)
	eq(t, "large limit", len(c.Req("b", nostr.Filter{Limit: 100, LimitSet: true})), 2)
	eq(t, "NIP-11 max_limit", tr.relay.NIP11Document().Limitation.MaxLimit, 2)
}

func TestReqMultiFilterDedupe(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	a, b := newSigner(t), newSigner(t)
	e1 := a.Event(1, now()-3, "a1", nostr.Tag{"t", "x"})
	e2 := b.Event(1, now()-2, "b1", nostr.Tag{"t", "x"})
	e3 := b.Event(7, now()-1, "b7", nostr.Tag{"e", e1.ID})
	for _, e := range []*nostr.Event{e1, e2, e3} {
		c.MustAccept(e)
	}
	got := c.Req("m",
		nostr.Filter{Authors: []string{a.Pub()}},
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
	c.SendRaw(nostr.AppendCount(nil, "c",
		nostr.Filter{Authors: []string{a.Pub()}},
		nostr.Filter{Tags: map[string][]string{"t": {"x"}}}))
	m, ok := c.Next().(*nostr.CountMessage)
	if !ok || m.SubID != "c" || m.Count != 2 {
		t.Fatalf("COUNT = %#v, want 2", m)
	}
}

func TestReqRefusals(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{MaxFilters: 2, MaxSubIDLength: 8, MaxSubscriptions: 2}))
	c := tr.dial(t)

	c.SendRaw(nostr.AppendReq(nil, "123456789", nostr.Filter{}))
	c.ExpectClosed("123456789", "invalid: subscription id too long")

	c.SendRaw(nostr.AppendReq(nil, "f", nostr.Filter{}, nostr.Filter{}, nostr.Filter{}))
	c.ExpectClosed("f", "invalid: too many filters")

	c.SendRaw(nostr.AppendCount(nil, "cf", nostr.Filter{}, nostr.Filter{}, nostr.Filter{}))
	c.ExpectClosed("cf", "invalid: too many filters")

	// A filter with a wrong type: CLOSED with the sub id, nothing else.
	c.SendRaw([]byte(`["REQ","bad",{"kinds":"1"}]`))
	c.ExpectClosed("bad", "invalid:")
	c.SendRaw([]byte(`["REQ","bad2",{"authors":["xyz"]}]`))
	c.ExpectClosed("bad2", "invalid:")
	c.SendRaw([]byte(`["COUNT","bad3",{"since":-1}]`))
	c.ExpectClosed("bad3", "invalid:")

	c.Subscribe("a", nostr.Filter{})
	c.Subscribe("b", nostr.Filter{})
	c.SendRaw(nostr.AppendReq(nil, "c", nostr.Filter{}))
	c.ExpectClosed("c", "error: too many subscriptions")
	// Replacing an open one is not an extra subscription.
	c.Subscribe("b", nostr.Filter{Kinds: []int{1}})
	// After CLOSE there is room again.
	c.SendRaw(nostr.AppendClose(nil, "a"))
	c.Subscribe("c", nostr.Filter{})
	// CLOSE of an unknown id is ignored (no reply); the connection still works.
	c.SendRaw(nostr.AppendClose(nil, "nope"))
	c.SendRaw(nostr.AppendReq(nil, "d", nostr.Filter{}))
	c.ExpectClosed("d", "error: too many subscriptions")
}

func TestReqReplaceAndClose(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	pub := tr.dial(t)
	s := newSigner(t)

	c.Subscribe("s", nostr.Filter{Kinds: []int{1}})
	c.Subscribe("s", nostr.Filter{Kinds: []int{2}}) // replaces: kind 1 no longer delivered
	pub.MustAccept(s.Event(1, now(), "one"))
	k2 := s.Event(2, now(), "two")
	pub.MustAccept(k2)
	m, ok := c.Next().(*nostr.EventMessage)
	if !ok || m.Event.ID != k2.ID || m.SubID != "s" {
		t.Fatalf("got %#v, want only the kind 2 event", m)
	}
	c.SendRaw(nostr.AppendClose(nil, "s"))
	// A later REQ on another id proves the CLOSE was processed in order.
	c.Subscribe("probe", nostr.Filter{Kinds: []int{9999}})
	pub.MustAccept(s.Event(2, now(), "after close"))
	sentinel := s.Event(9999, now(), "sentinel")
	pub.MustAccept(sentinel)
	c.ExpectNext("probe", sentinel.ID)
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
			published[i] = s.Event(1, now(), fmt.Sprint(r, "-", i), nostr.Tag{"t", tag})
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
				pub.SendEvent(ev)
			}
		}()
		<-flowing
		sub.SendRaw(nostr.AppendReq(nil, "live", nostr.Filter{Tags: map[string][]string{"t": {tag}}}))
		wg.Wait()
		pub.ExpectOKs(published)
		seen := map[string]int{}
		eose := false
		for len(seen) < perRound {
			switch m := sub.Next().(type) {
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
			if _, ok := sub.Next().(*nostr.EOSEMessage); !ok {
				t.Fatal("no EOSE")
			}
		}
		sentinel := s.Event(1, now(), "sentinel", nostr.Tag{"t", tag})
		pub.MustAccept(sentinel)
		sub.ExpectNext("live", sentinel.ID) // nothing delivered twice before it
	}
}

func TestEphemeral(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	pub := tr.dial(t)
	s := newSigner(t)
	c.Subscribe("e", nostr.Filter{Kinds: []int{20001}})
	ev := s.Event(20001, now(), "typing")
	pub.MustAccept(ev)
	m, ok := c.Next().(*nostr.EventMessage)
	if !ok || m.Event.ID != ev.ID {
		t.Fatalf("got %#v, want the ephemeral event live", m)
	}
	eq(t, "stored ephemeral", len(pub.Req("q", nostr.Filter{Kinds: []int{20001}})), 0)
	// Publishing it again is not a duplicate: it was never stored.
	if ok := pub.Publish(ev); !ok.OK || ok.Message != "" {
		t.Fatalf("repeat ephemeral: %+v", ok)
	}
}

func TestReplaceableAndAddressable(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)
	t0 := now() - 100

	old := s.Event(0, t0, `{"name":"old"}`)
	newer := s.Event(0, t0+10, `{"name":"new"}`)
	c.MustAccept(old)
	c.MustAccept(newer)
	late := s.Event(0, t0+5, `{"name":"late"}`)
	ok := c.Publish(late)
	eq(t, "older replaceable ok", ok.OK, false)
	mustPrefix(t, "older replaceable", ok.Message, "invalid:")
	got := c.Req("p", nostr.Filter{Kinds: []int{0}, Authors: []string{s.Pub()}})
	if len(got) != 1 || got[0].ID != newer.ID {
		t.Fatalf("kind 0 = %v, want only %s", ids(got), newer.ID)
	}

	// Addressable: keyed by d; a missing d equals "".
	a1 := s.Event(30023, t0, "a1", nostr.Tag{"d", "post"})
	a2 := s.Event(30023, t0+1, "a2", nostr.Tag{"d", "post"})
	other := s.Event(30023, t0, "other", nostr.Tag{"d", "other"})
	noD := s.Event(30023, t0, "noD")
	emptyD := s.Event(30023, t0+1, "emptyD", nostr.Tag{"d", ""})
	for _, e := range []*nostr.Event{a1, a2, other, noD, emptyD} {
		c.MustAccept(e)
	}
	ok = c.Publish(s.Event(30023, t0, "stale", nostr.Tag{"d", "post"}))
	eq(t, "older addressable ok", ok.OK, false)
	mustPrefix(t, "older addressable", ok.Message, "invalid:")
	got = c.Req("a", nostr.Filter{Kinds: []int{30023}})
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

	note := s.Event(1, t0, "to delete")
	keep := s.Event(1, t0, "keep")
	c.MustAccept(note)
	c.MustAccept(keep)

	// Someone else's deletion does nothing.
	c.MustAccept(mallory.Event(5, t0+1, "", nostr.Tag{"e", note.ID}))
	eq(t, "after foreign deletion", len(c.Req("x", nostr.Filter{IDs: []string{note.ID}})), 1)

	del := s.Event(5, t0+2, "", nostr.Tag{"e", note.ID})
	c.MustAccept(del)
	eq(t, "after deletion", len(c.Req("y", nostr.Filter{IDs: []string{note.ID}})), 0)
	eq(t, "kept", len(c.Req("k", nostr.Filter{IDs: []string{keep.ID}})), 1)
	// A deleted event cannot be re-added.
	ok := c.Publish(note)
	eq(t, "re-add ok", ok.OK, false)
	eq(t, "re-add message", ok.Message, "blocked: this event was deleted by its author")

	// Deleting the deletion has no effect.
	c.MustAccept(s.Event(5, t0+3, "", nostr.Tag{"e", del.ID}))
	eq(t, "deletion kept", len(c.Req("d", nostr.Filter{IDs: []string{del.ID}})), 1)
	eq(t, "still deleted", len(c.Req("d2", nostr.Filter{IDs: []string{note.ID}})), 0)

	// Deletion by coordinate, with a watermark against late older versions.
	v1 := s.Event(30000, t0, "v1", nostr.Tag{"d", "list"})
	c.MustAccept(v1)
	coord := fmt.Sprintf("30000:%s:list", s.Pub())
	c.MustAccept(s.Event(5, t0+10, "", nostr.Tag{"a", coord}))
	eq(t, "after a deletion", len(c.Req("a", nostr.Filter{Kinds: []int{30000}})), 0)
	late := s.Event(30000, t0+5, "late older version", nostr.Tag{"d", "list"})
	ok = c.Publish(late)
	eq(t, "late older version ok", ok.OK, false)
	mustPrefix(t, "late older version", ok.Message, "blocked:")
	fresh := s.Event(30000, t0+11, "newer than the deletion", nostr.Tag{"d", "list"})
	c.MustAccept(fresh)
	eq(t, "newer version", len(c.Req("a2", nostr.Filter{Kinds: []int{30000}})), 1)

	// Malformed deletion requests are refused.
	for name, tags := range map[string]nostr.Tags{
		"no target":   {{"p", s.Pub()}},
		"bad e":       {{"e", "zz"}},
		"bad a":       {{"a", "notacoordinate"}},
		"foreign a":   {{"a", fmt.Sprintf("30000:%s:list", mallory.Pub())}},
		"a bad kind":  {{"a", fmt.Sprintf("x:%s:list", s.Pub())}},
		"a short key": {{"a", "30000:abc:list"}},
	} {
		ok := c.Publish(s.Event(5, now(), "", tags...))
		if ok.OK || !strings.HasPrefix(ok.Message, "invalid:") {
			t.Fatalf("%s: OK %v %q, want invalid", name, ok.OK, ok.Message)
		}
	}
}

func TestExpiredNotServedNorDelivered(t *testing.T) {
	// The relay's clock runs an hour behind the store's (the wall clock):
	// an event the relay accepts as alive may have expired for the store,
	// so expiry is reached with no wait.
	clk := fakeclock.New(time.Now().Add(-time.Hour))
	tr := newTestRelay(t, WithClock(clk.Now))
	c := tr.dial(t)
	sub := tr.dial(t)
	s := newSigner(t)
	at := clk.Now().Unix()
	expiration := func(unix int64) nostr.Tag { return nostr.Tag{"expiration", fmt.Sprint(unix)} }
	alive := s.Event(1, at, "alive", expiration(now()+3600))
	expired := s.Event(1, at, "expired since", expiration(now()-1))
	c.MustAccept(alive)
	c.MustAccept(expired)
	got := c.Req("a", nostr.Filter{})
	if len(got) != 1 || got[0].ID != alive.ID {
		t.Fatalf("served %v, want only %s", ids(got), alive.ID)
	}
	sub.Subscribe("live", nostr.Filter{})

	// An event that expired in transit (e.g. published by another process)
	// is never delivered live.
	stale := s.Event(1, at, "expired in transit", expiration(at-1))
	if err := tr.relay.cfg.broker.Publish(context.Background(), pubsub.Message{
		Community: tr.tc.Community(), Event: stale, Raw: stale.AppendJSON(nil),
	}); err != nil {
		t.Fatal(err)
	}
	sentinel := s.Event(1, at, "sentinel")
	c.MustAccept(sentinel)
	sub.ExpectNext("live", sentinel.ID) // not the expired event before it
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
		ev := s.Event(1, now()-int64(i), content, nostr.Tag{"t", content}, nostr.Tag{"x", "é\"\\"})
		c.MustAccept(ev)
		c.SendRaw(nostr.AppendReq(nil, "r", nostr.Filter{IDs: []string{ev.ID}}))
		raw, err := c.NextRaw()
		if err != nil {
			t.Fatal(err)
		}
		want := nostr.AppendEventMessage(nil, "r", ev.AppendJSON(nil))
		if string(raw) != string(want) {
			t.Fatalf("round trip %d\n got %s\nwant %s", i, raw, want)
		}
		if _, ok := c.Next().(*nostr.EOSEMessage); !ok {
			t.Fatal("no EOSE")
		}
	}
}
