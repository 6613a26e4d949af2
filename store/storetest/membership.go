package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// RunMembershipAnnouncements runs the conformance suite of membership
// announcements (store.MembershipAnnouncer): each change of a community's
// membership stores its announcements in its own transaction, in a strict
// order, in its community only.
func RunMembershipAnnouncements(t *testing.T, open func(t *testing.T) ChannelBackend) {
	t.Run("Sequence", func(t *testing.T) { testMembershipSequence(t, open(t)) })
	t.Run("FailedBuildChangesNothing", func(t *testing.T) { testMembershipBuildFails(t, open(t)) })
	t.Run("ConcurrentChanges", func(t *testing.T) { testMembershipConcurrent(t, open(t)) })
}

// testAnnouncer signs like the relay: 8000/8001 naming the key, and 13534
// listing every member with its role, all protected (NIP-70).
func testAnnouncer(tb testing.TB, relay Author, now int64) *store.MembershipAnnouncer {
	return &store.MembershipAnnouncer{
		Now: func() int64 { return now },
		Build: func(ch store.MembershipChange) ([]*nostr.Event, error) {
			var evs []*nostr.Event
			sign := func(kind int, tags nostr.Tags) error {
				ev := &nostr.Event{Kind: kind, CreatedAt: ch.At, Tags: tags}
				if err := ev.Sign(relay.Key); err != nil {
					return err
				}
				evs = append(evs, ev)
				return nil
			}
			switch {
			case ch.Added:
				if err := sign(nostr.KindMembershipAdded, nostr.Tags{{"-"}, {"p", ch.Pubkey}}); err != nil {
					return nil, err
				}
			case ch.Removed:
				if err := sign(nostr.KindMembershipRemoved, nostr.Tags{{"-"}, {"p", ch.Pubkey}}); err != nil {
					return nil, err
				}
			}
			list := nostr.Tags{{"-"}}
			for _, m := range ch.Members {
				list = append(list, nostr.Tag{"member", m.PubKey, string(m.Role)})
			}
			return evs, sign(nostr.KindMembershipList, list)
		},
	}
}

// announcements returns the stored membership events of c, oldest first.
func announcements(tb testing.TB, b ChannelBackend, c tenant.CommunityID) []*nostr.Event {
	tb.Helper()
	f := nostr.Filter{Kinds: []int{nostr.KindMembershipAdded, nostr.KindMembershipRemoved, nostr.KindMembershipList}}
	var evs []*nostr.Event
	for _, r := range Collect(tb, b.Query(ctxb(), c, f)) {
		ev, err := nostr.ParseEvent(r.Raw)
		if err != nil {
			tb.Fatal(err)
		}
		evs = append(evs, ev)
	}
	slices.SortStableFunc(evs, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			return int(a.CreatedAt - b.CreatedAt)
		}
		return a.Kind - b.Kind
	})
	return evs
}

// describe renders events as "kind@offset:p" (or the member list).
func describe(evs []*nostr.Event, base int64, names map[string]string) []string {
	var out []string
	for _, ev := range evs {
		s := fmt.Sprintf("%d@%d", ev.Kind, ev.CreatedAt-base)
		for _, t := range ev.Tags {
			switch {
			case t[0] == "p":
				s += ":" + names[t[1]]
			case t[0] == "member" && len(t) >= 3:
				s += ":" + names[t[1]] + "/" + t[2]
			}
		}
		out = append(out, s)
	}
	return out
}

func testMembershipSequence(t *testing.T, b ChannelBackend) {
	ca, cb := Community(t, b, "a.example"), Community(t, b, "b.example")
	relay, u, v := NewAuthor(t), NewAuthor(t), NewAuthor(t)
	names := map[string]string{u.PubKey: "u", v.PubKey: "v"}
	const now = 1_700_000_000 // the clock stands still: order comes from the store
	ctx := store.WithMembershipAnnouncer(ctxb(), testAnnouncer(t, relay, now))
	step := func(what string, err error, want ...string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := describe(announcements(t, b, ca), now, names); !slices.Equal(got, want) {
			t.Fatalf("after %s: stored %q, want %q", what, got, want)
		}
	}
	step("add u", b.PutCommunityMember(ctx, ca, u.PubKey, channel.RoleMember),
		"8000@0:u", "13534@0:u/member")
	step("add u again", b.PutCommunityMember(ctx, ca, u.PubKey, channel.RoleMember),
		"8000@0:u", "13534@0:u/member")
	step("make u admin", b.PutCommunityMember(ctx, ca, u.PubKey, channel.RoleAdmin),
		"8000@0:u", "13534@1:u/admin")
	list := "13534@2:" // members sorted by pubkey
	if u.PubKey < v.PubKey {
		list += "u/admin:v/member"
	} else {
		list += "v/member:u/admin"
	}
	step("add v", b.PutCommunityMember(ctx, ca, v.PubKey, channel.RoleMember),
		"8000@0:u", "8000@2:v", list)
	step("remove u", b.RemoveCommunityMember(ctx, ca, u.PubKey),
		"8000@0:u", "8000@2:v", "8001@3:u", "13534@3:v/member")
	step("remove u again", b.RemoveCommunityMember(ctx, ca, u.PubKey),
		"8000@0:u", "8000@2:v", "8001@3:u", "13534@3:v/member")
	// Without an announcer nothing is announced (and the order resumes
	// after the last announcement).
	step("add u unannounced", b.PutCommunityMember(ctxb(), ca, u.PubKey, channel.RoleMember),
		"8000@0:u", "8000@2:v", "8001@3:u", "13534@3:v/member")
	if got := announcements(t, b, cb); len(got) != 0 {
		t.Fatalf("community B holds %d announcements of A", len(got))
	}
	// B's own sequence starts from its own clock.
	if err := b.PutCommunityMember(ctx, cb, v.PubKey, channel.RoleMember); err != nil {
		t.Fatal(err)
	}
	if got := describe(announcements(t, b, cb), now, names); !slices.Equal(got, []string{"8000@0:v", "13534@0:v/member"}) {
		t.Fatalf("B: %q", got)
	}
}

func testMembershipBuildFails(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	u := NewAuthor(t)
	boom := errors.New("boom")
	ctx := store.WithMembershipAnnouncer(ctxb(), &store.MembershipAnnouncer{
		Now:   func() int64 { return 1_700_000_000 },
		Build: func(store.MembershipChange) ([]*nostr.Event, error) { return nil, boom },
	})
	if err := b.PutCommunityMember(ctx, c, u.PubKey, channel.RoleMember); !errors.Is(err, boom) {
		t.Fatalf("put with a failing announcer: %v, want the announcer's error", err)
	}
	if _, ok, _ := b.CommunityRole(ctxb(), c, u.PubKey); ok {
		t.Fatal("the change committed without its announcements")
	}
	if err := b.PutCommunityMember(ctxb(), c, u.PubKey, channel.RoleMember); err != nil {
		t.Fatal(err)
	}
	if err := b.RemoveCommunityMember(ctx, c, u.PubKey); !errors.Is(err, boom) {
		t.Fatalf("remove with a failing announcer: %v", err)
	}
	if _, ok, _ := b.CommunityRole(ctxb(), c, u.PubKey); !ok {
		t.Fatal("the removal committed without its announcements")
	}
	if got := announcements(t, b, c); len(got) != 0 {
		t.Fatalf("%d announcements stored", len(got))
	}
}

// testMembershipConcurrent: concurrent changes of one community (possibly
// from several processes sharing the backend) are serialized: every change
// gets its own created_at, and the newest list holds every member.
func testMembershipConcurrent(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	relay := NewAuthor(t)
	const n = 12
	const now = 1_700_000_000
	ctx := store.WithMembershipAnnouncer(ctxb(), testAnnouncer(t, relay, now))
	us := NewAuthors(t, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, u := range us {
		wg.Go(func() { errs <- b.PutCommunityMember(ctx, c, u.PubKey, channel.RoleMember) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	evs := announcements(t, b, c)
	seen := map[int64]bool{}
	var list *nostr.Event
	for _, ev := range evs {
		switch ev.Kind {
		case nostr.KindMembershipAdded:
			if seen[ev.CreatedAt] {
				t.Fatalf("two 8000 at %d", ev.CreatedAt)
			}
			seen[ev.CreatedAt] = true
		case nostr.KindMembershipList:
			list = ev
		}
	}
	if len(seen) != n || list == nil || list.CreatedAt != now+n-1 || len(list.Tags) != n+1 {
		t.Fatalf("%d distinct 8000s, list %v; want %d and a list of every member at +%d", len(seen), list, n, n-1)
	}
}
