package postgres

import "time"

// WithReadDelayForTest makes every event read (Query, Count) sleep d in the
// server (pg_sleep) before it runs: a stand-in for a slow query, visible in
// pg_stat_activity, that only cancellation ends early.
func WithReadDelayForTest(d time.Duration) Option {
	return func(c *config) error {
		c.readDelay = d
		return nil
	}
}

// WithoutAuditForBenchmark makes deletions and channel commands append no
// audit entry, to measure what auditing costs.
func WithoutAuditForBenchmark() Option {
	return func(c *config) error {
		c.noAudit = true
		return nil
	}
}
