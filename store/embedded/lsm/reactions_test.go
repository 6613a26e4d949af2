package lsm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded/lsm"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestReactionSlots runs the slot conformance suite on the engine alone.
func TestReactionSlots(t *testing.T) {
	storetest.RunReactionSlots(t, func(t *testing.T) store.Backend { return openTemp(t) }, nil)
}

// TestReactionSlotFilter: a slot is held whether the save's filter learnt
// of it from an earlier save, from an earlier save in the same batch, or
// from the store when it was opened (a restart), and a slot freed and
// taken again is held again.
func TestReactionSlotFilter(t *testing.T) {
	dir := t.TempDir()
	s := reopen(t, dir)
	c := storetest.Community(t, s, "slots.example")
	a, b := storetest.NewAuthor(t), storetest.NewAuthor(t)
	const at = 1_700_000_000
	target := a.Event(t, 1, at, "target")
	storetest.MustSave(t, s, c, target)
	fire := func(when int64) *nostr.Event { return b.Event(t, 7, when, "🔥", nostr.Tag{"e", target.ID}) }

	first := fire(at + 1)
	storetest.MustSave(t, s, c, first)
	storetest.SaveIs(t, s, c, fire(at+2), store.ErrReactionHeld)
	res, err := s.SaveBatch(context.Background(), c, []*nostr.Event{
		b.Event(t, 7, at+3, "+", nostr.Tag{"e", target.ID}),
		b.Event(t, 7, at+4, "+", nostr.Tag{"e", target.ID}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != nil || !errors.Is(res[1], store.ErrReactionHeld) {
		t.Fatalf("two reactions for one slot in a batch: %v", res)
	}

	s.Close()
	s = reopen(t, dir)
	storetest.SaveIs(t, s, c, fire(at+5), store.ErrReactionHeld)
	storetest.SaveIs(t, s, c, b.Event(t, 7, at+5, "+", nostr.Tag{"e", target.ID}), store.ErrReactionHeld)
	storetest.MustSave(t, s, c, b.Event(t, 5, at+6, "", nostr.Tag{"e", first.ID}))
	storetest.MustSave(t, s, c, fire(at+7))
	storetest.SaveIs(t, s, c, fire(at+8), store.ErrReactionHeld)
}

// rewrite opens the closed store in dir with pebble alone, drops every
// reaction slot ('r' keys) and writes layout version v.
func rewrite(t *testing.T, dir string, v byte) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte{'r'}, []byte{'r' + 1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte{'V'}, []byte{v}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLayout1Conversion: a store of layout 1 (no reaction slots) gets the
// slots of its live reactions when opened. Where it holds two reactions
// for one slot (possible before the slots existed), the newer holds it,
// the older stays stored, and deleting the older frees nothing.
func TestLayout1Conversion(t *testing.T) {
	dir := t.TempDir()
	s := reopen(t, dir)
	c := storetest.Community(t, s, "layout1.example")
	a, b := storetest.NewAuthor(t), storetest.NewAuthor(t)
	const at = 1_700_000_000
	target := a.Event(t, 1, at, "target")
	storetest.MustSave(t, s, c, target)
	older := b.Event(t, 7, at+1, "🔥", nostr.Tag{"e", target.ID})
	plus := b.Event(t, 7, at+1, "+", nostr.Tag{"e", target.ID})
	storetest.MustSave(t, s, c, older)
	storetest.MustSave(t, s, c, plus)
	s.Close()
	rewrite(t, dir, 2) // as if older had been stored before the slots
	s = reopen(t, dir)
	newer := b.Event(t, 7, at+2, "🔥", nostr.Tag{"e", target.ID})
	storetest.MustSave(t, s, c, newer)
	s.Close()
	rewrite(t, dir, 1)

	s = reopen(t, dir)
	storetest.SaveIs(t, s, c, b.Event(t, 7, at+3, "🔥", nostr.Tag{"e", target.ID}), store.ErrReactionHeld)
	storetest.SaveIs(t, s, c, b.Event(t, 7, at+3, "", nostr.Tag{"e", target.ID}), store.ErrReactionHeld)
	if n := storetest.CountOf(t, s, c, nostr.Filter{Kinds: []int{7}}); n != 3 {
		t.Fatalf("reactions after the conversion: %d, want 3", n)
	}
	storetest.MustSave(t, s, c, b.Event(t, 5, at+4, "", nostr.Tag{"e", older.ID}))
	storetest.SaveIs(t, s, c, b.Event(t, 7, at+5, "🔥", nostr.Tag{"e", target.ID}), store.ErrReactionHeld)
	storetest.MustSave(t, s, c, b.Event(t, 5, at+6, "", nostr.Tag{"e", newer.ID}))
	storetest.MustSave(t, s, c, b.Event(t, 7, at+7, "🔥", nostr.Tag{"e", target.ID}))

	// The conversion is recorded: a second Open finds layout 2.
	s.Close()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, closer, err := db.Get([]byte{'V'})
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || v[0] != 2 {
		t.Fatalf("layout after the conversion: %v", v)
	}
	closer.Close()
	db.Close()
}

// TestTombstonesOfALargeDeletion: a deletion naming 12,000 events refuses
// every one of them, before and after a restart (which loads the tombstone
// filter from the store), and refuses nothing else.
func TestTombstonesOfALargeDeletion(t *testing.T) {
	dir := t.TempDir()
	s := reopen(t, dir)
	c := storetest.Community(t, s, "tombstones.example")
	a := storetest.NewAuthor(t)
	const n = 12_000
	evs := make([]*nostr.Event, n)
	tags := make([]nostr.Tag, n)
	for i := range evs {
		evs[i] = a.Event(t, 1, int64(1_700_000_000+i), "deleted before it arrives")
		tags[i] = nostr.Tag{"e", evs[i].ID}
	}
	storetest.MustSave(t, s, c, a.Event(t, 5, 1_700_100_000, "", tags...))
	allDeleted := func(s *lsm.Store) {
		t.Helper()
		res, err := s.SaveBatch(context.Background(), c, evs)
		if err != nil {
			t.Fatal(err)
		}
		for i, err := range res {
			if !errors.Is(err, store.ErrDeleted) {
				t.Fatalf("event %d of %d: %v, want deleted", i, n, err)
			}
		}
	}
	allDeleted(s)
	s.Close()
	s = reopen(t, dir)
	allDeleted(s)
	storetest.MustSave(t, s, c, a.Event(t, 1, 1_700_000_000, "not deleted"))
}
