package lsm

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Text is a searchable event's content, for a text index kept outside the
// engine, keyed by the event's seq.
type Text struct {
	Seq uint64
	// Community is the number of the event's community in the engine
	// (TextCommunity), for an index that keeps each community's words
	// apart.
	Community uint32
	Content   string
}

// TextCommunity returns the number Texts gives community c's events as
// Text.Community, for a search of c in a text index kept outside the
// engine. A community the engine does not know gives an error, as
// SearchCandidates does.
func (s *Store) TextCommunity(ctx context.Context, c tenant.CommunityID) (uint32, error) {
	cseq, err := s.enterCommunity(ctx, c)
	if err != nil {
		return 0, err
	}
	s.life.leave()
	return cseq, nil
}

// LastSeq is the highest seq of a committed event: an index that has taken
// in every event up to it is current.
func (s *Store) LastSeq() uint64 { return s.visible.Load() }

// Texts returns the content of the searchable events (every kind but gift
// wraps, with content) among the first max events after seq after, in seq
// order, and the seq to call it again from: the last one it looked at, or
// when it reached the end, LastSeq as it was when it began (the events
// between were removed). A text index that has taken in every Text up to
// last is current as of that LastSeq.
func (s *Store) Texts(ctx context.Context, after uint64, max int) (texts []Text, last uint64, err error) {
	if err := s.life.enter(); err != nil {
		return nil, after, err
	}
	defer s.life.leave()
	if err := ctx.Err(); err != nil {
		return nil, after, err
	}
	visible := s.visible.Load() // before the iterator: it sees every event up to it
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: eventKey(after + 1), UpperBound: []byte{pEvent + 1}})
	if err != nil {
		return nil, after, fmt.Errorf("lsm: iterate: %w", err)
	}
	defer it.Close()
	last = after
	n := 0
	ok := it.First()
	for ; ok && n < max; ok, n = it.Next(), n+1 {
		k := it.Key()
		if len(k) != 9 {
			return nil, after, fmt.Errorf("%w: event key of %d bytes", errCorrupt, len(k))
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, after, fmt.Errorf("lsm: iterate: %w", err)
		}
		h, raw, err := decodeRecord(v)
		if err != nil {
			return nil, after, err
		}
		last = beU64(k[1:])
		if !nostr.IsSearchable(h.kind) {
			continue
		}
		// Only the content: the record was checked when it was saved.
		content, err := nostr.EventContent(raw)
		if err != nil {
			return nil, after, fmt.Errorf("%w: event %d: %v", errCorrupt, last, err)
		}
		if content != "" {
			texts = append(texts, Text{Seq: last, Community: h.cseq, Content: content})
		}
	}
	if err := it.Error(); err != nil {
		return nil, after, fmt.Errorf("lsm: iterate: %w", err)
	}
	if !ok && visible > last { // the end: nothing live between last and visible
		last = visible
	}
	return texts, last, nil
}

// live reports whether the event of hit h is still stored under its seq.
func (s *Store) live(cseq uint32, h hit) (bool, error) {
	v, ok, err := readValue(s.db, idKey(cseq, h.h.id[:]))
	if err != nil || !ok {
		return false, err
	}
	return len(v) == 8 && beU64(v) == h.seq, nil
}

// SearchCandidates answers a filter with a search from the seqs a text
// index found for it: the candidates that are live events of community c
// within scope and match every condition of f (search included) are
// yielded by descending relevance (package search's Score), then newest
// first, at most f.Limit when f.LimitSet. Seqs of removed events, or of
// other communities, are skipped.
func (s *Store) SearchCandidates(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope, seqs []uint64) iter.Seq2[store.Record, error] {
	return func(yield func(store.Record, error) bool) {
		cseq, err := s.enterCommunity(ctx, c)
		if err != nil {
			yield(store.Record{}, err)
			return
		}
		defer s.life.leave()
		sq, err := search.FromFilter(&f)
		if err != nil || sq == nil || (f.LimitSet && f.Limit <= 0) {
			return // an invalid query matches nothing
		}
		p, ok := newPlan(cseq, &f, scope, time.Now().Unix())
		if !ok {
			return
		}
		p.parse = true // the search, and every other condition, on the event
		recs := records{cache: s.cache, r: s.db}
		var hits []scored
		for i, seq := range seqs {
			if i%64 == 63 {
				if err := ctx.Err(); err != nil {
					yield(store.Record{}, err)
					return
				}
			}
			h, ok, err := p.check(recs, seq)
			if err == nil && ok {
				// The record cache keeps removed events (nothing else asks
				// for their seqs): only the id index says an event is live.
				ok, err = s.live(cseq, h)
			}
			if err != nil {
				yield(store.Record{}, err)
				return
			}
			if ok {
				hits = append(hits, scored{rec: record(c, h), score: sq.Score(h.ev.Content)})
			}
		}
		yieldRanked(hits, &f, yield)
	}
}
