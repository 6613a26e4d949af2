package buzz

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip11"
	"github.com/nbd-wtf/go-nostr/nip29"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// NIP-29 interop: a standard group client (go-nostr and its nip29 package)
// drives every group operation against the relay, on both backends, the way
// a client developer would: group state found by the NIP-11 key, ids and
// flags as NIP-29 spells them.

// nip29Relay is one relay on a backend, served on its own address, whose
// address is a mapped host (so go-nostr's AUTH relay tag names it).
type nip29Relay struct {
	srv  *httptest.Server
	url  string
	host string
	// other is a second address of the same relay, mapped to another
	// community.
	other               *httptest.Server
	otherURL, otherHost string
}

func startNIP29Relay(t *testing.T, b testBackend) *nip29Relay {
	t.Helper()
	ctx := context.Background()
	st := b.open(t)
	var h http.Handler
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
	srv, other := httptest.NewServer(handler), httptest.NewServer(handler)
	host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	otherHost, err := tenant.NormalizeHost(strings.TrimPrefix(other.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	for _, hs := range []string{host, otherHost} {
		if _, _, err := st.EnsureCommunity(ctx, hs); err != nil {
			t.Fatal(err)
		}
	}
	rel, err := New(WithStore(st), WithDirectory(st), WithChannels(), WithLogger(quietLogger()), WithRelayKey(testMaster))
	if err != nil {
		t.Fatal(err)
	}
	h = rel
	// go-nostr's connections keep goroutines of their own after the test;
	// the relay and server stay up for them (as testRelay.leak does).
	return &nip29Relay{srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http"), host: host,
		other: other, otherURL: "ws" + strings.TrimPrefix(other.URL, "http"), otherHost: otherHost}
}

// nip11 returns the NIP-11 document served for host, with "self".
func (r *nip29Relay) nip11(t *testing.T, host string) (nip11.RelayInformationDocument, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL, nil)
	req.Host = host
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	var doc nip11.RelayInformationDocument
	var self struct {
		Self string `json:"self"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(raw, &self)
	return doc, self.Self
}

// nip29User is one go-nostr connection of one key.
type nip29User struct {
	t   *testing.T
	sk  string
	pk  string
	rl  *gonostr.Relay
	seq int
}

func (r *nip29Relay) connect(t *testing.T, url string, auth bool) *nip29User {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rl := gonostr.NewRelay(context.Background(), url)
	if err := rl.Connect(ctx); err != nil {
		t.Fatalf("connect: %v", err)
	}
	sk := gonostr.GeneratePrivateKey()
	pk, _ := gonostr.GetPublicKey(sk)
	u := &nip29User{t: t, sk: sk, pk: pk, rl: rl}
	if auth {
		// The relay sends its challenge as the connection opens, before
		// anything else. go-nostr's read loop stores it unsynchronized, so
		// a round trip first (its answer comes through the same loop, over
		// a channel) orders that write before Auth reads it: calling Auth
		// while the challenge may still be arriving is a data race.
		if _, err := rl.QuerySync(ctx, gonostr.Filter{Kinds: []int{0}, Limit: 1}); err != nil {
			t.Fatalf("round trip before AUTH: %v", err)
		}
		if err := rl.Auth(ctx, func(e *gonostr.Event) error { return e.Sign(sk) }); err != nil {
			t.Fatalf("AUTH: %v", err)
		}
	}
	return u
}

// publish signs and publishes an event with an h tag for group gid;
// it returns "" when accepted, else the relay's message.
func (u *nip29User) publish(kind int, gid string, tags ...gonostr.Tag) string {
	u.t.Helper()
	msg, _ := u.publishAt(gonostr.Now(), kind, gid, tags...)
	return msg
}

// publishAt is publish with the given created_at; it also returns the
// event's id.
func (u *nip29User) publishAt(at gonostr.Timestamp, kind int, gid string, tags ...gonostr.Tag) (string, string) {
	u.t.Helper()
	u.seq++ // distinct events within one second
	ev := gonostr.Event{Kind: kind, CreatedAt: at, Content: strconv.Itoa(u.seq), Tags: append(gonostr.Tags{{"h", gid}}, tags...)}
	if err := ev.Sign(u.sk); err != nil {
		u.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := u.rl.Publish(ctx, ev); err != nil {
		return strings.TrimPrefix(err.Error(), "msg: "), ev.ID
	}
	return "", ev.ID
}

func (u *nip29User) must(what string, kind int, gid string, tags ...gonostr.Tag) {
	u.t.Helper()
	if msg := u.publish(kind, gid, tags...); msg != "" {
		u.t.Fatalf("%s refused: %s", what, msg)
	}
}

func (u *nip29User) refused(what, prefix string, kind int, gid string, tags ...gonostr.Tag) {
	u.t.Helper()
	if msg := u.publish(kind, gid, tags...); !strings.HasPrefix(msg, prefix) {
		u.t.Fatalf("%s: %q, want %q…", what, msg, prefix)
	}
}

func (u *nip29User) query(f gonostr.Filter) []*gonostr.Event {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs, err := u.rl.QuerySync(ctx, f)
	if err != nil {
		u.t.Fatalf("query: %v", err)
	}
	return evs
}

// loadGroup is what a NIP-29 client does: 39000–39002 of the group, by the
// relay's NIP-11 key, merged with go-nostr's nip29 package. found is false
// when the relay served no 39000.
func (u *nip29User) loadGroup(relayURL, stateKey, gid string) (g nip29.Group, meta *gonostr.Event, found bool) {
	u.t.Helper()
	g, err := nip29.NewGroup(strings.TrimPrefix(relayURL, "ws://") + "'" + gid)
	if err != nil {
		u.t.Fatal(err)
	}
	evs := u.query(gonostr.Filter{Kinds: []int{39000, 39001, 39002}, Authors: []string{stateKey}, Tags: gonostr.TagMap{"d": {gid}}})
	for _, ev := range evs {
		var err error
		switch ev.Kind {
		case 39000:
			meta, found = ev, true
			err = g.MergeInMetadataEvent(ev)
		case 39001:
			err = g.MergeInAdminsEvent(ev)
		case 39002:
			err = g.MergeInMembersEvent(ev)
		}
		if err != nil {
			u.t.Fatalf("merge %d: %v", ev.Kind, err)
		}
	}
	return g, meta, found
}

func hasTag(ev *gonostr.Event, name string) bool {
	return ev.Tags.FindWithValue(name, "") != nil || slices.ContainsFunc(ev.Tags, func(t gonostr.Tag) bool { return len(t) >= 1 && t[0] == name })
}

func TestNIP29Interop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		r := startNIP29Relay(t, b)

		// The state signer is what NIP-11 advertises for this host.
		doc, self := r.nip11(t, r.host)
		if !slices.ContainsFunc(doc.SupportedNIPs, func(n any) bool { f, ok := n.(float64); return ok && f == 29 }) {
			t.Fatalf("supported_nips = %v, want 29 listed", doc.SupportedNIPs)
		}
		key := doc.PubKey
		if key == "" || self != key || key == testMaster.PublicKey() {
			t.Fatalf("NIP-11 pubkey %q, self %q", key, self)
		}

		alice, bob, carol := r.connect(t, r.url, true), r.connect(t, r.url, true), r.connect(t, r.url, true)

		// 9007 as nostr-tools builds it: an ordinary id, no name, NIP-29
		// flags.
		const gid = "pizza-lovers"
		alice.must("create", nostr.KindCreateChannel, gid, gonostr.Tag{"private"}, gonostr.Tag{"closed"})
		alice.refused("second create", "restricted:", nostr.KindCreateChannel, gid)
		g, meta, found := alice.loadGroup(r.url, key, gid)
		if !found || !g.Private || !g.Closed || g.Name != gid || !hasTag(meta, "restricted") || hasTag(meta, "hidden") {
			t.Fatalf("created group %+v, 39000 %v", g, meta)
		}
		if _, ok := g.Members[alice.pk]; !ok {
			t.Fatalf("creator not listed: %v", g.Members)
		}
		// Private but not hidden: non-members find the group.
		if _, _, found := bob.loadGroup(r.url, key, gid); !found {
			t.Fatal("a non-member cannot find a private, visible group")
		}
		// Private: members only read; restricted: members only post;
		// closed: no join.
		alice.must("post", nostr.KindChatMessage, gid)
		if evs := bob.query(gonostr.Filter{Kinds: []int{9}, Tags: gonostr.TagMap{"h": {gid}}}); len(evs) != 0 {
			t.Fatalf("a non-member read %d messages of a private group", len(evs))
		}
		bob.refused("non-member post", "restricted:", nostr.KindChatMessage, gid)
		bob.refused("join closed", "restricted:", nostr.KindJoinRequest, gid)

		// 9002: public, open, restricted.
		alice.must("edit", nostr.KindEditMetadata, gid, gonostr.Tag{"public"}, gonostr.Tag{"open"}, gonostr.Tag{"restricted"}, gonostr.Tag{"name", "Pizza"})
		g, meta, _ = bob.loadGroup(r.url, key, gid)
		if g.Private || g.Closed || g.Name != "Pizza" || !hasTag(meta, "restricted") {
			t.Fatalf("edited group %+v, 39000 %v", g, meta)
		}
		if evs := bob.query(gonostr.Filter{Kinds: []int{9}, Tags: gonostr.TagMap{"h": {gid}}}); len(evs) != 1 {
			t.Fatalf("public group: a non-member read %d messages, want 1", len(evs))
		}
		bob.refused("non-member post in restricted", "restricted:", nostr.KindChatMessage, gid)
		bob.must("join", nostr.KindJoinRequest, gid)
		// The relay records the accepted join as its own 9000.
		if evs := bob.query(gonostr.Filter{Kinds: []int{9000}, Authors: []string{key}, Tags: gonostr.TagMap{"h": {gid}, "p": {bob.pk}}}); len(evs) != 1 {
			t.Fatalf("relay 9000 after join: %d events", len(evs))
		}
		bob.refused("repeat join", "duplicate:", nostr.KindJoinRequest, gid)
		bob.must("member post", nostr.KindChatMessage, gid)

		// Hidden needs private here: refused, never dropped.
		alice.refused("hidden public", "restricted:", nostr.KindEditMetadata, gid, gonostr.Tag{"hidden"})
		alice.must("private hidden", nostr.KindEditMetadata, gid, gonostr.Tag{"private"}, gonostr.Tag{"hidden"})
		if g, meta, found := bob.loadGroup(r.url, key, gid); !found || !g.Private || !hasTag(meta, "hidden") {
			t.Fatalf("member view of the hidden group: %+v %v", g, meta)
		}
		if _, _, found := carol.loadGroup(r.url, key, gid); found {
			t.Fatal("a non-member was served a hidden group's metadata")
		}

		// Put and remove users; leave.
		alice.must("put carol", nostr.KindPutUser, gid, gonostr.Tag{"p", carol.pk, "admin"})
		g, _, _ = carol.loadGroup(r.url, key, gid)
		if roles := g.Members[carol.pk]; len(roles) == 0 || roles[0] == nil || roles[0].Name != "admin" {
			t.Fatalf("carol's roles %v", roles)
		}
		// A role Buzz does not know is accepted and listed in 39003.
		alice.must("put bob as moderator", nostr.KindPutUser, gid, gonostr.Tag{"p", bob.pk, "moderator"})
		g, _, _ = alice.loadGroup(r.url, key, gid)
		if _, ok := g.Members[bob.pk]; !ok {
			t.Fatalf("bob not listed: %v", g.Members)
		}
		rolesEv := alice.query(gonostr.Filter{Kinds: []int{39003}, Authors: []string{key}, Tags: gonostr.TagMap{"d": {gid}}})
		if len(rolesEv) != 1 || !slices.ContainsFunc(rolesEv[0].Tags, func(t gonostr.Tag) bool { return len(t) >= 2 && t[0] == "role" && t[1] == "moderator" }) {
			t.Fatalf("39003 = %v", rolesEv)
		}
		alice.must("remove carol", nostr.KindRemoveUser, gid, gonostr.Tag{"p", carol.pk})
		bob.must("leave", nostr.KindLeaveRequest, gid)
		// The relay records the leave as its own 9001 (read by a member).
		if evs := alice.query(gonostr.Filter{Kinds: []int{9001}, Authors: []string{key}, Tags: gonostr.TagMap{"h": {gid}, "p": {bob.pk}}}); len(evs) != 1 {
			t.Fatalf("relay 9001 after leave: %d events", len(evs))
		}
		g, _, _ = alice.loadGroup(r.url, key, gid)
		if _, ok := g.Members[bob.pk]; ok {
			t.Fatalf("bob listed after leaving: %v", g.Members)
		}
		if _, ok := g.Members[carol.pk]; ok {
			t.Fatalf("carol listed after removal: %v", g.Members)
		}

		// Invite codes (9009) open a closed group to a 9021 with "code", for
		// any number of joins, until the invite is deleted (9005).
		const club = "club"
		alice.must("create club", nostr.KindCreateChannel, club, gonostr.Tag{"private"}, gonostr.Tag{"closed"})
		alice.must("create plaza", nostr.KindCreateChannel, "plaza", gonostr.Tag{"closed"})
		alice.refused("invite in a public group", "restricted:", nostr.KindCreateInvite, "plaza", gonostr.Tag{"code", "x"})
		// A public group turned private (not hidden): all its state follows
		// 39000 out of the channel, so non-members still load it.
		alice.must("plaza private", nostr.KindEditMetadata, "plaza", gonostr.Tag{"private"}, gonostr.Tag{"closed"})
		if evs := bob.query(gonostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}, Authors: []string{key}, Tags: gonostr.TagMap{"d": {"plaza"}}}); len(evs) != 4 {
			t.Fatalf("non-member sees %d state events of a private, visible group", len(evs))
		}
		carol.refused("invite by a non-member", "restricted:", nostr.KindCreateInvite, club, gonostr.Tag{"code", "x"})
		alice.must("invite", nostr.KindCreateInvite, club, gonostr.Tag{"code", "sesame"})
		bob.refused("join with a wrong code", "restricted:", nostr.KindJoinRequest, club, gonostr.Tag{"code", "guess"})
		bob.must("join with the code", nostr.KindJoinRequest, club, gonostr.Tag{"code", "sesame"})
		carol.must("second join with the code", nostr.KindJoinRequest, club, gonostr.Tag{"code", "sesame"})
		if g, _, _ := alice.loadGroup(r.url, key, club); len(g.Members) != 3 {
			t.Fatalf("club members %v", g.Members)
		}
		invites := alice.query(gonostr.Filter{Kinds: []int{9009}, Tags: gonostr.TagMap{"h": {club}}})
		if len(invites) != 1 {
			t.Fatalf("%d invites", len(invites))
		}
		alice.must("revoke the invite", nostr.KindDeleteEvent, club, gonostr.Tag{"e", invites[0].ID})
		erin := r.connect(t, r.url, true)
		erin.refused("join with a revoked code", "restricted:", nostr.KindJoinRequest, club, gonostr.Tag{"code", "sesame"})

		// Timeline integrity: late publication is refused (NIP-29), for
		// messages and for group commands; an edit older than the current
		// metadata never applies; "previous" must cite recent events.
		yearAgo := gonostr.Now() - 365*24*3600
		if msg, _ := alice.publishAt(yearAgo, nostr.KindChatMessage, club); !strings.HasPrefix(msg, "invalid:") {
			t.Fatalf("message a year old: %q", msg)
		}
		if msg, _ := alice.publishAt(gonostr.Now()-2*24*3600, nostr.KindEditMetadata, club, gonostr.Tag{"name", "old"}); !strings.HasPrefix(msg, "invalid:") {
			t.Fatalf("edit two days old: %q", msg)
		}
		alice.must("rename", nostr.KindEditMetadata, club, gonostr.Tag{"name", "Club"})
		if msg, _ := alice.publishAt(gonostr.Now()-60, nostr.KindEditMetadata, club, gonostr.Tag{"name", "older"}); !strings.HasPrefix(msg, "invalid:") {
			t.Fatalf("edit older than the current metadata: %q", msg)
		}
		if g, _, _ := bob.loadGroup(r.url, key, club); g.Name != "Club" {
			t.Fatalf("club name %q after a stale edit", g.Name)
		}
		msg, first := alice.publishAt(gonostr.Now(), nostr.KindChatMessage, club)
		if msg != "" {
			t.Fatal(msg)
		}
		msg, second := alice.publishAt(gonostr.Now(), nostr.KindChatMessage, club)
		if msg != "" {
			t.Fatal(msg)
		}
		bob.must("reply citing a recent event", nostr.KindChatMessage, club, gonostr.Tag{"previous", first[:8]})
		bob.must("reply citing two recent events in one tag", nostr.KindChatMessage, club, gonostr.Tag{"previous", first[:8], second[:10]})
		bob.refused("one tag citing a known and an unknown event", "invalid:", nostr.KindChatMessage, club, gonostr.Tag{"previous", first[:8], "00000000"})
		bob.refused("reply citing an unknown event", "invalid:", nostr.KindChatMessage, club, gonostr.Tag{"previous", "00000000"})
		bob.refused("malformed previous", "invalid:", nostr.KindChatMessage, club, gonostr.Tag{"previous", "xyz"})

		// Buzz's own clients: a UUID and visibility=private stand for all
		// four flags.
		uuid := "0b6f6d9e-2d1c-4c7e-9a55-0123456789ab"
		alice.must("buzz create", nostr.KindCreateChannel, uuid, gonostr.Tag{"name", "team"}, gonostr.Tag{"visibility", "private"})
		if _, meta, found := alice.loadGroup(r.url, key, uuid); !found || !hasTag(meta, "private") || !hasTag(meta, "closed") ||
			!hasTag(meta, "restricted") || !hasTag(meta, "hidden") {
			t.Fatalf("buzz private group 39000 %v", meta)
		}

		// Ids NIP-29 does not allow.
		alice.refused("upper-case id", "invalid:", nostr.KindCreateChannel, "Pizza")
		alice.refused("spaced id", "invalid:", nostr.KindCreateChannel, "pizza lovers")

		// The same id in another community is another group, signed by that
		// community's key, and reveals nothing of this one.
		odoc, oself := r.nip11(t, r.otherHost)
		if odoc.PubKey == key || oself != odoc.PubKey {
			t.Fatalf("other community NIP-11 %q %q (this one's %q)", odoc.PubKey, oself, key)
		}
		dave := r.connect(t, r.otherURL, true) // commands need their author authenticated
		if _, _, found := dave.loadGroup(r.url, key, gid); found {
			t.Fatal("another community served this community's group")
		}
		dave.refused("post into a foreign group", "restricted:", nostr.KindChatMessage, gid)
		dave.must("create the same id", nostr.KindCreateChannel, gid, gonostr.Tag{"name", "other pizza"})
		og, _, found := dave.loadGroup(r.otherURL, odoc.PubKey, gid)
		if !found || og.Name != "other pizza" || og.Private {
			t.Fatalf("other community's group %+v", og)
		}
		if g, _, _ := alice.loadGroup(r.url, key, gid); g.Name != "Pizza" {
			t.Fatalf("this community's group changed: %+v", g)
		}
	})
}
