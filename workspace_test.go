package buzz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
)

// Buzz's forum kinds (45001–45003), project changes (NIP-PC kind 47010)
// and the repository name quota (kind 30617), driven as clients do: go-nostr
// over WebSocket and NIP-98 HTTP, on both backends, two communities on one
// store.

// query is a REQ over one filter on c's connection.
func query(t *testing.T, c *relaytest.Client, f gonostr.Filter) ([]*gonostr.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Conn.QuerySync(ctx, f)
}

func mustQuery(t *testing.T, c *relaytest.Client, f gonostr.Filter) []*gonostr.Event {
	t.Helper()
	evs, err := query(t, c, f)
	if err != nil {
		t.Fatalf("query %v: %v", f, err)
	}
	return evs
}

// pub publishes ev as c's user, with created_at now, and returns the
// refusal ("" when accepted) and the id.
func pub(c *relaytest.Client, kind int, content string, tags ...gonostr.Tag) (string, string) {
	ev := gonostr.Event{Kind: kind, CreatedAt: gonostr.Now(), Content: content, Tags: append(gonostr.Tags{}, tags...)}
	if err := ev.Sign(c.User.SK); err != nil {
		c.T.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Conn.Publish(ctx, ev); err != nil {
		return strings.TrimPrefix(err.Error(), "msg: "), ev.ID
	}
	return "", ev.ID
}

func accepted(t *testing.T, what string, c *relaytest.Client, kind int, content string, tags ...gonostr.Tag) string {
	t.Helper()
	msg, id := pub(c, kind, content, tags...)
	if msg != "" {
		t.Fatalf("%s refused: %s", what, msg)
	}
	return id
}

func refused(t *testing.T, what, want string, c *relaytest.Client, kind int, content string, tags ...gonostr.Tag) {
	t.Helper()
	if msg, _ := pub(c, kind, content, tags...); msg != want {
		t.Fatalf("%s: %q, want %q", what, msg, want)
	}
}

func TestForumKinds(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		r := relaytest.Serve(t, st)
		other := relaytest.Serve(t, st)
		alice, bob, carol, mod := relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser()
		ac, bc, cc := r.Connect(alice, true), r.Connect(bob, true), r.Connect(carol, true)
		gid, priv, gid2 := storetest.NewChannelID().String(), storetest.NewChannelID().String(), storetest.NewChannelID().String()
		h, hp, h2 := gonostr.Tag{"h", gid}, gonostr.Tag{"h", priv}, gonostr.Tag{"h", gid2}
		accepted(t, "create", ac, nostr.KindCreateChannel, "", h, gonostr.Tag{"name", "forum"})
		accepted(t, "create 2", ac, nostr.KindCreateChannel, "", h2, gonostr.Tag{"name", "other"})
		accepted(t, "create private", ac, nostr.KindCreateChannel, "", hp, gonostr.Tag{"name", "secret"}, gonostr.Tag{"visibility", "private"})

		// Each forum kind needs its channel.
		for kind := messaging.KindForumPost; kind <= messaging.KindForumComment; kind++ {
			refused(t, "no h", "invalid: kind "+strconv.Itoa(kind)+" requires an h tag naming its channel", ac, kind, "x", gonostr.Tag{"e", strings.Repeat("0", 64)})
		}
		post := accepted(t, "post", ac, messaging.KindForumPost, "a thread about zebras", h)
		comment := accepted(t, "comment", bc, messaging.KindForumComment, "zebras are striped", h, gonostr.Tag{"e", post, "", "root"})

		// Votes: on a forum post or comment of the vote's channel only.
		accepted(t, "vote on the post", bc, messaging.KindForumVote, "+", h, gonostr.Tag{"e", post})
		accepted(t, "vote on the comment", ac, messaging.KindForumVote, "-", h, gonostr.Tag{"e", comment})
		refused(t, "vote without e", messaging.MsgVoteNoTarget, bc, messaging.KindForumVote, "+", h)
		refused(t, "vote on nothing", messaging.MsgVoteNotFound, bc, messaging.KindForumVote, "+", h, gonostr.Tag{"e", strings.Repeat("0", 64)})
		chat := accepted(t, "a chat message", bc, nostr.KindChatMessage, "hi", h)
		refused(t, "vote on a chat message", messaging.MsgVoteNotForum, bc, messaging.KindForumVote, "+", h, gonostr.Tag{"e", chat})
		note := accepted(t, "a note", bc, 1, "community-wide")
		refused(t, "vote on a note", messaging.MsgVoteNotForum, bc, messaging.KindForumVote, "+", h, gonostr.Tag{"e", note})
		refused(t, "vote from another channel", messaging.MsgVoteNotFound, bc, messaging.KindForumVote, "+", h2, gonostr.Tag{"e", post})

		// Read and search as messages.
		relaytest.Eq(t, "forum events of the channel", len(mustQuery(t, cc, gonostr.Filter{Kinds: []int{45001, 45002, 45003}, Tags: gonostr.TagMap{"h": {gid}}})), 4)
		if got := mustQuery(t, cc, gonostr.Filter{Search: "zebras"}); len(got) != 2 {
			t.Fatalf("search: %d events, want the post and the comment", len(got))
		}

		// A private channel: its members post and read; others neither.
		secret := accepted(t, "private post", ac, messaging.KindForumPost, "private zebras", hp)
		refused(t, "outsider posts", channel.MsgChannelDenied, cc, messaging.KindForumPost, "x", hp)
		refused(t, "outsider votes", channel.MsgChannelDenied, cc, messaging.KindForumVote, "+", hp, gonostr.Tag{"e", secret})
		if got, _ := query(t, cc, gonostr.Filter{Kinds: []int{45001}, Tags: gonostr.TagMap{"h": {priv}}}); len(got) != 0 {
			t.Fatalf("outsider reads the private channel: %d events", len(got))
		}
		relaytest.Eq(t, "a member reads it", len(mustQuery(t, ac, gonostr.Filter{Kinds: []int{45001}, Tags: gonostr.TagMap{"h": {priv}}})), 1)
		for _, ev := range mustQuery(t, cc, gonostr.Filter{Search: "zebras"}) {
			if ev.ID == secret {
				t.Fatal("search shows an outsider a private forum post")
			}
		}

		// Deletion: a deleted post is gone, and no vote can name it.
		accepted(t, "alice deletes her post", ac, 5, "", gonostr.Tag{"e", post})
		relaytest.Eq(t, "deleted post", len(mustQuery(t, cc, gonostr.Filter{IDs: []string{post}})), 0)
		refused(t, "vote on a deleted post", messaging.MsgVoteNotFound, cc, messaging.KindForumVote, "+", h, gonostr.Tag{"e", post})
		accepted(t, "admin deletes the comment", ac, nostr.KindDeleteEvent, "", h, gonostr.Tag{"e", comment})
		relaytest.Eq(t, "deleted comment", len(mustQuery(t, cc, gonostr.Filter{IDs: []string{comment}})), 0)

		// Bans: a banned author posts nothing.
		c, _, err := st.EnsureCommunity(context.Background(), r.Host)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutCommunityMember(context.Background(), c, mod.PK, channel.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		accepted(t, "ban carol", r.Connect(mod, true), nostr.KindBan, "", gonostr.Tag{"p", carol.PK})
		if msg, _ := pub(cc, messaging.KindForumPost, "still here", h); !strings.HasPrefix(msg, "blocked:") {
			t.Fatalf("banned author posts: %q", msg)
		}

		// Another community: the channel and its posts do not exist there.
		zc := other.Connect(relaytest.NewUser(), true)
		refused(t, "post in a foreign channel", channel.MsgChannelDenied, zc, messaging.KindForumPost, "x", h)
		refused(t, "vote in a foreign channel", channel.MsgChannelDenied, zc, messaging.KindForumVote, "+", h, gonostr.Tag{"e", comment})
		relaytest.Eq(t, "foreign search", len(mustQuery(t, zc, gonostr.Filter{Search: "zebras"})), 0)
	})
}

// okResult is the body of POST /events.
type okResult struct {
	EventID  string `json:"event_id"`
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

// post signs ev as u (created_at now unless set) and sends it to POST
// /events on r, authenticated with NIP-98 as u.
func postEvent(t *testing.T, r *relaytest.Relay, u relaytest.User, ev gonostr.Event) okResult {
	t.Helper()
	if ev.CreatedAt == 0 {
		ev.CreatedAt = gonostr.Now()
	}
	if ev.ID == "" {
		if err := ev.Sign(u.SK); err != nil {
			t.Fatal(err)
		}
	}
	body, _ := json.Marshal(ev)
	_, _, resp := r.Do(&u, "POST", r.Host, "", "/events", body)
	var out okResult
	if err := json.Unmarshal(resp, &out); err != nil {
		t.Fatalf("POST /events: %s", resp)
	}
	return out
}

// change is a kind 47010 of owner's project d against revision rev.
func change(owner, d string, rev int64, add, remove []string) gonostr.Event {
	if add == nil {
		add = []string{}
	}
	if remove == nil {
		remove = []string{}
	}
	patch, _ := json.Marshal(map[string]any{"v": 1, "patch": map[string]any{"related_channels": map[string]any{"add": add, "remove": remove}}})
	return gonostr.Event{Kind: ingest.KindProjectChange, Content: string(patch), Tags: gonostr.Tags{
		{"a", "30621:" + owner + ":" + d}, {"expected-revision", strconv.FormatInt(rev, 10)}}}
}

func TestProjectChanges(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		r := relaytest.Serve(t, st)
		other := relaytest.Serve(t, st)
		alice, bob := relaytest.NewUser(), relaytest.NewUser()
		ac := r.Connect(alice, true)
		home := storetest.NewChannelID().String()
		accepted(t, "home channel", ac, nostr.KindCreateChannel, "", gonostr.Tag{"h", home}, gonostr.Tag{"name", "home"})
		accepted(t, "project", ac, nostr.KindProject, "", gonostr.Tag{"d", "proj:x"}, gonostr.Tag{"name", "X"}, gonostr.Tag{"buzz-channel", home})
		want := func(what string, got okResult, ok bool, msg string) {
			t.Helper()
			if got.Accepted != ok || got.Message != msg {
				t.Fatalf("%s: %+v, want accepted=%v %q", what, got, ok, msg)
			}
		}

		// Unauthenticated over WebSocket: the author must authenticate.
		if msg := r.Connect(alice, false).Publish(change(alice.PK, "proj:x", 1, []string{"c1"}, nil)); !strings.HasPrefix(msg, "auth-required:") {
			t.Fatalf("unauthenticated change: %q", msg)
		}

		first := change(alice.PK, "proj:x", 1, []string{"c1"}, nil)
		first.CreatedAt = gonostr.Now()
		if err := first.Sign(alice.SK); err != nil {
			t.Fatal(err)
		}
		want("first change", postEvent(t, r, alice, first), true, "revision: 2")
		want("the same event again", postEvent(t, r, alice, first), true, "duplicate: already applied at revision 2")
		want("stale base", postEvent(t, r, alice, change(alice.PK, "proj:x", 1, []string{"c2"}, nil)), false, "conflict: Project revision is 2")
		want("add an existing channel", postEvent(t, r, alice, change(alice.PK, "proj:x", 2, []string{"c1"}, nil)), false,
			"invalid: cannot add the home channel or an already-related channel")
		want("add the home channel", postEvent(t, r, alice, change(alice.PK, "proj:x", 2, []string{home}, nil)), false,
			"invalid: cannot add the home channel or an already-related channel")
		want("unknown project", postEvent(t, r, alice, change(alice.PK, "nope", 1, []string{"c1"}, nil)), false, ingest.MsgProjectNotFound)
		want("empty change", postEvent(t, r, alice, change(alice.PK, "proj:x", 2, []string{}, []string{})), false, ingest.MsgProjectEmpty)
		bad := change(alice.PK, "proj:x", 2, []string{"c3"}, nil)
		bad.Tags = append(bad.Tags, gonostr.Tag{"h", home})
		want("a third tag", postEvent(t, r, alice, bad), false, ingest.MsgProjectChangeTags)
		want("change on the current base", postEvent(t, r, alice, change(alice.PK, "proj:x", 2, []string{"c3"}, nil)), true, "revision: 3")

		// Bob may change it once he is an admin of the home channel.
		want("a stranger", postEvent(t, r, bob, change(alice.PK, "proj:x", 3, []string{"c4"}, nil)), false, ingest.MsgProjectForbidden)
		accepted(t, "bob made admin", ac, nostr.KindPutUser, "", gonostr.Tag{"h", home}, gonostr.Tag{"p", bob.PK, "admin"})
		want("home channel admin", postEvent(t, r, bob, change(alice.PK, "proj:x", 3, []string{"c4"}, []string{"c1"})), true, "revision: 4")

		// Concurrent changes on one base: exactly one wins.
		const n = 8
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := postEvent(t, r, alice, change(alice.PK, "proj:x", 4, []string{fmt.Sprintf("race-%d", i)}, nil))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case res.Accepted && res.Message == "revision: 5":
					wins++
				case !res.Accepted && res.Message == "conflict: Project revision is 5":
				default:
					t.Errorf("racing change %d: %+v", i, res)
				}
			}()
		}
		wg.Wait()
		relaytest.Eq(t, "changes applied on one base", wins, 1)

		// The accepted changes are stored events of the community.
		relaytest.Eq(t, "stored changes", len(mustQuery(t, ac, gonostr.Filter{Kinds: []int{ingest.KindProjectChange}})), 4)

		// Another community: the project does not exist there; the same
		// event has no effect, and its own project counts from 1.
		want("the first change elsewhere", postEvent(t, other, alice, first), false, ingest.MsgProjectNotFound)
		oc := other.Connect(alice, true)
		accepted(t, "project elsewhere", oc, nostr.KindProject, "", gonostr.Tag{"d", "proj:x"})
		want("first change elsewhere", postEvent(t, other, alice, change(alice.PK, "proj:x", 1, []string{"c1"}, nil)), true, "revision: 2")
		want("A is unchanged", postEvent(t, r, alice, change(alice.PK, "proj:x", 4, []string{"late"}, nil)), false, "conflict: Project revision is 5")
	})
}

func TestRepositoryNameQuota(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		lim := buzz.DefaultLimits()
		lim.MaxReposPerPubKey = 2
		r := relaytest.Serve(t, st, buzz.WithLimits(lim))
		other := relaytest.Serve(t, st, buzz.WithLimits(lim))
		alice, bob := relaytest.NewUser(), relaytest.NewUser()
		ac, bc := r.Connect(alice, true), r.Connect(bob, true)
		repo := func(d string) gonostr.Tag { return gonostr.Tag{"d", d} }
		accepted(t, "alice a", ac, nostr.KindRepository, "", repo("a"))
		accepted(t, "alice b", ac, nostr.KindRepository, "", repo("b"))
		refused(t, "alice c", ingest.MsgRepoQuota, ac, nostr.KindRepository, "", repo("c"))
		ev := gonostr.Event{Kind: nostr.KindRepository, CreatedAt: gonostr.Now() + 1, Tags: gonostr.Tags{repo("a"), {"name", "A"}}}
		if msg := ac.Publish(ev); msg != "" {
			t.Fatalf("a new version of alice's a: %s", msg)
		}
		refused(t, "bob takes alice's a", ingest.MsgRepoNameTaken, bc, nostr.KindRepository, "", repo("a"))
		accepted(t, "bob c", bc, nostr.KindRepository, "", repo("c"))
		if msg, _ := pub(bc, nostr.KindRepository, "", repo("../x")); !strings.HasPrefix(msg, "invalid: repository repo-id") {
			t.Fatalf("a malformed name: %q", msg)
		}

		// Another community: names and quotas of its own.
		oa, ob := other.Connect(alice, true), other.Connect(bob, true)
		accepted(t, "bob a elsewhere", ob, nostr.KindRepository, "", repo("a"))
		accepted(t, "alice c elsewhere", oa, nostr.KindRepository, "", repo("c"))
		refused(t, "alice a elsewhere", ingest.MsgRepoNameTaken, oa, nostr.KindRepository, "", repo("a"))
	})
}
