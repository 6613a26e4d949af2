package nostr

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMatcherAgreesWithFilter compares Matcher with (*Filter).Matches over
// random filters (short lists and lists long enough to become sets) and
// random events.
func TestMatcherAgreesWithFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	hexOf := func(n int) string { return fmt.Sprintf("%064x", n) }
	list := func(n int, f func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f(rng.IntN(40))
		}
		return out
	}
	sizes := []int{-1, 0, 1, 3, setMin, 40}
	pick := func() int { return sizes[rng.IntN(len(sizes))] }
	for range 3000 {
		var f Filter
		if n := pick(); n >= 0 {
			f.IDs = list(n, hexOf)
		}
		if n := pick(); n >= 0 {
			f.Authors = list(n, hexOf)
		}
		if n := pick(); n >= 0 {
			f.Kinds = make([]int, n)
			for i := range f.Kinds {
				f.Kinds[i] = rng.IntN(40)
			}
		}
		if n := pick(); n >= 0 {
			f.Tags = map[string][]string{"t": list(n, func(i int) string { return fmt.Sprint(i) })}
		}
		if rng.IntN(3) == 0 {
			s := int64(rng.IntN(40))
			f.Since = &s
		}
		m := NewMatcher(&f)
		for range 20 {
			e := &Event{ID: hexOf(rng.IntN(40)), PubKey: hexOf(rng.IntN(40)), Kind: rng.IntN(40), CreatedAt: int64(rng.IntN(40))}
			for range rng.IntN(3) {
				e.Tags = append(e.Tags, Tag{"t", fmt.Sprint(rng.IntN(40))})
			}
			if got, want := m.Matches(e), f.Matches(e); got != want {
				t.Fatalf("Matcher %v, Filter %v for %+v on %+v", got, want, f, e)
			}
		}
	}
}

// BenchmarkMatcherKinds matches an event against a filter of 100,000
// kinds: the cost of one lookup, not of a scan.
func BenchmarkMatcherKinds(b *testing.B) {
	f := Filter{Kinds: make([]int, 100_000)}
	for i := range f.Kinds {
		f.Kinds[i] = i % (MaxKind + 1)
	}
	m := NewMatcher(&f)
	e := &Event{Kind: 65535}
	for b.Loop() {
		if !m.Matches(e) {
			b.Fatal("no match")
		}
	}
}
