package store_test

import (
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

func TestParseChannelID(t *testing.T) {
	good := "0b6f6d9e-2d1c-4c7e-9a55-0123456789ab"
	id, ok := store.ParseChannelID(good)
	if !ok || id.String() != good {
		t.Fatalf("ParseChannelID(%q) = %v, %v", good, id, ok)
	}
	// Any NIP-29 group id is a channel name too; its key is name-based
	// (UUID version 8), stable, and differs from every other id's.
	seen := map[store.ChannelID]string{id: good}
	for _, gid := range []string{"general", "pizza-lovers", "a_b", "0", strings.ReplaceAll(good, "-", ""),
		"0b6f6d9e-2d1c-4c7e-9a55-0123456789a", "0b6f6d9e_2d1c-4c7e-9a55-0123456789ab", strings.Repeat("z", store.MaxGroupIDLen)} {
		k, ok := store.ParseChannelID(gid)
		if !ok || k.IsZero() || k[6]>>4 != 8 {
			t.Fatalf("ParseChannelID(%q) = %v, %v", gid, k, ok)
		}
		if again, _ := store.ParseChannelID(gid); again != k {
			t.Fatalf("ParseChannelID(%q) is not stable", gid)
		}
		if prev, dup := seen[k]; dup {
			t.Fatalf("%q and %q share a key", gid, prev)
		}
		seen[k] = gid
		if store.SlugFor(gid) != gid || store.IsUUIDGroupID(gid) {
			t.Fatalf("%q taken for a UUID", gid)
		}
	}
	if store.SlugFor(good) != "" || !store.IsUUIDGroupID(good) {
		t.Fatal("a UUID group id has no slug")
	}
	for _, bad := range []string{"", "General", strings.ToUpper(good), "{" + good + "}", good + " ", "a b", "é",
		"0b6f6d9e-2d1c-4c7e-9a55-0123456789aG", strings.Repeat("z", store.MaxGroupIDLen+1)} {
		if _, ok := store.ParseChannelID(bad); ok {
			t.Errorf("ParseChannelID(%q) accepted", bad)
		}
	}
}

func TestChannelGroupID(t *testing.T) {
	id, _ := store.ParseChannelID("pizza")
	if g := (store.Channel{ID: id, Slug: "pizza"}).GroupID(); g != "pizza" {
		t.Fatalf("GroupID = %q", g)
	}
	u, _ := store.ParseChannelID("0b6f6d9e-2d1c-4c7e-9a55-0123456789ab")
	if g := (store.Channel{ID: u}).GroupID(); g != u.String() {
		t.Fatalf("GroupID = %q", g)
	}
}

func TestCommandFlags(t *testing.T) {
	yes, no := true, false
	create := &store.ChannelCommand{Kind: store.KindCreateChannel, Visibility: store.VisibilityPrivate, Closed: &yes}
	vis, closed, restricted, hidden, err := create.Flags(store.Channel{Visibility: store.VisibilityPrivate, Hidden: true})
	if err != nil || vis != store.VisibilityPrivate || !closed || !restricted || !hidden {
		t.Fatalf("create flags = %v %v %v %v %v", vis, closed, restricted, hidden, err)
	}
	if _, _, _, _, err := (&store.ChannelCommand{Kind: store.KindCreateChannel, Hidden: &yes}).Flags(store.Channel{}); err != store.ErrUnsupportedFlags {
		t.Fatalf("hidden without private: %v", err)
	}
	cur := store.Channel{Visibility: store.VisibilityPrivate, Closed: true, Restricted: true, Hidden: true}
	edit := &store.ChannelCommand{Kind: store.KindEditMetadata, Closed: &no}
	vis, closed, restricted, hidden, err = edit.Flags(cur)
	if err != nil || vis != store.VisibilityPrivate || closed || !restricted || !hidden {
		t.Fatalf("edit flags = %v %v %v %v %v", vis, closed, restricted, hidden, err)
	}
	if _, _, _, _, err := (&store.ChannelCommand{Kind: store.KindEditMetadata, Private: &no}).Flags(cur); err != store.ErrUnsupportedFlags {
		t.Fatalf("public but hidden: %v", err)
	}
	// Buzz's visibility stands for all four flags.
	vis, closed, restricted, hidden, err = (&store.ChannelCommand{Kind: store.KindEditMetadata, Visibility: store.VisibilityOpen}).Flags(cur)
	if err != nil || vis != store.VisibilityOpen || closed || restricted || hidden {
		t.Fatalf("visibility open = %v %v %v %v %v", vis, closed, restricted, hidden, err)
	}
	vis, closed, restricted, hidden, err = (&store.ChannelCommand{Kind: store.KindCreateChannel, Private: &yes}).Flags(store.Channel{})
	if err != nil || vis != store.VisibilityPrivate || closed || restricted || hidden {
		t.Fatalf("NIP-29 private alone = %v %v %v %v %v", vis, closed, restricted, hidden, err)
	}
}

func TestScope(t *testing.T) {
	a, _ := store.ParseChannelID("00000000-0000-4000-8000-000000000001")
	b, _ := store.ParseChannelID("00000000-0000-4000-8000-000000000002")
	c, _ := store.ParseChannelID("ffffffff-0000-4000-8000-000000000002")
	var zero store.Scope
	if zero.All() || zero.Contains(a) || len(zero.Channels()) != 0 {
		t.Fatal("the zero scope must hold no channel")
	}
	s := store.ChannelsScope(c, a, c)
	if !s.Contains(a) || !s.Contains(c) || s.Contains(b) || len(s.Channels()) != 2 || s.Channels()[0] != a {
		t.Fatalf("scope = %v", s.Channels())
	}
	if all := store.AllChannels(); !all.All() || !all.Contains(b) {
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
		got, ok, err := store.EventChannel(&nostr.Event{Tags: tc.tags})
		if ok != tc.ok || (err != nil) != tc.hasErr || (ok && got.String() != id) {
			t.Errorf("EventChannel(%v) = %v, %v, %v", tc.tags, got, ok, err)
		}
	}
}

func TestAuthorizeTable(t *testing.T) {
	open := store.Channel{Visibility: store.VisibilityOpen}
	priv := store.Channel{Visibility: store.VisibilityPrivate, Closed: true, Restricted: true, Hidden: true}
	st := func(ch store.Channel, actor, target store.Role, owners int) store.CommandState {
		return store.CommandState{Channel: ch, ActorRole: actor, TargetRole: target, Owners: owners}
	}
	cmd := func(kind int, role store.Role, self bool) *store.ChannelCommand {
		c := &store.ChannelCommand{Kind: kind, Actor: strings.Repeat("a", 64), Target: strings.Repeat("b", 64), Role: role}
		if self {
			c.Target = c.Actor
		}
		return c
	}
	invited := func(c *store.ChannelCommand) *store.ChannelCommand { c.Code, c.Invited = "x", true; return c }
	for i, tc := range []struct {
		cmd  *store.ChannelCommand
		st   store.CommandState
		want error
	}{
		{cmd(store.KindJoinRequest, "", false), st(open, "", "", 1), nil},
		{cmd(store.KindJoinRequest, "", false), st(priv, "", "", 1), store.ErrNotPermitted},
		{cmd(store.KindJoinRequest, "", false), st(priv, store.RoleGuest, "", 1), store.ErrAlreadyMember},
		{cmd(store.KindJoinRequest, "", false), st(open, store.RoleMember, "", 1), store.ErrAlreadyMember},
		{cmd(store.KindJoinRequest, "", false), st(store.Channel{Visibility: store.VisibilityPrivate}, "", "", 1), nil},
		{cmd(store.KindJoinRequest, "", false), st(store.Channel{Visibility: store.VisibilityOpen, Closed: true}, "", "", 1), store.ErrNotPermitted},
		{invited(cmd(store.KindJoinRequest, "", false)), st(priv, "", "", 1), nil},
		{cmd(store.KindCreateInvite, "", false), st(priv, store.RoleAdmin, "", 1), nil},
		{cmd(store.KindCreateInvite, "", false), st(priv, store.RoleMember, "", 1), store.ErrNotPermitted},
		{cmd(store.KindCreateInvite, "", false), st(open, store.RoleOwner, "", 1), store.ErrPublicInvite},
		{cmd(store.KindLeaveRequest, "", false), st(open, "", "", 1), store.ErrNotMember},
		{cmd(store.KindLeaveRequest, "", false), st(open, store.RoleOwner, "", 1), store.ErrNotPermitted},
		{cmd(store.KindLeaveRequest, "", false), st(open, store.RoleOwner, "", 2), nil},
		{cmd(store.KindPutUser, store.RoleOwner, false), st(priv, store.RoleOwner, "", 1), nil},
		{cmd(store.KindPutUser, store.RoleMember, true), st(priv, store.RoleOwner, store.RoleOwner, 1), store.ErrNotPermitted},
		{cmd(store.KindPutUser, "", false), st(priv, store.RoleAdmin, "", 1), nil},
		{cmd(store.KindPutUser, store.RoleBot, false), st(priv, store.RoleAdmin, store.RoleMember, 1), store.ErrNotPermitted},
		{cmd(store.KindPutUser, store.RoleAdmin, false), st(priv, store.RoleAdmin, "", 1), store.ErrNotPermitted},
		{cmd(store.KindPutUser, "", false), st(priv, store.RoleMember, "", 1), store.ErrNotPermitted},
		{cmd(store.KindPutUser, "", false), st(priv, store.RoleBot, "", 1), store.ErrNotPermitted},
		{cmd(store.KindRemoveUser, "", false), st(priv, store.RoleAdmin, store.RoleAdmin, 1), store.ErrNotPermitted},
		{cmd(store.KindRemoveUser, "", false), st(priv, store.RoleAdmin, store.RoleBot, 1), nil},
		{cmd(store.KindRemoveUser, "", false), st(priv, store.RoleOwner, store.RoleOwner, 2), nil},
		{cmd(store.KindRemoveUser, "", false), st(priv, store.RoleOwner, store.RoleOwner, 1), store.ErrNotPermitted},
		{cmd(store.KindRemoveUser, "", false), st(priv, store.RoleMember, store.RoleGuest, 1), store.ErrNotPermitted},
		{cmd(store.KindRemoveUser, "", true), st(priv, store.RoleMember, store.RoleMember, 1), nil},
		{cmd(store.KindRemoveUser, "", false), st(priv, store.RoleMember, "", 1), store.ErrNotPermitted},
		{cmd(store.KindRemoveUser, "", false), st(priv, store.RoleAdmin, "", 1), store.ErrNotMember},
		{cmd(store.KindEditMetadata, "", false), st(open, store.RoleMember, "", 1), store.ErrNotPermitted},
		{cmd(store.KindEditMetadata, "", false), st(open, store.RoleAdmin, "", 1), nil},
		{cmd(store.KindDeleteEvent, "", false), st(open, store.RoleBot, "", 1), store.ErrNotPermitted},
		{cmd(store.KindDeleteChannel, "", false), st(open, store.RoleAdmin, "", 1), store.ErrNotPermitted},
		{cmd(store.KindDeleteChannel, "", false), st(open, store.RoleOwner, "", 1), nil},
		{cmd(store.KindJoinRequest, "", false), st(store.Channel{Visibility: store.VisibilityOpen, Deleted: true}, "", "", 1), store.ErrNoChannel},
	} {
		if got := store.Authorize(tc.cmd, tc.st); got != tc.want {
			t.Errorf("case %d (kind %d, actor %q, target %q): %v, want %v", i, tc.cmd.Kind, tc.st.ActorRole, tc.st.TargetRole, got, tc.want)
		}
	}
}

func TestMayPostRead(t *testing.T) {
	open := store.Channel{Visibility: store.VisibilityOpen}
	priv := store.Channel{Visibility: store.VisibilityPrivate}
	if !store.MayPost(open, "", false) || store.MayPost(open, store.RoleGuest, true) || !store.MayPost(open, store.RoleBot, true) {
		t.Fatal("open channel posting rules")
	}
	if store.MayPost(priv, "", false) || store.MayPost(priv, store.RoleGuest, true) || !store.MayPost(priv, store.RoleMember, true) {
		t.Fatal("private channel posting rules")
	}
	if !store.MayRead(open, false) || store.MayRead(priv, false) || !store.MayRead(priv, true) {
		t.Fatal("read rules")
	}
	restricted := store.Channel{Visibility: store.VisibilityOpen, Restricted: true}
	if store.MayPost(restricted, "", false) || !store.MayPost(restricted, store.RoleMember, true) || !store.MayRead(restricted, false) {
		t.Fatal("restricted channel rules")
	}
	del := store.Channel{Visibility: store.VisibilityOpen, Deleted: true}
	if store.MayRead(del, true) || store.MayPost(del, store.RoleOwner, true) {
		t.Fatal("a deleted channel is neither readable nor writable")
	}
}

func FuzzParseChannelID(f *testing.F) {
	f.Add("0b6f6d9e-2d1c-4c7e-9a55-0123456789ab")
	f.Add("0B6F6D9E-2D1C-4C7E-9A55-0123456789AB")
	f.Add("general")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := store.ParseChannelID(s)
		if !ok {
			return
		}
		if !store.ValidGroupID(s) {
			t.Fatalf("ParseChannelID(%q) accepted an invalid group id", s)
		}
		if store.IsUUIDGroupID(s) && id.String() != s {
			t.Fatalf("ParseChannelID(%q) round-trips to %q", s, id.String())
		}
		// The key's own text parses back to the key (control messages
		// carry it).
		if back, ok := store.ParseChannelID(id.String()); !ok || back != id {
			t.Fatalf("ParseChannelID(%q).String() = %q does not parse back", s, id.String())
		}
	})
}
