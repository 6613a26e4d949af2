package buzz

import (
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/fakeclock"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store"
)

// TestTypingAcrossPods: a typing indicator (kind 20002) in a private
// channel, sent on one pod, reaches a member reading on another pod through
// the broker, never a non-member; it is never stored; it must name one
// channel; one per channel per connection per window, by the relay's clock.
func TestTypingAcrossPods(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		clk := fakeclock.New(time.Now())
		br, err := pubsub.NewLocal()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = br.Close() })
		opts := []Option{WithClock(clk.Now), WithBroker(br)}
		p1 := leakedRelay(t, st, opts...)
		p2 := leakedRelay(t, st, opts...)
		alice, bob, mallory := newSigner(t), newSigner(t), newSigner(t)

		a := p1.dial(t)
		a.AuthAs(alice, p1.host)
		priv := a.createChannel(alice, "private", channel.VisibilityPrivate)
		open := a.createChannel(alice, "open", channel.VisibilityOpen)
		eq(t, "put bob", a.command(alice, nostr.KindPutUser, priv, nostr.Tag{"p", bob.Pub()}).OK, true)

		typingOrMarker := nostr.Filter{Kinds: []int{nostr.KindTyping, nostr.KindChatMessage}}
		b := p2.dialHost(t, p1.host)
		b.AuthAs(bob, p1.host)
		b.Subscribe("t", typingOrMarker)
		m := p2.dialHost(t, p1.host)
		m.AuthAs(mallory, p1.host)
		m.Subscribe("t", typingOrMarker)

		typing := alice.Event(nostr.KindTyping, now(), "", chanTag(priv))
		a.MustAccept(typing)
		eq(t, "bob on the other pod gets the typing indicator", b.NextLive("t").ID, typing.ID)

		// The non-member's first live event is the marker sent after the
		// typing indicator, not the indicator.
		marker := alice.Event(nostr.KindChatMessage, now(), "marker", chanTag(open))
		a.MustAccept(marker)
		eq(t, "mallory gets the marker, not the typing", m.NextLive("t").ID, marker.ID)
		eq(t, "bob gets the marker too", b.NextLive("t").ID, marker.ID)

		// Never stored.
		eq(t, "REQ for typing after the fact", len(b.Req("r", nostr.Filter{Kinds: []int{nostr.KindTyping}})), 0)
		eq(t, "REQ #h for typing", len(b.Req("r2", nostr.Filter{Kinds: []int{nostr.KindTyping}, Tags: map[string][]string{"h": {priv.String()}}})), 0)

		// A non-member may not type in the private channel.
		mt := mallory.Event(nostr.KindTyping, now(), "", chanTag(priv))
		if ok := m.Publish(mt); ok.OK {
			t.Fatal("non-member's typing accepted")
		}

		// Typing names exactly one channel.
		eq(t, "typing without h", a.Publish(alice.Event(nostr.KindTyping, now(), "")).Message, ingest.MsgTypingNoChannel)
		if msg := a.Publish(alice.Event(nostr.KindTyping, now(), "", chanTag(priv), chanTag(open))).Message; !strings.HasPrefix(msg, "invalid:") {
			t.Fatalf("typing with two h: %q, want an invalid: refusal", msg)
		}

		// The bound: one per channel per connection per window.
		again := alice.Event(nostr.KindTyping, now()+1, "", chanTag(priv))
		eq(t, "second typing in the window", a.Publish(again).Message, msgTypingTooSoon)
		a.MustAccept(alice.Event(nostr.KindTyping, now(), "", chanTag(open))) // another channel
		a2 := p1.dial(t)
		a2.AuthAs(alice, p1.host)
		a2.MustAccept(alice.Event(nostr.KindTyping, now()+2, "", chanTag(priv))) // another connection
		clk.Advance(typingWindow - time.Millisecond)
		eq(t, "still in the window", a.Publish(alice.Event(nostr.KindTyping, now()+3, "", chanTag(priv))).Message, msgTypingTooSoon)
		clk.Advance(time.Millisecond)
		a.MustAccept(alice.Event(nostr.KindTyping, now()+4, "", chanTag(priv)))
	})
}
