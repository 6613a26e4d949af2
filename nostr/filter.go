package nostr

import "github.com/buzzrelay/buzz/search"

// Filter is one NIP-01 subscription filter.
//
// A nil slice means "no constraint"; a non-nil empty slice matches nothing.
// Tags maps a single-letter tag name (without the '#') to the accepted values.
// Since and Until are inclusive bounds; nil means unbounded. Limit applies to
// stored events only: LimitSet reports whether the client gave one, so that
// "limit": 0 (no stored events, live only) differs from an absent limit.
// Search is a NIP-50 query (package search has its language); "" is no
// constraint.
type Filter struct {
	IDs      []string
	Authors  []string
	Kinds    []int
	Tags     map[string][]string
	Since    *int64
	Until    *int64
	Limit    int
	LimitSet bool
	Search   string

	// query is Search parsed by ParseFilter (nil otherwise).
	query *search.Query
}

// SearchQuery returns the parsed Search, or nil when Search is "". A
// filter built by ParseFilter returns the query it parsed; otherwise
// Search is parsed now.
func (f *Filter) SearchQuery() (*search.Query, error) {
	if f.Search == "" {
		return nil, nil
	}
	if f.query != nil {
		return f.query, nil
	}
	return search.Parse(f.Search)
}
