package buzz

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// A panic while serving one connection (here in an embedder's filter
// policy, which runs on the reader) closes that connection with 1011 and
// leaves the relay serving the others.
func TestPanicClosesOnlyThatConnection(t *testing.T) {
	tr := newTestRelay(t, WithFilterPolicy(func(_ context.Context, _ tenant.TenantContext, f nostr.Filter) error {
		if f.LimitSet && f.Limit == 7 {
			panic("filter policy exploded")
		}
		return nil
	}))
	bad := tr.dial(t)
	good := tr.dial(t)
	bad.SendRaw(nostr.AppendReq(nil, "x", nostr.Filter{Limit: 7, LimitSet: true}))
	nextIsClose1011(t, bad, "read after panic")
	s := newSigner(t)
	good.MustAccept(s.Event(1, now(), "still serving"))
	if got := good.Req("s", nostr.Filter{Authors: []string{s.Pub()}}); len(got) != 1 {
		t.Fatalf("got %d events, want 1", len(got))
	}
	deadline := time.Now().Add(5 * time.Second)
	for tr.relay.connCount() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	eq(t, "connections being served", tr.relay.connCount(), 1)
}

// A panic while ingesting an EVENT, which runs on one of the relay's
// workers rather than on the connection's goroutine (here in an embedder's
// event policy), closes that connection with 1011, stores nothing, and
// leaves the relay and its workers serving: twice over, so a worker that
// recovered from the first serves the next EVENTs.
func TestPanicInIngestClosesOnlyThatConnection(t *testing.T) {
	tr := newTestRelay(t, WithEventPolicy(func(_ context.Context, _ tenant.TenantContext, ev *nostr.Event) error {
		if ev.Content == "explode" {
			panic("event policy exploded")
		}
		return nil
	}))
	s := newSigner(t)
	good := tr.dial(t)
	for round := range 2 {
		bad := tr.dial(t)
		bad.SendEvent(s.Event(1, now()-int64(round), "explode"))
		nextIsClose1011(t, bad, fmt.Sprintf("round %d: read after panic", round))
		good.MustAccept(s.Event(1, now()-int64(round), "still serving"))
	}
	got := good.Req("s", nostr.Filter{Authors: []string{s.Pub()}})
	eq(t, "events stored", len(got), 2)
	for _, ev := range got {
		if ev.Content != "still serving" {
			t.Fatalf("stored %q, want only the events that did not panic", ev.Content)
		}
	}
}

// replayPanics is the embedded store with a query that panics: that of a
// filter whose limit is 7.
type replayPanics struct{ *embedded.Store }

func (s replayPanics) QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope) iter.Seq2[store.Record, error] {
	if f.LimitSet && f.Limit == 7 {
		panic("query exploded")
	}
	return s.Store.QueryScoped(ctx, c, f, scope)
}

// A panic while replaying a REQ's stored events, which runs on one of the
// relay's read workers (here in the store), closes that connection with
// 1011 and leaves the relay, its read queue and its workers serving.
func TestPanicInReplayClosesOnlyThatConnection(t *testing.T) {
	tr := backendRelay(t, replayPanics{openEmbedded(t, t.TempDir())})
	s := newSigner(t)
	good := tr.dial(t)
	good.MustAccept(s.Event(1, now(), "still serving"))
	for round := range 2 {
		bad := tr.dial(t)
		bad.SendRaw(nostr.AppendReq(nil, "x", nostr.Filter{Limit: 7, LimitSet: true}))
		nextIsClose1011(t, bad, fmt.Sprintf("round %d: read after panic", round))
		if got := good.Req(fmt.Sprint("s", round), nostr.Filter{Authors: []string{s.Pub()}}); len(got) != 1 {
			t.Fatalf("round %d: got %d events, want 1", round, len(got))
		}
	}
}

// nextIsClose1011 fails the test, naming what, unless the next thing c
// reads (within 5 s) is a close with code 1011, as a connection whose
// serving panicked is closed.
func nextIsClose1011(t *testing.T, c *rawClient, what string) {
	t.Helper()
	_ = c.WS.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.WS.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseInternalServerErr {
		t.Fatalf("%s: %v, want close 1011", what, err)
	}
}
