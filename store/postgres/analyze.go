package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Planner statistics. Autovacuum never analyses a partitioned parent, and
// a freshly created (or freshly filled) partition has no statistics until
// autovacuum gets to it — on a server where it is off, never. Without
// them the planner estimates one row everywhere and picks plans that scan
// a whole index per tag row (issue 15). The store therefore keeps them
// current itself: ANALYZE of the event tables once at Open (in the
// background), and again each time the events this process stored since
// the last ANALYZE reach a growth threshold — 1,000 events, then twice
// the previous threshold, up to every 1,000,000. One ANALYZE runs at a
// time, on its own connection; it samples, so its cost does not grow with
// the table.

const (
	analyzeFirst = 1_000
	analyzeMax   = 1_000_000
)

// analyzeSQL analyses the event tables, recursing into their partitions.
const analyzeSQL = `ANALYZE events, event_tags`

// noteSaved counts n stored events and starts an ANALYZE when they reach
// the next threshold.
func (s *Store) noteSaved(n int64) {
	if s.saved.Add(n) < s.analyzeAt.Load() {
		return
	}
	s.analyzeSoon()
}

// analyzeSoon starts a background ANALYZE unless one is running.
func (s *Store) analyzeSoon() {
	if !s.analyzing.CompareAndSwap(false, true) {
		return
	}
	// A Save acknowledged while Close runs must not start one: Close marks
	// the store closed under mu before it waits for s.wg.
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.analyzing.Store(false)
		return
	}
	next := min(2*max(s.analyzeAt.Load(), analyzeFirst/2), analyzeMax)
	s.saved.Store(0)
	s.analyzeAt.Store(next)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.analyzing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := s.Analyze(ctx); err != nil && ctx.Err() == nil {
			s.cfg.logger.Warn("postgres: ANALYZE of the event tables failed; query plans may be poor until it succeeds", "err", err)
		}
	}()
}

// Analyze updates the planner statistics of the event tables and their
// partitions now. The store also does so by itself (see above); Analyze
// is for tools that load data behind its back (BulkLoad).
//
// It connects as the database URL's user, like partition maintenance: the
// pool's row-level-security role does not own the tables, and PostgreSQL
// only lets an owner analyse them.
func (s *Store) Analyze(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return fmt.Errorf("postgres: analyze: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, analyzeSQL); err != nil {
		return fmt.Errorf("postgres: analyze: %w", err)
	}
	return nil
}
