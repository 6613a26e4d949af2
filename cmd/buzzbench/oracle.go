package main

import (
	"slices"
	"strings"

	"github.com/buzzrelay/buzz/nostr"
)

// The oracle answers "what must a relay holding exactly the main corpus
// return for this filter", independently of the relay's and the nostr
// package's matchers: it is the benchmark's check that a fast answer is
// also a right one.

// matches reports whether e satisfies f by the NIP-01 rules.
func matches(f *nostr.Filter, e *nostr.Event) bool {
	if f.IDs != nil && !slices.Contains(f.IDs, e.ID) {
		return false
	}
	if f.Authors != nil && !slices.Contains(f.Authors, e.PubKey) {
		return false
	}
	if f.Kinds != nil && !slices.Contains(f.Kinds, e.Kind) {
		return false
	}
	if f.Since != nil && e.CreatedAt < *f.Since {
		return false
	}
	if f.Until != nil && e.CreatedAt > *f.Until {
		return false
	}
	for name, vals := range f.Tags {
		found := false
		for _, t := range e.Tags {
			if len(t) >= 2 && t[0] == name && slices.Contains(vals, t[1]) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// expected returns the ids a relay holding exactly the main corpus returns
// for the filters of one REQ: per filter the newest matches (created_at
// descending, then id ascending) up to its limit, the union over filters.
// defaultLimit applies to a filter without a limit (0: unlimited).
func (c *corpus) expected(filters []nostr.Filter, defaultLimit int) []string {
	set := map[string]bool{}
	for i := range filters {
		f := &filters[i]
		var hits []*nostr.Event
		for j := range c.Events {
			if matches(f, &c.Events[j].Ev) {
				hits = append(hits, &c.Events[j].Ev)
			}
		}
		slices.SortFunc(hits, func(a, b *nostr.Event) int {
			if a.CreatedAt != b.CreatedAt {
				if a.CreatedAt > b.CreatedAt {
					return -1
				}
				return 1
			}
			return strings.Compare(a.ID, b.ID)
		})
		limit := defaultLimit
		if f.LimitSet {
			limit = f.Limit
		}
		if limit > 0 && len(hits) > limit {
			hits = hits[:limit]
		}
		if f.LimitSet && f.Limit == 0 {
			hits = nil
		}
		for _, e := range hits {
			set[e.ID] = true
		}
	}
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// countExpected is the NIP-45 COUNT of the filters over the main corpus.
func (c *corpus) countExpected(filters []nostr.Filter) int {
	n := 0
	for j := range c.Events {
		for i := range filters {
			if matches(&filters[i], &c.Events[j].Ev) {
				n++
				break
			}
		}
	}
	return n
}
