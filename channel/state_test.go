package channel_test

import (
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

func TestStateEvents(t *testing.T) {
	id, _ := channel.ParseID("general")
	m := []channel.Member{
		{PubKey: strings.Repeat("a", 64), Role: channel.RoleOwner},
		{PubKey: strings.Repeat("b", 64), Role: "moderator"},
		{PubKey: strings.Repeat("c", 64), Role: channel.RoleMember},
	}
	tagVals := func(ev *nostr.Event, name string) []string {
		var out []string
		for _, tg := range ev.Tags {
			if tg[0] == name {
				out = append(out, strings.Join(tg[1:], "/"))
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		ch     channel.Channel
		change func(*channel.Change)
		kinds  []int
		h      bool
	}{
		{"open channel, metadata", channel.Channel{ID: id, Slug: "general", Name: "General", Visibility: channel.VisibilityOpen, Type: channel.TypeStream},
			func(c *channel.Change) { c.Metadata = true }, []int{nostr.KindChannelMetadata}, true},
		{"open channel, members", channel.Channel{ID: id, Slug: "general", Visibility: channel.VisibilityOpen},
			func(c *channel.Change) { c.Members = true }, []int{nostr.KindChannelAdmins, nostr.KindChannelMembers, nostr.KindChannelRoles}, true},
		{"private, not hidden: community-wide state", channel.Channel{ID: id, Slug: "general", Visibility: channel.VisibilityPrivate, Closed: true},
			func(c *channel.Change) { c.Metadata = true }, []int{nostr.KindChannelMetadata}, false},
		{"private and hidden: in the channel", channel.Channel{ID: id, Slug: "general", Visibility: channel.VisibilityPrivate, Hidden: true},
			func(c *channel.Change) { c.Metadata, c.Members = true, true }, []int{nostr.KindChannelMetadata, nostr.KindChannelAdmins, nostr.KindChannelMembers, nostr.KindChannelRoles}, true},
		{"deleted: nothing", channel.Channel{ID: id, Slug: "general", Visibility: channel.VisibilityOpen},
			func(c *channel.Change) { c.Metadata, c.Members, c.Deleted = true, true, true }, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			change := channel.Change{Channel: tc.ch}
			tc.change(&change)
			evs := channel.StateEvents(change, m)
			if len(evs) != len(tc.kinds) {
				t.Fatalf("%d events, want kinds %v", len(evs), tc.kinds)
			}
			for i, ev := range evs {
				if ev.Kind != tc.kinds[i] || ev.Sig != "" || ev.CreatedAt != 0 {
					t.Fatalf("event %d: kind %d (want %d), signed %v", i, ev.Kind, tc.kinds[i], ev.Sig != "")
				}
				if d := tagVals(ev, "d"); len(d) != 1 || d[0] != "general" {
					t.Fatalf("d = %v", d)
				}
				if h := tagVals(ev, "h"); (len(h) == 1 && h[0] == "general") != tc.h {
					t.Fatalf("h = %v, want present %v", h, tc.h)
				}
				switch ev.Kind {
				case nostr.KindChannelMetadata:
					private := tc.ch.Visibility == channel.VisibilityPrivate
					if (len(tagVals(ev, "private")) == 1) != private || (len(tagVals(ev, "public")) == 1) == private {
						t.Fatalf("flags: %v", ev.Tags)
					}
				case nostr.KindChannelAdmins:
					if p := tagVals(ev, "p"); len(p) != 1 || !strings.HasSuffix(p[0], "/owner") {
						t.Fatalf("admins = %v", p)
					}
				case nostr.KindChannelMembers:
					if p := tagVals(ev, "p"); len(p) != 3 {
						t.Fatalf("members = %v", p)
					}
				case nostr.KindChannelRoles:
					roles := tagVals(ev, "role")
					if len(roles) != 6 || !strings.HasPrefix(roles[len(roles)-1], "moderator/") {
						t.Fatalf("roles = %v", roles)
					}
				}
			}
		})
	}
}

func TestMembershipEvent(t *testing.T) {
	id, _ := channel.ParseID("general")
	change := channel.Change{Channel: channel.Channel{ID: id, Slug: "general"}}
	actor := strings.Repeat("a", 64)
	for _, tc := range []struct {
		kind, want int
		deleted    bool
	}{
		{nostr.KindJoinRequest, nostr.KindPutUser, false},
		{nostr.KindLeaveRequest, nostr.KindRemoveUser, false},
		{nostr.KindPutUser, 0, false},
		{nostr.KindJoinRequest, 0, true},
	} {
		change.Deleted = tc.deleted
		ev := channel.MembershipEvent(change, &channel.Command{Kind: tc.kind, Actor: actor})
		switch {
		case tc.want == 0 && ev != nil:
			t.Errorf("kind %d (deleted %v): got %d, want none", tc.kind, tc.deleted, ev.Kind)
		case tc.want != 0 && (ev == nil || ev.Kind != tc.want || ev.Tags[1][1] != actor || ev.Tags[0][1] != "general"):
			t.Errorf("kind %d: got %+v, want kind %d", tc.kind, ev, tc.want)
		}
	}
	if channel.MembershipEvent(change, nil) != nil {
		t.Error("event without a command")
	}
}

func TestPrevious(t *testing.T) {
	id := strings.Repeat("ab", 32)
	ev := func(tags ...nostr.Tag) *nostr.Event {
		return &nostr.Event{Kind: 9, Tags: append(nostr.Tags{{"h", "g"}}, tags...)}
	}
	for _, tc := range []struct {
		name    string
		ev      *nostr.Event
		refs    int
		refusal string
	}{
		{"none", ev(), 0, ""},
		{"two in one tag", ev(nostr.Tag{"previous", "abababab", id}), 2, ""},
		{"empty tag", ev(nostr.Tag{"previous"}), 0, channel.MsgBadPrevious},
		{"short", ev(nostr.Tag{"previous", "abab"}), 0, channel.MsgBadPrevious},
		{"upper case", ev(nostr.Tag{"previous", "ABABABAB"}), 0, channel.MsgBadPrevious},
		{"too many", ev(append(nostr.Tag{"previous"}, strings.Split(strings.Repeat("abababab ", 101), " ")[:101]...)), 0, channel.MsgBadPrevious},
	} {
		refs, refusal := channel.PreviousRefs(tc.ev)
		if len(refs) != tc.refs || refusal != tc.refusal {
			t.Errorf("%s: PreviousRefs = %v, %q", tc.name, refs, refusal)
		}
	}
	if !channel.PreviousKnown([]string{"abababab", id}, []string{"ff", id}) {
		t.Error("known prefixes refused")
	}
	if channel.PreviousKnown([]string{"cdcdcdcd"}, []string{id}) {
		t.Error("unknown reference accepted")
	}
	if f := channel.PreviousFilter(ev()); f.Limit != channel.PreviousWindow || f.Tags["h"][0] != "g" {
		t.Errorf("PreviousFilter = %+v", f)
	}
}

func TestInvites(t *testing.T) {
	f := channel.InviteFilter("g")
	if len(f.Kinds) != 1 || f.Kinds[0] != nostr.KindCreateInvite || f.Tags["h"][0] != "g" || f.Limit != channel.MaxInvites {
		t.Fatalf("InviteFilter = %+v", f)
	}
	inv := &nostr.Event{Kind: nostr.KindCreateInvite, Tags: nostr.Tags{{"h", "g"}, {"code", "sesame"}}}
	if !channel.IsInvite(inv, "sesame") || channel.IsInvite(inv, "other") {
		t.Fatal("IsInvite compares the code")
	}
	inv.Kind = nostr.KindChatMessage
	if channel.IsInvite(inv, "sesame") {
		t.Fatal("a message is no invite")
	}
}
