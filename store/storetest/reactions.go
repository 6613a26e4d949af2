package storetest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/store"
)

// ReactionBackend is a backend with reaction slots.
type ReactionBackend interface {
	store.Backend
	store.ReactionStore
}

// RunReactions is the conformance suite of store.ReactionStore.
func RunReactions(t *testing.T, open func(t *testing.T) ReactionBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b ReactionBackend)
	}{
		{"ClaimReplaceRelease", testReactionSlots},
		{"PerCommunity", testReactionPerCommunity},
		{"ConcurrentClaims", testReactionConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func reactionID(c byte) string { return strings.Repeat(string(c), 64) }

func testReactionSlots(t *testing.T, b ReactionBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "reactions.example")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	k := store.ReactionKey{PubKey: NewAuthor(t).PubKey, Target: reactionID('a'), Emoji: "🔥"}
	h, ok, err := b.ClaimReaction(ctxb(), c, k, reactionID('1'), at)
	if err != nil || !ok || h.EventID != reactionID('1') {
		t.Fatalf("first claim: %+v %v %v", h, ok, err)
	}
	h, ok, err = b.ClaimReaction(ctxb(), c, k, reactionID('2'), at.Add(time.Second))
	if err != nil || ok || h.EventID != reactionID('1') || !h.ClaimedAt.Equal(at) {
		t.Fatalf("second claim: %+v %v %v, want the first holder", h, ok, err)
	}
	// Another emoji, target or author is another slot.
	for _, other := range []store.ReactionKey{
		{PubKey: k.PubKey, Target: k.Target, Emoji: "+"},
		{PubKey: k.PubKey, Target: reactionID('b'), Emoji: k.Emoji},
		{PubKey: NewAuthor(t).PubKey, Target: k.Target, Emoji: k.Emoji},
	} {
		if _, ok, err := b.ClaimReaction(ctxb(), c, other, reactionID('3'), at); err != nil || !ok {
			t.Fatalf("claim of %+v: %v %v", other, ok, err)
		}
	}
	// Compare-and-swap.
	if ok, err := b.ReplaceReaction(ctxb(), c, k, reactionID('9'), reactionID('2'), at); err != nil || ok {
		t.Fatalf("replace of a stale holder: %v %v", ok, err)
	}
	if ok, err := b.ReplaceReaction(ctxb(), c, k, reactionID('1'), reactionID('2'), at); err != nil || !ok {
		t.Fatalf("replace: %v %v", ok, err)
	}
	// Release: another author's release frees nothing; the author's does.
	mustNil(t, b.ReleaseReactions(ctxb(), c, NewAuthor(t).PubKey, []string{reactionID('2')}))
	if h, ok, _ := b.ClaimReaction(ctxb(), c, k, reactionID('4'), at); ok || h.EventID != reactionID('2') {
		t.Fatalf("slot freed by another author's release: %+v", h)
	}
	mustNil(t, b.ReleaseReactions(ctxb(), c, k.PubKey, []string{reactionID('2'), reactionID('7')}))
	if _, ok, err := b.ClaimReaction(ctxb(), c, k, reactionID('4'), at); err != nil || !ok {
		t.Fatalf("claim after release: %v %v", ok, err)
	}
	mustNil(t, b.ReleaseReactions(ctxb(), c, "", []string{reactionID('4')}))
	if _, ok, err := b.ClaimReaction(ctxb(), c, k, reactionID('5'), at); err != nil || !ok {
		t.Fatalf("claim after a release by id: %v %v", ok, err)
	}
	mustNil(t, b.ReleaseReactions(ctxb(), c, "", nil))
}

func testReactionPerCommunity(t *testing.T, b ReactionBackend) {
	c1, _, err := b.EnsureCommunity(ctxb(), "one.example")
	if err != nil {
		t.Fatal(err)
	}
	c2, _, err := b.EnsureCommunity(ctxb(), "two.example")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	k := store.ReactionKey{PubKey: NewAuthor(t).PubKey, Target: reactionID('a'), Emoji: "+"}
	if _, ok, err := b.ClaimReaction(ctxb(), c1, k, reactionID('1'), at); err != nil || !ok {
		t.Fatalf("claim in one: %v %v", ok, err)
	}
	if h, ok, err := b.ClaimReaction(ctxb(), c2, k, reactionID('2'), at); err != nil || !ok || h.EventID != reactionID('2') {
		t.Fatalf("claim in two: %+v %v %v", h, ok, err)
	}
	mustNil(t, b.ReleaseReactions(ctxb(), c2, "", []string{reactionID('1')}))
	if h, ok, _ := b.ClaimReaction(ctxb(), c1, k, reactionID('3'), at); ok || h.EventID != reactionID('1') {
		t.Fatalf("a release in two freed one's slot: %+v", h)
	}
	if ok, _ := b.ReplaceReaction(ctxb(), c2, k, reactionID('1'), reactionID('3'), at); ok {
		t.Fatal("a replace in two changed one's slot")
	}
}

func testReactionConcurrent(t *testing.T, b ReactionBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "race.example")
	if err != nil {
		t.Fatal(err)
	}
	k := store.ReactionKey{PubKey: NewAuthor(t).PubKey, Target: reactionID('a'), Emoji: "🎉"}
	const n = 12
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed int
		holders = map[string]bool{}
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := reactionID("0123456789ab"[i])
			h, ok, err := b.ClaimReaction(ctxb(), c, k, id, time.Now())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("claim %d: %v", i, err)
				return
			}
			if ok {
				claimed++
			}
			holders[h.EventID] = true
		}()
	}
	wg.Wait()
	if claimed != 1 || len(holders) != 1 {
		t.Fatalf("%d claims succeeded, %d holders seen; want one", claimed, len(holders))
	}
}
