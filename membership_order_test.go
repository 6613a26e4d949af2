package buzz

import (
	"fmt"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestMembershipEventsStrictlyOrdered: NIP-29 clients decide whether a user
// is a member by the latest 9000/9001 naming them in the group. With the
// relay's clock standing still (every command in the same second), each
// 9000/9001 the relay issues for a member — after a join, a leave, or
// following an admin's own 9000/9001 — carries a created_at strictly after
// every earlier one naming that member, so "latest" is never ambiguous.
func TestMembershipEventsStrictlyOrdered(t *testing.T) {
	frozen := time.Now().Truncate(time.Second)
	tr := newTestRelay(t, WithRelayKey(testMaster), WithClock(func() time.Time { return frozen }))
	owner, member := newSigner(t), newSigner(t)
	oc, mc := tr.dial(t), tr.dial(t)
	oc.AuthAs(owner, tr.host)
	mc.AuthAs(member, tr.host)
	at := frozen.Unix()
	id := storetest.NewChannelID()
	oc.MustAccept(owner.Event(nostr.KindCreateChannel, at, "", chanTag(id), nostr.Tag{"name", "g"}))

	latest := func(t *testing.T, want int) {
		t.Helper()
		evs := oc.Req("m", nostr.Filter{Kinds: []int{nostr.KindPutUser, nostr.KindRemoveUser},
			Tags: map[string][]string{"h": {id.String()}, "p": {member.Pub()}}})
		var newest *nostr.Event
		ties := 0
		for _, ev := range evs {
			switch {
			case newest == nil || ev.CreatedAt > newest.CreatedAt:
				newest, ties = ev, 0
			case ev.CreatedAt == newest.CreatedAt:
				ties++
			}
		}
		if newest == nil || ties > 0 || newest.Kind != want {
			kinds := make([]int, 0, len(evs))
			for _, ev := range evs {
				kinds = append(kinds, ev.Kind)
			}
			t.Fatalf("latest 9000/9001 naming the member: %v (ties %d) of %v, want kind %d alone", newest, ties, kinds, want)
		}
	}
	n := 0
	cmd := func(c *rawClient, s *signer, kind int, tags ...nostr.Tag) {
		t.Helper()
		n++ // distinct content: the same command twice in a second is one event
		ok := c.Publish(s.Event(kind, at, fmt.Sprint("step ", n), append([]nostr.Tag{chanTag(id)}, tags...)...))
		if !ok.OK || ok.Message != "" {
			t.Fatalf("command %d (kind %d): %v %q", n, kind, ok.OK, ok.Message)
		}
	}
	cmd(mc, member, nostr.KindJoinRequest)
	latest(t, nostr.KindPutUser)
	cmd(mc, member, nostr.KindLeaveRequest)
	latest(t, nostr.KindRemoveUser)
	cmd(mc, member, nostr.KindJoinRequest)
	latest(t, nostr.KindPutUser)
	// An admin's own 9001 at the same second, then the member joins
	// again: the relay's 9000 still comes after it.
	cmd(oc, owner, nostr.KindRemoveUser, nostr.Tag{"p", member.Pub()})
	cmd(mc, member, nostr.KindJoinRequest)
	latest(t, nostr.KindPutUser)
	cmd(mc, member, nostr.KindLeaveRequest)
	latest(t, nostr.KindRemoveUser)
}
