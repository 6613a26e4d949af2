package lsm_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestAuthorTimelineSplits: a filter naming authors and several kinds
// walks each author's timeline and skips its other kinds, and a timeline
// with many of them is split into its kinds' ranges from where it stands.
// Whichever path each author takes, the answer is every match, newest
// first (ids ascending within a second), with limits and since/until: an
// author whose other kinds bury its matches (a hundred reactions, some in
// the very second of its notes, saved before and after them), one with
// a few, one with none.
func TestAuthorTimelineSplits(t *testing.T) {
	s := openTemp(t)
	c := storetest.Community(t, s, "split.example")
	busy, light, plain, other := storetest.NewAuthor(t), storetest.NewAuthor(t), storetest.NewAuthor(t), storetest.NewAuthor(t)
	var evs []*nostr.Event
	add := func(a storetest.Author, kind int, at int64, n int) {
		for i := range n {
			evs = append(evs, a.Unsigned(kind, at, fmt.Sprintf("%d %d %d %d", kind, at, i, len(evs))))
		}
	}
	add(busy, 1, 1000, 3)
	add(busy, 7, 1500, 40) // the second shared with the notes below
	add(busy, 1, 1500, 2)
	add(busy, 6, 1500, 1)
	add(busy, 7, 1500, 20)
	for at := int64(1600); at < 1700; at++ {
		add(busy, 7, at, 1)
	}
	add(busy, 6, 1800, 1)
	add(busy, 7, 1900, 50)
	add(light, 1, 1200, 2)
	add(light, 7, 1250, 5)
	add(light, 6, 1700, 1)
	add(plain, 1, 1100, 1)
	add(plain, 6, 1550, 2)
	add(other, 1, 1560, 3) // not asked for
	for _, ev := range evs {
		storetest.MustSave(t, s, c, ev) // one by one: seq follows this order
	}
	authors := []string{busy.PubKey, light.PubKey, plain.PubKey}
	want := func(f nostr.Filter) []string {
		var out []*nostr.Event
		for _, ev := range evs {
			if f.Matches(ev) {
				out = append(out, ev)
			}
		}
		slices.SortFunc(out, func(a, b *nostr.Event) int {
			return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		if f.LimitSet && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		ids := make([]string, len(out))
		for i, ev := range out {
			ids[i] = ev.ID
		}
		return ids
	}
	for _, f := range []nostr.Filter{
		{Authors: authors, Kinds: []int{1, 6}},
		{Authors: authors, Kinds: []int{6, 1}, Limit: 4, LimitSet: true},
		{Authors: authors, Kinds: []int{1, 6}, Limit: 7, LimitSet: true},
		{Authors: authors, Kinds: []int{1, 6}, Until: storetest.Ptr[int64](1500)},
		{Authors: authors, Kinds: []int{1, 6}, Since: storetest.Ptr[int64](1200), Until: storetest.Ptr[int64](1799)},
		{Authors: authors[:1], Kinds: []int{1, 6, 30023}},
		{Authors: authors, Kinds: []int{7, 6}, Limit: 30, LimitSet: true},
		{Authors: authors, Kinds: []int{1}},
	} {
		if got, w := storetest.QueryIDs(t, s, c, f), want(f); !slices.Equal(got, w) {
			t.Errorf("%+v: %d ids %v, want %d %v", f, len(got), got, len(w), w)
		}
		if got, w := storetest.CountOf(t, s, c, f), int64(len(want(nostr.Filter{Authors: f.Authors, Kinds: f.Kinds, Since: f.Since, Until: f.Until}))); got != w {
			t.Errorf("COUNT %+v = %d, want %d", f, got, w)
		}
	}
}
