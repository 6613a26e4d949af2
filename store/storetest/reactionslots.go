package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// RunReactionSlots is the conformance suite of a store that keeps reaction
// slots with the events (store.ErrReactionHeld) rather than through
// store.ReactionStore: one stored reaction per (author, target, emoji) of
// a community, the slot taken and freed in the same write as its holder.
// reopen, if not nil, closes b and opens the same store again.
func RunReactionSlots(t *testing.T, open func(t *testing.T) store.Backend, reopen func(t *testing.T, b store.Backend) store.Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b store.Backend)
	}{
		{"HeldUntilRemoved", testSlotHeld},
		{"PerCommunity", testSlotPerCommunity},
		{"Expiry", testSlotExpiry},
		{"Concurrent", testSlotConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
	if reopen != nil {
		t.Run("Durable", func(t *testing.T) {
			b := open(t)
			c := Community(t, b, "slots-durable.example")
			a := NewAuthor(t)
			target := a.Event(t, 1, 1_700_000_000, "target")
			MustSave(t, b, c, target)
			r := a.Event(t, 7, 1_700_000_001, "🔥", nostr.Tag{"e", target.ID})
			MustSave(t, b, c, r)
			b = reopen(t, b)
			SaveIs(t, b, c, a.Event(t, 7, 1_700_000_002, "🔥", nostr.Tag{"e", target.ID}), store.ErrReactionHeld)
			SaveIs(t, b, c, r, store.ErrDuplicate)
		})
	}
}

// reaction is a reaction by a to target with content emoji.
func reaction(t *testing.T, a Author, at int64, emoji, target string, extra ...nostr.Tag) *nostr.Event {
	return a.Event(t, 7, at, emoji, append([]nostr.Tag{{"e", target}}, extra...)...)
}

func testSlotHeld(t *testing.T, b store.Backend) {
	c := Community(t, b, "slots.example")
	alice, bob := NewAuthor(t), NewAuthor(t)
	const at = 1_700_000_000
	target, other := alice.Event(t, 1, at, "target"), alice.Event(t, 1, at, "other")
	MustSave(t, b, c, target)
	MustSave(t, b, c, other)

	first := reaction(t, bob, at+1, "🔥", target.ID)
	MustSave(t, b, c, first)
	SaveIs(t, b, c, first, store.ErrDuplicate) // the holder itself: a repeat
	SaveIs(t, b, c, reaction(t, bob, at+2, "🔥", target.ID), store.ErrReactionHeld)
	// "" reads as "+": one slot.
	plus := reaction(t, bob, at+1, "+", target.ID)
	MustSave(t, b, c, plus)
	SaveIs(t, b, c, reaction(t, bob, at+2, "", target.ID), store.ErrReactionHeld)
	// The target is the last e tag holding an event id.
	SaveIs(t, b, c, bob.Event(t, 7, at+3, "🔥", nostr.Tag{"e", other.ID}, nostr.Tag{"e", target.ID}), store.ErrReactionHeld)
	// Another emoji, target or author is another slot.
	MustSave(t, b, c, reaction(t, bob, at+1, "🎉", target.ID))
	MustSave(t, b, c, reaction(t, bob, at+1, "🔥", other.ID))
	MustSave(t, b, c, reaction(t, alice, at+1, "🔥", target.ID))
	// A refused reaction is not stored.
	if n := CountOf(t, b, c, nostr.Filter{Kinds: []int{7}, Authors: []string{bob.PubKey}, Tags: map[string][]string{"e": {target.ID}}}); n != 3 {
		t.Fatalf("bob's reactions to target: %d, want 3 (🔥, +, 🎉)", n)
	}

	// Another author's deletion frees nothing; the author's frees the
	// slot in the same write, and the deleted reaction stays refused.
	SaveIs(t, b, c, alice.Event(t, 5, at+4, "", nostr.Tag{"e", first.ID}), nil)
	SaveIs(t, b, c, reaction(t, bob, at+5, "🔥", target.ID), store.ErrReactionHeld)
	MustSave(t, b, c, bob.Event(t, 5, at+4, "", nostr.Tag{"e", first.ID}))
	SaveIs(t, b, c, first, store.ErrDeleted)
	again := reaction(t, bob, at+5, "🔥", target.ID)
	MustSave(t, b, c, again)
	SaveIs(t, b, c, reaction(t, bob, at+6, "🔥", target.ID), store.ErrReactionHeld)
	// A deletion naming a reaction that never held its slot frees nothing.
	MustSave(t, b, c, bob.Event(t, 5, at+7, "", nostr.Tag{"e", first.ID}))
	SaveIs(t, b, c, reaction(t, bob, at+8, "🔥", target.ID), store.ErrReactionHeld)

	// A kind 7 without a target holds no slot.
	MustSave(t, b, c, bob.Event(t, 7, at+1, "🔥"))
	MustSave(t, b, c, bob.Event(t, 7, at+2, "🔥"))
}

func testSlotPerCommunity(t *testing.T, b store.Backend) {
	c1, c2 := Community(t, b, "slots-one.example"), Community(t, b, "slots-two.example")
	a := NewAuthor(t)
	target := a.Event(t, 1, 1_700_000_000, "target")
	MustSave(t, b, c1, target)
	MustSave(t, b, c2, target)
	r := reaction(t, a, 1_700_000_001, "🔥", target.ID)
	MustSave(t, b, c1, r)
	// The same slot in another community is free, for the same event too.
	MustSave(t, b, c2, r)
	SaveIs(t, b, c2, reaction(t, a, 1_700_000_002, "🔥", target.ID), store.ErrReactionHeld)
	// Freeing it in one community leaves the other's held.
	MustSave(t, b, c1, a.Event(t, 5, 1_700_000_003, "", nostr.Tag{"e", r.ID}))
	MustSave(t, b, c1, reaction(t, a, 1_700_000_004, "🔥", target.ID))
	SaveIs(t, b, c2, reaction(t, a, 1_700_000_004, "🔥", target.ID), store.ErrReactionHeld)
}

func testSlotExpiry(t *testing.T, b store.Backend) {
	c := Community(t, b, "slots-expiry.example")
	a := NewAuthor(t)
	target := a.Event(t, 1, 1_700_000_000, "target")
	MustSave(t, b, c, target)
	r := reaction(t, a, 1_700_000_001, "🔥", target.ID, nostr.Tag{"expiration", "1700000100"})
	MustSave(t, b, c, r)
	SaveIs(t, b, c, reaction(t, a, 1_700_000_002, "🔥", target.ID), store.ErrReactionHeld)
	n, err := b.DeleteExpired(context.Background(), time.Unix(1_700_000_200, 0))
	if err != nil || n != 1 {
		t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
	}
	MustSave(t, b, c, reaction(t, a, 1_700_000_003, "🔥", target.ID))
}

// testSlotConcurrent: of many distinct reactions for one slot saved at
// once, exactly one is stored.
func testSlotConcurrent(t *testing.T, b store.Backend) {
	c := Community(t, b, "slots-race.example")
	a := NewAuthor(t)
	target := a.Event(t, 1, 1_700_000_000, "target")
	MustSave(t, b, c, target)
	const n = 24
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		ev := reaction(t, a, 1_700_000_001+int64(i), "🎉", target.ID)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Save(context.Background(), c, ev)
		}()
	}
	wg.Wait()
	stored := 0
	for i, err := range errs {
		switch {
		case err == nil:
			stored++
		case !errors.Is(err, store.ErrReactionHeld):
			t.Errorf("reaction %d: %v", i, err)
		}
	}
	if stored != 1 {
		t.Fatalf("%d reactions stored for one slot, want 1", stored)
	}
	if got := CountOf(t, b, c, nostr.Filter{Kinds: []int{7}}); got != 1 {
		t.Fatalf("count of reactions = %d, want 1", got)
	}
}
