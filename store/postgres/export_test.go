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

// AnalyzeStepForTest reports the number of stored events since the last
// analysis round began that starts the next one (analyze.go), and whether
// a round is running.
func (s *Store) AnalyzeStepForTest() (next int64, running bool) {
	return s.analyzeAt.Load(), s.analyzing.Load()
}
