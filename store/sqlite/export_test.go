package sqlite

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

// WithBeforeSyncForTest runs fn in the syncing goroutine before each sync
// of the write-ahead log, after the batches it covers have committed.
func WithBeforeSyncForTest(fn func()) Option {
	return func(c *config) error {
		c.beforeSync = fn
		return nil
	}
}
