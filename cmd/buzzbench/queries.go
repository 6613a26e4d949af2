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
// planCounts interleaves them.
var countShapes = []string{"author", "kind1_tag_t", "thread"}

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
			var f nostr.Filter
			switch shape {
			case "author":
				f.Authors = []string{a}
			case "kind1_tag_t":
				f.Kinds, f.Tags = []int{1}, map[string][]string{"t": {t}}
			case "thread":
				f.Tags = map[string][]string{"e": {root}}
			}
			pc := plannedCount{Shape: shape, Filters: []nostr.Filter{f}}
			pc.Want = c.countExpected(pc.Filters)
			out = append(out, pc)
		}
	}
	return out
}
