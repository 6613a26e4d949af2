package buzz

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/rawclient"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/relaykey"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// Channel tests over real WebSockets: NIP-29 kinds and role rules, the h
// fence, private reads, live access and revocation, relay-signed state.

// dialHost connects with the given Host header (another community of the
// same relay).
func (tr *testRelay) dialHost(t testing.TB, host string) *rawClient {
	t.Helper()
	return &rawClient{rawclient.Dial(t, nil, tr.url, http.Header{"Host": {host}}, "ws://"+host)}
}

// community maps host in tr's store and returns its tenant context.
func (tr *testRelay) community(t testing.TB, host string) tenant.TenantContext {
	t.Helper()
	ctx := context.Background()
	if _, _, err := tr.store.EnsureCommunity(ctx, host); err != nil {
		t.Fatal(err)
	}
	tc, err := tenant.Bind(ctx, tr.store, host)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

func chanTag(id channel.ID) nostr.Tag { return nostr.Tag{"h", id.String()} }

// createChannel publishes a 9007 through c and returns the new id.
func (c *rawClient) createChannel(s *signer, name string, vis channel.Visibility) channel.ID {
	c.T.Helper()
	id := storetest.NewChannelID()
	c.MustAccept(s.Event(nostr.KindCreateChannel, now(), "", chanTag(id), nostr.Tag{"name", name}, nostr.Tag{"visibility", string(vis)}))
	return id
}

func (c *rawClient) command(s *signer, kind int, id channel.ID, tags ...nostr.Tag) *nostr.OKMessage {
	c.T.Helper()
	return c.Publish(s.Event(kind, now(), "", append([]nostr.Tag{chanTag(id)}, tags...)...))
}

func hFilter(ids ...channel.ID) nostr.Filter {
	vals := make([]string, len(ids))
	for i, id := range ids {
		vals[i] = id.String()
	}
	return nostr.Filter{Tags: map[string][]string{"h": vals}}
}

var testMaster = func() nostr.SecretKey {
	sk, err := nostr.ParseSecretKey(strings.Repeat("3c", 32))
	if err != nil {
		panic(err)
	}
	return sk
}()

func TestChannelCreatePostAndState(t *testing.T) {
	tr := newTestRelay(t, WithRelayKey(testMaster))
	alice, bob := newSigner(t), newSigner(t)
	c := tr.dial(t)
	id := c.createChannel(alice, "general", channel.VisibilityOpen)

	// Kind 9 needs h; with h it is accepted in an open channel from anyone.
	ok := c.Publish(bob.Event(nostr.KindChatMessage, now(), "no h"))
	eq(t, "kind 9 without h", ok.Message, "invalid: kind 9 requires an h tag naming its channel")
	msg := bob.Event(nostr.KindChatMessage, now(), "hello", chanTag(id))
	c.MustAccept(msg)
	for _, bad := range []nostr.Tag{{"h", "General"}, {"h", strings.ToUpper(id.String())}, {"h"}, {"h", "a b"}} {
		ok := c.Publish(bob.Event(nostr.KindChatMessage, now(), "bad h", bad))
		eq(t, "malformed h", ok.Message, channel.MsgBadChannelTag)
	}
	got := c.Req("r", hFilter(id))
	if !slices.Contains(ids(got), msg.ID) {
		t.Fatalf("channel read = %v, want %s", ids(got), msg.ID)
	}

	// Relay-signed state: 39000–39003, d = h = channel id, signed by the
	// community's derived key.
	state := c.Req("s", nostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}, Tags: map[string][]string{"d": {id.String()}}})
	if len(state) != 4 {
		t.Fatalf("state events = %d, want 4", len(state))
	}
	v, err := nostr.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	want := relaykey.Derive(testMaster, tr.tc.Community()).PublicKey()
	byKind := map[int]*nostr.Event{}
	for _, ev := range state {
		if err := v.Verify(ev); err != nil {
			t.Fatalf("state event %d: %v", ev.Kind, err)
		}
		eq(t, "state signer", ev.PubKey, want)
		if ev.PubKey == testMaster.PublicKey() {
			t.Fatal("state signed with the master key")
		}
		byKind[ev.Kind] = ev
	}
	meta := byKind[39000]
	if meta.Tags.Find("name")[1] != "general" || !hasFlag(meta.Tags, "public") || hasFlag(meta.Tags, "private") || meta.Tags.Find("h")[1] != id.String() {
		t.Fatalf("39000 tags = %v", meta.Tags)
	}
	if p := byKind[39001].Tags.Find("p"); p == nil || p[1] != alice.Pub() || p[2] != "owner" {
		t.Fatalf("39001 tags = %v", byKind[39001].Tags)
	}

	// Joining republishes the member list.
	eq(t, "join", c.command(bob, nostr.KindJoinRequest, id).OK, true)
	members := c.Req("m", nostr.Filter{Kinds: []int{39002}, Tags: map[string][]string{"d": {id.String()}}})
	if len(members) != 1 || len(members[0].Tags.All("p")) != 2 {
		t.Fatalf("39002 after join = %v", members)
	}

	// Clients may not publish relay-signed kinds.
	forged := alice.Event(39000, now(), "", nostr.Tag{"d", id.String()}, chanTag(id), nostr.Tag{"name", "pwned"})
	eq(t, "client 39000", c.Publish(forged).Message, channel.MsgRelaySigned)

	// A second create of the id is refused; a repeat of the create is a
	// duplicate.
	again := alice.Event(nostr.KindCreateChannel, now()+1, "", chanTag(id), nostr.Tag{"name", "x"})
	eq(t, "second create", c.Publish(again).Message, channel.MsgChannelExists)
}

func TestChannelStateKeyPerCommunity(t *testing.T) {
	tr := newTestRelay(t, WithRelayKey(testMaster))
	tb := tr.community(t, "b.example")
	alice := newSigner(t)
	ca, cb := tr.dial(t), tr.dialHost(t, "b.example")
	ida := ca.createChannel(alice, "a", channel.VisibilityOpen)
	idb := cb.createChannel(alice, "b", channel.VisibilityOpen)
	sa := ca.Req("s", nostr.Filter{Kinds: []int{39000}, Tags: map[string][]string{"d": {ida.String()}}})
	sb := cb.Req("s", nostr.Filter{Kinds: []int{39000}, Tags: map[string][]string{"d": {idb.String()}}})
	if len(sa) != 1 || len(sb) != 1 {
		t.Fatalf("state events: %d, %d", len(sa), len(sb))
	}
	if sa[0].PubKey == sb[0].PubKey {
		t.Fatal("two communities share a state signing key")
	}
	eq(t, "B signer", sb[0].PubKey, relaykey.Derive(testMaster, tb.Community()).PublicKey())
	// NIP-11 names only the master key.
	eq(t, "NIP-11 pubkey", tr.relay.NIP11Document().PubKey, testMaster.PublicKey())
}

func TestChannelHFence(t *testing.T) {
	tr := newTestRelay(t)
	tr.community(t, "a.example")
	tr.community(t, "b.example")
	alice, mallory := newSigner(t), newSigner(t)
	cb := tr.dialHost(t, "b.example")
	foreign := cb.createChannel(alice, "b-secret", channel.VisibilityOpen)
	inB := alice.Event(nostr.KindChatMessage, now(), "in B", chanTag(foreign))
	cb.MustAccept(inB)

	ca := tr.dialHost(t, "a.example")
	unknown := storetest.NewChannelID()
	// Posting into B's channel from A answers exactly as an unknown channel.
	okF := ca.Publish(mallory.Event(nostr.KindChatMessage, now(), "x", chanTag(foreign)))
	okU := ca.Publish(mallory.Event(nostr.KindChatMessage, now(), "x", chanTag(unknown)))
	if okF.OK || okF.Message != okU.Message || okF.Message != channel.MsgChannelDenied {
		t.Fatalf("foreign h: %v %q; unknown h: %v %q", okF.OK, okF.Message, okU.OK, okU.Message)
	}
	// The duplicate path: B's own stored event, replayed into A.
	okDup := ca.Publish(inB)
	if okDup.OK || okDup.Message != channel.MsgChannelDenied {
		t.Fatalf("replay of a foreign channel event into A: %v %q", okDup.OK, okDup.Message)
	}
	// Commands on B's channel from A: as unknown.
	for _, kind := range []int{nostr.KindJoinRequest, nostr.KindLeaveRequest, nostr.KindDeleteChannel} {
		f := ca.command(alice, kind, foreign)
		u := ca.command(alice, kind, unknown)
		if f.OK || f.Message != u.Message {
			t.Fatalf("kind %d: foreign %q, unknown %q", kind, f.Message, u.Message)
		}
	}
	// Reading B's channel from A: CLOSED exactly like an unknown channel.
	ca.AuthAs(mallory, "a.example")
	ca.SendRaw(nostr.AppendReq(nil, "f", hFilter(foreign)))
	mf := ca.ExpectClosed("f", "restricted:")
	ca.SendRaw(nostr.AppendReq(nil, "u", hFilter(unknown)))
	mu := ca.ExpectClosed("u", "restricted:")
	eq(t, "CLOSED foreign vs unknown", mf, mu)
	// By id and by #e: nothing, as for an id that does not exist.
	if got := ca.Req("i", nostr.Filter{IDs: []string{inB.ID}}); len(got) != 0 {
		t.Fatalf("foreign id read from A: %v", ids(got))
	}
	if got := ca.Req("e", nostr.Filter{Tags: map[string][]string{"e": {inB.ID}}}); len(got) != 0 {
		t.Fatalf("#e read from A: %v", ids(got))
	}
	// A may create a channel with B's UUID: an independent channel.
	okCreate := ca.Publish(alice.Event(nostr.KindCreateChannel, now(), "", chanTag(foreign), nostr.Tag{"name", "a-own"}))
	if !okCreate.OK {
		t.Fatalf("create of the same UUID in A: %q", okCreate.Message)
	}
	inA := alice.Event(nostr.KindChatMessage, now(), "in A", chanTag(foreign))
	ca.MustAccept(inA)
	eq(t, "A's channel holds A's message only", strings.Join(ids(filterKind(ca.Req("a", hFilter(foreign)), 9)), ","), inA.ID)
	eq(t, "B's channel holds B's message only", strings.Join(ids(filterKind(cb.Req("b", hFilter(foreign)), 9)), ","), inB.ID)
}

func hasFlag(tags nostr.Tags, name string) bool {
	for _, t := range tags {
		if len(t) == 1 && t[0] == name {
			return true
		}
	}
	return false
}

func filterKind(evs []*nostr.Event, kind int) []*nostr.Event {
	var out []*nostr.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func TestPrivateChannelReads(t *testing.T) {
	tr := newTestRelay(t)
	owner, member, outsider := newSigner(t), newSigner(t), newSigner(t)
	c := tr.dial(t)
	priv := c.createChannel(owner, "private", channel.VisibilityPrivate)
	open := c.createChannel(owner, "open", channel.VisibilityOpen)
	eq(t, "put member", c.command(owner, nostr.KindPutUser, priv, nostr.Tag{"p", member.Pub()}).OK, true)
	secret := member.Event(nostr.KindChatMessage, now(), "secret", chanTag(priv))
	public := owner.Event(nostr.KindChatMessage, now(), "public", chanTag(open))
	global := owner.Event(1, now(), "global")
	c.MustAccept(secret)
	c.MustAccept(public)
	c.MustAccept(global)
	// An outsider cannot post into the private channel.
	eq(t, "outsider posts", c.Publish(outsider.Event(nostr.KindChatMessage, now(), "x", chanTag(priv))).Message, channel.MsgChannelDenied)
	// A join of a private channel is refused.
	eq(t, "join private", c.command(outsider, nostr.KindJoinRequest, priv).Message, channel.MsgNotPermitted)

	anon := tr.dial(t)
	anon.SendRaw(nostr.AppendReq(nil, "p", hFilter(priv)))
	anon.ExpectClosed("p", "auth-required:")
	// Without #h: community-wide and open channels only.
	feed := anon.Req("f", nostr.Filter{Kinds: []int{1, 9}})
	if slices.Contains(ids(feed), secret.ID) || !slices.Contains(ids(feed), public.ID) || !slices.Contains(ids(feed), global.ID) {
		t.Fatalf("anonymous feed = %v", ids(feed))
	}
	// By id: a private event is invisible.
	if got := anon.Req("i", nostr.Filter{IDs: []string{secret.ID}}); len(got) != 0 {
		t.Fatal("private event read by id")
	}

	out := tr.dial(t)
	out.AuthAs(outsider, tr.host)
	out.SendRaw(nostr.AppendReq(nil, "p", hFilter(priv)))
	eq(t, "outsider CLOSED", out.ExpectClosed("p", "restricted:"), channel.MsgChannelDenied)
	// Naming one readable channel among unreadable ones reads the readable one.
	if got := filterKind(out.Req("mix", hFilter(priv, open)), 9); len(got) != 1 || got[0].ID != public.ID {
		t.Fatalf("mixed #h = %v", ids(got))
	}
	if n := countOf(t, out, "c", hFilter(priv)); n != -1 {
		t.Fatalf("COUNT of a private channel by an outsider = %d, want CLOSED", n)
	}

	in := tr.dial(t)
	in.AuthAs(member, tr.host)
	if got := filterKind(in.Req("p", hFilter(priv)), 9); len(got) != 1 || got[0].ID != secret.ID {
		t.Fatalf("member read = %v", ids(got))
	}
	if n := countOf(t, in, "c", nostr.Filter{Kinds: []int{9}}); n != 2 {
		t.Fatalf("member COUNT = %d, want 2", n)
	}
	if n := countOf(t, out, "c2", nostr.Filter{Kinds: []int{9}}); n != 1 {
		t.Fatalf("outsider COUNT = %d, want 1", n)
	}
}

// countOf sends COUNT and returns the count, or -1 on CLOSED.
func countOf(t *testing.T, c *rawClient, sub string, f nostr.Filter) int64 {
	t.Helper()
	c.SendRaw(nostr.AppendCount(nil, sub, f))
	for {
		switch m := c.Next().(type) {
		case *nostr.CountMessage:
			return m.Count
		case *nostr.ClosedMessage:
			return -1
		case *nostr.AuthChallengeMessage:
		default:
			t.Fatalf("got %#v, want COUNT", m)
		}
	}
}

func TestLiveAccessAndRevocation(t *testing.T) {
	tr := newTestRelay(t)
	owner, bob, carol := newSigner(t), newSigner(t), newSigner(t)
	oc := tr.dial(t)
	priv := oc.createChannel(owner, "private", channel.VisibilityPrivate)
	eq(t, "put bob", oc.command(owner, nostr.KindPutUser, priv, nostr.Tag{"p", bob.Pub()}).OK, true)

	bc := tr.dial(t)
	bc.AuthAs(bob, tr.host)
	bc.Subscribe("chan", hFilter(priv))
	bc.Subscribe("feed", nostr.Filter{Kinds: []int{9, 1}})
	cc := tr.dial(t)
	cc.AuthAs(carol, tr.host)
	cc.Subscribe("feed", nostr.Filter{Kinds: []int{9, 1}})

	m1 := owner.Event(nostr.KindChatMessage, now(), "one", chanTag(priv))
	oc.MustAccept(m1)
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		ev := bc.Next().(*nostr.EventMessage)
		got[ev.SubID] = ev.Event.ID == m1.ID
	}
	if !got["chan"] || !got["feed"] {
		t.Fatalf("bob's live deliveries = %v", got)
	}
	// Carol (not a member) gets the next community-wide note, not m1.
	g := owner.Event(1, now(), "global")
	oc.MustAccept(g)
	eq(t, "carol's first live event", cc.NextLive("feed").ID, g.ID)
	eq(t, "bob's feed gets the note", bc.NextLive("feed").ID, g.ID)

	// Removing bob closes his channel subscription; his feed stops
	// receiving the channel.
	eq(t, "remove bob", oc.command(owner, nostr.KindRemoveUser, priv, nostr.Tag{"p", bob.Pub()}).OK, true)
	eq(t, "bob's CLOSED", bc.ExpectClosed("chan", "restricted:"), channel.MsgChannelRevoked)
	m2 := owner.Event(nostr.KindChatMessage, now(), "two", chanTag(priv))
	oc.MustAccept(m2)
	g2 := owner.Event(1, now(), "global 2")
	oc.MustAccept(g2)
	eq(t, "bob's next feed event", bc.NextLive("feed").ID, g2.ID)
	bc.SendRaw(nostr.AppendReq(nil, "again", hFilter(priv)))
	bc.ExpectClosed("again", "restricted:")
}

func TestOpenToPrivateEvicts(t *testing.T) {
	tr := newTestRelay(t)
	owner, reader := newSigner(t), newSigner(t)
	oc := tr.dial(t)
	id := oc.createChannel(owner, "flip", channel.VisibilityOpen)
	rc := tr.dial(t)
	rc.AuthAs(reader, tr.host)
	rc.Subscribe("c", hFilter(id))
	eq(t, "to private", oc.command(owner, nostr.KindEditMetadata, id, nostr.Tag{"visibility", "private"}).OK, true)
	eq(t, "reader's CLOSED", rc.ExpectClosed("c", "restricted:"), channel.MsgChannelRevoked)
}

func TestChannelRolesOverWebSocket(t *testing.T) {
	tr := newTestRelay(t)
	owner, admin, member, guest, x := newSigner(t), newSigner(t), newSigner(t), newSigner(t), newSigner(t)
	c := tr.dial(t)
	id := c.createChannel(owner, "team", channel.VisibilityPrivate)
	put := func(by, who *signer, role string) *nostr.OKMessage {
		tag := nostr.Tag{"p", who.Pub()}
		if role != "" {
			tag = append(tag, role)
		}
		return c.command(by, nostr.KindPutUser, id, tag)
	}
	eq(t, "owner puts admin", put(owner, admin, "admin").OK, true)
	eq(t, "admin puts member", put(admin, member, "").OK, true)
	eq(t, "admin puts guest", put(admin, guest, "guest").OK, true)
	eq(t, "member puts", put(member, x, "").Message, channel.MsgNotPermitted)
	eq(t, "admin grants admin", put(admin, x, "admin").Message, channel.MsgNotPermitted)
	eq(t, "bad role", put(owner, x, "ki\x01ng").Message, channel.MsgBadCommand)
	eq(t, "guest posts", c.Publish(guest.Event(nostr.KindChatMessage, now(), "hi", chanTag(id))).Message, channel.MsgChannelDenied)
	eq(t, "member posts", c.Publish(member.Event(nostr.KindChatMessage, now(), "hi", chanTag(id))).OK, true)
	eq(t, "member edits", c.command(member, nostr.KindEditMetadata, id, nostr.Tag{"name", "n"}).Message, channel.MsgNotPermitted)
	eq(t, "admin edits", c.command(admin, nostr.KindEditMetadata, id, nostr.Tag{"name", "n"}).OK, true)
	spam := member.Event(nostr.KindChatMessage, now(), "spam", chanTag(id))
	c.MustAccept(spam)
	eq(t, "admin deletes event", c.command(admin, nostr.KindDeleteEvent, id, nostr.Tag{"e", spam.ID}).OK, true)
	again := admin.Event(nostr.KindDeleteEvent, now()+1, "", chanTag(id), nostr.Tag{"e", spam.ID})
	eq(t, "deleted again", c.Publish(again).Message, channel.MsgNoSuchEvent)
	eq(t, "deleted event re-sent", c.Publish(spam).Message, ingest.MsgDeleted)
	eq(t, "admin removes owner", c.command(admin, nostr.KindRemoveUser, id, nostr.Tag{"p", owner.Pub()}).Message, channel.MsgNotPermitted)
	eq(t, "admin removes guest", c.command(admin, nostr.KindRemoveUser, id, nostr.Tag{"p", guest.Pub()}).OK, true)
	eq(t, "last owner leaves", c.command(owner, nostr.KindLeaveRequest, id).Message, channel.MsgNotPermitted)
	eq(t, "member leaves", c.command(member, nostr.KindLeaveRequest, id).OK, true)
	eq(t, "admin deletes channel", c.command(admin, nostr.KindDeleteChannel, id).Message, channel.MsgNotPermitted)
	eq(t, "owner deletes channel", c.command(owner, nostr.KindDeleteChannel, id).OK, true)
	eq(t, "post into deleted", c.Publish(admin.Event(nostr.KindChatMessage, now(), "x", chanTag(id))).Message, channel.MsgChannelDenied)
	missing := c.Publish(owner.Event(nostr.KindPutUser, now(), "", chanTag(id)))
	eq(t, "9000 without p", missing.Message, channel.MsgBadCommand)
	for _, kind := range []int{nostr.KindPutUser, nostr.KindJoinRequest} {
		ok := c.Publish(owner.Event(kind, now(), "", nostr.Tag{"p", x.Pub()}))
		mustPrefix(t, "command without h", ok.Message, "invalid:")
	}
}

func TestMembersOnlyCommunity(t *testing.T) {
	tr := newTestRelay(t)
	ctx := context.Background()
	if err := tr.store.SetCommunityAccess(ctx, tr.tc.Community(), channel.AccessMembers); err != nil {
		t.Fatal(err)
	}
	insider, outsider := newSigner(t), newSigner(t)
	if err := tr.store.PutCommunityMember(ctx, tr.tc.Community(), insider.Pub(), channel.RoleMember); err != nil {
		t.Fatal(err)
	}
	anon := tr.dial(t)
	anon.SendRaw(nostr.AppendReq(nil, "r", nostr.Filter{}))
	anon.ExpectClosed("r", "auth-required:")
	ok := anon.Publish(insider.Event(1, now(), "x"))
	mustPrefix(t, "unauthenticated EVENT", ok.Message, "auth-required:")

	out := tr.dial(t)
	out.AuthAs(outsider, tr.host)
	out.SendRaw(nostr.AppendReq(nil, "r", nostr.Filter{}))
	out.ExpectClosed("r", "restricted:")
	eq(t, "outsider EVENT", out.Publish(outsider.Event(1, now(), "x")).Message, channel.MsgMembersOnly)

	in := tr.dial(t)
	in.AuthAs(insider, tr.host)
	note := insider.Event(1, now(), "inside")
	in.MustAccept(note)
	if got := in.Req("r", nostr.Filter{Kinds: []int{1}}); len(got) != 1 || got[0].ID != note.ID {
		t.Fatalf("insider read = %v", ids(got))
	}
}

func TestLeaveAndDeleteEvict(t *testing.T) {
	tr := newTestRelay(t)
	owner, bob := newSigner(t), newSigner(t)
	oc := tr.dial(t)
	priv := oc.createChannel(owner, "private", channel.VisibilityPrivate)
	open := oc.createChannel(owner, "open", channel.VisibilityOpen)
	eq(t, "put bob", oc.command(owner, nostr.KindPutUser, priv, nostr.Tag{"p", bob.Pub()}).OK, true)

	bc := tr.dial(t)
	bc.AuthAs(bob, tr.host)
	bc.Subscribe("p", hFilter(priv))
	bc.Subscribe("o", hFilter(open))
	// Leaving a private channel closes the subscription naming it.
	// (The eviction happens before the command is acknowledged.)
	leave := bob.Event(nostr.KindLeaveRequest, now(), "", chanTag(priv))
	bc.SendEvent(leave)
	eq(t, "CLOSED after leave", bc.ExpectClosed("p", "restricted:"), channel.MsgChannelRevoked)
	eq(t, "bob leaves", bc.ExpectOK(leave.ID).OK, true)
	// Deleting a channel closes every subscription naming it, the owner's too.
	oc.Subscribe("own", hFilter(open))
	del := owner.Event(nostr.KindDeleteChannel, now(), "", chanTag(open))
	oc.SendEvent(del)
	eq(t, "owner's CLOSED after delete", oc.ExpectClosed("own", "restricted:"), channel.MsgChannelRevoked)
	eq(t, "delete open", oc.ExpectOK(del.ID).OK, true)
	eq(t, "bob's CLOSED after delete", bc.ExpectClosed("o", "restricted:"), channel.MsgChannelRevoked)
}

func TestCommunityMembershipCommands(t *testing.T) {
	tr := newTestRelay(t)
	ctx := context.Background()
	owner, alice, bob, carol, dave := newSigner(t), newSigner(t), newSigner(t), newSigner(t), newSigner(t)
	comm, _, err := tr.store.CreateCommunity(ctx, store.NewCommunity{Host: "m.example", OwnerPubKey: owner.Pub()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.store.SetCommunityAccess(ctx, comm.ID, channel.AccessMembers); err != nil {
		t.Fatal(err)
	}
	member := func(kind int, by, who *signer, role string) *nostr.OKMessage {
		t.Helper()
		c := tr.dialHost(t, "m.example")
		c.AuthAs(by, "m.example")
		tag := nostr.Tag{"p", who.Pub()}
		if role != "" {
			tag = append(tag, role)
		}
		return c.Publish(by.Event(kind, now(), "", tag))
	}
	eq(t, "owner adds alice", member(nostr.KindAddCommunityMember, owner, alice, "").OK, true)
	eq(t, "member adds bob", member(nostr.KindAddCommunityMember, alice, bob, "").Message, ingest.MsgCommunityRole)
	eq(t, "owner adds carol as admin", member(nostr.KindAddCommunityMember, owner, carol, "admin").OK, true)
	eq(t, "admin adds bob", member(nostr.KindAddCommunityMember, carol, bob, "").OK, true)
	eq(t, "admin grants admin", member(nostr.KindAddCommunityMember, carol, dave, "admin").Message, ingest.MsgCommunityRole)
	eq(t, "owner cannot be removed", member(nostr.KindRemoveCommunityMember, carol, owner, "").Message, ingest.MsgCommunityRole)
	eq(t, "bad role", member(nostr.KindAddCommunityMember, owner, dave, "king").Message, ingest.MsgBadMemberCommand)

	bc := tr.dialHost(t, "m.example")
	bc.AuthAs(bob, "m.example")
	bc.Subscribe("feed", nostr.Filter{Kinds: []int{1}})
	eq(t, "admin removes bob", member(nostr.KindRemoveCommunityMember, carol, bob, "").OK, true)
	eq(t, "bob's CLOSED", bc.ExpectClosed("feed", "restricted:"), channel.MsgCommunityRevoked)
	bc.SendRaw(nostr.AppendReq(nil, "again", nostr.Filter{}))
	eq(t, "bob's next REQ", bc.ExpectClosed("again", "restricted:"), channel.MsgMembersOnly)
	eq(t, "bob's EVENT", bc.Publish(bob.Event(1, now(), "x")).Message, channel.MsgMembersOnly)
	// Alice, still a member, reads the membership commands (community-wide).
	ac := tr.dialHost(t, "m.example")
	ac.AuthAs(alice, "m.example")
	if got := ac.Req("m", nostr.Filter{Kinds: []int{nostr.KindAddCommunityMember, nostr.KindRemoveCommunityMember}}); len(got) != 4 {
		t.Fatalf("stored membership commands = %d, want 4", len(got))
	}
	// In an open community the commands work too but gate nothing.
	eq(t, "in a community without owner", tr.dial(t).Publish(owner.Event(nostr.KindAddCommunityMember, now(), "", nostr.Tag{"p", bob.Pub()})).Message, ingest.MsgCommunityRole)
}

// TestPolicyChangeRevokes: a switch to members-only announced on the control
// bus (control.PolicyChanged) takes effect at once, though the policy was
// read a moment before: live subscriptions of connections without a member
// are closed, a member's stays, and new REQs obey the new policy.
func TestPolicyChangeRevokes(t *testing.T) {
	tr := newTestRelay(t)
	ctx := context.Background()
	insider, outsider := newSigner(t), newSigner(t)
	if err := tr.store.PutCommunityMember(ctx, tr.tc.Community(), insider.Pub(), channel.RoleMember); err != nil {
		t.Fatal(err)
	}
	in, out, anon := tr.dial(t), tr.dial(t), tr.dial(t)
	in.AuthAs(insider, tr.host)
	out.AuthAs(outsider, tr.host)
	for _, c := range []*rawClient{in, out, anon} {
		c.Subscribe("live", nostr.Filter{Kinds: []int{1}}) // caches "open"
	}
	if err := tr.store.SetCommunityAccess(ctx, tr.tc.Community(), channel.AccessMembers); err != nil {
		t.Fatal(err)
	}
	if err := tr.relay.PublishControl(ctx, tr.tc.Community(), control.PolicyChanged{Access: string(channel.AccessMembers)}); err != nil {
		t.Fatal(err)
	}
	eq(t, "outsider's CLOSED", out.ExpectClosed("live", "restricted:"), channel.MsgCommunityRevoked)
	eq(t, "anonymous CLOSED", anon.ExpectClosed("live", "restricted:"), channel.MsgCommunityRevoked)
	out.SendRaw(nostr.AppendReq(nil, "again", nostr.Filter{}))
	out.ExpectClosed("again", "restricted:")
	eq(t, "outsider EVENT", out.Publish(outsider.Event(1, now(), "x")).Message, channel.MsgMembersOnly)
	note := insider.Event(1, now(), "still here")
	in.SendEvent(note)
	for {
		m := in.Next()
		if em, ok := m.(*nostr.EventMessage); ok && em.Event.ID == note.ID {
			break // the member's live subscription still delivers
		}
		if cm, ok := m.(*nostr.ClosedMessage); ok {
			t.Fatalf("member's subscription closed: %q", cm.Message)
		}
	}
}
