package channel_test

import (
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

func TestParseChannelID(t *testing.T) {
	good := "0b6f6d9e-2d1c-4c7e-9a55-0123456789ab"
	id, ok := channel.ParseID(good)
	if !ok || id.String() != good {
		t.Fatalf("ParseChannelID(%q) = %v, %v", good, id, ok)
	}
	// Any NIP-29 group id is a channel name too; its key is name-based
	// (UUID version 8), stable, and differs from every other id's.
	seen := map[channel.ID]string{id: good}
	for _, gid := range []string{"general", "pizza-lovers", "a_b", "0", strings.ReplaceAll(good, "-", ""),
		"0b6f6d9e-2d1c-4c7e-9a55-0123456789a", "0b6f6d9e_2d1c-4c7e-9a55-0123456789ab", strings.Repeat("z", channel.MaxGroupIDLen)} {
		k, ok := channel.ParseID(gid)
		if !ok || k.IsZero() || k[6]>>4 != 8 {
			t.Fatalf("ParseChannelID(%q) = %v, %v", gid, k, ok)
		}
		if again, _ := channel.ParseID(gid); again != k {
			t.Fatalf("ParseChannelID(%q) is not stable", gid)
		}
		if prev, dup := seen[k]; dup {
			t.Fatalf("%q and %q share a key", gid, prev)
		}
		seen[k] = gid
		if channel.SlugFor(gid) != gid || channel.IsUUIDGroupID(gid) {
			t.Fatalf("%q taken for a UUID", gid)
		}
	}
	if channel.SlugFor(good) != "" || !channel.IsUUIDGroupID(good) {
		t.Fatal("a UUID group id has no slug")
	}
	for _, bad := range []string{"", "General", strings.ToUpper(good), "{" + good + "}", good + " ", "a b", "é",
		"0b6f6d9e-2d1c-4c7e-9a55-0123456789aG", strings.Repeat("z", channel.MaxGroupIDLen+1)} {
		if _, ok := channel.ParseID(bad); ok {
			t.Errorf("ParseChannelID(%q) accepted", bad)
		}
	}
}

func TestChannelGroupID(t *testing.T) {
	id, _ := channel.ParseID("pizza")
	if g := (channel.Channel{ID: id, Slug: "pizza"}).GroupID(); g != "pizza" {
		t.Fatalf("GroupID = %q", g)
	}
	u, _ := channel.ParseID("0b6f6d9e-2d1c-4c7e-9a55-0123456789ab")
	if g := (channel.Channel{ID: u}).GroupID(); g != u.String() {
		t.Fatalf("GroupID = %q", g)
	}
}

func TestCommandFlags(t *testing.T) {
	yes, no := true, false
	create := &channel.Command{Kind: nostr.KindCreateChannel, Visibility: channel.VisibilityPrivate, Closed: &yes}
	vis, closed, restricted, hidden, err := create.Flags(channel.Channel{Visibility: channel.VisibilityPrivate, Hidden: true})
	if err != nil || vis != channel.VisibilityPrivate || !closed || !restricted || !hidden {
		t.Fatalf("create flags = %v %v %v %v %v", vis, closed, restricted, hidden, err)
	}
	if _, _, _, _, err := (&channel.Command{Kind: nostr.KindCreateChannel, Hidden: &yes}).Flags(channel.Channel{}); err != channel.ErrUnsupportedFlags {
		t.Fatalf("hidden without private: %v", err)
	}
	cur := channel.Channel{Visibility: channel.VisibilityPrivate, Closed: true, Restricted: true, Hidden: true}
	edit := &channel.Command{Kind: nostr.KindEditMetadata, Closed: &no}
	vis, closed, restricted, hidden, err = edit.Flags(cur)
	if err != nil || vis != channel.VisibilityPrivate || closed || !restricted || !hidden {
		t.Fatalf("edit flags = %v %v %v %v %v", vis, closed, restricted, hidden, err)
	}
	if _, _, _, _, err := (&channel.Command{Kind: nostr.KindEditMetadata, Private: &no}).Flags(cur); err != channel.ErrUnsupportedFlags {
		t.Fatalf("public but hidden: %v", err)
	}
	// Buzz's visibility stands for all four flags.
	vis, closed, restricted, hidden, err = (&channel.Command{Kind: nostr.KindEditMetadata, Visibility: channel.VisibilityOpen}).Flags(cur)
	if err != nil || vis != channel.VisibilityOpen || closed || restricted || hidden {
		t.Fatalf("visibility open = %v %v %v %v %v", vis, closed, restricted, hidden, err)
	}
	vis, closed, restricted, hidden, err = (&channel.Command{Kind: nostr.KindCreateChannel, Private: &yes}).Flags(channel.Channel{})
	if err != nil || vis != channel.VisibilityPrivate || closed || restricted || hidden {
		t.Fatalf("NIP-29 private alone = %v %v %v %v %v", vis, closed, restricted, hidden, err)
	}
}

func TestScope(t *testing.T) {
	a, _ := channel.ParseID("00000000-0000-4000-8000-000000000001")
	b, _ := channel.ParseID("00000000-0000-4000-8000-000000000002")
	c, _ := channel.ParseID("ffffffff-0000-4000-8000-000000000002")
	var zero channel.Scope
	if zero.All() || zero.Contains(a) || len(zero.Channels()) != 0 {
		t.Fatal("the zero scope must hold no channel")
	}
	s := channel.ScopeOf(c, a, c)
	if !s.Contains(a) || !s.Contains(c) || s.Contains(b) || len(s.Channels()) != 2 || s.Channels()[0] != a {
		t.Fatalf("scope = %v", s.Channels())
	}
	if all := channel.AllChannels(); !all.All() || !all.Contains(b) {
		t.Fatal("AllChannels must hold every channel")
	}
}

func TestEventChannel(t *testing.T) {
	id := "0b6f6d9e-2d1c-4c7e-9a55-0123456789ab"
	for _, tc := range []struct {
		tags   nostr.Tags
		ok     bool
		hasErr bool
	}{
		{nostr.Tags{}, false, false},
		{nostr.Tags{{"e", "x"}}, false, false},
		{nostr.Tags{{"h", id}}, true, false},
		{nostr.Tags{{"h", id, "relay"}, {"h", id}}, true, false},
		{nostr.Tags{{"h", id}, {"h", "00000000-0000-4000-8000-000000000001"}}, false, true},
		{nostr.Tags{{"h"}}, false, true},
		{nostr.Tags{{"h", "General"}}, false, true},
		{nostr.Tags{{"h", "a b"}}, false, true},
		{nostr.Tags{{"h", "00000000-0000-0000-0000-000000000000"}}, false, true},
	} {
		got, ok, err := channel.OfEvent(&nostr.Event{Tags: tc.tags})
		if ok != tc.ok || (err != nil) != tc.hasErr || (ok && got.String() != id) {
			t.Errorf("EventChannel(%v) = %v, %v, %v", tc.tags, got, ok, err)
		}
	}
}

func TestAuthorizeTable(t *testing.T) {
	open := channel.Channel{Visibility: channel.VisibilityOpen}
	priv := channel.Channel{Visibility: channel.VisibilityPrivate, Closed: true, Restricted: true, Hidden: true}
	st := func(ch channel.Channel, actor, target channel.Role, owners int) channel.CommandState {
		return channel.CommandState{Channel: ch, ActorRole: actor, TargetRole: target, Owners: owners}
	}
	cmd := func(kind int, role channel.Role, self bool) *channel.Command {
		c := &channel.Command{Kind: kind, Actor: strings.Repeat("a", 64), Target: strings.Repeat("b", 64), Role: role}
		if self {
			c.Target = c.Actor
		}
		return c
	}
	invited := func(c *channel.Command) *channel.Command { c.Code, c.Invited = "x", true; return c }
	for i, tc := range []struct {
		cmd  *channel.Command
		st   channel.CommandState
		want error
	}{
		{cmd(nostr.KindJoinRequest, "", false), st(open, "", "", 1), nil},
		{cmd(nostr.KindJoinRequest, "", false), st(priv, "", "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindJoinRequest, "", false), st(priv, channel.RoleGuest, "", 1), channel.ErrAlreadyMember},
		{cmd(nostr.KindJoinRequest, "", false), st(open, channel.RoleMember, "", 1), channel.ErrAlreadyMember},
		{cmd(nostr.KindJoinRequest, "", false), st(channel.Channel{Visibility: channel.VisibilityPrivate}, "", "", 1), nil},
		{cmd(nostr.KindJoinRequest, "", false), st(channel.Channel{Visibility: channel.VisibilityOpen, Closed: true}, "", "", 1), channel.ErrNotPermitted},
		{invited(cmd(nostr.KindJoinRequest, "", false)), st(priv, "", "", 1), nil},
		{cmd(nostr.KindCreateInvite, "", false), st(priv, channel.RoleAdmin, "", 1), nil},
		{cmd(nostr.KindCreateInvite, "", false), st(priv, channel.RoleMember, "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindCreateInvite, "", false), st(open, channel.RoleOwner, "", 1), channel.ErrPublicInvite},
		{cmd(nostr.KindLeaveRequest, "", false), st(open, "", "", 1), channel.ErrNotMember},
		{cmd(nostr.KindLeaveRequest, "", false), st(open, channel.RoleOwner, "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindLeaveRequest, "", false), st(open, channel.RoleOwner, "", 2), nil},
		{cmd(nostr.KindPutUser, channel.RoleOwner, false), st(priv, channel.RoleOwner, "", 1), nil},
		{cmd(nostr.KindPutUser, channel.RoleMember, true), st(priv, channel.RoleOwner, channel.RoleOwner, 1), channel.ErrNotPermitted},
		{cmd(nostr.KindPutUser, "", false), st(priv, channel.RoleAdmin, "", 1), nil},
		{cmd(nostr.KindPutUser, channel.RoleBot, false), st(priv, channel.RoleAdmin, channel.RoleMember, 1), channel.ErrNotPermitted},
		{cmd(nostr.KindPutUser, channel.RoleAdmin, false), st(priv, channel.RoleAdmin, "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindPutUser, "", false), st(priv, channel.RoleMember, "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindPutUser, "", false), st(priv, channel.RoleBot, "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindRemoveUser, "", false), st(priv, channel.RoleAdmin, channel.RoleAdmin, 1), channel.ErrNotPermitted},
		{cmd(nostr.KindRemoveUser, "", false), st(priv, channel.RoleAdmin, channel.RoleBot, 1), nil},
		{cmd(nostr.KindRemoveUser, "", false), st(priv, channel.RoleOwner, channel.RoleOwner, 2), nil},
		{cmd(nostr.KindRemoveUser, "", false), st(priv, channel.RoleOwner, channel.RoleOwner, 1), channel.ErrNotPermitted},
		{cmd(nostr.KindRemoveUser, "", false), st(priv, channel.RoleMember, channel.RoleGuest, 1), channel.ErrNotPermitted},
		{cmd(nostr.KindRemoveUser, "", true), st(priv, channel.RoleMember, channel.RoleMember, 1), nil},
		{cmd(nostr.KindRemoveUser, "", false), st(priv, channel.RoleMember, "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindRemoveUser, "", false), st(priv, channel.RoleAdmin, "", 1), channel.ErrNotMember},
		{cmd(nostr.KindEditMetadata, "", false), st(open, channel.RoleMember, "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindEditMetadata, "", false), st(open, channel.RoleAdmin, "", 1), nil},
		{cmd(nostr.KindDeleteEvent, "", false), st(open, channel.RoleBot, "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindDeleteChannel, "", false), st(open, channel.RoleAdmin, "", 1), channel.ErrNotPermitted},
		{cmd(nostr.KindDeleteChannel, "", false), st(open, channel.RoleOwner, "", 1), nil},
		{cmd(nostr.KindJoinRequest, "", false), st(channel.Channel{Visibility: channel.VisibilityOpen, Deleted: true}, "", "", 1), channel.ErrNoChannel},
	} {
		if got := channel.Authorize(tc.cmd, tc.st); got != tc.want {
			t.Errorf("case %d (kind %d, actor %q, target %q): %v, want %v", i, tc.cmd.Kind, tc.st.ActorRole, tc.st.TargetRole, got, tc.want)
		}
	}
}

func TestMayPostRead(t *testing.T) {
	open := channel.Channel{Visibility: channel.VisibilityOpen}
	priv := channel.Channel{Visibility: channel.VisibilityPrivate}
	if !channel.MayPost(open, "", false) || channel.MayPost(open, channel.RoleGuest, true) || !channel.MayPost(open, channel.RoleBot, true) {
		t.Fatal("open channel posting rules")
	}
	if channel.MayPost(priv, "", false) || channel.MayPost(priv, channel.RoleGuest, true) || !channel.MayPost(priv, channel.RoleMember, true) {
		t.Fatal("private channel posting rules")
	}
	if !channel.MayRead(open, false) || channel.MayRead(priv, false) || !channel.MayRead(priv, true) {
		t.Fatal("read rules")
	}
	restricted := channel.Channel{Visibility: channel.VisibilityOpen, Restricted: true}
	if channel.MayPost(restricted, "", false) || !channel.MayPost(restricted, channel.RoleMember, true) || !channel.MayRead(restricted, false) {
		t.Fatal("restricted channel rules")
	}
	del := channel.Channel{Visibility: channel.VisibilityOpen, Deleted: true}
	if channel.MayRead(del, true) || channel.MayPost(del, channel.RoleOwner, true) {
		t.Fatal("a deleted channel is neither readable nor writable")
	}
}

func FuzzParseChannelID(f *testing.F) {
	f.Add("0b6f6d9e-2d1c-4c7e-9a55-0123456789ab")
	f.Add("0B6F6D9E-2D1C-4C7E-9A55-0123456789AB")
	f.Add("general")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := channel.ParseID(s)
		if !ok {
			return
		}
		if !channel.ValidGroupID(s) {
			t.Fatalf("ParseChannelID(%q) accepted an invalid group id", s)
		}
		if channel.IsUUIDGroupID(s) && id.String() != s {
			t.Fatalf("ParseChannelID(%q) round-trips to %q", s, id.String())
		}
		// The key's own text parses back to the key (control messages
		// carry it).
		if back, ok := channel.ParseID(id.String()); !ok || back != id {
			t.Fatalf("ParseChannelID(%q).String() = %q does not parse back", s, id.String())
		}
	})
}
