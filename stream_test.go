package buzz

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
)

// hostFeature keeps the seam it is mounted on.
type hostFeature struct{ h Host }

func (f *hostFeature) Mount(h Host) error { f.h = h; return nil }

// next returns the stream's next message, failing after 10 seconds.
func next(t *testing.T, s *Stream) StreamMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	return m
}

// stored reads a stream's stored events up to its EOSE.
func stored(t *testing.T, s *Stream) []string {
	t.Helper()
	var ids []string
	for {
		m := next(t, s)
		switch m.Kind {
		case StreamEOSE:
			return ids
		case StreamEvent:
			ev, err := nostr.ParseEvent(m.Event)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.ID)
		default:
			t.Fatalf("before EOSE: %+v", m)
		}
	}
}

func nextEventID(t *testing.T, s *Stream) string {
	t.Helper()
	m := next(t, s)
	if m.Kind != StreamEvent {
		t.Fatalf("want an event, got %+v", m)
	}
	ev, err := nostr.ParseEvent(m.Event)
	if err != nil {
		t.Fatal(err)
	}
	return ev.ID
}

func subscribeOK(t *testing.T, h Host, tr *testRelay, readers []string, f nostr.Filter) *Stream {
	t.Helper()
	s, err := h.Subscribe(context.Background(), tr.tc, readers, []nostr.Filter{f})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestStreamRevocation: a seam stream is admitted, delivered to and
// revoked by the relay's own code, side by side with a WebSocket
// subscription of the same reader: both end with the same reason when the
// reader is removed from the channel, and the reader's other stream stops
// receiving the channel.
func TestStreamRevocation(t *testing.T) {
	f := &hostFeature{}
	tr := newTestRelay(t, WithFeature(f))
	owner, bob, carol := newSigner(t), newSigner(t), newSigner(t)
	oc := tr.dial(t)
	priv := oc.createChannel(owner, "private", channel.VisibilityPrivate)
	eq(t, "put bob", oc.command(owner, nostr.KindPutUser, priv, nostr.Tag{"p", bob.Pub()}).OK, true)
	before := owner.Event(nostr.KindChatMessage, now(), "before", chanTag(priv))
	oc.MustAccept(before)

	// Refusals are the CLOSED messages of a REQ.
	_, err := f.h.Subscribe(context.Background(), tr.tc, []string{carol.Pub()}, []nostr.Filter{hFilter(priv)})
	var refusal *Refusal
	if !errors.As(err, &refusal) || refusal.Reason != channel.MsgChannelDenied {
		t.Fatalf("a non-member's stream of the private channel: %v", err)
	}
	_, err = f.h.Subscribe(context.Background(), tr.tc, nil, nil)
	if !errors.As(err, &refusal) || refusal.Reason != msgNoFilters {
		t.Fatalf("no filters: %v", err)
	}
	if _, err := f.h.Subscribe(context.Background(), tr.tc, []string{"not a key"}, []nostr.Filter{{}}); err == nil || errors.As(err, &refusal) {
		t.Fatalf("a malformed reader: %v", err)
	}

	bc := tr.dial(t)
	bc.AuthAs(bob, tr.host)
	bc.Subscribe("chan", hFilter(priv))
	chat := hFilter(priv) // the channel's messages (its commands and state are under #h too)
	chat.Kinds = []int{nostr.KindChatMessage}
	only := subscribeOK(t, f.h, tr, []string{bob.Pub()}, chat)
	feed := subscribeOK(t, f.h, tr, []string{bob.Pub()}, nostr.Filter{Kinds: []int{nostr.KindChatMessage, 1}})
	anon := subscribeOK(t, f.h, tr, nil, nostr.Filter{Kinds: []int{nostr.KindChatMessage, 1}})
	eq(t, "bob's stored channel", len(stored(t, only)), 1)
	eq(t, "bob's stored feed", len(stored(t, feed)), 1)
	eq(t, "anonymous stored feed", len(stored(t, anon)), 0)

	m1 := owner.Event(nostr.KindChatMessage, now(), "one", chanTag(priv))
	oc.MustAccept(m1)
	eq(t, "bob's channel subscription", bc.NextLive("chan").ID, m1.ID)
	eq(t, "bob's channel stream", nextEventID(t, only), m1.ID)
	eq(t, "bob's feed stream", nextEventID(t, feed), m1.ID)
	g := owner.Event(1, now(), "global")
	oc.MustAccept(g)
	eq(t, "the anonymous stream skips the private channel", nextEventID(t, anon), g.ID)
	eq(t, "bob's feed gets the note", nextEventID(t, feed), g.ID)

	eq(t, "remove bob", oc.command(owner, nostr.KindRemoveUser, priv, nostr.Tag{"p", bob.Pub()}).OK, true)
	eq(t, "bob's CLOSED", bc.ExpectClosed("chan", "restricted:"), channel.MsgChannelRevoked)
	if m := next(t, only); m.Kind != StreamClosed || m.Reason != channel.MsgChannelRevoked {
		t.Fatalf("bob's channel stream after his removal: %+v", m)
	}
	if m := next(t, only); m.Kind != StreamClosed || m.Reason != channel.MsgChannelRevoked {
		t.Fatalf("an ended stream's next message: %+v", m)
	}
	m2 := owner.Event(nostr.KindChatMessage, now(), "two", chanTag(priv))
	oc.MustAccept(m2)
	g2 := owner.Event(1, now(), "global 2")
	oc.MustAccept(g2)
	eq(t, "bob's feed after his removal", nextEventID(t, feed), g2.ID)

	// A disconnect of bob, from any process, ends his streams with its
	// reason; the anonymous one reads on.
	if err := tr.relay.PublishControl(context.Background(), tr.tc.Community(), control.DisconnectPubkey{PubKey: bob.Pub(), Reason: "restricted: bye"}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, feed); m.Kind != StreamClosed || m.Reason != "restricted: bye" {
		t.Fatalf("bob's feed after the disconnect: %+v", m)
	}
	eq(t, "anonymous after bob's disconnect", nextEventID(t, anon), g2.ID)

	// Close ends a stream with no reason and drops it from the relay.
	anon.Close()
	if m := next(t, anon); m.Kind != StreamClosed || m.Reason != "" {
		t.Fatalf("a closed stream: %+v", m)
	}
	if n := len(tr.relay.streamsOf(tr.tc.Community())); n != 2 {
		t.Fatalf("%d streams registered, want the 2 not closed yet", n)
	}
}

// TestStreamSlowReader: a stream whose reader does not keep up ends
// (its queue holds Limits.SendQueue messages) instead of blocking the
// relay's live fan-out; what was queued is still delivered first.
func TestStreamSlowReader(t *testing.T) {
	f := &hostFeature{}
	l := DefaultLimits()
	l.SendQueue = 2
	tr := newTestRelay(t, WithFeature(f), WithLimits(l))
	s := subscribeOK(t, f.h, tr, nil, nostr.Filter{Kinds: []int{1}})
	stored(t, s)
	<-s.liveNow // past the stored-to-live handoff: events are queued, not held
	author := newSigner(t)
	var want []string
	for i := range 3 {
		ev := author.Event(1, now(), "note "+string(rune('a'+i)))
		if i < 2 {
			want = append(want, ev.ID)
		}
		// The broker listener's call, made here so that nothing is read
		// in between.
		s.deliverLive(pubsub.Message{Community: tr.tc.Community(), Event: ev, Raw: ev.AppendJSON(nil)})
	}
	for _, id := range want {
		eq(t, "a queued event", nextEventID(t, s), id)
	}
	if m := next(t, s); m.Kind != StreamClosed || m.Reason != msgStreamTooSlow {
		t.Fatalf("a stream that fell behind: %+v", m)
	}
}

// TestStreamShutdown: Shutdown ends the open streams, and no stream opens
// afterwards.
func TestStreamShutdown(t *testing.T) {
	f := &hostFeature{}
	tr := newTestRelay(t, WithFeature(f))
	s := subscribeOK(t, f.h, tr, nil, nostr.Filter{Kinds: []int{1}})
	stored(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.relay.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if m := next(t, s); m.Kind != StreamClosed || m.Reason != msgStreamShutdown {
		t.Fatalf("a stream at Shutdown: %+v", m)
	}
	_, err := f.h.Subscribe(context.Background(), tr.tc, nil, []nostr.Filter{{}})
	var refusal *Refusal
	if !errors.As(err, &refusal) || refusal.Reason != msgStreamsDisabled {
		t.Fatalf("Subscribe after Shutdown: %v", err)
	}
}
