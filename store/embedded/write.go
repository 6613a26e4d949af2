package embedded

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded/lsm"
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
	// engine, whose log must be synced before the answer; redo is the seq
	// of the batch's redo record, deleted once that sync is done.
	events bool
	redo   int64
	// lazy: the caller needs the commit visible, not durable (submitLazy).
	lazy bool
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
	return err == nil || store.IsOutcome(err)
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
		if err := s.enqueue(ctx, marked, false); err != nil {
			return err
		}
		store.AuthorityRecorded(ctx)
		return nil
	}
	return s.enqueue(ctx, fn, false)
}

// submitLazy is submit for a write of derived data that the store rebuilds
// when a crash loses it (the text index and its merges: the rows and the
// position they index through commit together, and the indexer takes up
// from that position at the next open). Its caller is answered once the
// batch has committed, without waiting for a sync of the write-ahead log:
// the next synced batch makes it durable. A batch of lazy writes alone is
// not synced at all, so the text indexer's frequent small batches take no
// turns of the disk from the syncs that acknowledge events.
func (s *Store) submitLazy(ctx context.Context, fn func(w *writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.enqueue(ctx, fn, true)
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
		err := w.queryRow(`SELECT 1 FROM applied_authority WHERE community = ? AND event_id = ?`, cseq, id).Scan(&one)
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
		if _, err := w.exec(`INSERT INTO applied_authority (community, event_id, until) VALUES (?, ?, ?)`,
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
func (s *Store) enqueue(ctx context.Context, fn func(w *writer) error, lazy bool) error {
	if err := s.syncFailed(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), lazy: lazy}
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
			var redo int64
			for _, q := range r.reqs {
				if err != nil && isOutcome(q.err) {
					q.err = err
				}
				redo = max(redo, q.redo)
				q.done <- q.err
			}
			if err == nil && redo > s.redoDurable.Load() {
				s.redoDurable.Store(redo) // rounds are answered in commit order
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
		if !slices.ContainsFunc(pending, func(q *writeReq) bool { return !q.lazy }) {
			r.err <- nil // nothing in it waits for durability (submitLazy)
			rounds <- r
			continue
		}
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
// events set everything committed to the events engine.
// Without a WAL (a file system where SQLite could not use one) commits are
// synced by SQLite itself (synchronous=FULL) and there is nothing to do.
// A failure is logged once, by failSync.
func (s *Store) syncWAL(events bool) error {
	var err error
	if s.wal != nil {
		err = s.syncFile(s.wal)
	}
	if err == nil && events && s.ev != nil {
		err = s.ev.Sync()
	}
	if err != nil {
		return internal("sync", err)
	}
	return nil
}

// commitEvents applies the events engine's part of a batch whose SQLite
// transaction, holding that part's redo record, has just committed (see
// redo.go): after syncing SQLite's log, so that the engine never holds
// events without the SQLite rows that go with them (a channel command's
// effect, a deletion's audit entry); a crash before the engine's part is
// durable leaves the redo record, which Open applies. reqs are marked for
// syncLoop to sync the engine's log before answering them, after which
// the redo record is deleted. A failure is final, like a failed sync:
// the engine's part waits in its redo record for the store to be reopened.
func (s *Store) commitEvents(reqs ...*writeReq) error {
	w := s.w
	tx, seq := w.evTx, w.redoSeq
	w.evTx, w.redo, w.redoSeq = nil, w.redo[:0], 0
	if tx == nil {
		return nil
	}
	if err := s.syncWAL(false); err != nil {
		tx.Rollback()
		s.failSync(err)
		return err
	}
	if err := tx.Commit(); err != nil {
		err = internal("events", err)
		s.failSync(err)
		return err
	}
	for _, r := range reqs {
		r.events = true
		r.redo = seq
	}
	return nil
}

// rollbackEvents drops the events engine's part of a batch rolled back.
func (w *writer) rollbackEvents() {
	if w.evTx != nil {
		w.evTx.Rollback()
		w.evTx = nil
	}
	w.redo, w.redoSeq = w.redo[:0], 0
	w.redoDropped = 0 // a deletion of records (dropRedo) was rolled back too
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
	if err := w.dropRedo(s.redoDurable.Load()); err != nil {
		s.cfg.log.Error("sqlite: delete applied redo records", "err", err) // kept: applying them again is a no-op
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
		if err := w.writeRedo(); err != nil {
			s.cfg.log.Error("sqlite: write batch", "err", err, "size", len(batch))
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
		if rerr := w.writeRedo(); rerr != nil {
			err = rerr
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
	return err
}

// writer holds the write connection and its prepared statements. Only the
// writer goroutine (and Open/Close) touch it.
type writer struct {
	conn *sql.Conn
	ctx  context.Context

	begin, commit, rollback *sql.Stmt
	insertCommunity         *sql.Stmt
	communityByHost         *sql.Stmt
	all                     []*sql.Stmt

	// stmts finds the statements of exec and queryRow, prepared on first
	// use, by SQL text; all holds them too, with the ones above.
	stmts map[string]*sql.Stmt

	// refused: the running fn refused with a verdict (see refuse).
	refused bool

	// textChanged records that the open transaction added to or removed
	// from the text index; textGen counts the commits that did, for
	// maintainLoop, which merges the index only after it has changed.
	textChanged            bool
	textGen                atomic.Uint64
	mergeFTS, totalChanges *sql.Stmt

	// ev is the events engine; evTx its transaction for the open batch,
	// begun at first use (eventsTx) and committed or rolled back with
	// SQLite's.
	ev   *lsm.Store
	evTx *lsm.Tx

	// redo is the engine's part of the open batch, written by writeRedo
	// as the record redoSeq; redoDropped is the highest record deleted
	// (dropRedo).
	redo        []redoOp
	redoSeq     int64
	redoDropped int64
}

// endTx runs after every commit or rollback.
func (w *writer) endTx(committed bool) {
	if committed && w.textChanged {
		w.textGen.Add(1)
	}
	w.textChanged = false
}

func newWriter(ctx context.Context, db *sql.DB, ev *lsm.Store) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: writer: %w", err)
	}
	w := &writer{conn: conn, ctx: context.Background(), ev: ev, stmts: make(map[string]*sql.Stmt)}
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
	prep(&w.insertCommunity, `INSERT INTO communities (id, host, created_at) VALUES (?, ?, ?) ON CONFLICT (host) DO NOTHING RETURNING seq`)
	prep(&w.mergeFTS, `INSERT INTO events_fts (events_fts, rank) VALUES ('merge', ?)`)
	prep(&w.totalChanges, `SELECT total_changes()`)
	prep(&w.communityByHost, `SELECT seq, id FROM communities WHERE host = ?`)
	if err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// maxWriterStmts bounds how many statements exec and queryRow keep
// prepared; past it they run the others unprepared.
const maxWriterStmts = 64

// prepared returns the writer's prepared statement for q, preparing it on
// first use; nil when it cannot be prepared here (the caller then runs q
// unprepared, which reports the error) or the cache is full. Compiling
// the SQL of each write was a large part of a small write's cost (a
// membership change, an event's text in the index).
func (w *writer) prepared(q string) *sql.Stmt {
	if st, ok := w.stmts[q]; ok {
		return st
	}
	if len(w.stmts) >= maxWriterStmts {
		return nil
	}
	st, err := w.conn.PrepareContext(w.ctx, q)
	if err != nil {
		return nil
	}
	w.stmts[q] = st
	w.all = append(w.all, st)
	return st
}

// exec runs q, a fixed SQL text (never one built from values), on the
// write connection through its prepared statement.
func (w *writer) exec(q string, args ...any) (sql.Result, error) {
	if st := w.prepared(q); st != nil {
		return st.ExecContext(w.ctx, args...)
	}
	return w.conn.ExecContext(w.ctx, q, args...)
}

// queryRow runs q, a fixed SQL text, as exec does, for one row.
func (w *writer) queryRow(q string, args ...any) *sql.Row {
	if st := w.prepared(q); st != nil {
		return st.QueryRowContext(w.ctx, args...)
	}
	return w.conn.QueryRowContext(w.ctx, q, args...)
}

func (w *writer) close() error {
	var errs []error
	for _, st := range w.all {
		errs = append(errs, st.Close())
	}
	w.all = nil
	clear(w.stmts)
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
		w.conn = nil
	}
	return errors.Join(errs...)
}
