package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The store keeps two kinds of upkeep out of the commits that acknowledge
// events, and does them when writing pauses instead (maintainLoop):
//
//   - Checkpoints. A checkpoint copies the pages of committed transactions
//     from the write-ahead log into the database file, so that the log can
//     start over. SQLite runs one by itself inside the COMMIT that takes the
//     log past wal_autocheckpoint pages: the writer then copies and syncs up
//     to ~32 MiB before it can answer that batch, and every write queued
//     behind it, an event published live among them, waits (tens of
//     milliseconds here).
//   - Merging the text index. FTS5 writes each transaction's new text as a
//     segment of its own and, by default (automerge), merges segments inside
//     later commits: a commit that happens to trigger a merge of large
//     segments left by a burst of writes takes tens of milliseconds more
//     (measured: the fan-out tail's 26–82 ms stalls). With maintenance on,
//     the store turns automerge off and merges in steps of defaultMergePages pages
//     between bursts; FTS5's crisis merge (16 segments on one level) stays
//     as the bound for a store that never pauses.
//
// maintainLoop does both once the store has written nothing and begun no
// read for the idle delay, or the maximum delay has passed since the first
// commit it has not yet handled (maintainSchedule): one merge step, when
// the text index has changed since a step last found nothing to merge,
// then a PASSIVE checkpoint on a connection of its own. PASSIVE never
// blocks the writer or a reader; it copies what no reader still needs and
// leaves the rest to the next round. The writer's own autocheckpoint stays
// as the bound for a store that never pauses long enough. A merge step is a write of its own and wakes the loop again, so
// steps follow each other, one per idle delay, until the index is merged.
//
// Durability does not change: the checkpointing connection syncs the log
// before copying from it and the database file before SQLite records the
// copy as done (synchronous=NORMAL), so the log is never restarted over
// frames that are not yet durable in the database file; a merge step is a
// transaction like any other write, answered without waiting for a sync
// (submitLazy): a crash that loses it leaves the index as it was before.
func (s *Store) maintainLoop() {
	defer close(s.done)
	if s.cfg.maintainIdle == 0 {
		for range s.wrote {
		}
		return
	}
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	sched := maintainSchedule{idle: s.cfg.maintainIdle, max: s.cfg.maintainMax}
	// merged is the writer's text generation when a merge step last found
	// nothing to merge: the index needs no step until it changes again.
	merged := ^uint64(0)
	ckLog := &checkpointLog{log: s.cfg.log, now: time.Now}
	for {
		select {
		case _, ok := <-s.wrote:
			if !ok {
				idle.Stop()
				return
			}
			if wait := sched.commit(time.Now(), s.reads.Load()); wait > 0 {
				idle.Reset(wait)
				continue
			}
			idle.Stop()
		case <-idle.C:
			if wait := sched.idleEnded(time.Now(), s.reads.Load()); wait > 0 {
				idle.Reset(wait)
				continue
			}
		}
		sched.ran()
		ctx := context.Background()
		if gen := s.w.textGen.Load(); gen != merged {
			switch done, err := s.mergeText(ctx); {
			case errors.Is(err, ErrClosed):
				// Closing: the writer drains and stops; nothing to merge for.
			case err != nil:
				s.cfg.log.Warn("sqlite: background text index merge", "err", err)
			case done:
				merged = gen
			}
		}
		if s.ckdb != nil {
			frames, copied, err := s.checkpoint(ctx)
			if err != nil {
				s.cfg.log.Warn("sqlite: background checkpoint", "err", err)
			} else {
				ckLog.add(frames, copied)
			}
		}
	}
}

// maintainSchedule is when maintainLoop does its upkeep: once the store has
// neither committed nor begun a read for the idle delay, or the max delay
// after the first commit not yet handled, whichever comes first. Reads
// count because the upkeep holds the processor (a merge transaction of a
// store of 100,000 events: 0.5–1.4 ms of one core, eight of them a step)
// and reads waiting behind it are what clients see; a store read without a
// pause still gets its upkeep, every max delay.
type maintainSchedule struct {
	idle, max time.Duration
	first     time.Time // the first commit not yet handled; zero when none
	reads     uint64    // the store's reads begun, as the last wait began
}

// commit notes a commit at now, reads the store's reads begun so far, and
// returns how long to wait before the upkeep (0: now).
func (m *maintainSchedule) commit(now time.Time, reads uint64) time.Duration {
	if m.first.IsZero() {
		m.first = now
	}
	if now.Sub(m.first) >= m.max {
		return 0
	}
	m.reads = reads
	return m.idle
}

// idleEnded is a wait ending at now, reads the store's reads begun so far:
// it returns 0 when the upkeep is due, else how much longer to wait (reads
// began during the wait, and the max delay has not passed).
func (m *maintainSchedule) idleEnded(now time.Time, reads uint64) time.Duration {
	waited := now.Sub(m.first)
	if m.first.IsZero() || reads == m.reads || waited >= m.max {
		return 0
	}
	m.reads = reads
	return min(m.idle, m.max-waited)
}

// ran notes that the upkeep ran: nothing is pending until the next commit.
func (m *maintainSchedule) ran() { m.first = time.Time{} }

// defaultMergePages is how many pages of the text index one merge step
// writes at most: a step of 64 kept the index at a handful of segments with
// a step every 50 batches of 8 events.
const defaultMergePages = 64

// mergeChunk is how many pages one transaction of a merge step writes at
// most. FTS5 merges in SQLite compiled to Go, which keeps its processor
// until the statement ends: 64 pages at once held it for 2–8 ms, while
// every connection's reads and writes waited (on one core, the REQs read
// right after a burst of writes: their p99 several times their quiet one).
// A step is written as transactions of mergeChunk pages instead, the merger
// parked between them (textPause), so what arrives meanwhile runs first.
const mergeChunk = 8

// mergeText runs one merge step, of up to mergePages pages in transactions
// of up to mergeChunk, and reports whether it found nothing to merge
// (FTS5's documented signal: a merge changed fewer than two rows).
func (s *Store) mergeText(ctx context.Context) (done bool, err error) {
	for left := s.cfg.mergePages; left > 0; left -= mergeChunk {
		if left < s.cfg.mergePages {
			time.Sleep(textPause)
		}
		if done, err = s.mergeTextPages(ctx, min(left, mergeChunk)); done || err != nil {
			return done, err
		}
	}
	return false, nil
}

// mergeTextPages merges up to pages pages of the text index in one
// transaction on the writer and reports whether it found nothing to merge.
func (s *Store) mergeTextPages(ctx context.Context, pages int) (done bool, err error) {
	err = s.submitLazy(ctx, func(w *writer) error {
		var before, after int64
		if err := w.totalChanges.QueryRowContext(w.ctx).Scan(&before); err != nil {
			return internal("merge text index", err)
		}
		if _, err := w.mergeFTS.ExecContext(w.ctx, pages); err != nil {
			return internal("merge text index", err)
		}
		if err := w.totalChanges.QueryRowContext(w.ctx).Scan(&after); err != nil {
			return internal("merge text index", err)
		}
		done = after-before < 2
		s.cfg.log.Debug("sqlite: text index merge step", "pages", pages, "done", done)
		return nil
	})
	return done, err
}

// defaultAutomerge is FTS5's automerge setting when none was written.
const defaultAutomerge = 4

// setAutomerge makes FTS5 merge the text index inside commits (its
// default) when the store does no background maintenance, and leaves
// merging to maintainLoop (0) when it does. The setting lives in the
// database file; it is written only when it differs.
func (s *Store) setAutomerge(ctx context.Context) error {
	want := defaultAutomerge
	if s.cfg.maintainIdle > 0 {
		want = 0
	}
	have, err := automergeSetting(ctx, s.wdb)
	if err != nil {
		return err
	}
	if have == want {
		return nil
	}
	if _, err := s.wdb.ExecContext(ctx, `INSERT INTO events_fts (events_fts, rank) VALUES ('automerge', ?)`, want); err != nil {
		return fmt.Errorf("sqlite: text index settings: %w", err)
	}
	return nil
}

// automergeSetting reads the text index's automerge setting from the database
// file.
func automergeSetting(ctx context.Context, db *sql.DB) (int, error) {
	v := defaultAutomerge
	err := db.QueryRowContext(ctx, `SELECT v FROM events_fts_config WHERE k = 'automerge'`).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sqlite: text index settings: %w", err)
	}
	return v, nil
}

// checkpoint runs one PASSIVE checkpoint on the checkpointing connection
// and returns the frames in the log and how many of them it copied.
func (s *Store) checkpoint(ctx context.Context) (frames, copied int, err error) {
	var busy int
	err = s.ckdb.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: checkpoint: %w", err)
	}
	return frames, copied, nil
}

// checkpointLogEvery is how often the background checkpoints are summed
// up in one DEBUG line (a busy store checkpoints about every second).
const checkpointLogEvery = time.Minute

// checkpointLog sums checkpoints up: one DEBUG line once checkpointLogEvery
// has passed since the first checkpoint it has not reported, with how many
// ran, the frames they copied, and the frames the log held at the last.
type checkpointLog struct {
	log   *slog.Logger
	now   func() time.Time
	since time.Time // first unreported checkpoint; zero when none
	n     int
	// copied is summed; frames is the log's size at the last checkpoint.
	copied, frames int
}

func (l *checkpointLog) add(frames, copied int) {
	now := l.now()
	if l.since.IsZero() {
		l.since = now
	}
	l.n++
	l.copied += copied
	l.frames = frames
	if now.Sub(l.since) < checkpointLogEvery {
		return
	}
	l.log.Debug("sqlite: checkpoints", "count", l.n, "copied", l.copied, "log_frames", l.frames, "over", now.Sub(l.since).Round(time.Second).String())
	l.since, l.n, l.copied = time.Time{}, 0, 0
}

// openCheckpointer opens the checkpointing connection, when background
// maintenance is on and the store has a write-ahead log.
func (s *Store) openCheckpointer(ctx context.Context) error {
	if s.cfg.maintainIdle == 0 || s.wal == nil {
		return nil
	}
	db, err := sql.Open("sqlite", s.dsn(false))
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s.ckdb = db
	// Open the connection now, while the file is known to be there, not
	// at the first checkpoint.
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	return nil
}
