package channel_test

import (
	"context"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/fakeclock"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

type world struct {
	st     *embedded.Store
	a      *channel.Access
	clk    *fakeclock.Clock
	c, c2  tenant.CommunityID
	owner  storetest.Author
	member storetest.Author
	guest  storetest.Author
	other  storetest.Author
	open   channel.ID // open channel of c
	priv   channel.ID // private channel of c; member is a member, guest a guest
	elsewh channel.ID // private channel of c2, member is a member there
}

func newWorld(t *testing.T) *world {
	t.Helper()
	st, err := embedded.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	w := &world{st: st, clk: fakeclock.New(time.Unix(1_700_000_000, 0)),
		c: storetest.Community(t, st, "a.example"), c2: storetest.Community(t, st, "b.example")}
	w.a, err = channel.NewAccess(st, channel.WithClock(w.clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.a.Close)
	w.owner, w.member, w.guest, w.other = storetest.NewAuthor(t), storetest.NewAuthor(t), storetest.NewAuthor(t), storetest.NewAuthor(t)
	w.open = storetest.CreateChannel(t, st, w.c, w.owner, "open", channel.VisibilityOpen)
	w.priv = storetest.CreateChannel(t, st, w.c, w.owner, "private", channel.VisibilityPrivate)
	storetest.MustApply(t, st, w.c, w.owner, channel.Command{Kind: nostr.KindPutUser, Channel: w.priv, Target: w.member.PubKey})
	storetest.MustApply(t, st, w.c, w.owner, channel.Command{Kind: nostr.KindPutUser, Channel: w.priv, Target: w.guest.PubKey, Role: channel.RoleGuest})
	w.elsewh = storetest.CreateChannel(t, st, w.c2, w.owner, "elsewhere", channel.VisibilityPrivate)
	storetest.MustApply(t, st, w.c2, w.owner, channel.Command{Kind: nostr.KindPutUser, Channel: w.elsewh, Target: w.member.PubKey})
	return w
}

func post(t *testing.T, a storetest.Author, h string) *nostr.Event {
	t.Helper()
	tags := []nostr.Tag{}
	if h != "" {
		tags = append(tags, nostr.Tag{"h", h})
	}
	return a.Event(t, nostr.KindChatMessage, 1_700_000_000, "hi", tags...)
}

func TestAdmit(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	unknown := storetest.NewChannelID()
	for _, tc := range []struct {
		name    string
		ev      *nostr.Event
		refusal string
		in      bool
	}{
		{"community-wide note", w.other.Event(t, nostr.KindNote, 1, "x"), "", false},
		{"chat without h", post(t, w.other, ""), "invalid: kind 9 requires an h tag naming its channel", false},
		{"bad h", post(t, w.other, "Not A Group"), channel.MsgBadChannelTag, false},
		{"open channel, non-member", post(t, w.other, w.open.String()), "", true},
		{"private channel, member", post(t, w.member, w.priv.String()), "", true},
		{"private channel, guest", post(t, w.guest, w.priv.String()), channel.MsgChannelDenied, false},
		{"private channel, non-member", post(t, w.other, w.priv.String()), channel.MsgChannelDenied, false},
		{"unknown channel", post(t, w.member, unknown.String()), channel.MsgChannelDenied, false},
		{"another community's channel", post(t, w.member, w.elsewh.String()), channel.MsgChannelDenied, false},
		{"command in another community's channel", w.member.Event(t, nostr.KindLeaveRequest, 1, "", nostr.Tag{"h", w.elsewh.String()}), channel.MsgChannelDenied, false},
		{"malformed command", w.owner.Event(t, nostr.KindPutUser, 1, "", nostr.Tag{"h", w.open.String()}), channel.MsgBadCommand, false},
		{"create claims an id", w.other.Event(t, nostr.KindCreateChannel, 1, "", nostr.Tag{"h", "fresh-group"}), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, refusal, err := w.a.Admit(ctx, w.c, tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if refusal != tc.refusal || d.InChannel != tc.in {
				t.Fatalf("Admit = %+v, %q; want in=%v, %q", d, refusal, tc.in, tc.refusal)
			}
			if channel.IsCommand(tc.ev.Kind) && refusal == "" && (d.Command == nil || d.Command.Actor != tc.ev.PubKey) {
				t.Fatalf("command not parsed: %+v", d.Command)
			}
		})
	}
}

func TestMembersOnly(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if err := w.st.SetCommunityAccess(ctx, w.c, channel.AccessMembers); err != nil {
		t.Fatal(err)
	}
	if err := w.st.PutCommunityMember(ctx, w.c, w.member.PubKey, channel.RoleMember); err != nil {
		t.Fatal(err)
	}
	authedAs := func(pks ...string) func(string) bool {
		return func(pk string) bool {
			for _, p := range pks {
				if p == pk {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name     string
		author   string
		authed   func(string) bool
		refusal  string
		needAuth bool
	}{
		{"unauthenticated", w.member.PubKey, nil, channel.MsgMembersOnlyAuth, true},
		{"authenticated as someone else", w.member.PubKey, authedAs(w.other.PubKey), channel.MsgNotAuthor, false},
		{"non-member", w.other.PubKey, authedAs(w.other.PubKey), channel.MsgMembersOnly, false},
		{"member", w.member.PubKey, authedAs(w.member.PubKey), "", false},
	} {
		refusal, needAuth, err := w.a.CommunityWrite(ctx, w.c, tc.author, tc.authed)
		if err != nil || refusal != tc.refusal || needAuth != tc.needAuth {
			t.Errorf("%s: CommunityWrite = %q, %v, %v; want %q, %v", tc.name, refusal, needAuth, err, tc.refusal, tc.needAuth)
		}
	}
	for _, tc := range []struct {
		readers  []string
		refusal  string
		needAuth bool
	}{
		{nil, channel.MsgMembersOnlyAuth, true},
		{[]string{w.other.PubKey}, channel.MsgMembersOnly, false},
		{[]string{w.other.PubKey, w.member.PubKey}, "", false},
	} {
		refusal, needAuth, err := w.a.MembersOnlyRefusal(ctx, w.c, tc.readers)
		if err != nil || refusal != tc.refusal || needAuth != tc.needAuth {
			t.Errorf("MembersOnlyRefusal(%d readers) = %q, %v, %v", len(tc.readers), refusal, needAuth, err)
		}
	}
	// The other community is open: nothing is refused there.
	if refusal, _, err := w.a.MembersOnlyRefusal(ctx, w.c2, nil); err != nil || refusal != "" {
		t.Fatalf("open community refused: %q, %v", refusal, err)
	}

	// Removing the member: its connection loses the community.
	r := w.a.Reader(ctx, w.c)
	r.Authenticated(w.member.PubKey)
	if lost, err := r.LostCommunity(ctx, ""); err != nil || lost {
		t.Fatalf("LostCommunity before removal = %v, %v", lost, err)
	}
	if err := w.st.RemoveCommunityMember(ctx, w.c, w.member.PubKey); err != nil {
		t.Fatal(err)
	}
	w.a.MemberChanged(w.c, w.member.PubKey)
	if lost, err := r.LostCommunity(ctx, w.member.PubKey); err != nil || !lost {
		t.Fatalf("LostCommunity after removal = %v, %v", lost, err)
	}
	if refusal, _, err := w.a.CommunityWrite(ctx, w.c, w.member.PubKey, authedAs(w.member.PubKey)); err != nil || refusal != channel.MsgMembersOnly {
		t.Fatalf("removed member's write: %q, %v", refusal, err)
	}
}

func hFilter(ids ...channel.ID) []nostr.Filter {
	var vals []string
	for _, id := range ids {
		vals = append(vals, id.String())
	}
	return []nostr.Filter{{Tags: map[string][]string{"h": vals}}}
}

func TestReader(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	r := w.a.Reader(ctx, w.c)

	// Before AUTH: open channels only; a private one asks for AUTH.
	scope, refusal, _, err := r.Check(ctx, hFilter(w.open), nil)
	if err != nil || refusal != "" || !scope.Contains(w.open) || scope.Contains(w.priv) {
		t.Fatalf("open read: %v %q %v", scope.Channels(), refusal, err)
	}
	if _, refusal, needAuth, _ := r.Check(ctx, hFilter(w.priv), nil); refusal != channel.MsgChannelAuth || !needAuth {
		t.Fatalf("private read before AUTH: %q, %v", refusal, needAuth)
	}
	// A filter without #h reads community-wide events and readable channels.
	if _, refusal, _, _ := r.Check(ctx, []nostr.Filter{{Kinds: []int{1}}}, nil); refusal != "" {
		t.Fatalf("plain filter refused: %q", refusal)
	}

	// After AUTH as a member: the private channel; never another
	// community's, which reads exactly like an unknown one.
	r.Authenticated(w.member.PubKey)
	if _, refusal, _, _ := r.Check(ctx, hFilter(w.priv), nil); refusal != "" {
		t.Fatalf("member's private read refused: %q", refusal)
	}
	var seen []bool
	_, refElsewhere, _, _ := r.Check(ctx, hFilter(w.elsewh), func(_ *channel.ID, ok bool) { seen = append(seen, ok) })
	_, refUnknown, _, _ := r.Check(ctx, hFilter(storetest.NewChannelID()), nil)
	if refElsewhere != channel.MsgChannelDenied || refUnknown != refElsewhere || len(seen) != 1 || seen[0] {
		t.Fatalf("another community's channel: %q (checked %v), unknown: %q", refElsewhere, seen, refUnknown)
	}

	ev := post(t, w.member, w.priv.String())
	if !r.Deliverable(ev) || !r.Deliverable(w.other.Event(t, nostr.KindNote, 1, "x")) {
		t.Fatal("member's live events not deliverable")
	}
	if !r.Holds(w.priv) {
		t.Fatal("readable set does not hold the private channel")
	}

	// A reader the change does not concern keeps the channel.
	if r.Revoked(ctx, w.priv, false, []string{w.other.PubKey}) {
		t.Fatal("unaffected reader lost the channel")
	}
	// Removal: the member loses the private channel, and its live events.
	storetest.MustApply(t, w.st, w.c, w.owner, channel.Command{Kind: nostr.KindRemoveUser, Channel: w.priv, Target: w.member.PubKey})
	w.a.ChannelChanged(w.c, w.priv, nil)
	if !r.Revoked(ctx, w.priv, false, []string{w.member.PubKey}) {
		t.Fatal("removed member kept the channel")
	}
	if r.Deliverable(ev) || r.Holds(w.priv) {
		t.Fatal("removed member still receives the channel")
	}
	if _, refusal, _, _ := r.Check(ctx, hFilter(w.priv), nil); refusal != channel.MsgChannelDenied {
		t.Fatalf("removed member's read: %q", refusal)
	}
	// Revoked for everyone (deletion) of a channel the reader still reads.
	if r.Revoked(ctx, w.open, true, nil) {
		t.Fatal("open channel lost without a change")
	}
}

func TestReaderScopeTTL(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	r := w.a.Reader(ctx, w.c)
	r.Authenticated(w.other.PubKey)
	if s, err := r.Scope(ctx); err != nil || s.Contains(w.priv) {
		t.Fatalf("Scope = %v, %v", s.Channels(), err)
	}
	// Another process puts the user (no ChannelChanged here): the set is
	// reused until the scope TTL passes.
	storetest.MustApply(t, w.st, w.c, w.owner, channel.Command{Kind: nostr.KindPutUser, Channel: w.priv, Target: w.other.PubKey})
	if s, _ := r.Scope(ctx); s.Contains(w.priv) {
		t.Fatal("readable set recomputed before its TTL")
	}
	w.clk.Advance(channel.DefaultScopeTTL)
	if s, _ := r.Scope(ctx); !s.Contains(w.priv) {
		t.Fatal("readable set not recomputed after its TTL")
	}
	// A change applied here marks it stale at once.
	storetest.MustApply(t, w.st, w.c, w.owner, channel.Command{Kind: nostr.KindRemoveUser, Channel: w.priv, Target: w.other.PubKey})
	w.a.ChannelChanged(w.c, w.priv, nil)
	if s, _ := r.Scope(ctx); s.Contains(w.priv) {
		t.Fatal("readable set kept after ChannelChanged")
	}
}

func TestCacheTTLAndInvalidation(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	role := func() (channel.Role, bool) {
		t.Helper()
		r, ok, err := w.a.Role(ctx, w.c, w.priv, w.other.PubKey)
		if err != nil {
			t.Fatal(err)
		}
		w.a.WaitCache()
		return r, ok
	}
	if _, ok := role(); ok {
		t.Fatal("non-member has a role")
	}
	cmd := channel.Command{Kind: nostr.KindPutUser, Channel: w.priv, Target: w.other.PubKey, Actor: w.owner.PubKey}
	storetest.MustApply(t, w.st, w.c, w.owner, cmd)
	// Changed by another process: the cached answer stands for the TTL…
	if _, ok := role(); ok {
		t.Fatal("role lookup not cached")
	}
	w.clk.Advance(channel.DefaultCacheTTL)
	// …and is looked up again after it, by the injected clock.
	if r, ok := role(); !ok || r != channel.RoleMember {
		t.Fatalf("after TTL: %q, %v", r, ok)
	}

	// Changed here: ChannelChanged drops the target's role and the channel.
	if ch, err := w.a.Channel(ctx, w.c, w.priv); err != nil || ch.Deleted {
		t.Fatal(ch, err)
	}
	w.a.WaitCache()
	storetest.MustApply(t, w.st, w.c, w.owner, channel.Command{Kind: nostr.KindRemoveUser, Channel: w.priv, Target: w.other.PubKey})
	w.a.ChannelChanged(w.c, w.priv, &cmd)
	if _, ok := role(); ok {
		t.Fatal("removed member's role still cached after ChannelChanged")
	}
	if _, err := w.a.Channel(ctx, w.c, w.priv); err != nil {
		t.Fatal(err)
	}
	w.a.WaitCache()
	storetest.MustApply(t, w.st, w.c, w.owner, channel.Command{Kind: nostr.KindDeleteChannel, Channel: w.priv})
	if _, err := w.a.Channel(ctx, w.c, w.priv); err != nil {
		t.Fatalf("cached channel: %v", err)
	}
	w.a.ChannelChanged(w.c, w.priv, nil)
	if _, err := w.a.Channel(ctx, w.c, w.priv); err != channel.ErrNoChannel {
		t.Fatalf("deleted channel after ChannelChanged: %v", err)
	}

	// Policy: cached until PolicyChanged.
	if p, err := w.a.Policy(ctx, w.c); err != nil || p != channel.AccessOpen {
		t.Fatal(p, err)
	}
	w.a.WaitCache()
	if err := w.st.SetCommunityAccess(ctx, w.c, channel.AccessMembers); err != nil {
		t.Fatal(err)
	}
	if p, _ := w.a.Policy(ctx, w.c); p != channel.AccessOpen {
		t.Fatal("policy not cached")
	}
	w.a.PolicyChanged(w.c)
	if p, _ := w.a.Policy(ctx, w.c); p != channel.AccessMembers {
		t.Fatal("policy cached after PolicyChanged")
	}
}

func TestNewAccessOptions(t *testing.T) {
	st, err := embedded.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, o := range []channel.Option{channel.WithCacheTTL(0), channel.WithScopeTTL(-1), channel.WithClock(nil), channel.WithLogger(nil)} {
		if _, err := channel.NewAccess(st, o); err == nil {
			t.Error("invalid option accepted")
		}
	}
	if _, err := channel.NewAccess(nil); err == nil {
		t.Error("nil store accepted")
	}
}

// TestDeliverableGiftWraps: Deliverable applies the gift wrap rule itself —
// a live gift wrap reaches a reader only once it authenticated as a pubkey
// the wrap's "p" tag names, and in a channel only if it also reads the
// channel.
func TestDeliverableGiftWraps(t *testing.T) {
	w := newWorld(t)
	r := w.a.Reader(context.Background(), w.c)
	wrap := w.other.Event(t, nostr.KindGiftWrap, 1, "sealed", nostr.Tag{"p", w.member.PubKey})
	if r.Deliverable(wrap) {
		t.Fatal("gift wrap deliverable before AUTH")
	}
	r.Authenticated(w.guest.PubKey)
	if r.Deliverable(wrap) {
		t.Fatal("gift wrap deliverable to a reader it does not name")
	}
	if !r.Deliverable(w.other.Event(t, nostr.KindNote, 1, "x")) {
		t.Fatal("a community-wide note is not deliverable")
	}
	r.Authenticated(w.member.PubKey)
	if !r.Deliverable(wrap) {
		t.Fatal("gift wrap not deliverable to its recipient")
	}
	inElsewhere := w.other.Event(t, nostr.KindGiftWrap, 1, "sealed", nostr.Tag{"p", w.member.PubKey}, nostr.Tag{"h", storetest.NewChannelID().String()})
	if r.Deliverable(inElsewhere) {
		t.Fatal("gift wrap of an unreadable channel deliverable to its recipient")
	}
}
