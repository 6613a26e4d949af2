package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// ThreadBackend is a backend that keeps threads (and channels, for the
// channel's delete-event).
type ThreadBackend interface {
	ChannelBackend
	store.ThreadStore
}

// RunThreads is the conformance suite of store.ThreadStore.
func RunThreads(t *testing.T, open func(t *testing.T) ThreadBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b ThreadBackend)
	}{
		{"NodesAndSummary", testThreadNodes},
		{"Markers", testThreadMarkers},
		{"Deletions", testThreadDeletions},
		{"PerCommunity", testThreadPerCommunity},
		{"Expiry", testThreadExpiry},
		{"ConcurrentRepliesAndDeletions", testThreadConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// replyTags returns the NIP-10 marked tags of a reply to parent in the
// thread rooted at root (a direct reply when they are equal).
func replyTags(ch channel.ID, root, parent string) []nostr.Tag {
	tags := []nostr.Tag{hTag(ch)}
	if root != parent {
		tags = append(tags, nostr.Tag{"e", root, "", "root"})
	}
	return append(tags, nostr.Tag{"e", parent, "", "reply"})
}

func wantSummary(t *testing.T, b ThreadBackend, c tenant.CommunityID, id string, want store.ThreadSummary) {
	t.Helper()
	got, err := b.ThreadSummary(ctxb(), c, id)
	if err != nil {
		t.Fatalf("ThreadSummary(%.8s): %v", id, err)
	}
	if got.ReplyCount != want.ReplyCount || got.DescendantCount != want.DescendantCount || got.LastReplyAt != want.LastReplyAt ||
		!slices.Equal(got.Participants, want.Participants) {
		t.Fatalf("ThreadSummary(%.8s) = %+v, want %+v", id, got, want)
	}
}

func wantNode(t *testing.T, b ThreadBackend, c tenant.CommunityID, id string, want store.ThreadNode, ok bool) {
	t.Helper()
	got, found, err := b.ThreadNode(ctxb(), c, id)
	if err != nil {
		t.Fatalf("ThreadNode(%.8s): %v", id, err)
	}
	if found != ok || ok && got != want {
		t.Fatalf("ThreadNode(%.8s) = %+v %v, want %+v %v", id, got, found, want, ok)
	}
}

func testThreadNodes(t *testing.T, b ThreadBackend) {
	c := Community(t, b, "threads.example")
	ch := NewChannelID()
	alice, bob, carol := NewAuthor(t), NewAuthor(t), NewAuthor(t)
	root := alice.Event(t, nostr.KindChatMessage, base, "root", hTag(ch))
	MustSave(t, b, c, root)
	wantSummary(t, b, c, root.ID, store.ThreadSummary{})
	wantNode(t, b, c, root.ID, store.ThreadNode{}, false)

	a := bob.Event(t, nostr.KindChatMessage, base+10, "a", replyTags(ch, root.ID, root.ID)...)
	nested := carol.Event(t, 40002, base+20, "nested", replyTags(ch, root.ID, a.ID)...)
	deeper := alice.Event(t, nostr.KindChatMessage, base+15, "deeper", replyTags(ch, root.ID, nested.ID)...)
	other := bob.Event(t, nostr.KindChatMessage, base+5, "other", replyTags(ch, root.ID, root.ID)...)
	for _, ev := range []*nostr.Event{a, nested, deeper, other} {
		MustSave(t, b, c, ev)
	}
	wantNode(t, b, c, a.ID, store.ThreadNode{ID: a.ID, Parent: root.ID, Root: root.ID, Depth: 1}, true)
	wantNode(t, b, c, nested.ID, store.ThreadNode{ID: nested.ID, Parent: a.ID, Root: root.ID, Depth: 2}, true)
	wantNode(t, b, c, deeper.ID, store.ThreadNode{ID: deeper.ID, Parent: nested.ID, Root: root.ID, Depth: 3}, true)
	// Participants: newest reply first — carol (20), alice (15), bob (10).
	wantSummary(t, b, c, root.ID, store.ThreadSummary{ReplyCount: 2, DescendantCount: 4, LastReplyAt: base + 20,
		Participants: []string{carol.PubKey, alice.PubKey, bob.PubKey}})
	wantSummary(t, b, c, a.ID, store.ThreadSummary{ReplyCount: 1})
	wantSummary(t, b, c, nested.ID, store.ThreadSummary{ReplyCount: 1})

	// A repeat changes nothing.
	if err := b.Save(ctxb(), c, a); err != store.ErrDuplicate {
		t.Fatalf("repeat: %v", err)
	}
	wantSummary(t, b, c, root.ID, store.ThreadSummary{ReplyCount: 2, DescendantCount: 4, LastReplyAt: base + 20,
		Participants: []string{carol.PubKey, alice.PubKey, bob.PubKey}})

	// At most MaxThreadParticipants authors.
	for i := range store.MaxThreadParticipants + 2 {
		MustSave(t, b, c, NewAuthor(t).Event(t, nostr.KindChatMessage, base+100+int64(i), "r", replyTags(ch, root.ID, root.ID)...))
	}
	sum, err := b.ThreadSummary(ctxb(), c, root.ID)
	if err != nil || len(sum.Participants) != store.MaxThreadParticipants || sum.DescendantCount != 4+store.MaxThreadParticipants+2 {
		t.Fatalf("summary after many authors: %+v %v", sum, err)
	}
}

func testThreadMarkers(t *testing.T, b ThreadBackend) {
	c := Community(t, b, "markers.example")
	ch := NewChannelID()
	a := NewAuthor(t)
	root := a.Event(t, nostr.KindChatMessage, base, "root", hTag(ch))
	other := a.Event(t, nostr.KindChatMessage, base+1, "other", hTag(ch))
	MustSave(t, b, c, root)
	MustSave(t, b, c, other)
	at := base + 10
	save := func(kind int, tags ...nostr.Tag) *nostr.Event {
		t.Helper()
		at++
		ev := a.Event(t, kind, at, fmt.Sprint(at), tags...)
		MustSave(t, b, c, ev)
		return ev
	}
	// Not replies: no marker, a root marker alone, a positional e tag, a
	// three-element tag, a bad id, a kind outside threads, no channel.
	for _, ev := range []*nostr.Event{
		save(nostr.KindChatMessage, hTag(ch)),
		save(nostr.KindChatMessage, hTag(ch), nostr.Tag{"e", root.ID, "", "root"}),
		save(nostr.KindChatMessage, hTag(ch), nostr.Tag{"e", root.ID}),
		save(nostr.KindChatMessage, hTag(ch), nostr.Tag{"e", root.ID, "reply"}),
		save(nostr.KindChatMessage, hTag(ch), nostr.Tag{"e", root.ID[:63] + "g", "", "reply"}),
		save(nostr.KindChatMessage, hTag(ch), nostr.Tag{"e", root.ID + "00", "", "reply"}),
		save(1, nostr.Tag{"e", root.ID, "", "reply"}),
		save(7, hTag(ch), nostr.Tag{"e", root.ID, "", "reply"}),
		save(40001, hTag(ch), nostr.Tag{"e", root.ID, "", "reply"}),
		save(nostr.KindChatMessage, nostr.Tag{"e", root.ID, "", "reply"}),
	} {
		wantNode(t, b, c, ev.ID, store.ThreadNode{}, false)
	}
	wantSummary(t, b, c, root.ID, store.ThreadSummary{})

	// Replies: upper-case hex, a later marker winning, a diff, the last
	// kind of the range.
	up := save(nostr.KindChatMessage, hTag(ch), nostr.Tag{"e", strings.ToUpper(root.ID), "wss://x", "reply"})
	wantNode(t, b, c, up.ID, store.ThreadNode{ID: up.ID, Parent: root.ID, Root: root.ID, Depth: 1}, true)
	last := save(40002, hTag(ch), nostr.Tag{"e", root.ID, "", "reply"}, nostr.Tag{"e", "zz", "", "reply"}, nostr.Tag{"e", other.ID, "", "reply", "extra"})
	wantNode(t, b, c, last.ID, store.ThreadNode{ID: last.ID, Parent: other.ID, Root: other.ID, Depth: 1}, true)
	diff := save(40008, hTag(ch), nostr.Tag{"e", up.ID, "", "reply"}, nostr.Tag{"e", root.ID, "", "root"})
	wantNode(t, b, c, diff.ID, store.ThreadNode{ID: diff.ID, Parent: up.ID, Root: root.ID, Depth: 2}, true)
	// The root is the parent's root, whatever the event's root tag says.
	liar := save(nostr.KindChatMessage, replyTags(ch, other.ID, up.ID)...)
	wantNode(t, b, c, liar.ID, store.ThreadNode{ID: liar.ID, Parent: up.ID, Root: root.ID, Depth: 2}, true)
	wantSummary(t, b, c, root.ID, store.ThreadSummary{ReplyCount: 1, DescendantCount: 3, LastReplyAt: liar.CreatedAt, Participants: []string{a.PubKey}})
	wantSummary(t, b, c, other.ID, store.ThreadSummary{ReplyCount: 1, DescendantCount: 1, LastReplyAt: last.CreatedAt, Participants: []string{a.PubKey}})
}

func testThreadDeletions(t *testing.T, b ThreadBackend) {
	c := Community(t, b, "deletions.example")
	owner, bob, carol := NewAuthor(t), NewAuthor(t), NewAuthor(t)
	ch := CreateChannel(t, b, c, owner, "t", channel.VisibilityOpen)
	root := owner.Event(t, nostr.KindChatMessage, base+100, "root", hTag(ch))
	r1 := bob.Event(t, nostr.KindChatMessage, base+110, "r1", replyTags(ch, root.ID, root.ID)...)
	r2 := carol.Event(t, nostr.KindChatMessage, base+120, "r2", replyTags(ch, root.ID, r1.ID)...)
	r3 := carol.Event(t, nostr.KindChatMessage, base+130, "r3", replyTags(ch, root.ID, root.ID)...)
	for _, ev := range []*nostr.Event{root, r1, r2, r3} {
		MustSave(t, b, c, ev)
	}
	wantSummary(t, b, c, root.ID, store.ThreadSummary{ReplyCount: 2, DescendantCount: 3, LastReplyAt: base + 130,
		Participants: []string{carol.PubKey, bob.PubKey}})

	// Someone else's deletion request removes nothing.
	MustSave(t, b, c, bob.Deletion(t, base+140, []string{r3.ID}, nil))
	wantNode(t, b, c, r3.ID, store.ThreadNode{ID: r3.ID, Parent: root.ID, Root: root.ID, Depth: 1}, true)
	// The author's removes r3: counts drop, the last reply is r2's again.
	MustSave(t, b, c, carol.Deletion(t, base+141, []string{r3.ID}, nil))
	wantNode(t, b, c, r3.ID, store.ThreadNode{}, false)
	wantSummary(t, b, c, root.ID, store.ThreadSummary{ReplyCount: 1, DescendantCount: 2, LastReplyAt: base + 120,
		Participants: []string{carol.PubKey, bob.PubKey}})
	// A deleted reply stored again is refused and counts nothing.
	if err := b.Save(ctxb(), c, r3); err != store.ErrDeleted {
		t.Fatalf("deleted reply saved again: %v", err)
	}
	wantSummary(t, b, c, root.ID, store.ThreadSummary{ReplyCount: 1, DescendantCount: 2, LastReplyAt: base + 120,
		Participants: []string{carol.PubKey, bob.PubKey}})

	// The channel's delete-event removes r1; its reply r2 stays where it was.
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindDeleteEvent, Channel: ch, EventID: r1.ID})
	wantNode(t, b, c, r1.ID, store.ThreadNode{}, false)
	wantNode(t, b, c, r2.ID, store.ThreadNode{ID: r2.ID, Parent: r1.ID, Root: root.ID, Depth: 2}, true)
	wantSummary(t, b, c, root.ID, store.ThreadSummary{ReplyCount: 0, DescendantCount: 1, LastReplyAt: base + 120,
		Participants: []string{carol.PubKey}})
	wantSummary(t, b, c, r1.ID, store.ThreadSummary{ReplyCount: 1}) // r2 still replies to it

	// Deleting the root leaves its thread's rows: the root is gone, which
	// readers check (ThreadSummary does not).
	MustSave(t, b, c, owner.Deletion(t, base+150, []string{root.ID}, nil))
	MustSave(t, b, c, carol.Deletion(t, base+151, []string{r2.ID}, nil))
	wantSummary(t, b, c, root.ID, store.ThreadSummary{})
}

func testThreadPerCommunity(t *testing.T, b ThreadBackend) {
	c1, c2 := Community(t, b, "one.example"), Community(t, b, "two.example")
	ch := NewChannelID()
	a, z := NewAuthor(t), NewAuthor(t)
	root := a.Event(t, nostr.KindChatMessage, base, "root", hTag(ch))
	reply := a.Event(t, nostr.KindChatMessage, base+1, "reply", replyTags(ch, root.ID, root.ID)...)
	MustSave(t, b, c1, root)
	MustSave(t, b, c1, reply)
	wantSummary(t, b, c2, root.ID, store.ThreadSummary{})
	wantNode(t, b, c2, reply.ID, store.ThreadNode{}, false)
	// The same events in c2 are c2's thread; another reply there changes
	// nothing in c1, and a deletion in c2 nothing in c1.
	MustSave(t, b, c2, root)
	MustSave(t, b, c2, reply)
	MustSave(t, b, c2, z.Event(t, nostr.KindChatMessage, base+2, "z", replyTags(ch, root.ID, reply.ID)...))
	MustSave(t, b, c2, a.Deletion(t, base+3, []string{reply.ID}, nil))
	wantSummary(t, b, c1, root.ID, store.ThreadSummary{ReplyCount: 1, DescendantCount: 1, LastReplyAt: base + 1, Participants: []string{a.PubKey}})
	wantSummary(t, b, c2, root.ID, store.ThreadSummary{ReplyCount: 0, DescendantCount: 1, LastReplyAt: base + 2, Participants: []string{z.PubKey}})
	// An unknown community holds nothing.
	wantSummary(t, b, tenant.FromUUID([16]byte{1, 2, 3}), root.ID, store.ThreadSummary{})
}

// testThreadConcurrent races replies from many goroutines against the
// deletion of earlier replies: the counters end exact.
func testThreadConcurrent(t *testing.T, b ThreadBackend) {
	c := Community(t, b, "race.example")
	ch := NewChannelID()
	owner := NewAuthor(t)
	root := owner.Event(t, nostr.KindChatMessage, base, "root", hTag(ch))
	MustSave(t, b, c, root)
	const workers, each = 8, 6
	authors := NewAuthors(t, workers)
	// First wave: every worker replies to the root and to its own replies.
	first := make([][]*nostr.Event, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*3)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parent := root.ID
			for i := range each {
				ev := authors[w].Event(t, nostr.KindChatMessage, base+1+int64(i), fmt.Sprint(w, i), replyTags(ch, root.ID, parent)...)
				if err := b.Save(ctxb(), c, ev); err != nil {
					errs <- err
					return
				}
				first[w] = append(first[w], ev)
				if i%2 == 1 {
					parent = ev.ID // nest every other reply
				}
			}
		}()
	}
	wg.Wait()
	// Second wave, concurrently: each worker deletes its direct replies
	// to the root of the first wave and adds as many new ones.
	deleted := 0
	direct := 0
	for w := range workers {
		for _, ev := range first[w] {
			if n, ok, _ := b.ThreadNode(ctxb(), c, ev.ID); ok && n.Depth == 1 {
				direct++
			}
		}
	}
	for w := range workers {
		wg.Add(1)
		var mine []string
		for _, ev := range first[w] {
			if n, ok, _ := b.ThreadNode(ctxb(), c, ev.ID); ok && n.Depth == 1 {
				mine = append(mine, ev.ID)
			}
		}
		deleted += len(mine)
		go func() {
			defer wg.Done()
			for i, id := range mine {
				if err := b.Save(ctxb(), c, authors[w].Deletion(t, base+100+int64(i), []string{id}, nil)); err != nil {
					errs <- err
				}
				ev := authors[w].Event(t, nostr.KindChatMessage, base+50+int64(i), fmt.Sprint("again", w, i), replyTags(ch, root.ID, root.ID)...)
				if err := b.Save(ctxb(), c, ev); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sum, err := b.ThreadSummary(ctxb(), c, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if direct != workers*2 || deleted != direct {
		t.Fatalf("first wave: %d direct replies, %d deleted, want %d", direct, deleted, workers*2)
	}
	// Direct replies were deleted and replaced one for one; their own
	// replies stayed.
	if sum.ReplyCount != int64(direct) || sum.DescendantCount != workers*each || len(sum.Participants) != min(workers, store.MaxThreadParticipants) {
		t.Fatalf("summary = %+v, want %d direct replies and %d in all", sum, direct, workers*each)
	}
	if want := base + 51; sum.LastReplyAt != want {
		t.Fatalf("last reply at %d, want %d", sum.LastReplyAt, want)
	}
}

// testThreadExpiry: an expired reply leaves the counts once the backend
// removes expired events.
func testThreadExpiry(t *testing.T, b ThreadBackend) {
	c := Community(t, b, "expiry.example")
	ch := NewChannelID()
	a := NewAuthor(t)
	root := a.Event(t, nostr.KindChatMessage, base, "root", hTag(ch))
	keep := a.Event(t, nostr.KindChatMessage, base+1, "keep", replyTags(ch, root.ID, root.ID)...)
	gone := a.Event(t, nostr.KindChatMessage, base+2, "gone", append(replyTags(ch, root.ID, root.ID), nostr.Tag{"expiration", fmt.Sprint(base + 10)})...)
	for _, ev := range []*nostr.Event{root, keep, gone} {
		MustSave(t, b, c, ev)
	}
	wantSummary(t, b, c, root.ID, store.ThreadSummary{ReplyCount: 2, DescendantCount: 2, LastReplyAt: base + 2, Participants: []string{a.PubKey}})
	if _, err := b.DeleteExpired(ctxb(), time.Unix(base+10, 0)); err != nil {
		t.Fatal(err)
	}
	wantNode(t, b, c, gone.ID, store.ThreadNode{}, false)
	wantSummary(t, b, c, root.ID, store.ThreadSummary{ReplyCount: 1, DescendantCount: 1, LastReplyAt: base + 1, Participants: []string{a.PubKey}})
}
