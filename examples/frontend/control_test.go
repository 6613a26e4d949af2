package main

import (
	"context"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// TestControlBus: changes another process made to the store and announced
// on the control bus end this frontend's streams at once — a member
// removed from a private channel, a ban, a community disconnected.
func TestControlBus(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			ctx := context.Background()
			const A = "a.example"
			a := community(t, st, A)
			broker, err := pubsub.NewLocal()
			if err != nil {
				t.Fatal(err)
			}
			bus := &control.Local{} // the deployment's bus; the test is "the other process"
			c := serveConfig(t, Config{Store: st, Directory: st, Broker: broker, Tracer: trace.NewRecorder().Open, Control: bus})
			announce := func(m control.Message) {
				t.Helper()
				if err := bus.PublishControl(ctx, a, m); err != nil {
					t.Fatal(err)
				}
			}
			owner, bob, mallory, carol := storetest.NewAuthor(t), newUser(t), newUser(t), newUser(t)
			priv := storetest.CreateChannel(t, st, a, owner, "private", channel.VisibilityPrivate)
			storetest.MustApply(t, st, a, owner, channel.Command{Kind: nostr.KindPutUser, Channel: priv, Target: bob.pk})

			bobPriv, ans := c.stream(A, hFilter(priv), &bob)
			if bobPriv == nil {
				t.Fatalf("bob's stream of the private channel: %+v", ans)
			}
			bobPriv.stored()
			malloryAll, _ := c.stream(A, gonostr.Filter{}, &mallory)
			malloryAll.stored()
			carolAll, _ := c.stream(A, gonostr.Filter{}, &carol)
			carolAll.stored()

			// Elsewhere, bob is removed from the channel, then announced.
			storetest.MustApply(t, st, a, owner, channel.Command{Kind: nostr.KindRemoveUser, Channel: priv, Target: bob.pk})
			announce(control.MembershipChanged{Channel: priv.String(), PubKey: bob.pk})
			if m := bobPriv.next(); m.event != "closed" || m.data != channel.MsgChannelRevoked {
				t.Fatalf("bob's stream after his removal elsewhere: %+v", m)
			}

			// Elsewhere, mallory is banned.
			if _, err := st.(store.ModerationStore).Moderate(ctx, a, store.ModerationAction{Action: store.ActionBan, Actor: owner.PubKey, Target: mallory.pk}, time.Now()); err != nil {
				t.Fatal(err)
			}
			announce(control.RestrictionChanged{PubKey: mallory.pk, Banned: true})
			if m := malloryAll.next(); m.event != "closed" || m.data != msgBanned {
				t.Fatalf("mallory's stream after her ban elsewhere: %+v", m)
			}

			// Another community's message touches nothing here.
			if err := bus.PublishControl(ctx, tenant.NewCommunityID(), control.DisconnectCommunity{Reason: "restricted: elsewhere"}); err != nil {
				t.Fatal(err)
			}
			ev := carol.event(t, 1, "still here")
			c.mustPost(A, ev, nil)
			if got := carolAll.nextEvent(); got.ID != ev.ID {
				t.Fatalf("carol's stream: %q", got.Content)
			}
			// The community is disconnected everywhere (archived).
			announce(control.DisconnectCommunity{Reason: "restricted: this community is archived"})
			if m := carolAll.next(); m.event != "closed" || m.data != "restricted: this community is archived" {
				t.Fatalf("carol's stream after the disconnect: %+v", m)
			}
		})
	}
}

// TestControlBusAnnounces: a channel change made through one frontend is
// announced on the control bus, so another process's frontend over the
// same store ends its streams at once, as it would for a change made
// through buzzd. The two frontends share only the store and the bus (each
// has its own broker), so nothing but the announcement can end the stream
// before the cache TTLs run out.
func TestControlBusAnnounces(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			const A = "a.example"
			community(t, st, A)
			bus := &control.Local{} // the deployment's bus, shared by both processes
			serveOn := func() client {
				broker, err := pubsub.NewLocal()
				if err != nil {
					t.Fatal(err)
				}
				return serveConfig(t, Config{Store: st, Directory: st, Broker: broker, Tracer: trace.NewRecorder().Open, Control: bus})
			}
			here, there := serveOn(), serveOn()
			owner, bob := newUser(t), newUser(t)
			priv := createChannel(here, A, owner, "private", channel.VisibilityPrivate)
			here.mustPost(A, owner.event(t, nostr.KindPutUser, "", h(priv), []string{"p", bob.pk}), &owner)

			bobThere, ans := there.stream(A, hFilter(priv), &bob)
			if bobThere == nil {
				t.Fatalf("bob's stream of the private channel on the other process: %+v", ans)
			}
			bobThere.stored()

			// Bob is removed through this frontend: the other one hears it.
			here.mustPost(A, owner.event(t, nostr.KindRemoveUser, "", h(priv), []string{"p", bob.pk}), &owner)
			if m := bobThere.next(); m.event != "closed" || m.data != channel.MsgChannelRevoked {
				t.Fatalf("bob's stream on the other process after his removal here: %+v", m)
			}
		})
	}
}
