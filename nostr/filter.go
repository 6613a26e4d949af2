package nostr

// Filter is one NIP-01 subscription filter.
//
// A nil slice means "no constraint"; a non-nil empty slice matches nothing.
// Tags maps a single-letter tag name (without the '#') to the accepted values.
// Since and Until are inclusive bounds; nil means unbounded. Limit applies to
// stored events only: LimitSet reports whether the client gave one, so that
// "limit": 0 (no stored events, live only) differs from an absent limit.
// Search is a NIP-50 query string; "" is no constraint. Its language is
// package search's, which parses and matches it (search.FromFilter,
// search.Matches): package nostr carries the string and does not read it.
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
}
