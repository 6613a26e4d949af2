package store

import "strings"

// CompareSearchHits orders two search hits, a scored aScore and b scored
// bScore, the way Query yields a search's results: higher relevance first,
// then newest first (created_at descending), then by id ascending.
func CompareSearchHits(a Record, aScore float64, b Record, bScore float64) int {
	switch {
	case aScore != bScore:
		if aScore > bScore {
			return -1
		}
		return 1
	case a.CreatedAt != b.CreatedAt:
		if a.CreatedAt > b.CreatedAt {
			return -1
		}
		return 1
	}
	return strings.Compare(a.ID, b.ID)
}
