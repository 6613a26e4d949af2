package sqlite

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// ftsMatch is q as an FTS5 query: each word or phrase double-quoted (words
// hold only letters and numbers, so nothing needs escaping), implicitly
// ANDed.
func ftsMatch(q *search.Query) string {
	var b strings.Builder
	for i, p := range q.Phrases() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.Join(p, " "))
		b.WriteByte('"')
	}
	return b.String()
}

// scored is one search hit with its relevance.
type scored struct {
	rec   store.Record
	score float64
}

// querySearch runs a filter with a search query: FTS5 finds the candidate
// rows (community, scope and the other conditions applied in SQL), each is
// scored by search.Score on its content, and the hits are yielded by
// descending score, then newest first (created_at DESC, id ASC), at most
// f.Limit when f.LimitSet. Ranking needs every hit before the first is sent.
func (s *Store) querySearch(ctx context.Context, c tenant.CommunityID, cseq int64, f *nostr.Filter, scope store.Scope,
	yield func(store.Record, error) bool) {
	sq, err := f.SearchQuery()
	if err != nil {
		return // an invalid query matches nothing
	}
	var q sqlBuilder
	q.add(`SELECT e.id, e.created_at, e.raw FROM `)
	q.from(cseq, f)
	q.add(` WHERE e.community = ? AND (e.expires_at IS NULL OR e.expires_at > ?)`, cseq, time.Now().Unix())
	if ok, _ := q.filter(cseq, f); !ok {
		return
	}
	q.scope(scope)
	st, err := s.rstmts.get(ctx, q.sb.String())
	if err != nil {
		yield(store.Record{}, internal("search", err))
		return
	}
	rows, err := st.QueryContext(ctx, q.args...)
	if err != nil {
		yield(store.Record{}, internal("search", err))
		return
	}
	var hits []scored
	for rows.Next() {
		var (
			id  []byte
			rec store.Record
		)
		if err := rows.Scan(&id, &rec.CreatedAt, &rec.Raw); err != nil {
			rows.Close()
			yield(store.Record{}, internal("search", err))
			return
		}
		ev, err := nostr.ParseEvent(rec.Raw)
		if err != nil {
			rows.Close()
			yield(store.Record{}, internal("search: stored event", err))
			return
		}
		// Matches re-checks what SQL could not express (tag names longer
		// than one letter) and the search itself with package search's
		// tokenizer, the authority where FTS5's Unicode tables differ.
		score := sq.Score(ev.Content)
		if score == 0 || !f.Matches(ev) {
			continue
		}
		rec.ID = hex.EncodeToString(id)
		rec.Community = c
		hits = append(hits, scored{rec, score})
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		yield(store.Record{}, internal("search", err))
		return
	}
	slices.SortFunc(hits, compareHits)
	if f.LimitSet && len(hits) > f.Limit {
		hits = hits[:f.Limit]
	}
	for _, h := range hits {
		if !yield(h.rec, nil) {
			return
		}
	}
}

// compareHits orders by descending score, then created_at DESC, id ASC.
func compareHits(a, b scored) int {
	switch {
	case a.score != b.score:
		if a.score > b.score {
			return -1
		}
		return 1
	case a.rec.CreatedAt != b.rec.CreatedAt:
		if a.rec.CreatedAt > b.rec.CreatedAt {
			return -1
		}
		return 1
	}
	return strings.Compare(a.rec.ID, b.rec.ID)
}
