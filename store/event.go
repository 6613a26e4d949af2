package store

import (
	"slices"
	"strings"

	"github.com/buzzrelay/buzz/nostr"
)

// IndexedTag is one (name, value) pair a "#x" filter can match: the name of
// a tag of one letter and the tag's first value.
type IndexedTag struct{ Name, Value string }

// IndexedTags returns the pairs a backend indexes for ev's "#x" filters: for
// every tag with a one-letter name and at least one value, the name and the
// first value, sorted (name, then value) and distinct. A filter naming a
// longer tag name is answered by nostr.Filter.Matches on the stored event.
func IndexedTags(ev *nostr.Event) []IndexedTag {
	var out []IndexedTag
	for _, t := range ev.Tags {
		if len(t) >= 2 && len(t[0]) == 1 {
			out = append(out, IndexedTag{t[0], t[1]})
		}
	}
	if len(out) > 1 {
		slices.SortFunc(out, func(a, b IndexedTag) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return strings.Compare(a.Value, b.Value)
		})
		out = slices.Compact(out)
	}
	return out
}

// Coordinate is a replaceable or addressable event's slot within its
// author's events: the kind and, for addressable kinds, the "d" value ("" for
// replaceable kinds).
type Coordinate struct {
	Kind int
	D    string
}

// DeletionTargets returns what a kind 5 request asks to delete: the values of
// its "e" tags that are event ids (64 lowercase hex characters), and the
// coordinates of its "a" tags that name the request's own author and a
// replaceable or addressable kind ("kind:pubkey:d", kind in canonical decimal
// form). Both are in tag order; repeats are kept.
func DeletionTargets(ev *nostr.Event) (ids []string, coords []Coordinate) {
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "e":
			if nostr.IsLowerHex(t[1], 64) {
				ids = append(ids, t[1])
			}
		case "a":
			if c, ok := parseCoordinate(t[1], ev.PubKey); ok {
				coords = append(coords, c)
			}
		}
	}
	return ids, coords
}

// parseCoordinate parses "kind:pubkey:d" (nostr.ParseCoordinate) and keeps
// it only when it names a replaceable or addressable coordinate of author.
func parseCoordinate(s, author string) (Coordinate, bool) {
	kind, pk, d, ok := nostr.ParseCoordinate(s)
	if !ok || pk != author {
		return Coordinate{}, false
	}
	switch {
	case nostr.IsReplaceable(kind):
		d = ""
	case !nostr.IsAddressable(kind):
		return Coordinate{}, false
	}
	return Coordinate{Kind: kind, D: d}, true
}
