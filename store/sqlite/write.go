package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/lsm"
)

// writeReq is one queued write. fn runs on the writer goroutine inside the
// batch transaction; it must either return nil, or return a store sentinel
// error having written nothing, or return an internal error (after which the
// batch is rolled back and replayed one request per transaction).
type writeReq struct {
	ctx   context.Context
	fn    func(w *writer) error
	err   error
	done  chan error
	state atomic.Int32 // reqQueued, then reqTaken by the writer or reqAbandoned by submit
	// events: the transaction that applied fn also wrote to the events
	// engine (WithLSMEvents), whose log must be synced before the answer.
	events bool
}

// The life of a writeReq: submit queues it; then exactly one of the writer
// (taking it to run fn) and submit (giving up when its context ends) wins the
// transition out of reqQueued. That is what guarantees fn never runs after
// submit has returned, so closures may write to their caller's variables.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// take claims r for the writer. It reports false when submit has already
// abandoned r (fn must not run); a request the writer took before (a batch
// replayed one request per transaction) may run again.
func (r *writeReq) take() bool {
	return r.state.CompareAndSwap(reqQueued, reqTaken) || r.state.Load() == reqTaken
}

// isOutcome reports whether err is a per-request result that leaves the
// transaction usable (nothing was written for that request).
func isOutcome(err error) bool {
	return err == nil || errors.Is(err, store.ErrDuplicate) ||
		errors.Is(err, store.ErrSuperseded) || errors.Is(err, store.ErrDeleted)
}

// submit queues fn for the writer and waits for its committed result.
// If ctx ends before the writer takes the request, submit returns ctx.Err()
// and fn never runs. Once the writer has taken it, submit waits for the
// batch to finish (a bounded wait: batches are short and never wait on
// callers), so fn never runs concurrently with or after submit's return.
func (s *Store) submit(ctx context.Context, fn func(w *writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if a, ok := store.PendingAuthority(ctx); ok {
		marked, err := s.withAuthority(ctx, a, fn)
		if err != nil {
			return err
		}
		if err := s.enqueue(ctx, marked); err != nil {
			return err
		}
		store.AuthorityRecorded(ctx)
		return nil
	}
	return s.enqueue(ctx, fn)
}

// withAuthority wraps fn, the effect of authority event a (see
// store.Authority), so that it runs only when a is not yet recorded in
// applied_authority (else ErrDuplicate, nothing written), and records a in
// the same transaction when fn succeeded without a verdict (w.refused).
// The single writer serializes the check and the insert.
func (s *Store) withAuthority(ctx context.Context, a store.Authority, fn func(w *writer) error) (func(w *writer) error, error) {
	cseq, err := s.communitySeq(ctx, a.Community)
	if err != nil {
		return nil, err
	}
	id, ok := nostr.DecodeHex32(a.Event)
	if !ok {
		return nil, errors.New("sqlite: authority mark: event id must be 64 lowercase hex characters")
	}
	return func(w *writer) error {
		var one int
		err := w.conn.QueryRowContext(w.ctx, `SELECT 1 FROM applied_authority WHERE community = ? AND event_id = ?`, cseq, id).Scan(&one)
		switch {
		case err == nil:
			return store.ErrDuplicate
		case !errors.Is(err, sql.ErrNoRows):
			return internal("authority mark", err)
		}
		w.refused = false
		if err := fn(w); err != nil || w.refused {
			return err
		}
		if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO applied_authority (community, event_id, until) VALUES (?, ?, ?)`,
			cseq, id, a.Until.Unix()); err != nil {
			return internal("authority mark", err)
		}
		return nil
	}, nil
}

// refuse records that the running write's fn refused (returned nil with a
// verdict for its caller): an authority mark is then not recorded. It
// returns verdict.
func (w *writer) refuse(verdict error) error {
	w.refused = true
	return verdict
}

// enqueue queues fn for the writer and waits for its committed result (see
// submit).
func (s *Store) enqueue(ctx context.Context, fn func(w *writer) error) error {
	if err := s.syncFailed(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		return <-r.done
	}
}

// maxSpins bounds how many times the writer yields to let callers join a
// batch before committing it.
const maxSpins = 4

// writeLoop is the single writer: it batches queued requests into one
// transaction each and hands every finished batch to syncLoop, which
// answers its callers once the batch is on stable storage. It exits once
// reqs is closed and drained.
func (s *Store) writeLoop() {
	defer close(s.committed)
	batch := make([]*writeReq, 0, s.cfg.maxBatch)
	for {
		r, ok := <-s.reqs
		if !ok {
			return
		}
		batch = append(batch[:0], r)
		open := true
		// Collect what is queued. Callers answered by the previous commit
		// are usually runnable but not yet running (few cores): yield a
		// few times while that still brings in more, so they join this
		// batch instead of each paying for its own commit.
		for spins := 0; open && len(batch) < s.cfg.maxBatch; {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					open = false
					continue
				}
				batch = append(batch, r)
				continue
			default:
			}
			if spins == maxSpins {
				break
			}
			spins++
			runtime.Gosched()
		}
		s.runBatch(batch)
		s.committed <- slices.Clone(batch)
		clear(batch)
		if !open {
			return
		}
	}
}

// syncLoop answers the callers of committed batches, in commit order, once
// the write-ahead log holding them is on stable storage: one fdatasync of
// the WAL, made after the batches' commits returned, covers every batch
// committed meanwhile. The writer goes on with the next batch while the
// disk syncs, so the CPU work of batch N+1 overlaps the sync of batch N.
// Up to maxSyncs syncs run at once: batches committed while a sync is
// running start one of their own (each covers every frame written before
// it began) instead of waiting for the running one to end before theirs
// can even start. Rounds are answered in commit order, each once its own
// sync has returned. A failed sync is final (failSync): its writes and all
// later ones get the failure.
//
// Why an acknowledged write is as durable as with synchronous=FULL: the
// writer commits with synchronous=NORMAL, which writes the transaction's
// frames, ending with its commit frame, to the WAL without syncing it.
// Syncing the WAL file afterwards makes those frames, and every frame
// before them, durable — exactly the fsync FULL makes inside COMMIT — and
// only then is the caller answered. The WAL is only ever overwritten from
// its start after a checkpoint has copied all of it into the database
// file, and with NORMAL SQLite syncs the WAL before a checkpoint and the
// database file after it (on whichever connection runs the checkpoint: the
// writer's autocheckpoint or maintainLoop's, both NORMAL), so frames are
// never overwritten before they are durable in one place or the other.
// Frames written after the last sync (commits not yet answered) may be
// lost in a power failure; recovery then stops at the last complete,
// checksummed commit, as with FULL.
// A concurrent reader may see a commit up to one sync before it is
// durable; nothing is acknowledged, and the relay publishes nothing, before.
func (s *Store) syncLoop() {
	defer close(s.wrote)
	// A round is the batches one sync covers; err receives its result.
	type round struct {
		reqs []*writeReq
		err  chan error
	}
	slots := make(chan struct{}, maxSyncs)
	rounds := make(chan *round, maxSyncs)
	answered := make(chan struct{})
	go func() { // answers rounds in commit order
		defer close(answered)
		for r := range rounds {
			err := <-r.err
			if err == nil {
				err = s.syncFailed()
			} else {
				s.failSync(err)
			}
			for _, q := range r.reqs {
				if err != nil && isOutcome(q.err) {
					q.err = err
				}
				q.done <- q.err
			}
			select {
			case s.wrote <- struct{}{}:
			default:
			}
		}
	}()
	for b := range s.committed {
		pending := b
	more:
		for {
			select {
			case b, ok := <-s.committed:
				if !ok {
					break more
				}
				pending = append(pending, b...)
			default:
				break more
			}
		}
		r := &round{reqs: pending, err: make(chan error, 1)}
		events := slices.ContainsFunc(pending, func(q *writeReq) bool { return q.events })
		slots <- struct{}{}
		rounds <- r
		go func() {
			r.err <- s.syncWAL(events)
			<-slots
		}()
	}
	close(rounds)
	<-answered
}

// failSync records that a sync of the write-ahead log failed. From then
// on the store refuses every write and answers every write still in
// flight with that failure: after a failed fdatasync the kernel may have
// dropped the dirty pages it could not write (and reports the error once),
// so a later sync that succeeds proves nothing about the frames before it,
// and the log's frames are only valid in an unbroken, checksummed chain.
// Only reopening the store (recovery from what is on disk) is safe.
func (s *Store) failSync(err error) {
	if s.syncErr.CompareAndSwap(nil, &err) {
		s.cfg.log.Error("sqlite: a sync of the write-ahead log failed; refusing writes until the store is reopened", "err", err)
	}
}

// syncFailed is the error every write gets once a sync has failed (see
// failSync); nil before.
func (s *Store) syncFailed() error {
	if p := s.syncErr.Load(); p != nil {
		return fmt.Errorf("%w (a sync of the write-ahead log failed earlier; reopen the store)", *p)
	}
	return nil
}

// maxSyncs is how many syncs of the write-ahead log syncLoop runs at once.
// Two (one running, the next already started) raised closed-loop ingest
// (16 connections, one event in flight each) by ~5 % in buzzbench.
const maxSyncs = 2

// syncWAL makes everything written to the WAL so far durable, and with
// events set everything committed to the events engine (WithLSMEvents).
// Without a WAL (a file system where SQLite could not use one) commits are
// synced by SQLite itself (synchronous=FULL) and there is nothing to do.
// A failure is logged once, by failSync.
func (s *Store) syncWAL(events bool) error {
	var err error
	if s.cfg.beforeSync != nil {
		err = s.cfg.beforeSync()
	}
	if err == nil && s.wal != nil {
		err = syncData(s.wal)
	}
	if err == nil && events && s.ev != nil {
		err = s.ev.Sync()
	}
	if err != nil {
		return internal("sync", err)
	}
	return nil
}

// commitEvents commits the events engine's part of a batch whose SQLite
// transaction has just committed: after syncing SQLite's log, so that a
// crash never leaves the events without the SQLite rows that go with them
// (a channel command's effect, a deletion's audit entry). reqs are marked
// for syncLoop to sync the engine's log before answering them.
func (s *Store) commitEvents(reqs ...*writeReq) error {
	w := s.w
	tx := w.evTx
	if tx == nil {
		return nil
	}
	w.evTx = nil
	if err := s.syncWAL(false); err != nil {
		tx.Rollback()
		s.failSync(err)
		return err
	}
	if err := tx.Commit(); err != nil {
		return internal("events", err)
	}
	for _, r := range reqs {
		r.events = true
	}
	return nil
}

// rollbackEvents drops the events engine's part of a batch rolled back.
func (w *writer) rollbackEvents() {
	if w.evTx != nil {
		w.evTx.Rollback()
		w.evTx = nil
	}
}

// runBatch applies batch and sets each request's result; syncLoop delivers
// them.
func (s *Store) runBatch(batch []*writeReq) {
	w := s.w
	ctx := context.Background() // a caller's cancellation must not interrupt a shared transaction
	finish := func(err error) {
		for _, r := range batch {
			if err != nil && r.err == nil {
				r.err = err
			}
		}
	}
	if _, err := w.begin.ExecContext(ctx); err != nil {
		s.cfg.log.Error("sqlite: begin write batch", "err", err)
		finish(internal("begin", err))
		return
	}
	failed := false
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil || !r.take() {
			r.err = cmp.Or(err, context.Canceled)
			continue
		}
		r.err = r.fn(w)
		if !isOutcome(r.err) {
			failed = true
			break
		}
	}
	if !failed {
		if err := w.indexText(); err != nil {
			s.cfg.log.Error("sqlite: index write batch", "err", err, "size", len(batch))
		} else if _, err := w.commit.ExecContext(ctx); err == nil {
			err := s.commitEvents(batch...)
			w.endTx(true)
			finish(err)
			return
		} else {
			s.cfg.log.Error("sqlite: commit write batch", "err", err, "size", len(batch))
		}
	}
	// Something failed: undo the batch and give each request its own
	// transaction, so only the request that fails gets an error.
	_, _ = w.rollback.ExecContext(ctx)
	w.rollbackEvents()
	w.endTx(false)
	w.indexFrom = 0
	for _, r := range batch {
		r.err = s.runOne(ctx, r)
	}
}

func (s *Store) runOne(ctx context.Context, r *writeReq) error {
	w := s.w
	if err := r.ctx.Err(); err != nil || !r.take() {
		return cmp.Or(err, context.Canceled)
	}
	if _, err := w.begin.ExecContext(ctx); err != nil {
		return internal("begin", err)
	}
	err := r.fn(w)
	if isOutcome(err) {
		if ierr := w.indexText(); ierr != nil {
			err = ierr
		} else if _, cerr := w.commit.ExecContext(ctx); cerr == nil {
			eerr := s.commitEvents(r)
			w.endTx(true)
			return cmp.Or(eerr, err)
		} else {
			err = internal("commit", cerr)
		}
	}
	s.cfg.log.Error("sqlite: write failed", "err", err)
	_, _ = w.rollback.ExecContext(ctx)
	w.rollbackEvents()
	w.endTx(false)
	w.indexFrom = 0
	return err
}

// writer holds the write connection and its prepared statements. Only the
// writer goroutine (and Open/Close) touch it.
type writer struct {
	conn *sql.Conn
	ctx  context.Context

	begin, commit, rollback *sql.Stmt

	tombstone, exists, insert, watermark, head *sql.Stmt
	insertLive                                 *sql.Stmt
	deleteSeq, deleteTags                      *sql.Stmt
	addTombstone, deleteByID                   *sql.Stmt
	raiseWatermark, deleteCoord                *sql.Stmt
	deleteExpired                              *sql.Stmt
	insertCommunity, communityByHost           *sql.Stmt

	tagStmts [maxTagRows + 1]*sql.Stmt // tagStmts[n] inserts n tag rows

	// refused: the running fn refused with a verdict (see refuse).
	refused bool

	// indexFrom is the lowest seq inserted into events since the text of
	// the open transaction's events was last indexed, 0 when none is
	// pending (see indexText).
	indexFrom int64
	indexFTS  *sql.Stmt
	all       []*sql.Stmt

	// textChanged records that the open transaction added to or removed
	// from the text index; textGen counts the commits that did, for
	// maintainLoop, which merges the index only after it has changed.
	textChanged            bool
	textGen                atomic.Uint64
	mergeFTS, totalChanges *sql.Stmt

	// cache is the store's event cache (nil when off); removedFrom holds
	// the communities whose events the open transaction removed, whose
	// cached events endTx invalidates once the transaction has ended.
	cache       *eventCache
	removedFrom []int64
	// saved are the events the open transaction stored, put in the cache
	// by endTx once it commits.
	saved []savedEvent

	// ev is the events engine (WithLSMEvents), nil when the events are in
	// SQLite; evTx its transaction for the open batch, begun at first use
	// (eventsTx) and committed or rolled back with SQLite's.
	ev   *lsm.Store
	evTx *lsm.Tx
}

// savedEvent is a stored event waiting for its transaction to commit
// before it enters the event cache, with the community's epoch as it was
// when the event was stored (before the bump of any removal the same
// transaction made).
type savedEvent struct {
	cseq    int64
	epoch   uint64
	seq     int64
	rec     store.Record
	expires int64
	channel []byte
}

// noteRemoval records that the open transaction removed events of
// community cseq.
func (w *writer) noteRemoval(cseq int64) {
	w.textChanged = true
	if w.cache != nil && !slices.Contains(w.removedFrom, cseq) {
		w.removedFrom = append(w.removedFrom, cseq)
	}
}

// endTx runs after every commit or rollback: it invalidates the cached
// events of the communities the transaction removed events from (after a
// rollback needlessly, which costs only misses), then, when it committed,
// caches the events it stored, so that reads of new events — the ones most
// read — find them without a miss first.
func (w *writer) endTx(committed bool) {
	if committed && w.textChanged {
		w.textGen.Add(1)
	}
	w.textChanged = false
	if len(w.removedFrom) > 0 {
		w.cache.removed(w.removedFrom)
		w.removedFrom = w.removedFrom[:0]
	}
	if committed {
		for _, e := range w.saved {
			w.cache.put(e.cseq, e.epoch, e.seq, e.rec, e.expires, e.channel)
		}
	}
	clear(w.saved)
	w.saved = w.saved[:0]
}

// maxTagRows is how many tag rows one INSERT statement carries.
const maxTagRows = 16

func newWriter(ctx context.Context, db *sql.DB, cache *eventCache) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: writer: %w", err)
	}
	w := &writer{conn: conn, ctx: context.Background(), cache: cache}
	prep := func(dst **sql.Stmt, q string) {
		if err != nil {
			return
		}
		*dst, err = conn.PrepareContext(ctx, q)
		if err != nil {
			err = fmt.Errorf("sqlite: prepare %q: %w", q, err)
			return
		}
		w.all = append(w.all, *dst)
	}
	prep(&w.begin, `BEGIN IMMEDIATE`)
	prep(&w.commit, `COMMIT`)
	prep(&w.rollback, `ROLLBACK`)
	prep(&w.tombstone, `SELECT 1 FROM deleted_ids WHERE community = ? AND id = ? AND pubkey = ?`)
	prep(&w.exists, `SELECT 1 FROM events WHERE community = ? AND id = ?`)
	prep(&w.insert, `INSERT OR IGNORE INTO events (community, id, pubkey, created_at, kind, d_tag, expires_at, raw, channel)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	// insertLive is insert guarded by the tombstone check: one statement
	// instead of two for the common event, the one neither deleted nor a
	// duplicate.
	prep(&w.insertLive, `INSERT OR IGNORE INTO events (community, id, pubkey, created_at, kind, d_tag, expires_at, raw, channel)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
		WHERE NOT EXISTS (SELECT 1 FROM deleted_ids WHERE community = ?1 AND id = ?2 AND pubkey = ?3)`)
	prep(&w.watermark, `SELECT deleted_up_to FROM coord_deletions WHERE community = ? AND kind = ? AND pubkey = ? AND d_tag = ?`)
	prep(&w.head, `SELECT seq, created_at, id FROM events WHERE community = ? AND kind = ? AND pubkey = ? AND d_tag = ?`)
	prep(&w.deleteSeq, `DELETE FROM events WHERE seq = ? RETURNING community`)
	prep(&w.deleteTags, `DELETE FROM tags WHERE event_seq = ?`)
	prep(&w.addTombstone, `INSERT OR IGNORE INTO deleted_ids (community, id, pubkey) VALUES (?, ?, ?)`)
	prep(&w.deleteByID, `DELETE FROM events WHERE community = ? AND id = ? AND pubkey = ? AND kind <> 5 RETURNING seq`)
	prep(&w.raiseWatermark, `INSERT INTO coord_deletions (community, kind, pubkey, d_tag, deleted_up_to) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (community, kind, pubkey, d_tag) DO UPDATE SET deleted_up_to = max(deleted_up_to, excluded.deleted_up_to)`)
	prep(&w.deleteCoord, `DELETE FROM events WHERE community = ? AND kind = ? AND pubkey = ? AND d_tag = ? AND created_at <= ? RETURNING seq`)
	prep(&w.deleteExpired, `DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE expires_at <= ? LIMIT ?) RETURNING seq, community`)
	prep(&w.insertCommunity, `INSERT INTO communities (id, host, created_at) VALUES (?, ?, ?) ON CONFLICT (host) DO NOTHING RETURNING seq`)
	prep(&w.indexFTS, `INSERT INTO events_fts (rowid, content)
		SELECT seq, `+ftsTextFunc+`(community, json_extract(CAST(raw AS TEXT), '$.content')) FROM events WHERE seq >= ? AND kind <> 1059`)
	prep(&w.mergeFTS, `INSERT INTO events_fts (events_fts, rank) VALUES ('merge', ?)`)
	prep(&w.totalChanges, `SELECT total_changes()`)
	prep(&w.communityByHost, `SELECT seq, id FROM communities WHERE host = ?`)
	for n := 1; n <= maxTagRows; n++ {
		q := `INSERT OR IGNORE INTO tags (community, name, value, created_at, event_seq) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?), `, n), ", ")
		prep(&w.tagStmts[n], q)
	}
	if err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *writer) close() error {
	var errs []error
	for _, st := range w.all {
		errs = append(errs, st.Close())
	}
	w.all = nil
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
		w.conn = nil
	}
	return errors.Join(errs...)
}

// save applies one event. Every check runs before the first write, so a
// sentinel result has written nothing.
func (w *writer) save(p *prepared) error {
	ctx := w.ctx
	var one int
	// A deletion aimed at a deletion request has no effect, so a deletion
	// is never refused as deleted. A regular event's tombstone is checked
	// by the insert itself (insertLive), and again only when nothing was
	// inserted; a replaceable event's before its current version goes.
	live := p.kind != nostr.KindDeletion && !p.coordinate
	if p.coordinate { // replaceable and addressable kinds; never a deletion
		if err := w.checkTombstone(p); err != nil {
			return err
		}
	}
	var dTag any // NULL for regular kinds
	if p.coordinate {
		dTag = p.d
		err := w.exists.QueryRowContext(ctx, p.community, p.id).Scan(&one)
		switch {
		case err == nil:
			return store.ErrDuplicate
		case !errors.Is(err, sql.ErrNoRows):
			return internal("save", err)
		}
		var upTo int64
		err = w.watermark.QueryRowContext(ctx, p.community, p.kind, p.pubkey, p.d).Scan(&upTo)
		switch {
		case err == nil:
			if p.createdAt <= upTo {
				return store.ErrDeleted
			}
		case !errors.Is(err, sql.ErrNoRows):
			return internal("save", err)
		}
		var (
			headSeq, headCreated int64
			headID               []byte
		)
		err = w.head.QueryRowContext(ctx, p.community, p.kind, p.pubkey, p.d).Scan(&headSeq, &headCreated, &headID)
		switch {
		case err == nil:
			if headCreated > p.createdAt || (headCreated == p.createdAt && bytes.Compare(headID, p.id) < 0) {
				return store.ErrSuperseded
			}
			if err := w.removeSeq(headSeq); err != nil {
				return err
			}
		case !errors.Is(err, sql.ErrNoRows):
			return internal("save", err)
		}
	}

	var expires any
	if p.hasExpiry {
		expires = p.expiresAt
	}
	ins := w.insert
	if live {
		ins = w.insertLive
	}
	res, err := ins.ExecContext(ctx, p.community, p.id, p.pubkey, p.createdAt, p.kind, dTag, expires, p.raw, p.channel)
	if err != nil {
		return internal("save", err)
	}
	var seq int64
	if n, err := res.RowsAffected(); err != nil {
		return internal("save", err)
	} else if n == 0 {
		if live {
			if err := w.checkTombstone(p); err != nil {
				return err
			}
		}
		return store.ErrDuplicate
	}
	if seq, err = res.LastInsertId(); err != nil {
		return internal("save", err)
	}
	if w.indexFrom == 0 || seq < w.indexFrom {
		w.indexFrom = seq
	}
	if w.cache != nil {
		e := savedEvent{cseq: p.community, epoch: w.cache.epoch(p.community), seq: seq,
			rec: store.Record{ID: hex.EncodeToString(p.id), CreatedAt: p.createdAt, Raw: p.raw}}
		if p.hasExpiry {
			e.expires = p.expiresAt
		}
		if ch, ok := p.channel.([]byte); ok {
			e.channel = ch
		}
		w.saved = append(w.saved, e)
	}
	if err := w.insertTags(p, seq); err != nil {
		return err
	}
	if p.parent != nil {
		if err := w.addReply(p); err != nil {
			return err
		}
	}
	if p.kind == nostr.KindDeletion {
		if err := w.applyDeletion(p); err != nil {
			return err
		}
		if p.audit != nil {
			return w.appendAudit(p.community, p.cid, *p.audit)
		}
	}
	return nil
}

// checkTombstone returns store.ErrDeleted when a deletion of p's event
// id by its author has been stored.
func (w *writer) checkTombstone(p *prepared) error {
	var one int
	err := w.tombstone.QueryRowContext(w.ctx, p.community, p.id, p.pubkey).Scan(&one)
	switch {
	case err == nil:
		return store.ErrDeleted
	case errors.Is(err, sql.ErrNoRows):
		return nil
	default:
		return internal("save", err)
	}
}

func (w *writer) insertTags(p *prepared, seq int64) error {
	args := make([]any, 0, 5*min(len(p.tags), maxTagRows))
	for rest := p.tags; len(rest) > 0; {
		n := min(len(rest), maxTagRows)
		args = args[:0]
		for _, t := range rest[:n] {
			args = append(args, p.community, t.Name, t.Value, p.createdAt, seq)
		}
		if _, err := w.tagStmts[n].ExecContext(w.ctx, args...); err != nil {
			return internal("save tags", err)
		}
		rest = rest[n:]
	}
	return nil
}

// indexText adds the text of the events inserted since it last ran to
// events_fts, in one statement: FTS5 flushes its pending terms into a new
// index segment whenever a later statement of the transaction begins, so a
// row trigger (or a statement per event) costs a segment per event.
//
// Every row with seq >= indexFrom was inserted in this transaction after
// the last indexText: SQLite gives a new row a seq above every existing
// one, so any older row that still exists has a lower seq. It must run
// before the transaction commits and before anything is deleted from
// events, so the delete trigger always finds the rows it removes indexed.
func (w *writer) indexText() error {
	from := w.indexFrom
	if from == 0 {
		return nil
	}
	w.indexFrom = 0
	res, err := w.indexFTS.ExecContext(w.ctx, from)
	if err != nil {
		return internal("index text", err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		w.textChanged = true
	}
	return nil
}

// removeSeq deletes one stored event and its tag rows.
func (w *writer) removeSeq(seq int64) error {
	var cseq int64
	switch err := w.deleteSeq.QueryRowContext(w.ctx, seq).Scan(&cseq); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return internal("delete", err)
	default:
		w.noteRemoval(cseq)
	}
	if _, err := w.deleteTags.ExecContext(w.ctx, seq); err != nil {
		return internal("delete tags", err)
	}
	return nil
}

// applyDeletion carries out a stored NIP-09 request: tombstones for the ids
// it names (durable, so a later arrival is refused), removal of those ids
// when they are the requester's own and not deletion requests themselves,
// and coordinate watermarks with removal of the versions they cover.
func (w *writer) applyDeletion(p *prepared) error {
	ctx := w.ctx
	for _, id := range p.delIDs {
		if _, err := w.addTombstone.ExecContext(ctx, p.community, id, p.pubkey); err != nil {
			return internal("delete", err)
		}
		if err := w.removeReturned(p.community, w.deleteByID, p.community, id, p.pubkey); err != nil {
			return err
		}
	}
	for _, c := range p.delCoords {
		if _, err := w.raiseWatermark.ExecContext(ctx, p.community, c.Kind, p.pubkey, c.D, p.createdAt); err != nil {
			return internal("delete", err)
		}
		if err := w.removeReturned(p.community, w.deleteCoord, p.community, c.Kind, p.pubkey, c.D, p.createdAt); err != nil {
			return err
		}
	}
	return nil
}

// removeReturned runs a DELETE … RETURNING seq of community cseq's events
// and removes the tag rows of every deleted event.
func (w *writer) removeReturned(cseq int64, st *sql.Stmt, args ...any) error {
	rows, err := st.QueryContext(w.ctx, args...)
	if err != nil {
		return internal("delete", err)
	}
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return internal("delete", err)
		}
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return internal("delete", err)
	}
	if err := rows.Close(); err != nil {
		return internal("delete", err)
	}
	if len(seqs) > 0 {
		w.noteRemoval(cseq)
	}
	for _, seq := range seqs {
		if _, err := w.deleteTags.ExecContext(w.ctx, seq); err != nil {
			return internal("delete tags", err)
		}
	}
	return nil
}
