package threads_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/threads"
)

type user = relaytest.User

func serve(t *testing.T, st relaytest.Backend, opts ...buzz.Option) *relaytest.Relay {
	return relaytest.Serve(t, st, append([]buzz.Option{buzz.WithFeature(threads.New())}, opts...)...)
}

// summary GETs the thread below id as signer on host (the relay's own
// when ""): the status and the decoded answer.
func summary(t *testing.T, r *relaytest.Relay, signer user, host, id string) (int, threads.Summary, string) {
	t.Helper()
	if host == "" {
		host = r.Host
	}
	code, _, body := r.Do(&signer, http.MethodGet, host, "", "/threads/"+id, nil)
	var s threads.Summary
	if code == http.StatusOK {
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatalf("summary %s: %v", body, err)
		}
	}
	return code, s, string(body)
}

func msg(kind int, content string, tags ...gonostr.Tag) gonostr.Event {
	return gonostr.Event{Kind: kind, Content: content, Tags: gonostr.Tags(tags), CreatedAt: gonostr.Now()}
}

func reply(kind int, h, root, parent string) gonostr.Event {
	tags := []gonostr.Tag{{"h", h}}
	if root != parent {
		tags = append(tags, gonostr.Tag{"e", root, "", "root"})
	}
	tags = append(tags, gonostr.Tag{"e", parent, "", "reply"})
	return msg(kind, "re", tags...)
}

// publish publishes ev as c's user and returns its id and the refusal.
func publish(c *relaytest.Client, ev gonostr.Event) (string, string) {
	c.T.Helper()
	if err := ev.Sign(c.User.SK); err != nil {
		c.T.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Conn.Publish(ctx, ev); err != nil {
		return ev.ID, strings.TrimPrefix(err.Error(), "msg: ")
	}
	return ev.ID, ""
}

func must(t *testing.T, c *relaytest.Client, what string, ev gonostr.Event) string {
	t.Helper()
	id, refusal := publish(c, ev)
	if refusal != "" {
		t.Fatalf("%s refused: %s", what, refusal)
	}
	return id
}

func TestThreadsOverWebSocket(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		r := serve(t, st)
		owner, alice, bob, carol, outsider := relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser()
		o, a, b, c := r.Connect(owner, true), r.Connect(alice, true), r.Connect(bob, true), r.Connect(carol, true)
		must(t, o, "create", msg(9007, "", gonostr.Tag{"h", "lobby"}, gonostr.Tag{"name", "lobby"}))
		must(t, o, "create other", msg(9007, "", gonostr.Tag{"h", "other"}, gonostr.Tag{"name", "other"}))

		root := must(t, a, "root", msg(9, "root", gonostr.Tag{"h", "lobby"}))
		r1 := must(t, b, "reply", reply(9, "lobby", root, root))
		r2 := must(t, c, "nested", reply(40002, "lobby", root, r1))
		r3 := must(t, c, "direct", reply(9, "lobby", root, root))

		code, s, body := summary(t, r, outsider, "", root)
		if code != http.StatusOK || s.ReplyCount != 2 || s.DescendantCount != 3 || s.LastReplyAt == nil || s.Root != root || s.Depth != 0 ||
			s.Channel != "lobby" || len(s.Participants) != 2 {
			t.Fatalf("summary of the root: %d %s", code, body)
		}
		if slices.Index(s.Participants, carol.PK) < 0 || slices.Index(s.Participants, bob.PK) < 0 {
			t.Fatalf("participants %v", s.Participants)
		}
		code, s, body = summary(t, r, outsider, "", r2)
		if code != http.StatusOK || s.Root != root || s.Depth != 2 || s.ReplyCount != 0 {
			t.Fatalf("summary of a nested reply: %d %s", code, body)
		}

		// Buzz's refusals.
		elsewhere := must(t, a, "elsewhere", msg(9, "x", gonostr.Tag{"h", "other"}))
		global := must(t, a, "community-wide", msg(1, "note"))
		missing := strings.Repeat("ab", 32)
		for _, tc := range []struct {
			what string
			ev   gonostr.Event
			want string
		}{
			{"unknown parent", reply(9, "lobby", missing, missing), ingest.MsgThreadParentNotFound},
			{"parent in another channel", reply(9, "lobby", elsewhere, elsewhere), ingest.MsgThreadParentNotFound},
			{"community-wide parent", reply(9, "lobby", global, global), ingest.MsgThreadParentNoChan},
			{"root that is not the parent's root", reply(9, "lobby", r1, r2), ingest.MsgThreadRootMismatch},
			{"a reply as root of a direct reply", reply(9, "lobby", r2, r2), ingest.MsgThreadRootMismatch},
		} {
			if _, got := publish(b, tc.ev); got != tc.want {
				t.Fatalf("%s: %q, want %q", tc.what, got, tc.want)
			}
		}

		// Deletion by the author (NIP-09) takes a reply out of the counts.
		must(t, c, "deletion", msg(5, "", gonostr.Tag{"e", r3}))
		if _, s, body = summary(t, r, alice, "", root); s.ReplyCount != 1 || s.DescendantCount != 2 {
			t.Fatalf("after the deletion: %s", body)
		}
		// A channel admin's delete-event too.
		must(t, o, "delete-event", msg(9005, "", gonostr.Tag{"h", "lobby"}, gonostr.Tag{"e", r2}))
		if _, s, body = summary(t, r, alice, "", root); s.ReplyCount != 1 || s.DescendantCount != 1 || len(s.Participants) != 1 || s.Participants[0] != bob.PK {
			t.Fatalf("after the delete-event: %s", body)
		}

		// Unknown, malformed, not a channel message: 404 alike.
		for _, id := range []string{missing, "nope", global} {
			if code, _, body := summary(t, r, alice, "", id); code != http.StatusNotFound {
				t.Fatalf("GET /threads/%s: %d %s", id, code, body)
			}
		}
		// Unsigned: 401.
		if code, _, _ := r.Do(nil, http.MethodGet, r.Host, "", "/threads/"+root, nil); code != http.StatusUnauthorized {
			t.Fatalf("unsigned: %d", code)
		}
	})
}

func TestThreadsPrivateAndTenancy(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		r := serve(t, st)
		owner, member, outsider := relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser()
		o, m, x := r.Connect(owner, true), r.Connect(member, true), r.Connect(outsider, true)
		must(t, o, "create", msg(9007, "", gonostr.Tag{"h", "club"}, gonostr.Tag{"name", "club"}, gonostr.Tag{"visibility", "private"}))
		must(t, o, "add", msg(9000, "", gonostr.Tag{"h", "club"}, gonostr.Tag{"p", member.PK, "member"}))
		root := must(t, o, "root", msg(9, "secret", gonostr.Tag{"h", "club"}))
		must(t, m, "reply", reply(9, "club", root, root))
		// An outsider can neither reply (the channel refuses it) nor read.
		if _, refusal := publish(x, reply(9, "club", root, root)); !strings.HasPrefix(refusal, "restricted:") {
			t.Fatalf("outsider's reply: %q", refusal)
		}
		if code, _, body := summary(t, r, outsider, "", root); code != http.StatusNotFound {
			t.Fatalf("outsider reads a private thread: %d %s", code, body)
		}
		if code, s, body := summary(t, r, member, "", root); code != http.StatusOK || s.ReplyCount != 1 {
			t.Fatalf("member: %d %s", code, body)
		}
		// Another community's host: the same id is unknown there.
		if _, _, err := st.EnsureCommunity(context.Background(), "elsewhere.example"); err != nil {
			t.Fatal(err)
		}
		if code, _, body := summary(t, r, member, "elsewhere.example", root); code != http.StatusNotFound {
			t.Fatalf("another community: %d %s", code, body)
		}
	})
}

// TestThreadsDepthAndConcurrency replies down to the depth bound, then
// races replies from many connections against deletions.
func TestThreadsDepthAndConcurrency(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		r := serve(t, st)
		owner := relaytest.NewUser()
		o := r.Connect(owner, true)
		must(t, o, "create", msg(9007, "", gonostr.Tag{"h", "deep"}, gonostr.Tag{"name", "deep"}))
		root := must(t, o, "root", msg(9, "root", gonostr.Tag{"h", "deep"}))
		parent := root
		for depth := 1; depth <= store.MaxThreadDepth; depth++ {
			parent = must(t, o, fmt.Sprint("depth ", depth), reply(9, "deep", root, parent))
		}
		if _, refusal := publish(o, reply(9, "deep", root, parent)); refusal != ingest.MsgThreadTooDeep {
			t.Fatalf("reply at depth %d: %q", store.MaxThreadDepth+1, refusal)
		}

		const writers, each = 6, 5
		var wg sync.WaitGroup
		for range writers {
			u := relaytest.NewUser()
			cl := r.Connect(u, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					ev := reply(9, "deep", root, root)
					ev.Content = fmt.Sprint("reply ", i)
					id, refusal := publish(cl, ev)
					if refusal != "" {
						t.Errorf("concurrent reply: %s", refusal)
						return
					}
					if i%2 == 0 {
						if _, refusal := publish(cl, msg(5, "", gonostr.Tag{"e", id})); refusal != "" {
							t.Errorf("concurrent deletion: %s", refusal)
						}
					}
				}
			}()
		}
		wg.Wait()
		kept := writers * (each / 2)
		if code, s, body := summary(t, r, owner, "", root); code != http.StatusOK || s.ReplyCount != int64(1+kept) ||
			s.DescendantCount != int64(store.MaxThreadDepth+kept) {
			t.Fatalf("after the race: %d %s, want %d direct replies", code, body, 1+kept)
		}
	})
}
