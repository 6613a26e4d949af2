package sqlite

import "context"

// WithSlowReadsForTest makes every event read (Query, Count) first run a
// query on a read connection that never ends unless interrupted: a
// stand-in for a slow query that only cancellation stops.
func WithSlowReadsForTest() Option {
	return func(c *config) error {
		c.slowReads = true
		return nil
	}
}

// ReadsInUse reports how many read connections are busy.
func ReadsInUse(s *Store) int { return s.rdb.Stats().InUse }

// WithoutAuditForBenchmark makes deletions and channel commands append no
// audit entry, to measure what auditing costs.
func WithoutAuditForBenchmark() Option {
	return func(c *config) error {
		c.noAudit = true
		return nil
	}
}

// WithBeforeSyncForTest runs fn before each sync of the write-ahead log,
// after the batches it covers have committed; an error fn returns stands
// for the sync's own.
func WithBeforeSyncForTest(fn func() error) Option {
	return func(c *config) error {
		c.beforeSync = fn
		return nil
	}
}

// TextIndexState reports how many segments the text index has and its
// automerge setting, and checks the index's integrity (FTS5's
// integrity-check, on the writer).
func TextIndexState(ctx context.Context, s *Store) (segments, automerge int, err error) {
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM events_fts_idx`).Scan(&segments); err != nil {
		return 0, 0, err
	}
	if automerge, err = automergeSetting(ctx, s.rdb); err != nil {
		return 0, 0, err
	}
	err = s.submit(ctx, func(w *writer) error {
		_, err := w.conn.ExecContext(w.ctx, `INSERT INTO events_fts (events_fts) VALUES ('integrity-check')`)
		return err
	})
	return segments, automerge, err
}

// WithMergePagesForTest sets how many pages one background merge step of
// the text index writes at most.
func WithMergePagesForTest(n int) Option {
	return func(c *config) error {
		c.mergePages = n
		return nil
	}
}
