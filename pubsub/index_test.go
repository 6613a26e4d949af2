package pubsub

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/tenant"
)

type owner struct{ n int }

func hex64(prefix string, i int) string {
	s := fmt.Sprintf("%s%x", prefix, i)
	return s + strings.Repeat("0", 64-len(s))
}

func i64(v int64) *int64 { return &v }

// bruteMatch is the reference: every subscription with a matching filter.
func bruteMatch(subs []*Subscription, ev *nostr.Event) []string {
	var out []string
	for _, s := range subs {
		for i := range s.Filters {
			if search.Matches(&s.Filters[i], ev) {
				out = append(out, subKey(s))
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func subKey(s *Subscription) string { return fmt.Sprintf("%d/%s", s.Owner.(*owner).n, s.ID) }

// indexMatch collects Match's calls, failing on a repeated subscription.
func indexMatch(t testing.TB, x *Index, c tenant.CommunityID, ev *nostr.Event) []string {
	t.Helper()
	var out []string
	seen := map[*Subscription]bool{}
	x.Match(c, ev, func(s *Subscription) {
		if seen[s] {
			t.Errorf("subscription %s passed twice for one event", subKey(s))
		}
		seen[s] = true
		out = append(out, subKey(s))
	})
	sort.Strings(out)
	return out
}

// gen draws filters and events from small pools so that matches are common.
type gen struct {
	r       *rand.Rand
	ids     []string
	authors []string
	vals    []string
}

func newGen(seed uint64) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for i := range 6 {
		g.ids = append(g.ids, hex64("e", i))
		g.authors = append(g.authors, hex64("a", i))
		g.vals = append(g.vals, hex64("v", i))
	}
	g.vals = append(g.vals, "general", "x")
	return g
}

// list returns nil (no constraint), an empty list (matches nothing) or a
// few values, with possible repeats.
func (g *gen) list(pool []string) []string {
	switch g.r.IntN(6) {
	case 0, 1, 2:
		return nil
	case 3:
		return []string{}
	}
	n := 1 + g.r.IntN(3)
	out := make([]string, n)
	for i := range out {
		out[i] = pool[g.r.IntN(len(pool))]
	}
	return out
}

func (g *gen) filter() nostr.Filter {
	f := nostr.Filter{IDs: g.list(g.ids), Authors: g.list(g.authors)}
	if f.IDs != nil && g.r.IntN(3) > 0 {
		f.IDs = nil // keep id filters rarer, so other dimensions get exercised
	}
	switch g.r.IntN(5) {
	case 0:
		f.Kinds = []int{}
	case 1, 2:
		for range 1 + g.r.IntN(3) {
			f.Kinds = append(f.Kinds, g.r.IntN(4))
		}
	}
	if g.r.IntN(2) == 0 {
		f.Tags = map[string][]string{}
		for _, name := range []string{"p", "e", "t"} {
			if g.r.IntN(2) == 0 {
				f.Tags[name] = g.list(g.vals)
			}
		}
	}
	if g.r.IntN(4) == 0 {
		f.Since = i64(int64(g.r.IntN(10)))
	}
	if g.r.IntN(4) == 0 {
		f.Until = i64(int64(g.r.IntN(10)))
	}
	if g.r.IntN(4) == 0 {
		f.Limit, f.LimitSet = 0, true
	}
	if g.r.IntN(3) == 0 {
		f.Search = searchPool[g.r.IntN(len(searchPool))]
	}
	return f
}

// searchPool and wordPool make NIP-50 searches match often; "!!!" is an
// invalid query (matches nothing).
var (
	searchPool = []string{"apple", "banana split", `"apple pie"`, "Pie APPLE", "split-pie", "!!!"}
	wordPool   = []string{"apple", "Apple!", "pie", "banana", "split", "pie-split", "cherry"}
)

func (g *gen) event() *nostr.Event {
	ev := &nostr.Event{
		ID:        g.ids[g.r.IntN(len(g.ids))],
		PubKey:    g.authors[g.r.IntN(len(g.authors))],
		Kind:      g.r.IntN(4),
		CreatedAt: int64(g.r.IntN(10)),
	}
	if g.r.IntN(10) == 0 {
		ev.Kind = 1059 // gift wraps never match a search
	}
	words := make([]string, g.r.IntN(6))
	for i := range words {
		words[i] = wordPool[g.r.IntN(len(wordPool))]
	}
	ev.Content = strings.Join(words, " ")
	names := []string{"p", "e", "t", "d", "pp"}
	for range g.r.IntN(5) {
		switch g.r.IntN(8) {
		case 0:
			ev.Tags = append(ev.Tags, nostr.Tag{names[g.r.IntN(len(names))]}) // no value
		default:
			ev.Tags = append(ev.Tags, nostr.Tag{names[g.r.IntN(len(names))], g.vals[g.r.IntN(len(g.vals))], "extra"})
		}
	}
	if len(ev.Tags) > 0 && g.r.IntN(4) == 0 {
		ev.Tags = append(ev.Tags, ev.Tags[0]) // duplicate tag
	}
	return ev
}

func (g *gen) sub(owners []*owner) *Subscription {
	s := &Subscription{
		Owner: owners[g.r.IntN(len(owners))],
		ID:    fmt.Sprintf("s%d", g.r.IntN(8)),
	}
	for range g.r.IntN(4) { // 0..3 filters
		s.Filters = append(s.Filters, g.filter())
	}
	return s
}

// TestIndexMatchesBruteForce is a differential test: after every random
// Add/Remove/RemoveOwner, Match must return exactly the brute-force set.
func TestIndexMatchesBruteForce(t *testing.T) {
	for seed := range uint64(20) {
		g := newGen(seed)
		x := NewIndex()
		c := tenant.NewCommunityID()
		owners := make([]*owner, 5)
		for i := range owners {
			owners[i] = &owner{i}
		}
		model := map[string]*Subscription{}
		modelSubs := func() []*Subscription {
			out := make([]*Subscription, 0, len(model))
			for _, s := range model {
				out = append(out, s)
			}
			return out
		}
		for step := range 400 {
			switch op := g.r.IntN(10); {
			case op < 6:
				s := g.sub(owners)
				x.Add(c, s)
				model[subKey(s)] = s
			case op < 8:
				o := owners[g.r.IntN(len(owners))]
				id := fmt.Sprintf("s%d", g.r.IntN(8))
				k := fmt.Sprintf("%d/%s", o.n, id)
				_, had := model[k]
				if got := x.Remove(c, o, id); got != had {
					t.Fatalf("seed %d step %d: Remove = %v, want %v", seed, step, got, had)
				}
				delete(model, k)
			case op < 9:
				o := owners[g.r.IntN(len(owners))]
				want := 0
				for k, s := range model {
					if s.Owner == o {
						delete(model, k)
						want++
					}
				}
				if got := x.RemoveOwner(c, o); got != want {
					t.Fatalf("seed %d step %d: RemoveOwner = %d, want %d", seed, step, got, want)
				}
			default:
			}
			if got := x.Len(c); got != len(model) {
				t.Fatalf("seed %d step %d: Len = %d, want %d", seed, step, got, len(model))
			}
			subs := modelSubs()
			for range 5 {
				ev := g.event()
				want := bruteMatch(subs, ev)
				got := indexMatch(t, x, c, ev)
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("seed %d step %d: event %+v\n index %v\n brute %v", seed, step, ev, got, want)
				}
			}
		}
	}
}

func TestIndexEmptyListsAndLimitZero(t *testing.T) {
	x := NewIndex()
	c := tenant.NewCommunityID()
	o := &owner{1}
	author := hex64("a", 1)
	ev := &nostr.Event{ID: hex64("e", 1), PubKey: author, Kind: 1, CreatedAt: 5,
		Tags: nostr.Tags{{"p", hex64("v", 1)}}}

	never := []nostr.Filter{
		{Kinds: []int{}},
		{IDs: []string{}},
		{Authors: []string{}, Kinds: []int{1}},
		{Tags: map[string][]string{"p": {}}},
		{Authors: []string{author}, Tags: map[string][]string{"e": {}}},
		{Since: i64(6), Until: i64(4)},
	}
	for i, f := range never {
		x.Add(c, &Subscription{Owner: o, ID: fmt.Sprintf("never%d", i), Filters: []nostr.Filter{f}})
	}
	x.Add(c, &Subscription{Owner: o, ID: "nofilters"})
	if n := len(indexMatch(t, x, c, ev)); n != 0 {
		t.Fatalf("%d subscriptions with unmatchable filters matched", n)
	}
	if x.Len(c) != len(never)+1 {
		t.Fatalf("Len = %d", x.Len(c))
	}

	always := []nostr.Filter{
		{Limit: 0, LimitSet: true},
		{Kinds: []int{1}, Limit: 0, LimitSet: true},
		{Authors: []string{author}, Limit: 0, LimitSet: true},
		{Tags: map[string][]string{"p": {hex64("v", 1)}, "e": nil}},
		{Since: i64(5), Until: i64(5)},
	}
	for i, f := range always {
		x.Add(c, &Subscription{Owner: o, ID: fmt.Sprintf("always%d", i), Filters: []nostr.Filter{f}})
	}
	// An empty filter next to a matching one does not hide it.
	x.Add(c, &Subscription{Owner: o, ID: "mixed", Filters: []nostr.Filter{{Kinds: []int{}}, {Kinds: []int{1}}}})
	got := indexMatch(t, x, c, ev)
	if len(got) != len(always)+1 {
		t.Fatalf("matched %v, want the %d always* subscriptions and mixed", got, len(always)+1)
	}
}

func TestIndexCommunitiesIsolated(t *testing.T) {
	x := NewIndex()
	a, b := tenant.NewCommunityID(), tenant.NewCommunityID()
	o := &owner{1}
	ev := &nostr.Event{ID: hex64("e", 1), PubKey: hex64("a", 1), Kind: 1}
	all := []nostr.Filter{{}}
	x.Add(a, &Subscription{Owner: o, ID: "s", Filters: all})
	x.Add(b, &Subscription{Owner: o, ID: "s", Filters: []nostr.Filter{{Kinds: []int{1}}}})
	x.Add(b, &Subscription{Owner: o, ID: "t", Filters: []nostr.Filter{{Authors: []string{ev.PubKey}}}})

	var got []*Subscription
	x.Match(a, ev, func(s *Subscription) { got = append(got, s) })
	if len(got) != 1 || got[0].Filters[0].Kinds != nil {
		t.Fatalf("community a matched %d subscriptions", len(got))
	}
	if x.Len(a) != 1 || x.Len(b) != 2 {
		t.Fatalf("Len a=%d b=%d", x.Len(a), x.Len(b))
	}
	// Same owner and id in another community are different subscriptions.
	if !x.Remove(b, o, "s") || x.Len(a) != 1 {
		t.Fatal("Remove in b touched a")
	}
	if x.RemoveOwner(b, o) != 1 || x.Len(a) != 1 || x.Len(b) != 0 {
		t.Fatal("RemoveOwner in b touched a")
	}
	n := 0
	x.Match(b, ev, func(*Subscription) { n++ })
	x.Match(tenant.CommunityID{}, ev, func(*Subscription) { n++ })
	x.Match(tenant.NewCommunityID(), ev, func(*Subscription) { n++ })
	if n != 0 {
		t.Fatalf("%d matches in empty or unknown communities", n)
	}
	if x.Remove(b, o, "t") || x.RemoveOwner(tenant.NewCommunityID(), o) != 0 {
		t.Fatal("removal of absent subscriptions reported success")
	}
}

func TestIndexReplaceSameID(t *testing.T) {
	x := NewIndex()
	c := tenant.NewCommunityID()
	o1, o2 := &owner{1}, &owner{2}
	ev1 := &nostr.Event{ID: hex64("e", 1), PubKey: hex64("a", 1), Kind: 1}
	ev7 := &nostr.Event{ID: hex64("e", 2), PubKey: hex64("a", 1), Kind: 7}

	x.Add(c, &Subscription{Owner: o1, ID: "feed", Filters: []nostr.Filter{{Kinds: []int{1}}}})
	x.Add(c, &Subscription{Owner: o2, ID: "feed", Filters: []nostr.Filter{{Kinds: []int{1}}}})
	if got := indexMatch(t, x, c, ev1); len(got) != 2 {
		t.Fatalf("two owners, same id: %v", got)
	}
	x.Add(c, &Subscription{Owner: o1, ID: "feed", Filters: []nostr.Filter{{Kinds: []int{7}}}})
	if x.Len(c) != 2 {
		t.Fatalf("Len after replace = %d, want 2", x.Len(c))
	}
	if got := indexMatch(t, x, c, ev1); strings.Join(got, ",") != "2/feed" {
		t.Fatalf("old filters of replaced subscription still match: %v", got)
	}
	if got := indexMatch(t, x, c, ev7); strings.Join(got, ",") != "1/feed" {
		t.Fatalf("new filters not matched: %v", got)
	}
	if x.RemoveOwner(c, o1) != 1 {
		t.Fatal("replaced subscription counted twice")
	}
}

func TestIndexRemoveOwner(t *testing.T) {
	x := NewIndex()
	c := tenant.NewCommunityID()
	o1, o2 := &owner{1}, &owner{2}
	ev := &nostr.Event{ID: hex64("e", 1), PubKey: hex64("a", 1), Kind: 1, Tags: nostr.Tags{{"p", "x"}}}
	for i := range 10 {
		x.Add(c, &Subscription{Owner: o1, ID: fmt.Sprint(i), Filters: []nostr.Filter{{Kinds: []int{1}}, {Tags: map[string][]string{"p": {"x"}}}}})
	}
	x.Add(c, &Subscription{Owner: o2, ID: "0", Filters: []nostr.Filter{{}}})
	if got := indexMatch(t, x, c, ev); len(got) != 11 {
		t.Fatalf("matched %d, want 11", len(got))
	}
	if n := x.RemoveOwner(c, o1); n != 10 {
		t.Fatalf("RemoveOwner = %d, want 10", n)
	}
	if got := indexMatch(t, x, c, ev); strings.Join(got, ",") != "2/0" {
		t.Fatalf("after RemoveOwner: %v", got)
	}
	if n := x.RemoveOwner(c, o1); n != 0 {
		t.Fatalf("second RemoveOwner = %d", n)
	}
	// The emptied community can be reused.
	x.RemoveOwner(c, o2)
	x.Add(c, &Subscription{Owner: o1, ID: "again", Filters: []nostr.Filter{{}}})
	if got := indexMatch(t, x, c, ev); strings.Join(got, ",") != "1/again" {
		t.Fatalf("after emptying and re-adding: %v", got)
	}
}

// Match may call back into the index (fn runs outside the lock).
func TestIndexMatchCallbackMayMutate(t *testing.T) {
	x := NewIndex()
	c := tenant.NewCommunityID()
	o := &owner{1}
	for i := range 20 {
		x.Add(c, &Subscription{Owner: o, ID: fmt.Sprint(i), Filters: []nostr.Filter{{}}})
	}
	n := 0
	x.Match(c, &nostr.Event{Kind: 1}, func(s *Subscription) {
		n++
		x.Remove(c, s.Owner, s.ID)
	})
	if n != 20 || x.Len(c) != 0 {
		t.Fatalf("n=%d Len=%d", n, x.Len(c))
	}
}

// Many subscriptions matching one event exercise the map-based dedup.
func TestIndexManyMatches(t *testing.T) {
	x := NewIndex()
	c := tenant.NewCommunityID()
	var subs []*Subscription
	for i := range 100 {
		s := &Subscription{Owner: &owner{i}, ID: "s", Filters: []nostr.Filter{
			{Tags: map[string][]string{"p": {"x", "y"}}},
			{Kinds: []int{1}},
		}}
		subs = append(subs, s)
		x.Add(c, s)
	}
	ev := &nostr.Event{Kind: 1, Tags: nostr.Tags{{"p", "x"}, {"p", "y"}, {"p", "x"}}}
	got := indexMatch(t, x, c, ev)
	if strings.Join(got, ",") != strings.Join(bruteMatch(subs, ev), ",") || len(got) != 100 {
		t.Fatalf("matched %d, want 100", len(got))
	}
}

// Subscriptions with a single tag posting are not deduplicated by entry:
// each is reached once because Match scans a tag bucket once per event,
// however often the event repeats the tag (here more often than the linear
// bucket check covers, among as many other tags).
func TestIndexRepeatedTagSinglePosting(t *testing.T) {
	x := NewIndex()
	c := tenant.NewCommunityID()
	var subs []*Subscription
	for i := range 40 {
		s := &Subscription{Owner: &owner{i}, ID: "s", Filters: []nostr.Filter{
			{Kinds: []int{1}, Tags: map[string][]string{"t": {fmt.Sprint("v", i%3)}}},
		}}
		subs = append(subs, s)
		x.Add(c, s)
	}
	ev := &nostr.Event{Kind: 1}
	for i := range 60 {
		ev.Tags = append(ev.Tags, nostr.Tag{"t", fmt.Sprint("v", i%4)}, nostr.Tag{"t", fmt.Sprint("w", i)})
	}
	for range 3 { // pooled match state must not leak between calls
		got := indexMatch(t, x, c, ev)
		if want := bruteMatch(subs, ev); strings.Join(got, ",") != strings.Join(want, ",") || len(got) != 40 {
			t.Fatalf("matched %d, want 40", len(got))
		}
	}
}

// TestIndexConcurrent runs Add/Remove/RemoveOwner/Match from many goroutines
// on two communities (run with -race). Each subscription of community a
// matches every event; community b's never match, so any b result in a
// Match on a is an isolation failure.
func TestIndexConcurrent(t *testing.T) {
	x := NewIndex()
	a, b := tenant.NewCommunityID(), tenant.NewCommunityID()
	ev := &nostr.Event{ID: hex64("e", 1), PubKey: hex64("a", 1), Kind: 1, Tags: nostr.Tags{{"p", "x"}}}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &owner{w}
			for i := range 500 {
				id := fmt.Sprint(i % 7)
				x.Add(a, &Subscription{Owner: o, ID: id, Filters: []nostr.Filter{{Kinds: []int{1}}, {Tags: map[string][]string{"p": {"x"}}}}})
				x.Add(b, &Subscription{Owner: o, ID: id, Filters: []nostr.Filter{{Kinds: []int{2}}}})
				switch i % 5 {
				case 0:
					x.Remove(a, o, id)
				case 3:
					x.RemoveOwner(b, o)
				case 4:
					if i%50 == 4 {
						x.RemoveOwner(a, o)
					}
				}
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				x.Match(a, ev, func(s *Subscription) {
					if s.Filters[0].Kinds[0] != 1 {
						errs <- fmt.Errorf("community b's subscription delivered on a")
					}
				})
				x.Match(b, ev, func(s *Subscription) {
					errs <- fmt.Errorf("non-matching subscription %q delivered", s.ID)
				})
				_ = x.Len(a)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Quiescent: the index agrees with a fresh count.
	n := 0
	x.Match(a, ev, func(*Subscription) { n++ })
	if n != x.Len(a) {
		t.Fatalf("Match found %d, Len says %d", n, x.Len(a))
	}
}
