package postgres

import (
	"strings"

	sq "github.com/Masterminds/squirrel"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/tenant"
)

// tsMatch is the search condition: an equality on the search_tsv column of
// events_search_idx, whose community_id key the live community condition
// fills, so the index reads one community's postings only.
const tsMatch = "e.search_tsv @@ to_tsquery('simple'::regconfig, ?)"

// tsqueryText is q as to_tsquery input: each word quoted, a phrase's words
// joined by <-> (followed by), words and phrases joined by &. Words hold
// only letters and numbers, so nothing needs escaping; to_tsquery
// lowercases them like the indexed content.
func tsqueryText(q *search.Query) string {
	var b strings.Builder
	for i, p := range q.Phrases() {
		if i > 0 {
			b.WriteString(" & ")
		}
		if len(p) > 1 {
			b.WriteByte('(')
		}
		for j, w := range p {
			if j > 0 {
				b.WriteString(" <-> ")
			}
			b.WriteByte('\'')
			b.WriteString(w)
			b.WriteByte('\'')
		}
		if len(p) > 1 {
			b.WriteByte(')')
		}
	}
	return b.String()
}

// searchQuery ranks a filter with a search by relevance: ts_rank of the
// stored tsvector (term frequency within the event and, for several
// words, their proximity; nothing of other events), then newest first.
// Every match is ranked before the limit applies, so the rows come from
// the GIN index (a bitmap scan), not from a timeline index in order.
func searchQuery(c tenant.CommunityID, now int64, p *predicate, f *nostr.Filter) sq.Sqlizer {
	b := sq.Select(cols).From("events e").Where(live(c, now)).Where(p.conds("")).
		OrderByClause("ts_rank(e.search_tsv, to_tsquery('simple'::regconfig, ?)) DESC, "+order, p.tsquery)
	if f.LimitSet {
		b = b.Limit(uint64(f.Limit))
	}
	return b
}
