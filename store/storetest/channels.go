package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// ChannelBackend is a backend with channel and access state.
type ChannelBackend interface {
	store.Backend
	store.ChannelStore
}

// RunChannels runs the channel conformance suite (store.ChannelStore and
// channel-scoped reads) against fresh backends from open, one per subtest.
func RunChannels(t *testing.T, open func(t *testing.T) ChannelBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b ChannelBackend)
	}{
		{"CreateAndLookup", testChannelCreate},
		{"SameUUIDInTwoCommunities", testChannelSameUUID},
		{"ForeignChannelNeverReadable", testChannelForeign},
		{"ScopeWithLimits", testChannelScope},
		{"LargeScope", testChannelLargeScope},
		{"MalformedH", testChannelMalformedH},
		{"JoinLeave", testChannelJoinLeave},
		{"PutRemoveRoles", testChannelRoles},
		{"EditMetadata", testChannelEdit},
		{"DeleteEvent", testChannelDeleteEvent},
		{"DeleteChannel", testChannelDelete},
		{"ConcurrentCommands", testChannelConcurrent},
		{"CommunityAccess", testCommunityAccess},
		{"NIP29GroupIDs", testChannelGroupIDs},
		{"NIP29Flags", testChannelFlags},
		{"NIP29Invites", testChannelInvites},
		{"NIP29CustomRoles", testChannelCustomRoles},
		{"AuthorityAppliedOnce", testAuthorityOnce},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// NewChannelID returns a random (version 4) channel id.
func NewChannelID() channel.ID {
	var id channel.ID
	_, _ = rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

var cmdSeq atomic.Int64

// Command signs a command event for cmd (its Actor is set from a) and
// returns both; extra tags are added to the ones derived from cmd.
func (a Author) Command(tb testing.TB, cmd channel.Command, extra ...nostr.Tag) (channel.Command, *nostr.Event) {
	tb.Helper()
	cmd.Actor = a.PubKey
	tags := []nostr.Tag{{"h", cmd.Channel.String()}}
	if cmd.Name != nil {
		tags = append(tags, nostr.Tag{"name", *cmd.Name})
	}
	if cmd.Visibility != "" {
		tags = append(tags, nostr.Tag{"visibility", string(cmd.Visibility)})
	}
	if cmd.Target != "" {
		t := nostr.Tag{"p", cmd.Target}
		if cmd.Role != "" {
			t = append(t, string(cmd.Role))
		}
		tags = append(tags, t)
	}
	if cmd.EventID != "" {
		tags = append(tags, nostr.Tag{"e", cmd.EventID})
	}
	tags = append(tags, extra...)
	// Distinct created_at per call so two identical commands are two events.
	return cmd, a.Event(tb, cmd.Kind, base+cmdSeq.Add(1), "", tags...)
}

// Apply runs a command and returns its change and error.
func Apply(tb testing.TB, b store.ChannelStore, c tenant.CommunityID, a Author, cmd channel.Command, extra ...nostr.Tag) (channel.Change, error) {
	tb.Helper()
	cmd, ev := a.Command(tb, cmd, extra...)
	return b.ApplyChannelCommand(context.Background(), c, cmd, ev)
}

// MustApply runs a command and fails the test unless it succeeds.
func MustApply(tb testing.TB, b store.ChannelStore, c tenant.CommunityID, a Author, cmd channel.Command) channel.Change {
	tb.Helper()
	ch, err := Apply(tb, b, c, a, cmd)
	if err != nil {
		tb.Fatalf("command %d on %s by %.8s: %v", cmd.Kind, cmd.Channel, a.PubKey, err)
	}
	return ch
}

// CreateChannel creates a channel owned by a and returns its id.
func CreateChannel(tb testing.TB, b store.ChannelStore, c tenant.CommunityID, a Author, name string, vis channel.Visibility) channel.ID {
	tb.Helper()
	id := NewChannelID()
	MustApply(tb, b, c, a, channel.Command{Kind: nostr.KindCreateChannel, Channel: id, Name: &name, Visibility: vis})
	return id
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func scoped(t *testing.T, b ChannelBackend, c tenant.CommunityID, f nostr.Filter, sc channel.Scope) []string {
	t.Helper()
	var ids []string
	for rec, err := range b.QueryScoped(ctxb(), c, f, sc) {
		if err != nil {
			t.Fatalf("QueryScoped: %v", err)
		}
		if rec.Community != c {
			t.Fatalf("QueryScoped: row labelled %v, want %v", rec.Community, c)
		}
		ids = append(ids, rec.ID)
	}
	return ids
}

func hTag(id channel.ID) nostr.Tag { return nostr.Tag{"h", id.String()} }

func testChannelCreate(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner, other := NewAuthor(t), NewAuthor(t)
	id := NewChannelID()
	name, about := "general", "talk"
	cmd, ev := owner.Command(t, channel.Command{Kind: nostr.KindCreateChannel, Channel: id, Name: &name, About: &about,
		Visibility: channel.VisibilityPrivate, Type: channel.TypeForum})
	ch, err := b.ApplyChannelCommand(ctxb(), c, cmd, ev)
	if err != nil {
		t.Fatal(err)
	}
	want := channel.Channel{ID: id, Name: name, About: about, Visibility: channel.VisibilityPrivate, Type: channel.TypeForum,
		CreatedBy: owner.PubKey, CreatedAt: ev.CreatedAt, Closed: true, Restricted: true, Hidden: true}
	if ch.Channel != want || !ch.Metadata || !ch.Members {
		t.Fatalf("change = %+v, want channel %+v", ch, want)
	}
	got, err := b.Channel(ctxb(), c, id)
	if err != nil || got != want {
		t.Fatalf("Channel = %+v, %v; want %+v", got, err, want)
	}
	if role, ok, err := b.ChannelRole(ctxb(), c, id, owner.PubKey); err != nil || !ok || role != channel.RoleOwner {
		t.Fatalf("creator role = %q %v %v", role, ok, err)
	}
	// The command event is stored in its channel.
	wantIDs(t, "command event", scoped(t, b, c, nostr.Filter{IDs: []string{ev.ID}}, channel.ScopeOf(id)), ev.ID)
	wantIDs(t, "command event, out of scope", scoped(t, b, c, nostr.Filter{IDs: []string{ev.ID}}, channel.Scope{}))
	// A repeat is a duplicate; another create of the id is refused.
	_, err = b.ApplyChannelCommand(ctxb(), c, cmd, ev)
	wantErr(t, "repeat", err, store.ErrDuplicate)
	_, err = Apply(t, b, c, other, channel.Command{Kind: nostr.KindCreateChannel, Channel: id, Name: &name})
	wantErr(t, "second create", err, channel.ErrChannelExists)
	if role, _, _ := b.ChannelRole(ctxb(), c, id, other.PubKey); role != "" {
		t.Fatalf("refused creator got role %q", role)
	}
	// Defaults: open stream.
	id2 := CreateChannel(t, b, c, owner, "x", "")
	if ch, _ := b.Channel(ctxb(), c, id2); ch.Visibility != channel.VisibilityOpen || ch.Type != channel.TypeStream {
		t.Fatalf("defaults = %+v", ch)
	}
	// Unknown channel.
	_, err = b.Channel(ctxb(), c, NewChannelID())
	wantErr(t, "unknown channel", err, channel.ErrNoChannel)
	// Malformed commands change nothing.
	empty := ""
	_, err = Apply(t, b, c, owner, channel.Command{Kind: nostr.KindCreateChannel, Channel: NewChannelID(), Name: &empty})
	wantErr(t, "create without name", err, channel.ErrInvalidCommand)
	_, err = Apply(t, b, c, owner, channel.Command{Kind: nostr.KindCreateChannel, Channel: NewChannelID(), Name: &name, Visibility: "secret"})
	wantErr(t, "bad visibility", err, channel.ErrInvalidCommand)
	// The event's h must be the command's channel.
	cmd, ev = owner.Command(t, channel.Command{Kind: nostr.KindCreateChannel, Channel: NewChannelID(), Name: &name})
	cmd.Channel = NewChannelID()
	_, err = b.ApplyChannelCommand(ctxb(), c, cmd, ev)
	wantErr(t, "h mismatch", err, channel.ErrInvalidCommand)
}

func testChannelSameUUID(t *testing.T, b ChannelBackend) {
	ca, cb := Community(t, b, "a.example"), Community(t, b, "b.example")
	alice, bob := NewAuthor(t), NewAuthor(t)
	id := NewChannelID()
	na, nb := "alpha", "beta"
	MustApply(t, b, ca, alice, channel.Command{Kind: nostr.KindCreateChannel, Channel: id, Name: &na, Visibility: channel.VisibilityPrivate})
	MustApply(t, b, cb, bob, channel.Command{Kind: nostr.KindCreateChannel, Channel: id, Name: &nb, Visibility: channel.VisibilityOpen})
	gotA, errA := b.Channel(ctxb(), ca, id)
	gotB, errB := b.Channel(ctxb(), cb, id)
	if errA != nil || errB != nil || gotA.Name != na || gotB.Name != nb || gotA.CreatedBy != alice.PubKey || gotB.Visibility != channel.VisibilityOpen {
		t.Fatalf("A = %+v %v, B = %+v %v", gotA, errA, gotB, errB)
	}
	if _, ok, _ := b.ChannelRole(ctxb(), cb, id, alice.PubKey); ok {
		t.Fatal("alice is a member in B")
	}
	ma, _ := b.ChannelMembers(ctxb(), ca, id)
	if len(ma) != 1 || ma[0].PubKey != alice.PubKey {
		t.Fatalf("members in A = %+v", ma)
	}
	msgA := alice.Event(t, nostr.KindChatMessage, base+1, "in A", hTag(id))
	msgB := bob.Event(t, nostr.KindChatMessage, base+1, "in B", hTag(id))
	MustSave(t, b, ca, msgA)
	MustSave(t, b, cb, msgB)
	f := nostr.Filter{Kinds: []int{nostr.KindChatMessage}}
	wantIDs(t, "A's channel", scoped(t, b, ca, f, channel.ScopeOf(id)), msgA.ID)
	wantIDs(t, "B's channel", scoped(t, b, cb, f, channel.ScopeOf(id)), msgB.ID)
	// Deleting A's channel leaves B's.
	MustApply(t, b, ca, alice, channel.Command{Kind: nostr.KindDeleteChannel, Channel: id})
	if _, err := b.Channel(ctxb(), cb, id); err != nil {
		t.Fatalf("B's channel after A deleted its own: %v", err)
	}
	// B's member may join B's channel; A's deletion does not block it.
	MustApply(t, b, cb, alice, channel.Command{Kind: nostr.KindJoinRequest, Channel: id})
}

func testChannelForeign(t *testing.T, b ChannelBackend) {
	ca, cb := Community(t, b, "a.example"), Community(t, b, "b.example")
	alice, mallory := NewAuthor(t), NewAuthor(t)
	id := CreateChannel(t, b, ca, alice, "secret", channel.VisibilityPrivate)
	open := CreateChannel(t, b, ca, alice, "lobby", channel.VisibilityOpen)
	msg := alice.Event(t, nostr.KindChatMessage, base+5, "hi", hTag(id))
	MustSave(t, b, ca, msg)
	for _, x := range []channel.ID{id, open} {
		if _, err := b.Channel(ctxb(), cb, x); !errors.Is(err, channel.ErrNoChannel) {
			t.Fatalf("Channel in B = %v", err)
		}
		if _, ok, _ := b.ChannelRole(ctxb(), cb, x, alice.PubKey); ok {
			t.Fatal("role found in B")
		}
		if m, _ := b.ChannelMembers(ctxb(), cb, x); len(m) != 0 {
			t.Fatalf("members in B = %v", m)
		}
		_, err := Apply(t, b, cb, mallory, channel.Command{Kind: nostr.KindJoinRequest, Channel: x})
		wantErr(t, "join foreign", err, channel.ErrNoChannel)
	}
	if ids, _ := b.ReadableChannels(ctxb(), cb, []string{alice.PubKey, mallory.PubKey}); len(ids) != 0 {
		t.Fatalf("readable in B = %v", ids)
	}
	for _, sc := range []channel.Scope{channel.AllChannels(), channel.ScopeOf(id), {}} {
		if got := scoped(t, b, cb, nostr.Filter{IDs: []string{msg.ID}}, sc); len(got) != 0 {
			t.Fatalf("foreign event read in B: %v", got)
		}
		if got := scoped(t, b, cb, nostr.Filter{Tags: map[string][]string{"h": {id.String()}}}, sc); len(got) != 0 {
			t.Fatalf("foreign #h read in B: %v", got)
		}
		if n, err := b.CountScoped(ctxb(), cb, []nostr.Filter{{IDs: []string{msg.ID}}}, sc); err != nil || n != 0 {
			t.Fatalf("foreign count in B = %d, %v", n, err)
		}
	}
}

func testChannelScope(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a := NewAuthor(t)
	x := CreateChannel(t, b, c, a, "x", channel.VisibilityOpen)
	y := CreateChannel(t, b, c, a, "y", channel.VisibilityPrivate)
	// Newest first: y events are the newest, then x, then global.
	var global, inX, inY []string
	var evs []*nostr.Event
	for i := 0; i < 6; i++ {
		g := a.Event(t, 1, base+100+int64(i), "g")
		ex := a.Event(t, nostr.KindChatMessage, base+200+int64(i), "x", hTag(x))
		ey := a.Event(t, nostr.KindChatMessage, base+300+int64(i), "y", hTag(y))
		evs = append(evs, g, ex, ey)
		global, inX, inY = append(global, g.ID), append(inX, ex.ID), append(inY, ey.ID)
	}
	SaveAll(t, b, c, evs)
	rev := func(s []string) []string { s = slices.Clone(s); slices.Reverse(s); return s }
	f := nostr.Filter{Kinds: []int{1, nostr.KindChatMessage}, Limit: 4, LimitSet: true}
	wantIDs(t, "zero scope, limit 4", scoped(t, b, c, f, channel.Scope{}), rev(global)[:4]...)
	wantIDs(t, "scope x, limit 4", scoped(t, b, c, f, channel.ScopeOf(x)), rev(inX)[:4]...)
	wantIDs(t, "scope all, limit 4", scoped(t, b, c, f, channel.AllChannels()), rev(inY)[:4]...)
	f.Limit = 9
	wantIDs(t, "scope x, limit 9", scoped(t, b, c, f, channel.ScopeOf(x)), append(rev(inX), rev(global)[:3]...)...)
	// Tag-driven and author-driven shapes honour the scope too.
	// Chat messages only: the channels' commands carry the h tag too, and
	// their times (base+cmdSeq) grow past the messages' when many channels
	// were created before in the process (go test -count=30 did).
	fh := nostr.Filter{Kinds: []int{nostr.KindChatMessage}, Tags: map[string][]string{"h": {x.String(), y.String()}}, Limit: 3, LimitSet: true}
	wantIDs(t, "#h both, scope x", scoped(t, b, c, fh, channel.ScopeOf(x)), rev(inX)[:3]...)
	fa := nostr.Filter{Authors: []string{a.PubKey, NewAuthor(t).PubKey}, Kinds: []int{nostr.KindChatMessage}, Limit: 2, LimitSet: true}
	wantIDs(t, "authors, zero scope", scoped(t, b, c, fa, channel.Scope{}))
	wantIDs(t, "authors, scope y", scoped(t, b, c, fa, channel.ScopeOf(y)), rev(inY)[:2]...)
	// The plain Query sees everything (trusted callers).
	if got := CollectIDs(t, b, c, nostr.Filter{Kinds: []int{1, nostr.KindChatMessage}}); len(got) != 18 {
		t.Fatalf("Query = %d events, want 18", len(got))
	}
	for _, tc := range []struct {
		sc   channel.Scope
		want int64
	}{{channel.Scope{}, 6}, {channel.ScopeOf(x), 12}, {channel.ScopeOf(x, y), 18}, {channel.AllChannels(), 18}} {
		n, err := b.CountScoped(ctxb(), c, []nostr.Filter{{Kinds: []int{1}}, {Kinds: []int{nostr.KindChatMessage}}}, tc.sc)
		if err != nil || n != tc.want {
			t.Fatalf("CountScoped(%v) = %d, %v; want %d", tc.sc.Channels(), n, err, tc.want)
		}
		// Shapes a store may count from an index alone when nothing can
		// be hidden honour the scope too: they count what the query reads.
		for name, f := range map[string]nostr.Filter{
			"author": {Authors: []string{a.PubKey}},
			"#h x":   {Tags: map[string][]string{"h": {x.String()}}},
		} {
			want := len(scoped(t, b, c, f, tc.sc))
			n, err := b.CountScoped(ctxb(), c, []nostr.Filter{f}, tc.sc)
			if err != nil || n != int64(want) {
				t.Fatalf("CountScoped(%s, %v) = %d, %v; want %d", name, tc.sc.Channels(), n, err, want)
			}
		}
	}
	// Readable sets.
	outsider, member := NewAuthor(t), NewAuthor(t)
	MustApply(t, b, c, a, channel.Command{Kind: nostr.KindPutUser, Channel: y, Target: member.PubKey})
	for _, tc := range []struct {
		who  []string
		want []channel.ID
	}{{nil, []channel.ID{x}}, {[]string{outsider.PubKey}, []channel.ID{x}},
		{[]string{outsider.PubKey, member.PubKey}, []channel.ID{x, y}}, {[]string{a.PubKey}, []channel.ID{x, y}}} {
		got, err := b.ReadableChannels(ctxb(), c, tc.who)
		if err != nil {
			t.Fatal(err)
		}
		if !sameChannels(got, tc.want) {
			t.Fatalf("ReadableChannels(%d keys) = %v, want %v", len(tc.who), got, tc.want)
		}
	}
}

func sameChannels(a, b []channel.ID) bool {
	return slices.Equal(channel.ScopeOf(a...).Channels(), channel.ScopeOf(b...).Channels())
}

// CollectIDs returns the ids Query returns for f.
func CollectIDs(tb testing.TB, s store.EventStore, c tenant.CommunityID, f nostr.Filter) []string {
	tb.Helper()
	var ids []string
	for _, r := range Collect(tb, s.Query(context.Background(), c, f)) {
		ids = append(ids, r.ID)
	}
	return ids
}

func testChannelLargeScope(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a := NewAuthor(t)
	target := NewChannelID()
	ev := a.Event(t, nostr.KindChatMessage, base, "deep", hTag(target))
	MustSave(t, b, c, ev)
	ids := []channel.ID{target}
	for i := 0; i < 600; i++ {
		ids = append(ids, NewChannelID())
	}
	wantIDs(t, "large scope", scoped(t, b, c, nostr.Filter{}, channel.ScopeOf(ids...)), ev.ID)
	wantIDs(t, "large scope without it", scoped(t, b, c, nostr.Filter{}, channel.ScopeOf(ids[1:]...)))
	n, err := b.CountScoped(ctxb(), c, []nostr.Filter{{}}, channel.ScopeOf(ids...))
	if err != nil || n != 1 {
		t.Fatalf("count = %d, %v", n, err)
	}
}

func testChannelMalformedH(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a := NewAuthor(t)
	id := NewChannelID()
	for i, tags := range [][]nostr.Tag{
		{{"h", "General"}},
		{{"h", "a b"}},
		{{"h", "00000000-0000-0000-0000-000000000000"}},
		{{"h", "ABCDEF00-0000-4000-8000-000000000000"}},
		{{"h"}},
		{hTag(id), hTag(NewChannelID())},
	} {
		ev := a.Event(t, nostr.KindChatMessage, base+int64(i), "x", tags...)
		if err := b.Save(ctxb(), c, ev); !errors.Is(err, channel.ErrInvalidTag) {
			t.Fatalf("tags %v: Save = %v, want ErrInvalidChannelTag", tags, err)
		}
	}
	ev := a.Event(t, nostr.KindChatMessage, base+10, "x", hTag(id), hTag(id))
	MustSave(t, b, c, ev)
	wantIDs(t, "repeated equal h", scoped(t, b, c, nostr.Filter{}, channel.ScopeOf(id)), ev.ID)
}

func testChannelJoinLeave(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner, u := NewAuthor(t), NewAuthor(t)
	open := CreateChannel(t, b, c, owner, "open", channel.VisibilityOpen)
	priv := CreateChannel(t, b, c, owner, "private", channel.VisibilityPrivate)
	ch := MustApply(t, b, c, u, channel.Command{Kind: nostr.KindJoinRequest, Channel: open})
	if !ch.Members {
		t.Fatalf("join change = %+v", ch)
	}
	if r, ok, _ := b.ChannelRole(ctxb(), c, open, u.PubKey); !ok || r != channel.RoleMember {
		t.Fatalf("role after join = %q", r)
	}
	_, err := Apply(t, b, c, u, channel.Command{Kind: nostr.KindJoinRequest, Channel: open})
	wantErr(t, "repeated join", err, channel.ErrAlreadyMember)
	_, err = Apply(t, b, c, u, channel.Command{Kind: nostr.KindJoinRequest, Channel: priv})
	wantErr(t, "join private", err, channel.ErrNotPermitted)
	_, err = Apply(t, b, c, u, channel.Command{Kind: nostr.KindLeaveRequest, Channel: priv})
	wantErr(t, "leave as non-member", err, channel.ErrNotMember)
	ch = MustApply(t, b, c, u, channel.Command{Kind: nostr.KindLeaveRequest, Channel: open})
	if !slices.Equal(ch.Revoked, []string{u.PubKey}) {
		t.Fatalf("leave revoked %v", ch.Revoked)
	}
	if _, ok, _ := b.ChannelRole(ctxb(), c, open, u.PubKey); ok {
		t.Fatal("still a member after leaving")
	}
	_, err = Apply(t, b, c, owner, channel.Command{Kind: nostr.KindLeaveRequest, Channel: open})
	wantErr(t, "last owner leaves", err, channel.ErrNotPermitted)
	_, err = Apply(t, b, c, u, channel.Command{Kind: nostr.KindJoinRequest, Channel: NewChannelID()})
	wantErr(t, "join unknown", err, channel.ErrNoChannel)
}

func testChannelRoles(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner, admin, member, guest, x, y := NewAuthor(t), NewAuthor(t), NewAuthor(t), NewAuthor(t), NewAuthor(t), NewAuthor(t)
	id := CreateChannel(t, b, c, owner, "team", channel.VisibilityPrivate)
	put := func(by Author, who Author, role channel.Role) error {
		_, err := Apply(t, b, c, by, channel.Command{Kind: nostr.KindPutUser, Channel: id, Target: who.PubKey, Role: role})
		return err
	}
	remove := func(by Author, who Author) (channel.Change, error) {
		return Apply(t, b, c, by, channel.Command{Kind: nostr.KindRemoveUser, Channel: id, Target: who.PubKey})
	}
	for _, step := range []struct {
		what string
		err  error
		want error
	}{
		{"member cannot put", put(member, x, ""), channel.ErrNotPermitted},
		{"owner puts admin", put(owner, admin, channel.RoleAdmin), nil},
		{"admin puts member", put(admin, member, ""), nil},
		{"admin puts guest", put(admin, guest, channel.RoleGuest), nil},
		{"admin cannot grant admin", put(admin, x, channel.RoleAdmin), channel.ErrNotPermitted},
		{"admin cannot grant owner", put(admin, x, channel.RoleOwner), channel.ErrNotPermitted},
		{"admin cannot change a role", put(admin, member, channel.RoleBot), channel.ErrNotPermitted},
		{"member cannot put", put(member, x, channel.RoleMember), channel.ErrNotPermitted},
		{"guest cannot put", put(guest, x, channel.RoleMember), channel.ErrNotPermitted},
		{"owner changes a role", put(owner, member, channel.RoleBot), nil},
		{"owner cannot demote the last owner", put(owner, owner, channel.RoleMember), channel.ErrNotPermitted},
		{"owner adds a co-owner", put(owner, y, channel.RoleOwner), nil},
		{"owner demotes a co-owner", put(owner, y, channel.RoleMember), nil},
	} {
		if !errors.Is(step.err, step.want) && !(step.err == nil && step.want == nil) {
			t.Fatalf("%s: err = %v, want %v", step.what, step.err, step.want)
		}
	}
	members, err := b.ChannelMembers(ctxb(), c, id)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]channel.Role{}
	for _, m := range members {
		roles[m.PubKey] = m.Role
	}
	want := map[string]channel.Role{owner.PubKey: channel.RoleOwner, admin.PubKey: channel.RoleAdmin, member.PubKey: channel.RoleBot,
		guest.PubKey: channel.RoleGuest, y.PubKey: channel.RoleMember}
	if fmt.Sprint(roles) != fmt.Sprint(want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	if !slices.IsSortedFunc(members, func(a, b channel.Member) int {
		if a.PubKey < b.PubKey {
			return -1
		}
		return 1
	}) {
		t.Fatal("members not sorted by pubkey")
	}
	if _, err := remove(admin, owner); !errors.Is(err, channel.ErrNotPermitted) {
		t.Fatalf("admin removes owner: %v", err)
	}
	if _, err := remove(member, guest); !errors.Is(err, channel.ErrNotPermitted) {
		t.Fatalf("bot removes guest: %v", err)
	}
	if _, err := remove(admin, x); !errors.Is(err, channel.ErrNotMember) {
		t.Fatalf("remove non-member: %v", err)
	}
	if _, err := remove(owner, owner); !errors.Is(err, channel.ErrNotPermitted) {
		t.Fatalf("last owner removes self: %v", err)
	}
	ch, err := remove(admin, guest)
	if err != nil || !slices.Equal(ch.Revoked, []string{guest.PubKey}) || !ch.Members {
		t.Fatalf("admin removes guest: %+v, %v", ch, err)
	}
	if _, err := remove(admin, admin); err != nil {
		t.Fatalf("admin removes self: %v", err)
	}
	if _, err := remove(owner, y); err != nil {
		t.Fatalf("owner removes member: %v", err)
	}
	if _, ok, _ := b.ChannelRole(ctxb(), c, id, guest.PubKey); ok {
		t.Fatal("removed guest still a member")
	}
}

func testChannelEdit(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner, admin, member := NewAuthor(t), NewAuthor(t), NewAuthor(t)
	id := CreateChannel(t, b, c, owner, "old", channel.VisibilityOpen)
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindPutUser, Channel: id, Target: admin.PubKey, Role: channel.RoleAdmin})
	MustApply(t, b, c, member, channel.Command{Kind: nostr.KindJoinRequest, Channel: id})
	name, pic := "new", "https://img.example/x.png"
	_, err := Apply(t, b, c, member, channel.Command{Kind: nostr.KindEditMetadata, Channel: id, Name: &name})
	wantErr(t, "member edits", err, channel.ErrNotPermitted)
	ch := MustApply(t, b, c, admin, channel.Command{Kind: nostr.KindEditMetadata, Channel: id, Name: &name, Picture: &pic})
	if !ch.Metadata || ch.BecamePrivate || ch.Channel.Name != name || ch.Channel.Picture != pic || ch.Channel.Visibility != channel.VisibilityOpen {
		t.Fatalf("edit = %+v", ch)
	}
	ch = MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindEditMetadata, Channel: id, Visibility: channel.VisibilityPrivate})
	if !ch.BecamePrivate || ch.Channel.Name != name || ch.Channel.Visibility != channel.VisibilityPrivate {
		t.Fatalf("to private = %+v", ch)
	}
	if ids, _ := b.ReadableChannels(ctxb(), c, []string{NewAuthor(t).PubKey}); len(ids) != 0 {
		t.Fatalf("outsider reads a private channel: %v", ids)
	}
	if ids, _ := b.ReadableChannels(ctxb(), c, []string{member.PubKey}); len(ids) != 1 {
		t.Fatalf("member lost access: %v", ids)
	}
	ch = MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindEditMetadata, Channel: id, Visibility: channel.VisibilityPrivate})
	if ch.BecamePrivate {
		t.Fatal("private → private reported as becoming private")
	}
}

func testChannelDeleteEvent(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner, member := NewAuthor(t), NewAuthor(t)
	id := CreateChannel(t, b, c, owner, "x", channel.VisibilityOpen)
	other := CreateChannel(t, b, c, owner, "y", channel.VisibilityOpen)
	MustApply(t, b, c, member, channel.Command{Kind: nostr.KindJoinRequest, Channel: id})
	msg := member.Event(t, nostr.KindChatMessage, base+50, "spam", hTag(id))
	elsewhere := member.Event(t, nostr.KindChatMessage, base+51, "ok", hTag(other))
	global := member.Event(t, 1, base+52, "global")
	MustSave(t, b, c, msg)
	MustSave(t, b, c, elsewhere)
	MustSave(t, b, c, global)
	_, err := Apply(t, b, c, member, channel.Command{Kind: nostr.KindDeleteEvent, Channel: id, EventID: msg.ID})
	wantErr(t, "member deletes", err, channel.ErrNotPermitted)
	for _, target := range []string{elsewhere.ID, global.ID, NewAuthor(t).PubKey} {
		_, err = Apply(t, b, c, owner, channel.Command{Kind: nostr.KindDeleteEvent, Channel: id, EventID: target})
		wantErr(t, "delete outside the channel", err, channel.ErrNoEvent)
	}
	ch := MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindDeleteEvent, Channel: id, EventID: msg.ID})
	if ch.DeletedEvent != msg.ID {
		t.Fatalf("change = %+v", ch)
	}
	wantIDs(t, "deleted event", CollectIDs(t, b, c, nostr.Filter{IDs: []string{msg.ID, elsewhere.ID, global.ID}}), global.ID, elsewhere.ID)
	if err := b.Save(ctxb(), c, msg); !errors.Is(err, store.ErrDeleted) {
		t.Fatalf("re-save of a deleted event = %v", err)
	}
}

func testChannelDelete(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner, admin := NewAuthor(t), NewAuthor(t)
	id := CreateChannel(t, b, c, owner, "doomed", channel.VisibilityOpen)
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindPutUser, Channel: id, Target: admin.PubKey, Role: channel.RoleAdmin})
	_, err := Apply(t, b, c, admin, channel.Command{Kind: nostr.KindDeleteChannel, Channel: id})
	wantErr(t, "admin deletes channel", err, channel.ErrNotPermitted)
	ch := MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindDeleteChannel, Channel: id})
	if !ch.Deleted || !ch.Channel.Deleted {
		t.Fatalf("change = %+v", ch)
	}
	_, err = b.Channel(ctxb(), c, id)
	wantErr(t, "lookup of deleted", err, channel.ErrNoChannel)
	if ids, _ := b.ReadableChannels(ctxb(), c, []string{owner.PubKey}); len(ids) != 0 {
		t.Fatalf("deleted channel readable: %v", ids)
	}
	name := "again"
	_, err = Apply(t, b, c, owner, channel.Command{Kind: nostr.KindCreateChannel, Channel: id, Name: &name})
	wantErr(t, "reuse of a deleted id", err, channel.ErrChannelExists)
	_, err = Apply(t, b, c, admin, channel.Command{Kind: nostr.KindJoinRequest, Channel: id})
	wantErr(t, "join deleted", err, channel.ErrNoChannel)
}

func testChannelConcurrent(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner := NewAuthor(t)
	id := CreateChannel(t, b, c, owner, "busy", channel.VisibilityOpen)
	users := NewAuthors(t, 24)
	var wg sync.WaitGroup
	errs := make([]error, len(users))
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Apply(t, b, c, u, channel.Command{Kind: nostr.KindJoinRequest, Channel: id})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
	}
	if m, _ := b.ChannelMembers(ctxb(), c, id); len(m) != len(users)+1 {
		t.Fatalf("members = %d, want %d", len(m), len(users)+1)
	}
	// Concurrent creates of one id: exactly one wins.
	contested := NewChannelID()
	var wins atomic.Int32
	for i, u := range users[:8] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprint("c", i)
			_, err := Apply(t, b, c, u, channel.Command{Kind: nostr.KindCreateChannel, Channel: contested, Name: &name})
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, channel.ErrChannelExists):
				t.Errorf("create %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d concurrent creates won", wins.Load())
	}
	if m, _ := b.ChannelMembers(ctxb(), c, contested); len(m) != 1 || m[0].Role != channel.RoleOwner {
		t.Fatalf("contested members = %+v", m)
	}
	// Two owners demoting each other at once: one must remain.
	o2 := users[0]
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindPutUser, Channel: id, Target: o2.PubKey, Role: channel.RoleOwner})
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = Apply(t, b, c, owner, channel.Command{Kind: nostr.KindRemoveUser, Channel: id, Target: o2.PubKey})
	}()
	go func() {
		defer wg.Done()
		_, _ = Apply(t, b, c, o2, channel.Command{Kind: nostr.KindRemoveUser, Channel: id, Target: owner.PubKey})
	}()
	wg.Wait()
	owners := 0
	m, _ := b.ChannelMembers(ctxb(), c, id)
	for _, x := range m {
		if x.Role == channel.RoleOwner {
			owners++
		}
	}
	if owners != 1 {
		t.Fatalf("owners after mutual removal = %d, want 1", owners)
	}
}

func testCommunityAccess(t *testing.T, b ChannelBackend) {
	ca, cb := Community(t, b, "a.example"), Community(t, b, "b.example")
	u, v := NewAuthor(t), NewAuthor(t)
	if p, err := b.CommunityAccess(ctxb(), ca); err != nil || p != channel.AccessOpen {
		t.Fatalf("default policy = %q, %v", p, err)
	}
	if err := b.SetCommunityAccess(ctxb(), ca, channel.AccessMembers); err != nil {
		t.Fatal(err)
	}
	if p, _ := b.CommunityAccess(ctxb(), ca); p != channel.AccessMembers {
		t.Fatalf("policy = %q", p)
	}
	if p, _ := b.CommunityAccess(ctxb(), cb); p != channel.AccessOpen {
		t.Fatalf("B's policy changed to %q", p)
	}
	if err := b.SetCommunityAccess(ctxb(), ca, "closed"); err == nil {
		t.Fatal("unknown policy accepted")
	}
	if _, ok, _ := b.CommunityRole(ctxb(), ca, u.PubKey); ok {
		t.Fatal("stranger is a member")
	}
	if err := b.PutCommunityMember(ctxb(), ca, u.PubKey, channel.RoleMember); err != nil {
		t.Fatal(err)
	}
	if err := b.PutCommunityMember(ctxb(), ca, v.PubKey, channel.RoleOwner); err == nil {
		t.Fatal("owner role accepted for a community member")
	}
	if r, ok, _ := b.CommunityRole(ctxb(), ca, u.PubKey); !ok || r != channel.RoleMember {
		t.Fatalf("role = %q %v", r, ok)
	}
	if _, ok, _ := b.CommunityRole(ctxb(), cb, u.PubKey); ok {
		t.Fatal("membership leaked into B")
	}
	if err := b.PutCommunityMember(ctxb(), ca, u.PubKey, channel.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := b.CommunityRole(ctxb(), ca, u.PubKey); r != channel.RoleAdmin {
		t.Fatalf("role after change = %q", r)
	}
	if err := b.RemoveCommunityMember(ctxb(), ca, u.PubKey); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.CommunityRole(ctxb(), ca, u.PubKey); ok {
		t.Fatal("removed member still a member")
	}
}

// testChannelGroupIDs: a channel may be named by any NIP-29 group id; the
// row records it (GroupID), a name needs no "name" tag, and the same id in
// two communities is two channels.
func testChannelGroupIDs(t *testing.T, b ChannelBackend) {
	c1, c2 := Community(t, b, "a.example"), Community(t, b, "b.example")
	owner := NewAuthor(t)
	id, ok := channel.ParseID("pizza-lovers")
	if !ok {
		t.Fatal("pizza-lovers is a group id")
	}
	for _, c := range []tenant.CommunityID{c1, c2} {
		cmd, ev := owner.Command(t, channel.Command{Kind: nostr.KindCreateChannel, Channel: id, GroupID: "pizza-lovers"})
		cmd.Name = nil
		if _, err := b.ApplyChannelCommand(ctxb(), c, cmd, ev); err != nil {
			t.Fatal(err)
		}
		ch, err := b.Channel(ctxb(), c, id)
		if err != nil || ch.GroupID() != "pizza-lovers" || ch.Slug != "pizza-lovers" || ch.Name != "" {
			t.Fatalf("Channel = %+v, %v", ch, err)
		}
	}
	cmd, ev := owner.Command(t, channel.Command{Kind: nostr.KindCreateChannel, Channel: id, GroupID: "pizza-lovers"})
	_, err := b.ApplyChannelCommand(ctxb(), c1, cmd, ev)
	wantErr(t, "second create", err, channel.ErrChannelExists)
	// A command whose GroupID does not name its channel is malformed.
	cmd, ev = owner.Command(t, channel.Command{Kind: nostr.KindCreateChannel, Channel: NewChannelID(), GroupID: "other"})
	_, err = b.ApplyChannelCommand(ctxb(), c1, cmd, ev)
	wantErr(t, "mismatched group id", err, channel.ErrInvalidCommand)
	// UUID ids keep no slug.
	u := NewChannelID()
	MustApply(t, b, c1, owner, channel.Command{Kind: nostr.KindCreateChannel, Channel: u, GroupID: u.String()})
	if ch, _ := b.Channel(ctxb(), c1, u); ch.Slug != "" || ch.GroupID() != u.String() {
		t.Fatalf("UUID channel = %+v", ch)
	}
}

// testChannelFlags: the NIP-29 flags are stored, read back and honoured
// (closed refuses joins), 9002 changes only the flags it names, and a
// hidden group that is not private is refused without any change.
func testChannelFlags(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner, u := NewAuthor(t), NewAuthor(t)
	yes, no := true, false
	id := NewChannelID()
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindCreateChannel, Channel: id, Private: &yes, Closed: &yes})
	ch, err := b.Channel(ctxb(), c, id)
	if err != nil || ch.Visibility != channel.VisibilityPrivate || !ch.Closed || ch.Restricted || ch.Hidden {
		t.Fatalf("created = %+v, %v", ch, err)
	}
	_, err = Apply(t, b, c, u, channel.Command{Kind: nostr.KindJoinRequest, Channel: id})
	wantErr(t, "join closed", err, channel.ErrNotPermitted)
	change := MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindEditMetadata, Channel: id, Closed: &no, Restricted: &yes})
	if !change.Metadata || change.Channel.Closed || !change.Channel.Restricted || change.Channel.Visibility != channel.VisibilityPrivate {
		t.Fatalf("edit = %+v", change)
	}
	MustApply(t, b, c, u, channel.Command{Kind: nostr.KindJoinRequest, Channel: id})
	_, err = Apply(t, b, c, owner, channel.Command{Kind: nostr.KindEditMetadata, Channel: id, Private: &no, Hidden: &yes})
	wantErr(t, "hidden but public", err, channel.ErrUnsupportedFlags)
	if got, _ := b.Channel(ctxb(), c, id); got != change.Channel {
		t.Fatalf("refused edit changed %+v into %+v", change.Channel, got)
	}
	// An edit older than the newest metadata event changes nothing.
	name := "old"
	cmd, ev := owner.Command(t, channel.Command{Kind: nostr.KindEditMetadata, Channel: id, Name: &name})
	ev = owner.Event(t, nostr.KindEditMetadata, base, "", ev.Tags...)
	_, err = b.ApplyChannelCommand(ctxb(), c, cmd, ev)
	wantErr(t, "stale edit", err, channel.ErrStaleEdit)
	if got, _ := b.Channel(ctxb(), c, id); got.Name != "" {
		t.Fatalf("stale edit applied: %+v", got)
	}
	// Buzz's visibility: private = all four, open = none.
	change = MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindEditMetadata, Channel: id, Visibility: channel.VisibilityOpen})
	if ch := change.Channel; ch.Visibility != channel.VisibilityOpen || ch.Closed || ch.Restricted || ch.Hidden {
		t.Fatalf("visibility open = %+v", ch)
	}
	change = MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindEditMetadata, Channel: id, Visibility: channel.VisibilityPrivate})
	if ch := change.Channel; ch.Visibility != channel.VisibilityPrivate || !ch.Closed || !ch.Restricted || !ch.Hidden || !change.BecamePrivate {
		t.Fatalf("visibility private = %+v", change)
	}
}

// testChannelInvites: a 9009 is stored in its (private) channel; a join the
// caller found invited enters a closed channel, any number of times.
func testChannelInvites(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner, member, u, v := NewAuthor(t), NewAuthor(t), NewAuthor(t), NewAuthor(t)
	id := CreateChannel(t, b, c, owner, "club", channel.VisibilityPrivate)
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindPutUser, Channel: id, Target: member.PubKey})
	_, err := Apply(t, b, c, member, channel.Command{Kind: nostr.KindCreateInvite, Channel: id, Code: "sesame"}, nostr.Tag{"code", "sesame"})
	wantErr(t, "member invite", err, channel.ErrNotPermitted)
	cmd, ev := owner.Command(t, channel.Command{Kind: nostr.KindCreateInvite, Channel: id, Code: "sesame"}, nostr.Tag{"code", "sesame"})
	if _, err := b.ApplyChannelCommand(ctxb(), c, cmd, ev); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "invite stored in the channel", scoped(t, b, c, nostr.Filter{Kinds: []int{nostr.KindCreateInvite}}, channel.ScopeOf(id)), ev.ID)
	_, err = Apply(t, b, c, u, channel.Command{Kind: nostr.KindJoinRequest, Channel: id, Code: "guess"})
	wantErr(t, "uninvited join", err, channel.ErrNotPermitted)
	for _, a := range []Author{u, v} {
		MustApply(t, b, c, a, channel.Command{Kind: nostr.KindJoinRequest, Channel: id, Code: "sesame", Invited: true})
		if r, ok, _ := b.ChannelRole(ctxb(), c, id, a.PubKey); !ok || r != channel.RoleMember {
			t.Fatalf("invited join: role %q", r)
		}
	}
	open := CreateChannel(t, b, c, owner, "open", channel.VisibilityOpen)
	_, err = Apply(t, b, c, owner, channel.Command{Kind: nostr.KindCreateInvite, Channel: open, Code: "x"}, nostr.Tag{"code", "x"})
	wantErr(t, "public invite", err, channel.ErrPublicInvite)
}

// testChannelCustomRoles: a role Buzz does not know is stored as given and
// grants what member grants; an admin may give it, never owner or admin.
func testChannelCustomRoles(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	owner, admin, u, v := NewAuthor(t), NewAuthor(t), NewAuthor(t), NewAuthor(t)
	id := CreateChannel(t, b, c, owner, "team", channel.VisibilityPrivate)
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindPutUser, Channel: id, Target: admin.PubKey, Role: channel.RoleAdmin})
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindPutUser, Channel: id, Target: u.PubKey, Role: "moderator"})
	MustApply(t, b, c, admin, channel.Command{Kind: nostr.KindPutUser, Channel: id, Target: v.PubKey, Role: "pizza maker"})
	for pk, want := range map[string]channel.Role{u.PubKey: "moderator", v.PubKey: "pizza maker"} {
		if r, ok, err := b.ChannelRole(ctxb(), c, id, pk); err != nil || !ok || r != want {
			t.Fatalf("role = %q %v %v, want %q", r, ok, err, want)
		}
	}
	ms, err := b.ChannelMembers(ctxb(), c, id)
	if err != nil || len(ms) != 4 {
		t.Fatalf("members %v, %v", ms, err)
	}
	// A custom role has no moderation power.
	_, err = Apply(t, b, c, u, channel.Command{Kind: nostr.KindRemoveUser, Channel: id, Target: v.PubKey})
	wantErr(t, "custom role removes", err, channel.ErrNotPermitted)
}

// testAuthorityOnce: an authority mark (store.Authority) is recorded by the
// first write that commits with it; a second write with the same mark
// writes nothing and returns ErrDuplicate, in the same community only; a
// write that refuses records nothing; DeleteExpired forgets marks past
// their until.
func testAuthorityOnce(t *testing.T, b ChannelBackend) {
	ca, cb := Community(t, b, "a.example"), Community(t, b, "b.example")
	owner, u, v := NewAuthor(t), NewAuthor(t), NewAuthor(t)
	now := time.Now()
	mark := func(c tenant.CommunityID, id string, until time.Time) context.Context {
		return store.WithAuthority(ctxb(), store.Authority{Community: c, Event: id, Until: until})
	}
	id := strings.Repeat("ab", 32)

	// First write records the mark; a later write with the same context
	// (the same application) passes.
	ctx := mark(ca, id, now.Add(time.Hour))
	if err := b.PutCommunityMember(ctx, ca, u.PubKey, channel.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if err := b.PutCommunityMember(ctx, ca, v.PubKey, channel.RoleMember); err != nil {
		t.Fatalf("second write of the same application: %v", err)
	}
	if err := b.RemoveCommunityMember(ctxb(), ca, u.PubKey); err != nil {
		t.Fatal(err)
	}
	// A replay (a new context with the same mark) changes nothing.
	if err := b.PutCommunityMember(mark(ca, id, now.Add(time.Hour)), ca, u.PubKey, channel.RoleAdmin); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("replayed mark: err = %v, want ErrDuplicate", err)
	}
	if _, ok, _ := b.CommunityRole(ctxb(), ca, u.PubKey); ok {
		t.Fatal("a replayed mark changed membership")
	}
	// A no-op write records its mark too.
	noop := strings.Repeat("cd", 32)
	if err := b.RemoveCommunityMember(mark(ca, noop, now.Add(time.Hour)), ca, u.PubKey); err != nil {
		t.Fatal(err)
	}
	if err := b.PutCommunityMember(mark(ca, noop, now.Add(time.Hour)), ca, u.PubKey, channel.RoleAdmin); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("mark of a no-op write: err = %v, want ErrDuplicate", err)
	}
	// Per community: the same event id in B is its own mark.
	if err := b.PutCommunityMember(mark(cb, id, now.Add(time.Hour)), cb, u.PubKey, channel.RoleMember); err != nil {
		t.Fatalf("same mark in another community: %v", err)
	}
	// A channel command carries the mark the same way; one that is refused
	// (a verdict) records nothing.
	chID := CreateChannel(t, b, ca, owner, "general", channel.VisibilityOpen)
	cmd, ev := v.Command(t, channel.Command{Kind: nostr.KindPutUser, Channel: chID, Target: u.PubKey})
	refused := mark(ca, ev.ID, now.Add(time.Hour))
	if _, err := b.ApplyChannelCommand(refused, ca, cmd, ev); err == nil || errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("put-user by a non-admin: err = %v, want a refusal", err)
	}
	cmd, ev = owner.Command(t, channel.Command{Kind: nostr.KindPutUser, Channel: chID, Target: u.PubKey})
	if _, err := b.ApplyChannelCommand(mark(ca, ev.ID, now.Add(time.Hour)), ca, cmd, ev); err != nil {
		t.Fatal(err)
	}
	if err := b.RemoveCommunityMember(mark(ca, ev.ID, now.Add(time.Hour)), ca, v.PubKey); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("mark of an applied channel command: err = %v, want ErrDuplicate", err)
	}
	if _, ok, _ := b.CommunityRole(ctxb(), ca, v.PubKey); !ok {
		t.Fatal("a refused write changed membership")
	}
	// Pruning: a mark past its until is forgotten; one not yet is kept.
	old, kept := strings.Repeat("ef", 32), strings.Repeat("12", 32)
	if err := b.PutCommunityMember(mark(ca, old, now.Add(-time.Minute)), ca, v.PubKey, channel.RoleMember); err != nil {
		t.Fatal(err)
	}
	if err := b.PutCommunityMember(mark(ca, kept, now.Add(time.Hour)), ca, v.PubKey, channel.RoleMember); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeleteExpired(ctxb(), now); err != nil {
		t.Fatal(err)
	}
	if err := b.PutCommunityMember(mark(ca, old, now.Add(time.Hour)), ca, v.PubKey, channel.RoleMember); err != nil {
		t.Fatalf("pruned mark: %v", err)
	}
	if err := b.PutCommunityMember(mark(ca, kept, now.Add(time.Hour)), ca, v.PubKey, channel.RoleMember); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("mark not yet past its until: err = %v, want ErrDuplicate", err)
	}
}
