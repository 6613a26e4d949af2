package buzz

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/rawclient"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

// Moderation over real WebSockets (and HTTP, moderation_http_test.go), on
// both backends: bans, timeouts and their ends, the moderator role's
// limits, reports visible only to their reporter and the community's
// moderators.

// modBackend is what the moderation tests need of a store.
type modBackend interface {
	store.Backend
	store.ChannelStore
	store.ModerationStore
	CreateCommunity(ctx context.Context, n store.NewCommunity) (store.Community, bool, error)
	AddHostAlias(ctx context.Context, alias string, id tenant.CommunityID) error
}

// modRelay is a relay on one backend with a clock the test moves.
type modRelay struct {
	relay  *Relay
	store  modBackend
	url    string
	host   string // the server's own host (a community without owner)
	offset atomic.Int64
}

func (m *modRelay) now() time.Time { return time.Now().Add(time.Duration(m.offset.Load())) }

// advance moves the relay's clock forward.
func (m *modRelay) advance(d time.Duration) { m.offset.Add(int64(d)) }

// eachBackend runs fn on an embedded and on a PostgreSQL relay.
func eachBackend(t *testing.T, fn func(t *testing.T, m *modRelay), opts ...Option) {
	t.Run("embedded", func(t *testing.T) {
		fn(t, newModRelay(t, openEmbedded(t, t.TempDir()), opts...))
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		fn(t, newModRelay(t, st, opts...))
	})
}

func newModRelay(t *testing.T, st modBackend, opts ...Option) *modRelay {
	t.Helper()
	m := &modRelay{store: st}
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	m.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	var err error
	if m.host, err = tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(context.Background(), m.host); err != nil {
		t.Fatal(err)
	}
	all := append([]Option{WithStore(st), WithDirectory(st), WithChannels(), WithLogger(quietLogger()), WithClock(m.now)}, opts...)
	if m.relay, err = New(all...); err != nil {
		t.Fatal(err)
	}
	h = m.relay
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.relay.Shutdown(ctx)
		srv.Close()
	})
	return m
}

// dial connects with Host host.
func (m *modRelay) dial(t *testing.T, host string) *rawClient {
	t.Helper()
	return &rawClient{rawclient.Dial(t, nil, m.url, http.Header{"Host": {host}}, "ws://"+host)}
}

// authed dials host and authenticates as s (signed on the relay's clock).
func (m *modRelay) authed(t *testing.T, host string, s *signer) *rawClient {
	t.Helper()
	c := m.dial(t, host)
	if ok := c.Auth(m.authEvent(c, s, host)); !ok.OK {
		t.Fatalf("AUTH as %s: %s", s.Pub()[:8], ok.Message)
	}
	return c
}

func (m *modRelay) authEvent(c *rawClient, s *signer, host string) *nostr.Event {
	return s.Event(nostr.KindClientAuth, m.now().Unix(), "", nostr.Tag{"challenge", c.Challenge}, nostr.Tag{"relay", "ws://" + host})
}

// cmd signs a command on the relay's clock.
func (m *modRelay) cmd(s *signer, kind int, tags ...nostr.Tag) *nostr.Event {
	return s.Event(kind, m.now().Unix(), "", tags...)
}

// owned provisions host with owner.
func (m *modRelay) owned(t *testing.T, host string, owner *signer) tenant.CommunityID {
	t.Helper()
	c, _, err := m.store.CreateCommunity(context.Background(), store.NewCommunity{Host: host, OwnerPubKey: owner.Pub()})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func expTag(t time.Time) nostr.Tag { return nostr.Tag{"expiration", strconv.FormatInt(t.Unix(), 10)} }

func TestModerationBansAndTimeouts(t *testing.T) {
	eachBackend(t, func(t *testing.T, m *modRelay) {
		const host = "mod.example"
		owner, adam, mia, bob := newSigner(t), newSigner(t), newSigner(t), newSigner(t)
		m.owned(t, host, owner)
		oc := m.authed(t, host, owner)
		eq(t, "owner makes adam admin", oc.Publish(m.cmd(owner, nostr.KindAddCommunityMember, nostr.Tag{"p", adam.Pub(), "admin"})).OK, true)
		eq(t, "owner makes mia moderator (9032)", oc.Publish(m.cmd(owner, nostr.KindChangeCommunityRole, nostr.Tag{"p", mia.Pub()}, nostr.Tag{"role", "moderator"})).OK, true)

		// The moderator's limits: no administration, no moderating up.
		mc := m.authed(t, host, mia)
		eq(t, "moderator adds a member", mc.Publish(m.cmd(mia, nostr.KindAddCommunityMember, nostr.Tag{"p", bob.Pub()})).Message, ingest.MsgCommunityRole)
		eq(t, "moderator changes a role", mc.Publish(m.cmd(mia, nostr.KindChangeCommunityRole, nostr.Tag{"p", bob.Pub()}, nostr.Tag{"role", "moderator"})).Message, ingest.MsgCommunityRole)
		for who, s := range map[string]*signer{"the admin": adam, "the owner": owner, "itself": mia} {
			eq(t, "moderator bans "+who, mc.Publish(m.cmd(mia, nostr.KindBan, nostr.Tag{"p", s.Pub()})).Message, ingest.MsgModerationRole)
		}
		eq(t, "a member bans", m.authed(t, host, bob).Publish(m.cmd(bob, nostr.KindBan, nostr.Tag{"p", mia.Pub()})).Message, ingest.MsgModerationRole)
		eq(t, "admin bans the moderator", m.authed(t, host, adam).Publish(m.cmd(adam, nostr.KindTimeout, nostr.Tag{"p", mia.Pub()}, expTag(m.now().Add(time.Hour)))).OK, true)
		eq(t, "admin lifts it", m.authed(t, host, adam).Publish(m.cmd(adam, nostr.KindUntimeout, nostr.Tag{"p", mia.Pub()})).OK, true)

		// Ban: bob's live subscription ends, his EVENTs and AUTH are refused.
		bc := m.authed(t, host, bob)
		bc.Subscribe("feed", nostr.Filter{Kinds: []int{1}})
		ban := m.cmd(mia, nostr.KindBan, nostr.Tag{"p", bob.Pub()}, nostr.Tag{"reason", "spam"})
		eq(t, "moderator bans bob", mc.Publish(ban).OK, true)
		eq(t, "bob's subscription", bc.ExpectClosed("feed", "blocked:"), "blocked: you are banned from this community")
		eq(t, "bob's EVENT", bc.Publish(bob.Event(1, now(), "hi")).Message, "blocked: you are banned from this community")
		bc.SendRaw(nostr.AppendReq(nil, "again", nostr.Filter{Kinds: []int{1}}))
		eq(t, "bob's REQ", bc.ExpectClosed("again", "blocked:"), "blocked: you are banned from this community")
		nc := m.dial(t, host)
		eq(t, "bob's AUTH", nc.Auth(m.authEvent(nc, bob, host)).Message, "blocked: you are banned from this community")
		if got := oc.Req("cmds", nostr.Filter{Kinds: []int{nostr.KindBan}}); len(got) != 0 {
			t.Fatalf("a ban command was stored: %d events", len(got))
		}
		// A ban in this community means nothing in another.
		eq(t, "bob elsewhere", m.authed(t, m.host, bob).Publish(bob.Event(1, now(), "elsewhere")).OK, true)

		eq(t, "unban", mc.Publish(m.cmd(mia, nostr.KindUnban, nostr.Tag{"p", bob.Pub()})).OK, true)
		bc = m.authed(t, host, bob)
		eq(t, "bob after unban", bc.Publish(bob.Event(1, now(), "back")).OK, true)
		eq(t, "unban again", mc.Publish(m.cmd(mia, nostr.KindUnban, nostr.Tag{"p", bob.Pub()}, nostr.Tag{"reason", "again"})).Message, ingest.MsgNotBanned)

		// Timeout: writes refused with the end time, reads still allowed,
		// over once the end passes.
		end := m.now().Add(10 * time.Minute)
		eq(t, "timeout", mc.Publish(m.cmd(mia, nostr.KindTimeout, nostr.Tag{"p", bob.Pub()}, expTag(end))).OK, true)
		eq(t, "bob timed out", bc.Publish(bob.Event(1, now(), "x")).Message,
			"blocked: you are timed out in this community until "+end.UTC().Truncate(time.Second).Format(time.RFC3339))
		bc.Req("read", nostr.Filter{Kinds: []int{1}, Limit: 1, LimitSet: true})
		m.advance(10*time.Minute + time.Second)
		eq(t, "bob after the timeout ended", bc.Publish(bob.Event(1, now(), "y")).OK, true)
		eq(t, "untimeout of an ended timeout", mc.Publish(m.cmd(mia, nostr.KindUntimeout, nostr.Tag{"p", bob.Pub()})).Message, ingest.MsgNotTimedOut)
		eq(t, "timeout again", mc.Publish(m.cmd(mia, nostr.KindTimeout, nostr.Tag{"p", bob.Pub()}, expTag(m.now().Add(time.Hour)))).OK, true)
		eq(t, "untimeout", mc.Publish(m.cmd(mia, nostr.KindUntimeout, nostr.Tag{"p", bob.Pub()})).OK, true)
		eq(t, "bob after untimeout", bc.Publish(bob.Event(1, now(), "z")).OK, true)

		// A ban with an end.
		eq(t, "ban for an hour", mc.Publish(m.cmd(mia, nostr.KindBan, nostr.Tag{"p", bob.Pub()}, expTag(m.now().Add(time.Hour)))).OK, true)
		mustPrefix(t, "bob banned for an hour", bc.Publish(bob.Event(1, now(), "w")).Message, "blocked: you are banned from this community until ")
		m.advance(time.Hour + time.Second)
		eq(t, "bob after the ban ended", bc.Publish(bob.Event(1, now(), "v")).OK, true)

		// The expiration of a command is the restriction's end, never a
		// NIP-40 expiry: an end in the past is the command's own error.
		eq(t, "timeout ending in the past", mc.Publish(m.cmd(mia, nostr.KindTimeout, nostr.Tag{"p", bob.Pub()}, expTag(m.now().Add(-time.Minute)))).Message,
			"invalid: expiration (the end of the restriction) has already passed")
		eq(t, "timeout without end", mc.Publish(m.cmd(mia, nostr.KindTimeout, nostr.Tag{"p", bob.Pub()})).Message, "invalid: a expiration tag is required")
		stale := mia.Event(nostr.KindBan, m.now().Add(-10*time.Minute).Unix(), "", nostr.Tag{"p", bob.Pub()})
		eq(t, "stale command", mc.Publish(stale).Message, ingest.MsgCommandStale)
		eq(t, "command with h", mc.Publish(m.cmd(mia, nostr.KindBan, nostr.Tag{"p", bob.Pub()}, nostr.Tag{"h", "x"})).Message, channel.MsgCommunityCommandH)
	})
}

func TestModerationReports(t *testing.T) {
	eachBackend(t, func(t *testing.T, m *modRelay) {
		const host = "rep.example"
		owner, mia, alice, mallory := newSigner(t), newSigner(t), newSigner(t), newSigner(t)
		m.owned(t, host, owner)
		eq(t, "moderator", m.authed(t, host, owner).Publish(m.cmd(owner, nostr.KindChangeCommunityRole, nostr.Tag{"p", mia.Pub(), "moderator"})).OK, true)

		mc := m.authed(t, host, mallory)
		note := mallory.Event(1, now(), "offensive")
		mc.MustAccept(note)
		// Mallory listens for anything about her, reports included.
		mc.Subscribe("me", nostr.Filter{Tags: map[string][]string{"p": {mallory.Pub()}}}, nostr.Filter{Kinds: []int{nostr.KindReport}})

		ac := m.authed(t, host, alice)
		rep := alice.Event(nostr.KindReport, now(), "rude", nostr.Tag{"p", mallory.Pub()}, nostr.Tag{"e", note.ID, "profanity"})
		eq(t, "report", ac.Publish(rep).OK, true)
		eq(t, "report again", ac.Publish(rep).Message, ingest.MsgDuplicate)
		eq(t, "report of an unknown event", ac.Publish(alice.Event(nostr.KindReport, now(), "", nostr.Tag{"p", mallory.Pub()}, nostr.Tag{"e", strings.Repeat("ab", 32), "spam"})).Message, ingest.MsgReportTarget)
		mustPrefix(t, "report type", ac.Publish(alice.Event(nostr.KindReport, now(), "", nostr.Tag{"p", mallory.Pub(), "annoying"})).Message, "invalid:")
		pubRep := alice.Event(nostr.KindReport, now()+1, "", nostr.Tag{"p", mallory.Pub(), "spam"})
		eq(t, "report of a pubkey", ac.Publish(pubRep).OK, true)

		reportFilter := nostr.Filter{Kinds: []int{nostr.KindReport}}
		if got := mc.Req("q", reportFilter, nostr.Filter{Tags: map[string][]string{"p": {mallory.Pub()}}}); len(got) != 0 {
			t.Fatalf("the reported user reads %d reports", len(got))
		}
		if got := m.dial(t, host).Req("anon", reportFilter); len(got) != 0 {
			t.Fatalf("an unauthenticated reader reads %d reports", len(got))
		}
		eq(t, "COUNT of reports", countOf(t, ac, "n", reportFilter), int64(0))
		if got := ids(ac.Req("mine", reportFilter)); len(got) != 2 || got[0] != pubRep.ID || got[1] != rep.ID {
			t.Fatalf("alice's reports = %v", got)
		}
		if got := ac.Req("lim", nostr.Filter{Kinds: []int{1, nostr.KindReport}, Limit: 1, LimitSet: true}); len(got) != 1 || got[0].ID != pubRep.ID {
			t.Fatalf("merged with notes, limit 1 = %v", ids(got))
		}
		moderator := m.authed(t, host, mia)
		if got := moderator.Req("all", reportFilter); len(got) != 2 {
			t.Fatalf("the moderator reads %d reports", len(got))
		}
		// Another community sees nothing of them, and cannot resolve them.
		other := m.authed(t, m.host, alice)
		if got := other.Req("x", reportFilter); len(got) != 0 {
			t.Fatalf("another community returns %d reports", len(got))
		}
		resolve := func(c *rawClient, s *signer, id, status string) *nostr.OKMessage {
			return c.Publish(m.cmd(s, nostr.KindResolveReport, nostr.Tag{"e", id}, nostr.Tag{"status", status}))
		}
		eq(t, "a member resolves", resolve(ac, alice, rep.ID, "dismissed").Message, ingest.MsgModerationRole)
		eq(t, "resolve from another community", resolve(m.authed(t, m.host, mia), mia, rep.ID, "resolved").Message, ingest.MsgModerationRole)
		eq(t, "escalate", resolve(moderator, mia, rep.ID, "escalated").OK, true)
		eq(t, "resolve", resolve(moderator, mia, rep.ID, "resolved").OK, true)
		eq(t, "resolve again", resolve(moderator, mia, rep.ID, "dismissed").Message, ingest.MsgReportClosed)
		eq(t, "resolve an unknown report", resolve(moderator, mia, strings.Repeat("cd", 32), "resolved").Message, ingest.MsgNoReport)
		mustPrefix(t, "bad status", resolve(moderator, mia, rep.ID, "done").Message, "invalid:")
		eq(t, "NIP-11 lists NIP-56", slices.Contains(m.relay.NIP11Document().SupportedNIPs, 56), true)
		// Nothing of all this reached Mallory live: the next thing she
		// hears of is a note naming her.
		sentinel := alice.Event(1, now(), "sentinel", nostr.Tag{"p", mallory.Pub()})
		ac.MustAccept(sentinel)
		mc.ExpectNext("me", sentinel.ID)
	})
}

// failingRestrictions is a store whose restriction lookups fail.
type failingRestrictions struct{ *embedded.Store }

func (failingRestrictions) PubkeyRestrictions(context.Context, tenant.CommunityID, string, time.Time) ([]store.Restriction, error) {
	return nil, errors.New("restrictions unavailable")
}

func TestModerationFailsClosed(t *testing.T) {
	st := openEmbedded(t, t.TempDir())
	m := newModRelay(t, failingRestrictions{st})
	alice := newSigner(t)
	c := m.dial(t, m.host)
	eq(t, "EVENT when restrictions cannot be read", c.Publish(alice.Event(1, now(), "x")).Message, ingest.MsgModerationInternal)
	eq(t, "AUTH when restrictions cannot be read", c.Auth(m.authEvent(c, alice, m.host)).Message, ingest.MsgModerationInternal)
}

func TestModerationBeforeMembership(t *testing.T) {
	eachBackend(t, func(t *testing.T, m *modRelay) {
		const host = "closed.example"
		owner, stranger := newSigner(t), newSigner(t)
		id := m.owned(t, host, owner)
		if err := m.store.SetCommunityAccess(context.Background(), id, channel.AccessMembers); err != nil {
			t.Fatal(err)
		}
		sc := m.authed(t, host, stranger)
		eq(t, "a non-member before the ban", sc.Publish(stranger.Event(1, now(), "x")).Message, channel.MsgMembersOnly)
		eq(t, "owner bans a non-member", m.authed(t, host, owner).Publish(m.cmd(owner, nostr.KindBan, nostr.Tag{"p", stranger.Pub()})).OK, true)
		eq(t, "the ban is checked first", sc.Publish(stranger.Event(1, now(), "y")).Message, "blocked: you are banned from this community")
	})
}
