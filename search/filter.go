package search

import "github.com/buzzrelay/buzz/nostr"

// FromFilter parses f's Search: nil and no error when the filter has no
// search. Errors are Parse's.
func FromFilter(f *nostr.Filter) (*Query, error) {
	if f.Search == "" {
		return nil, nil
	}
	return Parse(f.Search)
}

// CheckFilters returns the error of the first filter whose Search does not
// parse, or nil: what a relay answers a REQ, COUNT or read request with
// before it reads anything. Errors start with "invalid: ".
func CheckFilters(filters []nostr.Filter) error {
	for i := range filters {
		if _, err := FromFilter(&filters[i]); err != nil {
			return err
		}
	}
	return nil
}

// MatchesEvent reports whether e can match a search, being of a searchable
// kind (nostr.IsSearchable), and its content matches q.
func (q *Query) MatchesEvent(e *nostr.Event) bool {
	return nostr.IsSearchable(e.Kind) && q.Match(e.Content)
}

// Matches reports whether e satisfies every constraint of f, Search
// included: f.MatchesIgnoringSearch and, when f has a search, MatchesEvent
// of its query (an invalid query matches nothing). It parses the search on
// each call; matching many events against one filter, use a Matcher.
func Matches(f *nostr.Filter, e *nostr.Event) bool {
	if !f.MatchesIgnoringSearch(e) {
		return false
	}
	q, err := FromFilter(f)
	return err == nil && (q == nil || q.MatchesEvent(e))
}

// Matcher is a filter prepared for matching many events, search included:
// a nostr.Matcher for the NIP-01 constraints and the parsed query. It
// matches exactly what Matches matches. The filter must not be modified
// while the Matcher is in use; a Matcher is safe for concurrent use.
type Matcher struct {
	m   *nostr.Matcher
	q   *Query
	bad bool // the search does not parse: nothing matches
}

// NewMatcher prepares f for matching.
func NewMatcher(f *nostr.Filter) *Matcher {
	q, err := FromFilter(f)
	return &Matcher{m: nostr.NewMatcher(f), q: q, bad: err != nil}
}

// Filter returns the filter m matches.
func (m *Matcher) Filter() *nostr.Filter { return m.m.Filter() }

// Query returns the filter's parsed search: nil when it has none or it
// does not parse.
func (m *Matcher) Query() *Query { return m.q }

// Matches reports whether e satisfies every constraint of the filter, as
// Matches does.
func (m *Matcher) Matches(e *nostr.Event) bool {
	if m.bad || !m.m.MatchesIgnoringSearch(e) {
		return false
	}
	return m.q == nil || m.q.MatchesEvent(e)
}
