package buzz

import (
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

// TestLiveDeliveryAcrossAuth runs the interleavings of REQ, NIP-42 AUTH and
// publication that client libraries produce (nostr-tools answers the
// challenge by itself when onauth is set, so AUTH can land before, during
// or after a subscription's replay): every live event published after the
// subscription's EOSE reaches it exactly once, whatever the order, and the
// subscription is never closed by authenticating.
func TestLiveDeliveryAcrossAuth(t *testing.T) {
	tr := newTestRelay(t, WithRelayKey(testMaster))
	owner, reader, poster := newSigner(t), newSigner(t), newSigner(t)
	admin := tr.dial(t)
	admin.AuthAs(owner, tr.host)
	general := admin.createChannel(owner, "general", channel.VisibilityOpen)
	pub := tr.dial(t)

	filter := nostr.Filter{Kinds: []int{nostr.KindChatMessage}, Tags: map[string][]string{"h": {general.String()}}, Limit: 0, LimitSet: true}

	// expectEvents reads until it has seen want (in order) on sub, failing
	// on a CLOSED, a second copy or anything unexpected.
	expectEvents := func(t *testing.T, c *rawClient, sub string, want ...*nostr.Event) {
		t.Helper()
		for _, w := range want {
			switch m := c.Next().(type) {
			case *nostr.EventMessage:
				if m.SubID != sub || m.Event.ID != w.ID {
					t.Fatalf("got event %s on %q, want %s (%q) on %q", m.Event.ID[:8], m.SubID, w.ID[:8], w.Content, sub)
				}
			default:
				t.Fatalf("got %#v, want event %q", m, w.Content)
			}
		}
	}
	auth := func(c *rawClient) *nostr.Event {
		return reader.Event(nostr.KindClientAuth, now(), "", nostr.Tag{"challenge", c.Challenge}, nostr.Tag{"relay", "ws://" + tr.host})
	}
	// The filter's limit 0 keeps stored history out: only live delivery
	// is under test.
	live := func(text string) *nostr.Event {
		t.Helper()
		ev := poster.Event(nostr.KindChatMessage, now(), text, chanTag(general))
		pub.MustAccept(ev)
		return ev
	}

	t.Run("auth_before_req", func(t *testing.T) {
		c := tr.dial(t)
		c.AuthAs(reader, tr.host)
		c.Send("REQ", "s", filter)
		c.UntilEOSE("s")
		expectEvents(t, c, "s", live("after both"))
	})
	t.Run("auth_after_eose", func(t *testing.T) {
		c := tr.dial(t)
		c.Send("REQ", "s", filter)
		c.UntilEOSE("s")
		before := live("before auth")
		expectEvents(t, c, "s", before)
		c.AuthAs(reader, tr.host)
		expectEvents(t, c, "s", live("right after auth"), live("later"))
	})
	t.Run("auth_during_replay", func(t *testing.T) {
		// REQ and AUTH go out back to back: the AUTH is handled while the
		// subscription may still be replaying.
		c := tr.dial(t)
		c.Send("REQ", "s", filter)
		ev := auth(c)
		c.Send("AUTH", ev)
		var sawEOSE, sawOK bool
		for !sawEOSE || !sawOK {
			switch m := c.Next().(type) {
			case *nostr.EOSEMessage:
				sawEOSE = true
			case *nostr.OKMessage:
				if !m.OK {
					t.Fatalf("AUTH refused: %s", m.Message)
				}
				sawOK = true
			default:
				t.Fatalf("got %#v before EOSE and the AUTH's OK", m)
			}
		}
		expectEvents(t, c, "s", live("after auth"), live("again"))
	})
	t.Run("auth_sent_with_publication_in_flight", func(t *testing.T) {
		// The event is published while the AUTH is on its way: it arrives
		// before or after the AUTH is applied, and is delivered either way.
		c := tr.dial(t)
		c.Send("REQ", "s", filter)
		c.UntilEOSE("s")
		c.Send("AUTH", auth(c))
		ev := live("racing the auth")
		var gotOK, gotEvent bool
		for !gotOK || !gotEvent {
			switch m := c.Next().(type) {
			case *nostr.OKMessage:
				gotOK = m.OK
				if !m.OK {
					t.Fatalf("AUTH refused: %s", m.Message)
				}
			case *nostr.EventMessage:
				if gotEvent || m.Event.ID != ev.ID {
					t.Fatalf("unexpected event %q", m.Event.Content)
				}
				gotEvent = true
			default:
				t.Fatalf("got %#v", m)
			}
		}
		expectEvents(t, c, "s", live("after"))
	})
	t.Run("no_auth", func(t *testing.T) {
		c := tr.dial(t)
		c.Send("REQ", "s", filter)
		c.UntilEOSE("s")
		expectEvents(t, c, "s", live("anonymous"))
	})
	t.Run("second_auth", func(t *testing.T) {
		// Authenticating as a second pubkey keeps the subscription too.
		c := tr.dial(t)
		c.AuthAs(reader, tr.host)
		c.Send("REQ", "s", filter)
		c.UntilEOSE("s")
		other := newSigner(t)
		c.AuthAs(other, tr.host)
		expectEvents(t, c, "s", live("after the second auth"))
	})
	t.Run("auth_opens_private_channel", func(t *testing.T) {
		// A subscription without #h, opened anonymously, gets the private
		// channels of the pubkey it then authenticates as from the AUTH's
		// OK on.
		secret := admin.createChannel(owner, "secret", channel.VisibilityPrivate)
		admin.MustAccept(owner.Event(nostr.KindPutUser, now(), "", chanTag(secret), nostr.Tag{"p", reader.Pub()}))
		c := tr.dial(t)
		all := nostr.Filter{Kinds: []int{nostr.KindChatMessage}, Limit: 0, LimitSet: true}
		c.Send("REQ", "s", all)
		c.UntilEOSE("s")
		c.AuthAs(reader, tr.host)
		ev := owner.Event(nostr.KindChatMessage, now(), "members only", chanTag(secret))
		admin.MustAccept(ev)
		expectEvents(t, c, "s", ev)
	})
}
