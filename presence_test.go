package buzz

import (
	"context"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/fakeclock"
	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/redis"
	"github.com/buzzrelay/buzz/store"
)

// TestEphemeralAcrossPodsOverRedis: two relays on one store, each with its
// own Redis broker in one namespace, as buzzd pods run. Presence (20001)
// and typing (20002) sent on one pod reach a reader on the other, are never
// stored, and are bounded per connection by the relay's clock: presence five
// per second (Buzz's refusal), typing one per channel per 5 s. A refused
// one reaches no one. Presence over HTTP is refused.
func TestEphemeralAcrossPodsOverRedis(t *testing.T) {
	url := "redis://" + testenv.NeedRedis(t)
	forBackends(t, func(t *testing.T, st store.Backend) {
		ns := testenv.RandomName("ephemeral-test")
		broker := func() *redis.Broker {
			b, err := redis.New(context.Background(), url, redis.WithNamespace(ns))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}
		v, err := nip98.NewVerifier()
		if err != nil {
			t.Fatal(err)
		}
		clk := fakeclock.New(time.Now())
		const host = "pods.example"
		b1, b2 := broker(), broker()
		p1 := startPod(t, st, host, WithClock(clk.Now), WithBroker(b1), WithPresence(b1), withHTTPAPI(v))
		p2 := startPod(t, st, host, WithClock(clk.Now), WithBroker(b2), WithPresence(b2))
		alice, bob := newSigner(t), newSigner(t)

		a := p1.dial(t)
		a.AuthAs(alice, host)
		open := a.createChannel(alice, "open", channel.VisibilityOpen)
		b := p2.dial(t)
		b.AuthAs(bob, host)
		live := nostr.Filter{Kinds: []int{nostr.KindPresence, nostr.KindTyping, nostr.KindChatMessage}}
		b.Subscribe("live", live)

		pres := alice.Event(nostr.KindPresence, now(), "online")
		a.MustAccept(pres)
		eq(t, "presence reaches the other pod", b.NextLive("live").ID, pres.ID)
		got, err := b2.Presence(context.Background(), p1.tc.Community(), []string{alice.Pub()})
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "status read on the other pod", got[alice.Pub()], "online")

		typing := alice.Event(nostr.KindTyping, now(), "", chanTag(open))
		a.MustAccept(typing)
		eq(t, "typing reaches the other pod", b.NextLive("live").ID, typing.ID)

		// Never stored, on either pod.
		for _, c := range []*rawClient{a, b} {
			eq(t, "presence or typing read back", len(c.Req("r", nostr.Filter{Kinds: []int{nostr.KindPresence, nostr.KindTyping}})), 0)
		}

		// Presence: five per second per connection (the first was one).
		for i := range presenceBurst - 1 {
			a.MustAccept(alice.Event(nostr.KindPresence, now()+int64(i)+1, "away"))
			b.NextLive("live")
		}
		over := alice.Event(nostr.KindPresence, now()+10, "online")
		eq(t, "sixth presence in the second", a.Publish(over).Message, msgEphemeralTooFast)
		// Typing: a second one for the channel within 5 s.
		eq(t, "second typing in the window", a.Publish(alice.Event(nostr.KindTyping, now()+11, "", chanTag(open))).Message, msgTypingTooSoon)
		// Another connection has its own windows.
		a2 := p1.dial(t)
		a2.AuthAs(alice, host)
		other := alice.Event(nostr.KindPresence, now()+12, "online")
		a2.MustAccept(other)
		eq(t, "refused ones reached no one", b.NextLive("live").ID, other.ID)

		clk.Advance(presenceWindow - time.Millisecond)
		eq(t, "still in the second", a.Publish(alice.Event(nostr.KindPresence, now()+13, "online")).Message, msgEphemeralTooFast)
		clk.Advance(time.Millisecond)
		next := alice.Event(nostr.KindPresence, now()+14, "online")
		a.MustAccept(next)
		eq(t, "a new second admits presence", b.NextLive("live").ID, next.ID)
		clk.Advance(typingWindow)
		again := alice.Event(nostr.KindTyping, now()+15, "", chanTag(open))
		a.MustAccept(again)
		eq(t, "a new typing window", b.NextLive("live").ID, again.ID)

		// Presence belongs to a connection: not over HTTP.
		res := p1.publishHTTP(t, alice, host, alice.Event(nostr.KindPresence, now()+16, "online"))
		eq(t, "presence over HTTP", res.Message, msgPresenceHTTP)
	})
}
