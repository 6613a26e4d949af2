package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// scored is one search hit with its relevance; seq locates its row.
type scored struct {
	rec   store.Record
	seq   int64
	score float64
}

// querySearch runs a filter with a search query: FTS5 finds the candidate
// rows (community, scope and the other conditions applied in SQL), each is
// scored by search.Score on its content, and the hits are yielded by
// descending score, then newest first (created_at DESC, id ASC), at most
// f.Limit when f.LimitSet. Ranking needs every hit before the first is
// sent: the candidates' content comes out of SQLite alone (json_extract),
// and only the hits yielded are read whole.
func (s *Store) querySearch(ctx context.Context, c tenant.CommunityID, cseq int64, f *nostr.Filter, scope channel.Scope,
	yield func(store.Record, error) bool) {
	sq, err := search.FromFilter(f)
	if err != nil {
		return // an invalid query matches nothing
	}
	var q sqlBuilder
	q.add(`SELECT e.seq, e.id, e.created_at, json_extract(CAST(e.raw AS TEXT), '$.content') FROM `)
	q.from(cseq, f)
	q.add(` WHERE e.community = ? AND (e.expires_at IS NULL OR e.expires_at > ?)`, cseq, time.Now().Unix())
	ok, residual := q.filter(cseq, f)
	if !ok {
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
			h       scored
			id      []byte
			content string
		)
		if err := rows.Scan(&h.seq, &id, &h.rec.CreatedAt, &content); err != nil {
			rows.Close()
			yield(store.Record{}, internal("search", err))
			return
		}
		// package search's tokenizer decides, where FTS5's Unicode tables
		// differ.
		if h.score = sq.Score(content); h.score == 0 {
			continue
		}
		h.rec.ID = hex.EncodeToString(id)
		h.rec.Community = c
		hits = append(hits, h)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		yield(store.Record{}, internal("search", err))
		return
	}
	slices.SortFunc(hits, func(a, b scored) int { return store.CompareSearchHits(a.rec, a.score, b.rec, b.score) })
	raw, err := s.rstmts.get(ctx, `SELECT raw FROM events WHERE seq = ?`)
	if err != nil {
		yield(store.Record{}, internal("search", err))
		return
	}
	sent := 0
	for _, h := range hits {
		if f.LimitSet && sent >= f.Limit {
			return
		}
		switch err := raw.QueryRowContext(ctx, h.seq).Scan(&h.rec.Raw); {
		case errors.Is(err, sql.ErrNoRows):
			continue // deleted meanwhile
		case err != nil:
			yield(store.Record{}, internal("search", err))
			return
		}
		if residual {
			// Matches checks what SQL could not express (tag names longer
			// than one letter).
			ev, err := nostr.ParseEvent(h.rec.Raw)
			if err != nil {
				yield(store.Record{}, internal("search: stored event", err))
				return
			}
			if !search.Matches(f, ev) {
				continue
			}
		}
		if !yield(h.rec, nil) {
			return
		}
		sent++
	}
}
