package buzz_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip70"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// nip11 reads the NIP-11 document of the relay's community.
func nip11(t *testing.T, r *relaytest.Relay) (self string, nips []int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.Srv.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Self string `json:"self"`
		NIPs []int  `json:"supported_nips"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc.Self, doc.NIPs
}

// read subscribes with f and returns the stored events, or the CLOSED
// reason; with live, the subscription stays open and is returned.
func read(t *testing.T, c *relaytest.Client, f gonostr.Filter, live bool) ([]*gonostr.Event, string, *gonostr.Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := c.Conn.Subscribe(context.Background(), gonostr.Filters{f})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*gonostr.Event
	for {
		select {
		case ev := <-sub.Events:
			evs = append(evs, ev)
		case <-sub.EndOfStoredEvents:
			if !live {
				sub.Unsub()
			}
			return evs, "", sub
		case reason := <-sub.ClosedReason:
			return nil, reason, nil
		case <-ctx.Done():
			t.Fatal("no EOSE nor CLOSED")
		}
	}
}

// nextTwo returns the next two live events of sub, ordered by kind
// (go-nostr hands a subscription's events over in no set order; the
// announcements are ordered by created_at).
func nextTwo(t *testing.T, sub *gonostr.Subscription) (*gonostr.Event, *gonostr.Event) {
	t.Helper()
	var evs []*gonostr.Event
	for len(evs) < 2 {
		select {
		case ev := <-sub.Events:
			evs = append(evs, ev)
		case <-time.After(10 * time.Second):
			t.Fatal("no live event")
		}
	}
	if evs[0].Kind > evs[1].Kind {
		evs[0], evs[1] = evs[1], evs[0]
	}
	return evs[0], evs[1]
}

var announcementKinds = []int{nostr.KindMembershipAdded, nostr.KindMembershipRemoved, nostr.KindMembershipList}

// checkAnnouncement fails t unless ev is a relay-signed, protected
// announcement of kind at created_at naming who (8000/8001) or listing
// exactly members (13534).
func checkAnnouncement(t *testing.T, ev *gonostr.Event, self string, kind int, at int64, who string, members ...string) {
	t.Helper()
	if ev.Kind != kind || ev.PubKey != self || int64(ev.CreatedAt) != at || !nip70.IsProtected(*ev) {
		t.Fatalf("announcement %d by %s at %d protected %v; want kind %d by the community key %s at %d, protected",
			ev.Kind, ev.PubKey, ev.CreatedAt, nip70.IsProtected(*ev), kind, self, at)
	}
	if ok, err := ev.CheckSignature(); !ok || err != nil {
		t.Fatalf("announcement signature: %v %v", ok, err)
	}
	if kind != nostr.KindMembershipList {
		if p := ev.Tags.GetFirst([]string{"p", ""}); p == nil || (*p)[1] != who {
			t.Fatalf("announcement names %v, want %s", p, who)
		}
		return
	}
	var got []string
	for _, tag := range ev.Tags {
		if len(tag) >= 3 && tag[0] == "member" {
			got = append(got, tag[1]+"/"+tag[2])
		}
	}
	if !slices.Equal(got, members) {
		t.Fatalf("13534 lists %v, want %v", got, members)
	}
}

// TestRelayMembership drives NIP-43 as clients do, on both backends: with
// relay membership required, a non-member is refused reads and writes
// (auth-required before AUTH), an admin's 9030 makes it a member and is
// announced (8000, 13534) signed by the community's key, its 28936 leave
// request (Buzz's ±120 s window, NIP-70 tag) removes it and is announced
// (8001, a new 13534), and nothing of it reaches another community.
func TestRelayMembership(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		at := time.Now().Truncate(time.Second)
		r := relaytest.Serve(t, st, buzz.WithRelayMembershipRequired(), buzz.WithClock(func() time.Time { return at }))
		ctx := context.Background()
		cid, _, err := st.EnsureCommunity(ctx, r.Host)
		if err != nil {
			t.Fatal(err)
		}
		other, _, err := st.EnsureCommunity(ctx, "other.example")
		if err != nil {
			t.Fatal(err)
		}
		admin, bob := relaytest.NewUser(), relaytest.NewUser()
		if err := st.PutCommunityMember(ctx, cid, admin.PK, channel.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		self, nips := nip11(t, r)
		if !slices.Contains(nips, 43) || len(self) != 64 {
			t.Fatalf("NIP-11: self %q, supported_nips %v; want 43 listed and a self key", self, nips)
		}
		note := gonostr.Event{Kind: 1, Content: "hello"}
		everything := gonostr.Filter{Kinds: []int{1}}

		// Before AUTH: auth-required; authenticated non-member: Buzz's text.
		anon := r.Connect(bob, false)
		if _, reason, _ := read(t, anon, everything, false); !strings.HasPrefix(reason, "auth-required:") {
			t.Fatalf("unauthenticated REQ: CLOSED %q", reason)
		}
		if msg := anon.Publish(note); !strings.HasPrefix(msg, "auth-required:") {
			t.Fatalf("unauthenticated EVENT: %q", msg)
		}
		bc := r.Connect(bob, true)
		if _, reason, _ := read(t, bc, everything, false); reason != channel.MsgMembersOnly {
			t.Fatalf("non-member REQ: CLOSED %q, want %q", reason, channel.MsgMembersOnly)
		}
		relaytest.Eq(t, "non-member EVENT", bc.Publish(note), channel.MsgMembersOnly)

		ac := r.Connect(admin, true)
		_, reason, live := read(t, ac, gonostr.Filter{Kinds: announcementKinds}, true)
		if reason != "" {
			t.Fatalf("admin's subscription: %q", reason)
		}
		ac.Must("9030", gonostr.Event{Kind: nostr.KindAddCommunityMember, Tags: gonostr.Tags{{"p", bob.PK}}, CreatedAt: gonostr.Timestamp(at.Unix())})
		list := []string{admin.PK + "/admin", bob.PK + "/member"}
		if bob.PK < admin.PK {
			list = []string{bob.PK + "/member", admin.PK + "/admin"}
		}
		delta, snapshot := nextTwo(t, live)
		checkAnnouncement(t, delta, self, nostr.KindMembershipAdded, at.Unix(), bob.PK)
		checkAnnouncement(t, snapshot, self, nostr.KindMembershipList, at.Unix(), "", list...)

		// A member reads and writes.
		if _, reason, _ := read(t, bc, everything, false); reason != "" {
			t.Fatalf("member REQ: CLOSED %q", reason)
		}
		bc.Must("member's note", note)

		// The leave request: Buzz's window and tag, then the leave.
		leave := func(created time.Time, tags gonostr.Tags) gonostr.Event {
			return gonostr.Event{Kind: nostr.KindLeaveRelay, CreatedAt: gonostr.Timestamp(created.Unix()), Tags: tags}
		}
		relaytest.Eq(t, "stale leave", bc.Publish(leave(at.Add(-200*time.Second), gonostr.Tags{{"-"}})),
			"invalid: leave request timestamp out of range (delta=-200s, max ±120s)")
		relaytest.Eq(t, "unprotected leave", bc.Publish(leave(at, gonostr.Tags{})), `invalid: leave request must include NIP-70 protected event tag ["-"]`)
		if _, reason, _ := read(t, bc, everything, false); reason != "" {
			t.Fatalf("refused leaves removed the member: CLOSED %q", reason)
		}
		bc.Must("leave", leave(at.Add(-60*time.Second), gonostr.Tags{{"-"}}))
		delta, snapshot = nextTwo(t, live)
		checkAnnouncement(t, delta, self, nostr.KindMembershipRemoved, at.Unix()+1, bob.PK)
		checkAnnouncement(t, snapshot, self, nostr.KindMembershipList, at.Unix()+1, "", admin.PK+"/admin")
		if _, reason, _ := read(t, bc, everything, false); reason != channel.MsgMembersOnly {
			t.Fatalf("REQ after leaving: CLOSED %q", reason)
		}
		relaytest.Eq(t, "EVENT after leaving", bc.Publish(note), channel.MsgMembersOnly)

		// Stored: both deltas, and one list, the newest.
		stored, reason, _ := read(t, ac, gonostr.Filter{Kinds: announcementKinds}, false)
		if reason != "" {
			t.Fatal(reason)
		}
		kinds := map[int]int{}
		for _, ev := range stored {
			kinds[ev.Kind]++
			if ev.Kind == nostr.KindMembershipList {
				checkAnnouncement(t, ev, self, nostr.KindMembershipList, at.Unix()+1, "", admin.PK+"/admin")
			}
		}
		if kinds[nostr.KindMembershipAdded] != 1 || kinds[nostr.KindMembershipRemoved] != 1 || kinds[nostr.KindMembershipList] != 1 {
			t.Fatalf("stored announcements by kind: %v", kinds)
		}
		// Clients cannot publish them.
		relaytest.Eq(t, "client 13534", ac.Publish(gonostr.Event{Kind: nostr.KindMembershipList, Tags: gonostr.Tags{{"-"}}}),
			"restricted: relay membership events are relay-signed only")
		// Another community holds none of them.
		n := 0
		for _, err := range st.Query(ctx, other, nostr.Filter{Kinds: announcementKinds}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		relaytest.Eq(t, "announcements in another community", n, 0)

		// The owner cannot leave.
		owner := relaytest.NewUser()
		tr, ok := st.(interface {
			TransferCommunity(ctx context.Context, id [16]byte, newOwner, expectedOwner string, maxPerOwner int) (store.Community, string, bool, error)
		})
		if !ok {
			t.Fatal("the backend cannot transfer a community")
		}
		if _, _, _, err := tr.TransferCommunity(ctx, cid.UUID(), owner.PK, "", 0); err != nil {
			t.Fatal(err)
		}
		relaytest.Eq(t, "owner's leave", r.Connect(owner, true).Publish(leave(at, gonostr.Tags{{"-"}})), "invalid: relay owner cannot leave")
	})
}

// TestRelayMembershipNotAdvertised: NIP-11 lists NIP-43 only when
// membership is required.
func TestRelayMembershipNotAdvertised(t *testing.T) {
	r := relaytest.Serve(t, relaytest.Embedded(t))
	if _, nips := nip11(t, r); slices.Contains(nips, 43) {
		t.Fatalf("supported_nips %v lists 43 on an open relay", nips)
	}
	if _, err := buzz.New(buzz.WithStore(relaytest.Embedded(t)), buzz.WithDirectory(relaytest.Embedded(t)),
		buzz.WithRelayMembershipRequired()); err == nil {
		t.Fatal("WithRelayMembershipRequired without channels accepted")
	}
}

// TestWorkspaceProfile: Buzz's 9033 sets the community's icon, served in
// its NIP-11 document, from its owner or an admin only; refused input
// changes nothing; nothing reaches another community.
func TestWorkspaceProfile(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		r := relaytest.Serve(t, st)
		ctx := context.Background()
		cid, _, err := st.EnsureCommunity(ctx, r.Host)
		if err != nil {
			t.Fatal(err)
		}
		other, _, err := st.EnsureCommunity(ctx, "other.example")
		if err != nil {
			t.Fatal(err)
		}
		admin, member := relaytest.NewUser(), relaytest.NewUser()
		if err := st.PutCommunityMember(ctx, cid, admin.PK, channel.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		if err := st.PutCommunityMember(ctx, cid, member.PK, channel.RoleMember); err != nil {
			t.Fatal(err)
		}
		icon := func() string {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, r.Srv.URL+"/", nil)
			req.Header.Set("Accept", "application/nostr+json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc struct {
				Icon string `json:"icon"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			return doc.Icon
		}
		set := func(u string) gonostr.Event {
			return gonostr.Event{Kind: nostr.KindWorkspaceProfile, Tags: gonostr.Tags{{"icon", u}}}
		}
		ac, mc := r.Connect(admin, true), r.Connect(member, true)
		relaytest.Eq(t, "member's 9033", mc.Publish(set("https://example.com/m.png")), "invalid: actor not authorized: must be admin or owner")
		relaytest.Eq(t, "data URL", ac.Publish(set("data:image/png;base64,AAAA")), "invalid: icon must be an http(s) URL on this relay")
		relaytest.Eq(t, "thread policy", ac.Publish(gonostr.Event{Kind: nostr.KindWorkspaceProfile, Tags: gonostr.Tags{{"thread_replies_in_channel", "true"}}}),
			"invalid: thread_replies_in_channel is not supported on this relay")
		relaytest.Eq(t, "icon after refusals", icon(), "")
		ac.Must("9033", set("https://example.com/a.png"))
		relaytest.Eq(t, "icon", icon(), "https://example.com/a.png")
		if p, err := st.(store.ProfileStore).CommunityProfile(ctx, other); err != nil || p.Icon != "" {
			t.Fatalf("other community's profile: %+v %v", p, err)
		}
		// Executed, never stored; an empty icon clears it.
		evs, reason, _ := read(t, ac, gonostr.Filter{Kinds: []int{nostr.KindWorkspaceProfile}}, false)
		if reason != "" || len(evs) != 0 {
			t.Fatalf("stored 9033s: %d %q", len(evs), reason)
		}
		ac.Must("clear", gonostr.Event{Kind: nostr.KindWorkspaceProfile})
		relaytest.Eq(t, "icon after clearing", icon(), "")

		// In an open community a non-member may ask to leave: Buzz's answer.
		relaytest.Eq(t, "non-member's leave", r.Connect(relaytest.NewUser(), true).Publish(
			gonostr.Event{Kind: nostr.KindLeaveRelay, Tags: gonostr.Tags{{"-"}}}), "invalid: you are not a relay member")
	})
}
