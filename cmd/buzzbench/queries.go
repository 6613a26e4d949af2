package main

import (
	"github.com/buzzrelay/buzz/nostr"
)

// reqShapes are the REQ shapes of the req and mixed scenarios, in report
// order.
var reqShapes = []string{"ids", "author", "home", "kind", "tag_t", "thread", "window"}

// plannedQuery is one REQ with its expected answer, computed before the
// clock starts.
type plannedQuery struct {
	Shape   string
	Filters []nostr.Filter
	// Want holds the expected ids (sorted) when Exact; otherwise only
	// WantCount is checked, because relays holding other data than this
	// corpus answer an unscoped shape (kind) with other events.
	Want      []string
	WantCount int
	Exact     bool
}

// plannedCount is one COUNT with its expected answer.
type plannedCount struct {
	Shape   string
	Filters []nostr.Filter
	Want    int
}

func ptr[T any](v T) *T { return &v }

// planQueries returns perShape queries of each shape, deterministic for the
// corpus and run.
func (c *corpus) planQueries(run, perShape int) map[string][]plannedQuery {
	r := rngFor(c.Seed, "queries", run)
	pickAuthor := func() string { return c.Events[r.IntN(len(c.Events))].Ev.PubKey }
	out := map[string][]plannedQuery{}
	for _, shape := range reqShapes {
		for i := 0; i < perShape; i++ {
			var f nostr.Filter
			exact := true
			switch shape {
			case "ids":
				for k := 0; k < 3; k++ {
					f.IDs = append(f.IDs, c.Events[r.IntN(len(c.Events))].Ev.ID)
				}
			case "author":
				f.Authors = []string{pickAuthor()}
				f.Limit, f.LimitSet = 20, true
			case "home":
				seen := map[string]bool{}
				for len(f.Authors) < 10 {
					a := c.Authors[r.IntN(len(c.Authors))].Pub
					if !seen[a] {
						seen[a] = true
						f.Authors = append(f.Authors, a)
					}
				}
				f.Kinds = []int{1, 6}
				f.Limit, f.LimitSet = 50, true
			case "kind":
				f.Kinds = []int{1}
				f.Limit, f.LimitSet = 50, true
				exact = false
			case "tag_t":
				f.Tags = map[string][]string{"t": {c.Topics[r.IntN(len(c.Topics))]}}
				f.Limit, f.LimitSet = 20, true
			case "thread":
				root := c.Events[c.Roots[skewed(r, len(c.Roots))]].Ev.ID
				f.Tags = map[string][]string{"e": {root}}
				f.Limit, f.LimitSet = 500, true
			case "window":
				since := c.Base + r.Int64N(c.Span-3600)
				f.Since, f.Until = ptr(since), ptr(since+3600)
				f.Limit, f.LimitSet = 100, true
			}
			want := c.expected([]nostr.Filter{f}, 0)
			q := plannedQuery{Shape: shape, Filters: []nostr.Filter{f}, WantCount: len(want), Exact: exact}
			if exact {
				q.Want = want
			}
			out[shape] = append(out[shape], q)
		}
	}
	return out
}

// countShapes are the COUNT shapes of the count scenario, in the order
// planCounts interleaves them: each names its filter for a random author,
// topic and thread root.
var countShapes = []struct {
	name   string
	filter func(author, topic, root string) nostr.Filter
}{
	{"author", func(a, _, _ string) nostr.Filter { return nostr.Filter{Authors: []string{a}} }},
	{"kind1_tag_t", func(_, t, _ string) nostr.Filter {
		return nostr.Filter{Kinds: []int{1}, Tags: map[string][]string{"t": {t}}}
	}},
	{"thread", func(_, _, root string) nostr.Filter { return nostr.Filter{Tags: map[string][]string{"e": {root}}} }},
}

// planCounts returns perShape COUNT requests of each shape of countShapes,
// interleaved.
func (c *corpus) planCounts(run, perShape int) []plannedCount {
	r := rngFor(c.Seed, "counts", run)
	var out []plannedCount
	for i := 0; i < perShape; i++ {
		a := c.Events[r.IntN(len(c.Events))].Ev.PubKey
		t := c.Topics[r.IntN(len(c.Topics))]
		root := c.Events[c.Roots[skewed(r, len(c.Roots))]].Ev.ID
		for _, shape := range countShapes {
			pc := plannedCount{Shape: shape.name, Filters: []nostr.Filter{shape.filter(a, t, root)}}
			pc.Want = c.countExpected(pc.Filters)
			out = append(out, pc)
		}
	}
	return out
}
