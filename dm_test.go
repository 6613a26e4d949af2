package buzz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
)

// dmClient is one user of the DM test: their commands go over the HTTP
// API (POST /events, as Buzz's own CLI sends them, which returns the OK
// message), their reads and messages over a go-nostr WebSocket
// connection authenticated with NIP-42.
type dmClient struct {
	t  *testing.T
	r  *relaytest.Relay
	u  relaytest.User
	ws *relaytest.Client
}

// send signs ev as the user and posts it to host's /events; it returns the
// OK's accepted flag and message.
func (c *dmClient) send(host string, ev gonostr.Event) (bool, string) {
	c.t.Helper()
	if ev.CreatedAt == 0 {
		ev.CreatedAt = gonostr.Now()
	}
	if err := ev.Sign(c.u.SK); err != nil {
		c.t.Fatal(err)
	}
	body, _ := json.Marshal(ev)
	code, _, b := c.r.Do(&c.u, http.MethodPost, host, "", "/events", body)
	var out struct {
		Accepted bool   `json:"accepted"`
		Message  string `json:"message"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("POST /events: %d %s", code, b)
	}
	if out.Error != "" && out.Message == "" {
		c.t.Fatalf("POST /events: %d %s", code, b)
	}
	return out.Accepted, out.Message
}

// open sends a 41010 naming others and returns the conversation's id and
// whether it was created.
func (c *dmClient) open(host string, others ...string) (string, bool) {
	c.t.Helper()
	ok, msg := c.send(host, gonostr.Event{Kind: nostr.KindDMOpen, Tags: pTags(others)})
	if !ok {
		c.t.Fatalf("open DM with %d: %s", len(others), msg)
	}
	var resp struct {
		ChannelID string `json:"channel_id"`
		Created   bool   `json:"created"`
	}
	js, found := strings.CutPrefix(msg, "response:")
	if err := json.Unmarshal([]byte(js), &resp); !found || err != nil || resp.ChannelID == "" {
		c.t.Fatalf("open DM answer %q", msg)
	}
	return resp.ChannelID, resp.Created
}

func (c *dmClient) req(f gonostr.Filter) []*gonostr.Event {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs, err := c.ws.Conn.QuerySync(ctx, f)
	if err != nil {
		c.t.Fatal(err)
	}
	return evs
}

func (c *dmClient) count(f gonostr.Filter) int64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, _, err := c.ws.Conn.Count(ctx, gonostr.Filters{f})
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// closedReason subscribes with f and returns the CLOSED reason ("" when
// the relay answered EOSE).
func (c *dmClient) closedReason(f gonostr.Filter) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := c.ws.Conn.Subscribe(ctx, gonostr.Filters{f})
	if err != nil {
		c.t.Fatal(err)
	}
	defer sub.Unsub()
	select {
	case reason := <-sub.ClosedReason:
		return reason
	case <-sub.EndOfStoredEvents:
		return ""
	case <-ctx.Done():
		c.t.Fatal("no EOSE nor CLOSED")
	}
	return ""
}

// httpQuery posts f to host's /query signed by the user and returns the
// status and events.
func (c *dmClient) httpQuery(host, path string, f gonostr.Filter) (int, []byte) {
	c.t.Helper()
	body, _ := json.Marshal(f)
	code, _, b := c.r.Do(&c.u, http.MethodPost, host, "", path, body)
	return code, b
}

func pTags(pks []string) gonostr.Tags {
	var tags gonostr.Tags
	for _, pk := range pks {
		tags = append(tags, gonostr.Tag{"p", pk})
	}
	return tags
}

func hasTag(ev *gonostr.Event, name, value string) bool {
	return slices.ContainsFunc(ev.Tags, func(t gonostr.Tag) bool { return len(t) >= 2 && t[0] == name && t[1] == value })
}

// TestDMConversations drives Buzz's DM conversations (41010 open, 41011
// add member, 41012 hide) as clients do, on both backends: the
// participant limit, who reads a conversation, the larger conversation
// an added member opens, and the viewer's relay-signed visibility
// snapshot (30622), which nobody else reads by any path — REQ by ids or
// kind, COUNT, search, the HTTP API or a live subscription — and another
// community sees none of it.
func TestDMConversations(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		var master nostr.SecretKey
		master[0] = 7
		r := relaytest.Serve(t, st, buzz.WithRelayKey(master))
		user := func() *dmClient {
			u := relaytest.NewUser()
			return &dmClient{t: t, r: r, u: u, ws: r.Connect(u, true)}
		}
		alice, bob, carol, dave, eve := user(), user(), user(), user(), user()
		host := r.Host

		// Open: the id is the participant set's; a second open finds it.
		x, created := alice.open(host, bob.u.PK, carol.u.PK)
		relaytest.Eq(t, "created", created, true)
		relaytest.Eq(t, "id", x, channel.DMID([]string{alice.u.PK, bob.u.PK, carol.u.PK}).String())
		again, created := carol.open(host, alice.u.PK, bob.u.PK, bob.u.PK)
		relaytest.Eq(t, "reopened id", again, x)
		relaytest.Eq(t, "reopened created", created, false)

		// A replay changes nothing (the authority rule).
		replay := gonostr.Event{Kind: nostr.KindDMOpen, Tags: pTags([]string{dave.u.PK}), CreatedAt: gonostr.Now()}
		if ok, msg := alice.send(host, replay); !ok || !strings.HasPrefix(msg, "response:") {
			t.Fatalf("open with dave: %v %q", ok, msg)
		}
		if ok, msg := alice.send(host, replay); !ok || !strings.HasPrefix(msg, "duplicate:") {
			t.Fatalf("replayed open: %v %q", ok, msg)
		}

		// The participant limit: 8 others and the opener.
		var many []string
		for range 9 {
			many = append(many, relaytest.NewUser().PK)
		}
		if _, created := alice.open(host, many[:8]...); !created {
			t.Fatal("a conversation of 9 was not created")
		}
		for _, tc := range []struct {
			what string
			tags gonostr.Tags
			want string
		}{
			{"9 others", pTags(many), channel.MsgDMTooManyOthers},
			{"nobody", nil, channel.MsgDMNoParticipants},
			{"only oneself", pTags([]string{alice.u.PK}), channel.MsgDMNoParticipants},
			{"a bad pubkey", gonostr.Tags{{"p", "ABC"}}, "invalid: bad pubkey hex: ABC"},
		} {
			ok, msg := alice.send(host, gonostr.Event{Kind: nostr.KindDMOpen, Tags: tc.tags})
			if ok || msg != tc.want {
				t.Fatalf("open with %s: %v %q, want %q", tc.what, ok, msg, tc.want)
			}
		}

		// Participants post and read; nobody else does.
		hx := gonostr.Tags{{"h", x}}
		bob.ws.Must("bob's message", gonostr.Event{Kind: 9, Content: "hello conversation", Tags: hx})
		msgs := alice.req(gonostr.Filter{Kinds: []int{9}, Tags: gonostr.TagMap{"h": {x}}})
		if len(msgs) != 1 || msgs[0].Content != "hello conversation" {
			t.Fatalf("alice reads %d messages", len(msgs))
		}
		if msg := eve.ws.Publish(gonostr.Event{Kind: 9, Content: "let me in", Tags: hx}); !strings.HasPrefix(msg, "restricted:") {
			t.Fatalf("eve posts in the conversation: %q", msg)
		}
		if reason := eve.closedReason(gonostr.Filter{Tags: gonostr.TagMap{"h": {x}}}); !strings.HasPrefix(reason, "restricted:") {
			t.Fatalf("eve's REQ of the conversation: %q", reason)
		}
		relaytest.Eq(t, "eve reads the message by id", len(eve.req(gonostr.Filter{IDs: []string{msgs[0].ID}})), 0)
		relaytest.Eq(t, "eve counts the conversation", eve.count(gonostr.Filter{Kinds: []int{9}}), int64(0))
		relaytest.Eq(t, "eve finds it by search", len(eve.req(gonostr.Filter{Search: "conversation"})), 0)
		if ok, msg := eve.send(host, gonostr.Event{Kind: nostr.KindDMHide, Tags: hx}); ok || !strings.HasPrefix(msg, "restricted:") {
			t.Fatalf("eve hides the conversation: %v %q", ok, msg)
		}

		// The relay's notices: the state with t=dm and the participants,
		// the system message, a 44100 to each participant.
		meta := carol.req(gonostr.Filter{Kinds: []int{nostr.KindChannelMetadata}, Tags: gonostr.TagMap{"p": {carol.u.PK}}})
		if len(meta) != 1 || !hasTag(meta[0], "d", x) || !hasTag(meta[0], "t", "dm") || !hasTag(meta[0], "p", alice.u.PK) {
			t.Fatalf("carol's conversations (39000): %v", meta)
		}
		stateKey := meta[0].PubKey
		sys := carol.req(gonostr.Filter{Kinds: []int{nostr.KindSystemMessage}, Tags: gonostr.TagMap{"h": {x}}})
		if len(sys) != 1 || !strings.Contains(sys[0].Content, `"type":"dm_created"`) {
			t.Fatalf("system messages %v", sys)
		}
		added := carol.req(gonostr.Filter{Kinds: []int{nostr.KindMemberAdded}, Tags: gonostr.TagMap{"p": {carol.u.PK}, "h": {x}}})
		relaytest.Eq(t, "carol's 44100", len(added), 1)
		relaytest.Eq(t, "eve's view of the conversation state", len(eve.req(gonostr.Filter{Kinds: []int{nostr.KindChannelMetadata}, Tags: gonostr.TagMap{"d": {x}}})), 0)

		// Adding a member opens the larger conversation; the first is
		// unchanged.
		ok, msg := bob.send(host, gonostr.Event{Kind: nostr.KindDMAddMember, Tags: gonostr.Tags{{"h", x}, {"p", dave.u.PK}}})
		y := channel.DMID([]string{alice.u.PK, bob.u.PK, carol.u.PK, dave.u.PK}).String()
		if !ok || msg != fmt.Sprintf(`response:{"channel_id":"%s"}`, y) {
			t.Fatalf("add dave: %v %q", ok, msg)
		}
		dave.ws.Must("dave's message", gonostr.Event{Kind: 9, Content: "hi all", Tags: gonostr.Tags{{"h", y}}})
		relaytest.Eq(t, "alice reads dave", len(alice.req(gonostr.Filter{Kinds: []int{9}, Tags: gonostr.TagMap{"h": {y}}})), 1)
		relaytest.Eq(t, "dave reads the first conversation", len(dave.req(gonostr.Filter{IDs: []string{msgs[0].ID}})), 0)
		if ok, msg := eve.send(host, gonostr.Event{Kind: nostr.KindDMAddMember, Tags: gonostr.Tags{{"h", x}, {"p", eve.u.PK}}}); ok || !strings.HasPrefix(msg, "restricted:") {
			t.Fatalf("eve adds herself: %v %q", ok, msg)
		}
		if ok, msg := alice.send(host, gonostr.Event{Kind: nostr.KindDMAddMember, Tags: gonostr.Tags{{"h", x}}}); ok || msg != channel.MsgDMAddNone {
			t.Fatalf("add nobody: %v %q", ok, msg)
		}
		big := channel.DMID(append([]string{alice.u.PK}, many[:8]...)).String()
		if ok, msg := alice.send(host, gonostr.Event{Kind: nostr.KindDMAddMember, Tags: gonostr.Tags{{"h", big}, {"p", bob.u.PK}}}); ok || msg != channel.MsgDMTooLarge {
			t.Fatalf("a tenth participant: %v %q", ok, msg)
		}

		// Hide: alice's snapshot lists x, signed by the community's state
		// key, delivered live to alice alone.
		live := func(c *dmClient, f gonostr.Filter) *gonostr.Subscription {
			sub, err := c.ws.Conn.Subscribe(context.Background(), gonostr.Filters{f})
			if err != nil {
				t.Fatal(err)
			}
			for {
				select {
				case <-sub.Events: // stored events: not what is watched
				case <-sub.EndOfStoredEvents:
					return sub
				case <-time.After(10 * time.Second):
					t.Fatal("no EOSE")
				}
			}
		}
		aliceLive := live(alice, gonostr.Filter{Kinds: []int{nostr.KindDMVisibility}, Tags: gonostr.TagMap{"p": {alice.u.PK}}})
		bobAll := live(bob, gonostr.Filter{})
		bobVis := live(bob, gonostr.Filter{Kinds: []int{nostr.KindDMVisibility}})
		if ok, msg := alice.send(host, gonostr.Event{Kind: nostr.KindDMHide, Tags: hx}); !ok || msg != "{}" {
			t.Fatalf("hide: %v %q", ok, msg)
		}
		var snap *gonostr.Event
		select {
		case snap = <-aliceLive.Events:
		case <-time.After(10 * time.Second):
			t.Fatal("alice's snapshot was not delivered live")
		}
		if snap.PubKey != stateKey || !hasTag(snap, "d", alice.u.PK) || !hasTag(snap, "h", x) || !hasTag(snap, "p", alice.u.PK) {
			t.Fatalf("alice's snapshot %v", snap)
		}
		stored := alice.req(gonostr.Filter{Kinds: []int{nostr.KindDMVisibility}, Tags: gonostr.TagMap{"p": {alice.u.PK}}})
		if len(stored) != 1 || stored[0].ID != snap.ID {
			t.Fatalf("alice reads %d snapshots", len(stored))
		}
		relaytest.Eq(t, "alice counts her snapshot", alice.count(gonostr.Filter{Kinds: []int{nostr.KindDMVisibility}}), int64(1))
		relaytest.Eq(t, "alice reads it by id", len(alice.req(gonostr.Filter{IDs: []string{snap.ID}})), 1)

		// Bob, a participant of x, learns nothing of it.
		marker := gonostr.Event{Kind: 1, Content: "marker"}
		bob.ws.Must("marker", marker)
		for done := false; !done; {
			select {
			case ev := <-bobAll.Events:
				if ev.Kind == nostr.KindDMVisibility {
					t.Fatal("bob received alice's snapshot live")
				}
				done = ev.Kind == 1 && ev.Content == "marker"
			case ev := <-bobVis.Events:
				t.Fatalf("bob received a snapshot live: %v", ev)
			case <-time.After(10 * time.Second):
				t.Fatal("bob's marker never arrived")
			}
		}
		for _, f := range []gonostr.Filter{
			{IDs: []string{snap.ID}},
			{Kinds: []int{nostr.KindDMVisibility}},
			{Kinds: []int{nostr.KindDMVisibility}, Tags: gonostr.TagMap{"p": {alice.u.PK}}},
			{Kinds: []int{nostr.KindDMVisibility}, Tags: gonostr.TagMap{"d": {alice.u.PK}}},
			{Authors: []string{stateKey}},
			{Tags: gonostr.TagMap{"h": {x}}},
			{},
		} {
			for _, ev := range bob.req(f) {
				if ev.Kind == nostr.KindDMVisibility {
					t.Fatalf("bob reads alice's snapshot with %v", f)
				}
			}
			if f.IDs != nil || f.Kinds != nil {
				relaytest.Eq(t, fmt.Sprintf("bob's COUNT %v", f), bob.count(f), int64(0))
			}
			code, b := bob.httpQuery(host, "/query", f)
			if code == http.StatusOK && strings.Contains(string(b), snap.ID) {
				t.Fatalf("bob's POST /query %v returns the snapshot", f)
			}
		}
		if code, b := bob.httpQuery(host, "/count", gonostr.Filter{IDs: []string{snap.ID}}); code != http.StatusOK || !strings.Contains(string(b), `"count":0`) {
			t.Fatalf("bob's POST /count: %d %s", code, b)
		}
		anon := &dmClient{t: t, r: r, ws: r.Connect(relaytest.NewUser(), false)}
		relaytest.Eq(t, "anonymous read by id", len(anon.req(gonostr.Filter{IDs: []string{snap.ID}})), 0)

		// Opening it again shows it: the next snapshot hides nothing.
		if _, created := alice.open(host, carol.u.PK, bob.u.PK); created {
			t.Fatal("reopen created a conversation")
		}
		latest := alice.req(gonostr.Filter{Kinds: []int{nostr.KindDMVisibility}, Authors: []string{stateKey}, Tags: gonostr.TagMap{"d": {alice.u.PK}}})
		if len(latest) != 1 || latest[0].ID == snap.ID || hasTag(latest[0], "h", x) {
			t.Fatalf("snapshot after reopening: %v", latest)
		}

		// Clients cannot forge a snapshot, nor take a conversation's id.
		if ok, msg := eve.send(host, gonostr.Event{Kind: nostr.KindDMVisibility, Tags: gonostr.Tags{{"d", eve.u.PK}, {"p", eve.u.PK}}}); ok || msg != channel.MsgDMVisibilityRelaySigned {
			t.Fatalf("forged snapshot: %v %q", ok, msg)
		}
		squat := channel.DMID([]string{eve.u.PK, alice.u.PK}).String()
		if ok, msg := eve.send(host, gonostr.Event{Kind: nostr.KindCreateChannel, Tags: gonostr.Tags{{"h", squat}}}); ok || !strings.HasPrefix(msg, "invalid:") {
			t.Fatalf("9007 in the conversation id space: %v %q", ok, msg)
		}

		// Another community: the conversation does not exist there.
		other := "other.example"
		if _, _, err := st.EnsureCommunity(t.Context(), other); err != nil {
			t.Fatal(err)
		}
		if ok, msg := alice.send(other, gonostr.Event{Kind: nostr.KindDMHide, Tags: hx}); ok || !strings.HasPrefix(msg, "restricted:") {
			t.Fatalf("hide from another host: %v %q", ok, msg)
		}
		if code, b := alice.httpQuery(other, "/query", gonostr.Filter{Kinds: []int{nostr.KindDMVisibility, nostr.KindMemberAdded, 39000}}); code != http.StatusOK || string(b) != "[]" {
			t.Fatalf("alice's DM state from another host: %d %s", code, b)
		}
		if ok, msg := alice.send(other, gonostr.Event{Kind: nostr.KindDMOpen, Tags: pTags([]string{bob.u.PK, carol.u.PK})}); !ok || !strings.Contains(msg, `"created":true`) {
			t.Fatalf("the same participants in another community: %v %q", ok, msg)
		}
	})
}
