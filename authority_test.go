package buzz

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

// The authority rule (ingest/authority.go) as an attacker meets it: signed
// commands copied from what they could read, re-sent over real WebSocket
// and HTTP clients, on the default embedded engine (SQLite with its events
// in the LSM engine), on SQLite with its events in its tables, and on
// PostgreSQL.

// authStore is a store with channels, as every backend keeps them.
type authStore interface {
	store.Backend
	store.ChannelStore
}

// authBackend opens the store of one backend; a shared backend's opens
// are several processes (pods) on one database.
type authBackend struct {
	shared bool
	open   func(t testing.TB) authStore
}

func forAuthorityBackends(t *testing.T, fn func(t *testing.T, b authBackend)) {
	embeddedBackend := func(opts ...embedded.Option) authBackend {
		return authBackend{open: func(t testing.TB) authStore {
			st, err := embedded.Open(context.Background(), t.TempDir(), append(opts, embedded.WithLogger(quietLogger()))...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}}
	}
	t.Run("embedded", func(t *testing.T) { fn(t, embeddedBackend()) })
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		fn(t, authBackend{shared: true, open: func(t testing.TB) authStore {
			st, err := postgres.Open(context.Background(), url, postgres.WithLogger(quietLogger()), postgres.WithMaxConns(6))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}})
	})
}

// ownedCommunity creates a community on host owned by owner.
func ownedCommunity(t *testing.T, st store.Backend, host string, owner *signer) tenant.CommunityID {
	t.Helper()
	c, _, err := st.(operator.Store).CreateCommunity(context.Background(), store.NewCommunity{Host: host, OwnerPubKey: owner.Pub()})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// communityRole is who's role in c ("" for no member).
func communityRole(t *testing.T, st store.ChannelStore, c tenant.CommunityID, who *signer) channel.Role {
	t.Helper()
	r, ok, err := st.CommunityRole(context.Background(), c, who.Pub())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return r
}

// authedOn dials host and authenticates as s.
func (tr *testRelay) authedOn(t *testing.T, host string, s *signer) *rawClient {
	t.Helper()
	c := tr.dialHost(t, host)
	c.AuthAs(s, host)
	return c
}

// TestAuthorityMembershipReplay (rows 1 and 2): O's 9030 making M admin,
// re-sent after O removed M, by an anonymous connection, by an attacker
// authenticated as themself, and by O; then sent to another community O
// owns by anyone but O. Nothing makes M admin again, anywhere.
func TestAuthorityMembershipReplay(t *testing.T) {
	forAuthorityBackends(t, func(t *testing.T, b authBackend) {
		st := b.open(t)
		tr := backendRelay(t, st)
		owner, m, x := newSigner(t), newSigner(t), newSigner(t)
		ca := ownedCommunity(t, st, "a.example", owner)
		cb := ownedCommunity(t, st, "b.example", owner)

		oc := tr.authedOn(t, "a.example", owner)
		add := owner.Event(nostr.KindAddCommunityMember, now(), "", nostr.Tag{"p", m.Pub(), "admin"})
		oc.MustAccept(add)
		eq(t, "M's role after the 9030", communityRole(t, st, ca, m), channel.RoleAdmin)
		oc.MustAccept(owner.Event(nostr.KindRemoveCommunityMember, now(), "", nostr.Tag{"p", m.Pub()}))
		eq(t, "M's role after the 9031", communityRole(t, st, ca, m), "")

		// Row 1: the stored 9030, as anyone can read it, re-sent.
		anon := tr.dialHost(t, "a.example")
		ok := anon.PublishOnce(add)
		eq(t, "anonymous replay", ok.Message, ingest.MsgAuthorityAuth)
		eq(t, "anonymous replay accepted", ok.OK, false)
		eq(t, "M's role after the anonymous replay", communityRole(t, st, ca, m), "")
		xc := tr.authedOn(t, "a.example", x)
		eq(t, "replay by an authenticated attacker", xc.PublishOnce(add).Message, ingest.MsgAuthorityNotAuthor)
		mc := tr.authedOn(t, "a.example", m)
		eq(t, "replay by M", mc.PublishOnce(add).Message, ingest.MsgAuthorityNotAuthor)
		eq(t, "M's role after the attackers' replays", communityRole(t, st, ca, m), "")
		ok = oc.Publish(add)
		eq(t, "O's own replay accepted", ok.OK, true)
		eq(t, "O's own replay", ok.Message, ingest.MsgDuplicate)
		eq(t, "M's role after O's replay", communityRole(t, st, ca, m), "")

		// Row 2: the same 9030 in another community O owns.
		for name, c := range map[string]*rawClient{
			"anonymous": tr.dialHost(t, "b.example"),
			"attacker":  tr.authedOn(t, "b.example", x),
			"M":         tr.authedOn(t, "b.example", m),
		} {
			ok := c.PublishOnce(add)
			if ok.OK {
				t.Fatalf("%s's copy in B accepted: %q", name, ok.Message)
			}
		}
		eq(t, "M's role in B", communityRole(t, st, cb, m), "")
	})
}

// TestAuthorityGroupReplay (row 3): O's 9000 putting M into a private
// group, replayed by M into another community of O holding a group of the
// same id: refused, and M reads nothing there.
func TestAuthorityGroupReplay(t *testing.T) {
	forAuthorityBackends(t, func(t *testing.T, b authBackend) {
		st := b.open(t)
		tr := backendRelay(t, st)
		owner, m := newSigner(t), newSigner(t)
		ownedCommunity(t, st, "a.example", owner)
		ownedCommunity(t, st, "b.example", owner)
		h := nostr.Tag{"h", "secret"}
		oa, ob := tr.authedOn(t, "a.example", owner), tr.authedOn(t, "b.example", owner)
		for _, c := range []*rawClient{oa, ob} {
			c.MustAccept(owner.Event(nostr.KindCreateChannel, now(), "", h, nostr.Tag{"name", "Secret"}, nostr.Tag{"visibility", "private"}))
		}
		put := owner.Event(nostr.KindPutUser, now(), "", h, nostr.Tag{"p", m.Pub()})
		oa.MustAccept(put)
		ob.MustAccept(owner.Event(nostr.KindChatMessage, now(), "B's private plans", h))

		mb := tr.authedOn(t, "b.example", m)
		eq(t, "M's replay in B", mb.PublishOnce(put).Message, ingest.MsgAuthorityNotAuthor)
		eq(t, "anonymous replay in B", tr.dialHost(t, "b.example").PublishOnce(put).Message, ingest.MsgAuthorityAuth)
		if got := mb.readAll("r", nostr.Filter{Kinds: []int{nostr.KindChatMessage}, Tags: map[string][]string{"h": {"secret"}}}); len(got) != 0 {
			t.Fatalf("M read %d messages of B's private group", len(got))
		}
		// In A, where O did put M, M reads the group (the 9000 acted there).
		ma := tr.authedOn(t, "a.example", m)
		oa.MustAccept(owner.Event(nostr.KindChatMessage, now(), "A's plans", h))
		if got := ma.readAll("r", nostr.Filter{Kinds: []int{nostr.KindChatMessage}, Tags: map[string][]string{"h": {"secret"}}}); len(got) != 1 {
			t.Fatalf("M read %d messages of A's group, want 1", len(got))
		}
	})
}

// readAll sends a REQ and returns the stored events up to EOSE, or none
// when the relay closes it.
func (c *rawClient) readAll(sub string, f nostr.Filter) []*nostr.Event {
	c.T.Helper()
	c.SendRaw(nostr.AppendReq(nil, sub, f))
	var evs []*nostr.Event
	for {
		switch m := c.Next().(type) {
		case *nostr.EventMessage:
			if m.SubID == sub {
				evs = append(evs, m.Event)
			}
		case *nostr.EOSEMessage:
			if m.SubID == sub {
				c.Send("CLOSE", sub)
				return evs
			}
		case *nostr.ClosedMessage:
			if m.SubID == sub {
				return nil
			}
		}
	}
}

// TestAuthorityFreshAndOnce: a command older than the authority window is
// refused (sign it again) and changes nothing; a moderation command,
// executed and never stored, is applied once: ban, unban, the ban re-sent
// by its author leaves the target unbanned.
func TestAuthorityFreshAndOnce(t *testing.T) {
	forAuthorityBackends(t, func(t *testing.T, b authBackend) {
		st := b.open(t)
		tr := backendRelay(t, st)
		owner, m := newSigner(t), newSigner(t)
		ca := ownedCommunity(t, st, "a.example", owner)
		oc := tr.authedOn(t, "a.example", owner)

		stale := owner.Event(nostr.KindAddCommunityMember, time.Now().Add(-ingest.DefaultAuthorityWindow-time.Minute).Unix(), "", nostr.Tag{"p", m.Pub()})
		ok := oc.Publish(stale)
		mustPrefix(t, "stale 9030", ok.Message, "invalid: ")
		if !strings.Contains(ok.Message, "sign it again") {
			t.Fatalf("stale message %q does not say to sign it again", ok.Message)
		}
		eq(t, "M's role after the stale 9030", communityRole(t, st, ca, m), "")

		oc.MustAccept(owner.Event(nostr.KindAddCommunityMember, now(), "", nostr.Tag{"p", m.Pub()}))
		ban := owner.Event(nostr.KindBan, now(), "", nostr.Tag{"p", m.Pub()})
		oc.MustAccept(ban)
		banned := func() bool {
			t.Helper()
			rs, err := st.(store.ModerationStore).PubkeyRestrictions(context.Background(), ca, m.Pub(), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return len(rs) > 0
		}
		eq(t, "banned", banned(), true)
		oc.MustAccept(owner.Event(nostr.KindUnban, now(), "", nostr.Tag{"p", m.Pub()}))
		eq(t, "banned after unban", banned(), false)
		ok = oc.Publish(ban)
		eq(t, "the ban re-sent accepted", ok.OK, true)
		eq(t, "the ban re-sent", ok.Message, ingest.MsgDuplicate)
		eq(t, "banned after the ban was re-sent", banned(), false)
		eq(t, "a copy of the ban", tr.authedOn(t, "a.example", m).PublishOnce(ban).Message, ingest.MsgAuthorityNotAuthor)
	})
}

// TestAuthorityAcrossPods: two relays over one database (PostgreSQL: two
// pods; the embedded store: one process) apply a command once: the second
// pod answers duplicate and changes nothing.
func TestAuthorityAcrossPods(t *testing.T) {
	forAuthorityBackends(t, func(t *testing.T, b authBackend) {
		st1 := b.open(t)
		st2 := st1
		if b.shared {
			st2 = b.open(t)
		}
		owner, m := newSigner(t), newSigner(t)
		ca := ownedCommunity(t, st1, "a.example", owner)
		p1, p2 := startPod(t, st1, "a.example"), startPod(t, st2, "a.example")
		c1, c2 := p1.dial(t), p2.dial(t)
		c1.AuthAs(owner, "a.example")
		c2.AuthAs(owner, "a.example")

		add := owner.Event(nostr.KindAddCommunityMember, now(), "", nostr.Tag{"p", m.Pub()})
		c1.MustAccept(add)
		c1.MustAccept(owner.Event(nostr.KindRemoveCommunityMember, now(), "", nostr.Tag{"p", m.Pub()}))
		eq(t, "the 9030 on the second pod", c2.Publish(add).Message, ingest.MsgDuplicate)
		eq(t, "M's role", communityRole(t, st1, ca, m), "")

		ban := owner.Event(nostr.KindBan, now(), "", nostr.Tag{"p", m.Pub()})
		c1.MustAccept(ban)
		c1.MustAccept(owner.Event(nostr.KindUnban, now(), "", nostr.Tag{"p", m.Pub()}))
		eq(t, "the ban on the second pod", c2.Publish(ban).Message, ingest.MsgDuplicate)
		rs, err := st2.(store.ModerationStore).PubkeyRestrictions(context.Background(), ca, m.Pub(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "restrictions of M", len(rs), 0)
	})
}

// TestAuthorityOverHTTP: POST /events binds an authority event to the
// NIP-98 signer: another key's header is refused, the author's accepted.
func TestAuthorityOverHTTP(t *testing.T) {
	forAuthorityBackends(t, func(t *testing.T, b authBackend) {
		st := b.open(t)
		owner, m, x := newSigner(t), newSigner(t), newSigner(t)
		ca := ownedCommunity(t, st, "a.example", owner)
		p := startAPIPod(t, st, "a.example")
		add := owner.Event(nostr.KindAddCommunityMember, now(), "", nostr.Tag{"p", m.Pub(), "admin"})
		code, body := p.api(t, x, "a.example", eventsPath, add.AppendJSON(nil))
		var res eventResult
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatalf("/events answered %d %s", code, body)
		}
		eq(t, "another key's NIP-98", res.Message, ingest.MsgAuthorityNotAuthor)
		eq(t, "status", code, http.StatusForbidden)
		eq(t, "M's role after the refused post", communityRole(t, st, ca, m), "")
		res = p.publishHTTP(t, owner, "a.example", add)
		eq(t, "the author's NIP-98", res.Accepted, true)
		eq(t, "M's role", communityRole(t, st, ca, m), channel.RoleAdmin)
	})
}
