package postgres

import (
	"strings"

	sq "github.com/Masterminds/squirrel"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/tenant"
)

// tsqueryText is q as to_tsquery input: each word quoted, a phrase's words
// joined by <-> (followed by), words and phrases joined by &. Words hold
// only letters and numbers, so nothing needs escaping; to_tsquery
// lowercases them like the indexed content, and buzz_search_tsquery
// (migration 190) makes its lexemes the searching community's.
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

// searchFrom selects sel from the matches of p's search: the rows of
// event_search in community c whose tsvector matches its query as c's
// lexemes (buzz_search_tsquery: every lexeme of event_search is its
// community's, so the GIN index reads only c's postings; it is the only
// index of that table the condition can use, so the plan does not depend
// on statistics), each joined to its live event by one
// primary-key probe carrying every other condition of p. LIMIT 1 keeps the
// LATERAL subquery from being flattened into a join PostgreSQL could drive
// from the events side. The matches' alias is s, the event's e (columns
// id, created_at, raw).
func searchFrom(c tenant.CommunityID, now int64, p *predicate, sel string) sq.SelectBuilder {
	return sq.Select(sel).From("event_search s").
		JoinClause(sq.Expr("CROSS JOIN LATERAL (?) AS e", probe(c, now, p))).
		Where(sq.Expr("s.community_id = ? AND s.tsv @@ buzz_search_tsquery(?, ?)", c.UUID(), c.UUID(), p.tsquery))
}

// probe is the LATERAL lookup of match s's event: live, in community c, and
// meeting every condition of p but the search.
func probe(c tenant.CommunityID, now int64, p *predicate) sq.SelectBuilder {
	return sq.Select(cols).From("events e").
		Where(sq.Expr("e.created_at = s.created_at AND e.id = s.event_id")).
		Where(live(c, now)).Where(p.conds("")).Limit(1)
}

// searchQuery ranks a filter with a search by relevance: ts_rank of the
// stored tsvector (each word's frequency in the event and, for several
// words, their proximity; nothing of other events), then newest first.
// The matches are ranked in event_search alone (a sorted subquery, which
// PostgreSQL does not flatten), then probed in that order, so a limited
// read stops after enough of them pass the other conditions instead of
// probing every match.
func searchQuery(c tenant.CommunityID, now int64, p *predicate, f *nostr.Filter) sq.Sqlizer {
	const byRank = "s.relevance DESC, s.created_at DESC, s.event_id"
	ranked := sq.Select("s.created_at, s.event_id").
		Column(sq.Expr("ts_rank(s.tsv, buzz_search_tsquery(?, ?)) AS relevance", c.UUID(), p.tsquery)).
		From("event_search s").
		Where(sq.Expr("s.community_id = ? AND s.tsv @@ buzz_search_tsquery(?, ?)", c.UUID(), c.UUID(), p.tsquery)).
		OrderBy("relevance DESC, s.created_at DESC, s.event_id")
	b := sq.Select("e.id, e.created_at, e.raw").FromSelect(ranked, "s").
		JoinClause(sq.Expr("CROSS JOIN LATERAL (?) AS e", probe(c, now, p))).
		OrderBy(byRank)
	if f.LimitSet {
		b = b.Limit(uint64(f.Limit))
	}
	return b
}

// countUnion counts the distinct events the parts select (each part
// selects created_at, id, and kind when withKind): merged by UNION when
// there are several, or with DISTINCT when one part may yield an event
// twice. agg is the select list over the merged rows, x, whose columns are
// named created_at, id (and kind) whatever the parts name them.
func countUnion(parts []sq.Sqlizer, distinct bool, agg sq.Sqlizer, withKind bool) sq.Sqlizer {
	x := "x(created_at, id)"
	if withKind {
		x = "x(created_at, id, kind)"
	}
	if len(parts) == 1 {
		if distinct {
			return sq.Expr("SELECT ? FROM (SELECT DISTINCT y.* FROM (?) AS y) AS "+x, agg, parts[0])
		}
		return sq.Expr("SELECT ? FROM (?) AS "+x, agg, parts[0])
	}
	ph := make([]string, len(parts))
	args := make([]any, 0, len(parts)+1)
	args = append(args, agg)
	for i, p := range parts {
		ph[i] = "(?)"
		args = append(args, p)
	}
	return sq.Expr("SELECT ? FROM ("+strings.Join(ph, " UNION ")+") AS "+x, args...)
}
