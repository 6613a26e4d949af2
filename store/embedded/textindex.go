package embedded

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// textIndexer keeps events_fts in step with the events of the engine:
// every textInterval, and whenever a search waits for it,
// it adds the text of the events saved since in batches of up to textBatch,
// through the writer, and removes the text of events the engine removed.
// Indexing off the write path, in batches, costs FTS5 a few
// microseconds an event; a word key per event in the engine cost a quarter
// of the relay's ingest (measured). The batches are derived data, written
// with submitLazy: no sync of the log waits for them.
//
// The indexer takes a backlog a batch at a time with a pause between
// batches (textPause), so the events arriving meanwhile are read, saved and
// acknowledged between them; only a search waiting for the index makes it
// go on without pausing.
//
// A search waits until the index has taken in every event committed before
// it started (read your writes), so a client never misses an event it was
// told was saved.
type textIndexer struct {
	s    *Store
	wake chan struct{} // a new event or removal; buffered, one pending
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	through uint64        // the engine seq indexed through (committed)
	caught  chan struct{} // closed and replaced each time through advances
	removed []uint64      // seqs removed by the engine, text not yet deleted
	busy    bool          // a step is between taking removed and committing

	waiters atomic.Int32 // searches in waitFor
}

// textBatch is how many events one indexing transaction reads at most.
// Reading a batch's text from the engine and inserting it into FTS5 are
// pure Go (the engine, and SQLite compiled to Go) that keep their processor
// until they end: batches of 512 held it for 5–8 ms at a time, twice in a row
// (the read, then the insert on the writer), while every connection waited,
// and made the acknowledgement latency's p99 on one core 14–16 ms; batches
// of 128, with textPause between them, take it to 10–11 ms at the same
// ingest rate, for 2 % more CPU and a p90 of 4.3 instead of 3.5 ms
// (`buzzbench -b`, closed loop, 7 runs each, either relay first; 64 measured
// alike). FTS5 writes a segment per transaction, so smaller batches leave
// more segments for the background merge (maintainLoop).
const textBatch = 128

// textPause is the pause between two batches of a backlog. It parks the
// indexer, so the runtime polls the network and runs every goroutine that
// is ready before the next batch; runtime.Gosched would not: the yielding
// goroutine is runnable at once, and the network is polled only when nothing
// is. On an idle relay the runtime's timers make the pause about a
// millisecond.
const textPause = 50 * time.Microsecond

// textInterval is how often the indexer runs when no search waits for it.
const textInterval = 250 * time.Millisecond

// startTextIndex runs in open, before the writer goroutine: it reads through
// the writer's connection.
func (s *Store) startTextIndex(ctx context.Context) error {
	ix := &textIndexer{s: s, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		caught: make(chan struct{})}
	var through int64
	if err := s.w.conn.QueryRowContext(ctx, `SELECT indexed_through FROM lsm_text_index WHERE id = 1`).Scan(&through); err != nil {
		return internal("text index", err)
	}
	ix.through = uint64(through)
	s.text = ix
	go ix.run()
	return nil
}

// notify wakes the indexer; it never blocks, and does nothing on a nil
// indexer (the events are in SQLite).
func (ix *textIndexer) notify() {
	if ix == nil {
		return
	}
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// removedSeqs is the engine's WithOnRemove hook: it runs under the engine's
// writer lock, so it only queues.
func (ix *textIndexer) removedSeqs(seqs []uint64) {
	ix.mu.Lock()
	ix.removed = append(ix.removed, seqs...)
	ix.mu.Unlock()
}

// close stops the indexer and waits for it; the text of events not yet
// indexed is indexed at the next open.
func (ix *textIndexer) close() {
	close(ix.stop)
	<-ix.done
}

func (ix *textIndexer) run() {
	defer close(ix.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-ix.stop
		cancel()
	}()
	tick := time.NewTicker(textInterval)
	defer tick.Stop()
	for {
		for ix.step(ctx) {
			if ix.waiters.Load() == 0 {
				time.Sleep(textPause)
			}
		}
		select {
		case <-ix.stop:
			return
		case <-ix.wake:
		case <-tick.C:
		}
	}
}

// step indexes one batch and reports whether there may be more.
func (ix *textIndexer) step(ctx context.Context) bool {
	ix.mu.Lock()
	from := ix.through
	removed := ix.removed
	ix.removed = nil
	ix.busy = true
	ix.mu.Unlock()
	texts, last, err := ix.s.ev.Texts(ctx, from, textBatch)
	if err == nil && last == from && len(removed) == 0 {
		ix.mu.Lock()
		ix.busy = false
		ix.mu.Unlock()
		return false
	}
	if err == nil {
		err = ix.s.submitLazy(ctx, func(w *writer) error {
			// Added before removed: a removal the engine reported after
			// Texts read the event must delete the row added here.
			for _, t := range texts {
				// Content without a word ("+", an emoji: most
				// reactions) can match no search: no row.
				doc := ftsText(int64(t.Community), t.Content)
				if doc == "" {
					continue
				}
				if _, err := w.exec(`INSERT INTO events_fts (rowid, content) VALUES (?, ?)`, int64(t.Seq), doc); err != nil {
					return internal("text index", err)
				}
			}
			for _, seq := range removed {
				if _, err := w.exec(`DELETE FROM events_fts WHERE rowid = ?`, int64(seq)); err != nil {
					return internal("text index", err)
				}
			}
			if _, err := w.exec(`UPDATE lsm_text_index SET indexed_through = ? WHERE id = 1`, int64(last)); err != nil {
				return internal("text index", err)
			}
			w.textChanged = w.textChanged || len(texts) > 0 || len(removed) > 0
			return nil
		})
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.busy = false
	if err != nil {
		ix.removed = append(removed, ix.removed...)
		if ctx.Err() == nil {
			ix.s.cfg.log.Error("sqlite: text index", "err", err)
		}
		return false
	}
	ix.through = last
	close(ix.caught)
	ix.caught = make(chan struct{})
	return last != from || len(texts) > 0
}

// waitFor returns once the index has taken in every event up to seq, or
// when ctx ends.
func (ix *textIndexer) waitFor(ctx context.Context, seq uint64) error {
	ix.waiters.Add(1)
	defer ix.waiters.Add(-1)
	for {
		ix.mu.Lock()
		through, caught := ix.through, ix.caught
		ix.mu.Unlock()
		if through >= seq {
			return nil
		}
		ix.notify()
		select {
		case <-caught:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// search answers a filter with a search: events_fts finds the candidates
// among the community's own tokens (keyed by its number in the engine),
// the engine checks and ranks them.
func (s *Store) search(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope,
	yield func(store.Record, error) bool) {
	sq, err := search.FromFilter(&f)
	if err != nil {
		return // an invalid query matches nothing
	}
	if err := s.text.waitFor(ctx, s.ev.LastSeq()); err != nil {
		yield(store.Record{}, err)
		return
	}
	cseq, err := s.ftsCommunity(ctx, c)
	if err != nil {
		yield(store.Record{}, err)
		return
	}
	st, err := s.rstmts.get(ctx, `SELECT rowid FROM events_fts WHERE events_fts MATCH ?`)
	if err != nil {
		yield(store.Record{}, internal("search", err))
		return
	}
	rows, err := st.QueryContext(ctx, ftsMatch(cseq, sq))
	if err != nil {
		yield(store.Record{}, internal("search", err))
		return
	}
	var seqs []uint64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			yield(store.Record{}, internal("search", err))
			return
		}
		seqs = append(seqs, uint64(seq))
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		yield(store.Record{}, internal("search", err))
		return
	}
	slices.Sort(seqs)
	for r, err := range s.ev.SearchCandidates(ctx, c, f, scope, seqs) {
		if !yield(r, err) {
			return
		}
	}
}

// ftsCommunity is the number community c's tokens carry in events_fts
// (ftstext.go): its number in the events engine.
func (s *Store) ftsCommunity(ctx context.Context, c tenant.CommunityID) (int64, error) {
	cseq, err := s.ev.TextCommunity(ctx, c)
	return int64(cseq), err
}
