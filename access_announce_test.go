package buzz

import (
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/tenant"
)

// TestChannelCommandsAnnounced: channel commands publish their access
// change on the control bus, once each; the publishing relay's local
// delivery runs the hooks but leaves no pending own-echo mark behind.
func TestChannelCommandsAnnounced(t *testing.T) {
	var (
		mu  sync.Mutex
		got []control.Message
	)
	tr := newTestRelay(t, WithAccessChangeHook(func(_ tenant.CommunityID, m control.Message) {
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	owner, bob := newSigner(t), newSigner(t)
	oc := tr.dial(t)
	id := oc.createChannel(owner, "p", channel.VisibilityPrivate)
	eq(t, "put bob", oc.command(owner, nostr.KindPutUser, id, nostr.Tag{"p", bob.Pub()}).OK, true)
	eq(t, "remove bob", oc.command(owner, nostr.KindRemoveUser, id, nostr.Tag{"p", bob.Pub()}).OK, true)
	eq(t, "delete", oc.command(owner, nostr.KindDeleteChannel, id).OK, true)

	ch := id.String()
	want := []control.Message{
		control.MembershipChanged{Channel: ch}, // created (owner became a member)
		control.MembershipChanged{Channel: ch}, // bob added
		control.MembershipChanged{Channel: ch, PubKey: bob.Pub()},
		control.VisibilityChanged{Channel: ch},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("announced %#v, want %#v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("message %d = %#v, want %#v", i, got[i], want[i])
		}
	}
	tr.relay.cl.mu.Lock()
	pending := len(tr.relay.cl.own)
	tr.relay.cl.mu.Unlock()
	eq(t, "pending own marks", pending, 0)
}
