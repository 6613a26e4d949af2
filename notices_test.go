package buzz

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// systemMessages returns the types of the 40099 contents among evs, in order.
func systemMessages(t *testing.T, evs []*nostr.Event) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, ev := range evs {
		if ev.Kind != nostr.KindSystemMessage {
			continue
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(ev.Content), &m); err != nil {
			t.Fatalf("system message content %q: %v", ev.Content, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRelaySignedNotices: joins, leaves, removals and renames are narrated
// in the channel by system messages (40099) signed by the community's
// state key; the user another adds or removes is told by a 44100/44101
// that only they read (a removed user too), and a client cannot forge one.
func TestRelaySignedNotices(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		tr := backendRelay(t, st, WithRelayKey(testMaster))
		owner, bob, carol := newSigner(t), newSigner(t), newSigner(t)
		o := tr.dial(t)
		o.AuthAs(owner, tr.host)
		priv := o.createChannel(owner, "private", channel.VisibilityPrivate)
		open := o.createChannel(owner, "open", channel.VisibilityOpen)
		stateKey := o.Req("s", nostr.Filter{Kinds: []int{nostr.KindChannelMetadata}})[0].PubKey

		b := tr.dial(t)
		b.AuthAs(bob, tr.host)
		eq(t, "put bob", o.command(owner, nostr.KindPutUser, priv, nostr.Tag{"p", bob.Pub()}).OK, true)
		eq(t, "put bob again (a role change)", o.command(owner, nostr.KindPutUser, priv, nostr.Tag{"p", bob.Pub()}).OK, true)
		eq(t, "rename", o.command(owner, nostr.KindEditMetadata, priv, nostr.Tag{"name", "renamed"}).OK, true)
		eq(t, "remove bob", o.command(owner, nostr.KindRemoveUser, priv, nostr.Tag{"p", bob.Pub()}).OK, true)

		inPriv := nostr.Filter{Kinds: []int{nostr.KindSystemMessage}, Tags: map[string][]string{"h": {priv.String()}}}
		sys := o.Req("p", inPriv)
		for _, ev := range sys {
			eq(t, "system message signer", ev.PubKey, stateKey)
		}
		got := systemMessages(t, sys) // one second: in any order
		want := []map[string]string{
			{"type": "member_removed", "actor": owner.Pub(), "target": bob.Pub()},
			{"type": "channel_renamed", "actor": owner.Pub(), "name": "renamed"},
			{"type": "member_joined", "actor": owner.Pub(), "target": bob.Pub()},
		}
		if len(got) != len(want) {
			t.Fatalf("system messages %v, want %v", got, want)
		}
		for _, w := range want {
			if !slices.ContainsFunc(got, func(g map[string]string) bool { return maps.Equal(g, w) }) {
				t.Fatalf("system messages %v lack %v", got, w)
			}
		}
		// Bob, removed from the private channel, no longer reads it.
		if evs := b.Req("bp", nostr.Filter{Kinds: []int{nostr.KindSystemMessage}}); len(evs) != 0 {
			t.Fatalf("removed bob reads %d system messages of the private channel", len(evs))
		}

		// The notifications reach bob alone.
		notes := b.Req("n", nostr.Filter{Kinds: []int{nostr.KindMemberAdded, nostr.KindMemberRemoved}, Tags: map[string][]string{"p": {bob.Pub()}}})
		if len(notes) != 2 || notes[0].Kind+notes[1].Kind != nostr.KindMemberAdded+nostr.KindMemberRemoved {
			t.Fatalf("bob's notifications = %v", notes)
		}
		for _, ev := range notes {
			eq(t, "notification signer", ev.PubKey, stateKey)
			eq(t, "notification h", ev.Tags.Find("h").Value(), priv.String())
		}
		for _, f := range []nostr.Filter{
			{Kinds: []int{nostr.KindMemberAdded, nostr.KindMemberRemoved}},
			{IDs: []string{notes[0].ID}},
			{},
		} {
			for _, ev := range o.Req("o", f) {
				if ev.Kind == nostr.KindMemberAdded || ev.Kind == nostr.KindMemberRemoved {
					t.Fatalf("the owner reads bob's notification with %v", f)
				}
			}
		}
		eq(t, "owner COUNT of notifications", countOf(t, o, "oc", nostr.Filter{Kinds: []int{nostr.KindMemberRemoved}, Tags: map[string][]string{"p": {bob.Pub()}}}), int64(0))

		// Joining and leaving an open channel.
		c := tr.dial(t)
		c.AuthAs(carol, tr.host)
		c.Subscribe("live", nostr.Filter{Kinds: []int{nostr.KindSystemMessage}, Tags: map[string][]string{"h": {open.String()}}})
		eq(t, "join", o.Publish(carol.Event(nostr.KindJoinRequest, now(), "", chanTag(open))).OK, true)
		live := systemMessages(t, []*nostr.Event{c.NextLive("live")})
		eq(t, "live join", live[0]["type"], "member_joined")
		eq(t, "joined", live[0]["target"], carol.Pub())
		eq(t, "leave", o.Publish(carol.Event(nostr.KindLeaveRequest, now(), "", chanTag(open))).OK, true)
		live = systemMessages(t, []*nostr.Event{c.NextLive("live")})
		if live[0]["type"] != "member_left" || live[0]["actor"] != carol.Pub() {
			t.Fatalf("live leave = %v", live[0])
		}

		// A client's notification is refused.
		forged := carol.Event(nostr.KindMemberAdded, now(), "", nostr.Tag{"p", bob.Pub()}, chanTag(priv))
		ok := c.Publish(forged)
		if ok.OK || ok.Message != ingest.MsgNotificationRelaySigned {
			t.Fatalf("forged notification: %v %q", ok.OK, ok.Message)
		}

		// Another community hears nothing of it.
		if _, _, err := st.EnsureCommunity(t.Context(), "other.example"); err != nil {
			t.Fatal(err)
		}
		ob := tr.dialHost(t, "other.example")
		ob.AuthAs(bob, "other.example")
		if evs := ob.Req("x", nostr.Filter{Kinds: []int{nostr.KindSystemMessage, nostr.KindMemberAdded, nostr.KindMemberRemoved}}); len(evs) != 0 {
			t.Fatalf("another community reads %d notices", len(evs))
		}
	})
}
