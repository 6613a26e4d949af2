package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Planner statistics. Autovacuum never analyses a partitioned parent, and
// a freshly created (or freshly filled) partition has no statistics until
// autovacuum gets to it — on a server where it is off, never. Without
// them the planner estimates one row everywhere; the queries are written
// so that no shape depends on statistics for its worst case (query.go),
// but the best plan among the cheap ones still does. So the store keeps
// them current itself, like autovacuum's analyser would, for the event
// tables only. A round vacuums each partition of events, and event_tags
// and event_search, that had more than 50 rows + 10% added or left dead
// since its last vacuum, and analyses each that changed by as much since
// its last ANALYZE or that holds rows and was never analysed (staleSQL;
// pg_stat_user_tables, so changes made by other pods or by BulkLoad count
// too). Rounds start:
//
//   - at Open;
//   - every analyze interval (WithAnalyzeInterval, default a minute);
//   - early while a process stores its first events: after 1,000 events
//     stored since the last round started, then twice as many, up to
//     1,000,000 (each round, whatever started it, doubles the next step);
//   - when saving pauses: once no event has been stored for the settle
//     period (WithAnalyzeSettle, default 2 s; noticed at most a quarter
//     period late), if at least 1,000 were stored since the last round
//     started. So what a burst stored after its last doubling is analysed
//     and vacuumed seconds after the burst ends, not on the next
//     interval. While saves continue the settle timer only looks, four
//     times a period, so continuous ingest starts no more rounds than the
//     two rules above.
//
// None start while the analyser is off (WithAnalyzeInterval(0)) or after
// Close. One round runs at a time, on its own connection; a pause noticed
// during a round is looked at again a settle period later.
//
// A server backend publishes its row counts at most once a second, and
// the remainder only after ten seconds idle, so a round first has the
// pool's idle connections publish theirs (pg_stat_force_next_flush):
// otherwise a round seconds after a burst would miss its last second.
//
// All the vacuums come first, the event partitions' first of all, so that
// a round running under load spares index-only scans their heap visits as
// early as it can (an ANALYZE reads up to 30,000 rows of its table, a
// vacuum only the pages added since the last). The vacuum sets the
// visibility map of the pages filled since the last one, without which an
// index-only scan (event_tags' in every tag-driven read, and events' where
// an index covers the query) visits the heap for each index entry, and the
// planner, knowing that, may prefer a sequential scan (COUNT of one
// author's 3,389 of 20,000 events on a fresh database: a 10.9 ms
// sequential scan before, a 1.0 ms index-only scan with no heap fetch
// after). Autovacuum would do the same (insert-driven vacuum); where it is
// off, nothing else does. VACUUM only visits pages not yet all-visible, so
// on insert-mostly tables its cost follows the new rows, and it takes no
// lock that blocks reads or writes.
// The vacuum is decided apart from the ANALYZE: an ANALYZE run by anyone
// else brings the statistics up to date but leaves the visibility map as
// it was.

const (
	analyzeFirst = 1_000
	analyzeMax   = 1_000_000
)

// unanalysedColumns are the columns of events whose statistics no plan
// reads: statements only return them (a tag filter reads event_tags; the
// rare tag with no row there is matched through jsonb_array_elements(tags),
// which the planner estimates without column statistics), or, like
// received_at, never read them. Their statistics target is 0 on events and
// on every partition (skipUnreadStats), so an ANALYZE, the store's or
// anyone's, skips them. Sorting the sample of those wide columns was most
// of an ANALYZE's work: of the 20,000-event benchmark partition, 205–223 ms
// with them, 81–86 without. An ANALYZE naming the other columns instead
// would skip them too, but it leaves the table's count of changes since
// its last ANALYZE as it was, so the table would stay stale.
var unanalysedColumns = []string{"tags", "content", "sig", "raw", "received_at"}

// skipStatsSQL returns an ALTER TABLE for events and each partition where
// a column of $1 (unanalysedColumns) still has statistics taken. Each
// alters its own table ONLY: on events it would otherwise recurse into the
// partitions, which have statements of their own.
const skipStatsSQL = `
SELECT format('ALTER TABLE ONLY %s %s', c.oid::regclass,
              string_agg(format('ALTER COLUMN %I SET STATISTICS 0', a.attname), ', ' ORDER BY a.attnum))
FROM pg_class c
JOIN pg_attribute a ON a.attrelid = c.oid
WHERE (c.oid = 'events'::regclass OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass))
  AND a.attname = ANY($1) AND NOT a.attisdropped AND a.attstattarget IS DISTINCT FROM 0
GROUP BY c.oid`

// skipUnreadStats sets the statistics target of unanalysedColumns to 0
// where it is not, on conn (the tables' owner's). A partition created
// since the last call has the default; setting it takes a lock that
// blocks neither reads nor writes.
func skipUnreadStats(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, skipStatsSQL, unanalysedColumns)
	if err != nil {
		return fmt.Errorf("list statistics targets: %w", err)
	}
	alters, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list statistics targets: %w", err)
	}
	for _, a := range alters {
		if _, err := conn.Exec(ctx, a); err != nil {
			return fmt.Errorf("set statistics targets: %w", err)
		}
	}
	return nil
}

// analyzeSQL vacuums and analyses the event tables, recursing into the
// partitions.
const analyzeSQL = `VACUUM (ANALYZE) events, event_tags, event_search`

// analyzeAll vacuums and analyses every event table and partition on conn
// (the tables' owner's), stale or not, skipping unanalysedColumns.
func analyzeAll(ctx context.Context, conn *pgx.Conn) error {
	if err := skipUnreadStats(ctx, conn); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, analyzeSQL)
	return err
}

// staleSQL lists the event tables a round works on, the partitions of
// events first, each with whether to vacuum it and whether to analyse it.
// By autovacuum's rules, with the scale of its analyse rule for both: a
// table is vacuumed once more than 50 rows + 10% were inserted or left
// dead since its last vacuum, and analysed once more than 50 rows + 10%
// changed since its last ANALYZE, or when it holds rows and was never
// analysed. The two are apart because either may run without the other: an
// operator's ANALYZE, which leaves the visibility map as it was, must not
// spare a table its vacuum.
const staleSQL = `
SELECT name, to_vacuum, to_analyze FROM (
  SELECT c.oid::regclass::text AS name,
         c.oid IN ('event_tags'::regclass, 'event_search'::regclass) AS other,
         coalesce(s.n_ins_since_vacuum + s.n_dead_tup, 0) > 50 + 0.1 * greatest(c.reltuples, 0) AS to_vacuum,
         coalesce(s.n_mod_since_analyze, 0) > 50 + 0.1 * greatest(c.reltuples, 0)
           OR (c.reltuples < 0 AND pg_relation_size(c.oid) > 0) AS to_analyze
  FROM pg_class c
  LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
  WHERE c.relkind = 'r'
    AND (c.oid IN ('event_tags'::regclass, 'event_search'::regclass)
         OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass))
) t
WHERE to_vacuum OR to_analyze
ORDER BY other, name`

// Settle states (Store.settle): whether the settle timer runs, and
// whether an event was stored since it last looked.
const (
	settleIdle  int32 = iota // timer stopped
	settleArmed              // timer running; no event stored since it last looked
	settleDirty              // timer running; events stored since it last looked
)

// settleLooks is how many times per settle period the settle timer looks
// while saves continue, so a pause is noticed at most a fraction of the
// period late.
const settleLooks = 4

// noteSaved counts n stored events, starts an analysis round when they
// reach the next threshold, and notes the save for the settle trigger.
// Every acknowledged Save calls it: while saves keep coming it costs an
// atomic add and two atomic loads.
func (s *Store) noteSaved(n int64) {
	if s.saved.Add(n) >= s.analyzeAt.Load() {
		s.analyzeSoon()
	}
	if s.settleTimer == nil {
		return
	}
	for {
		switch s.settle.Load() {
		case settleDirty:
			return
		case settleArmed:
			if s.settle.CompareAndSwap(settleArmed, settleDirty) {
				return
			}
		default:
			if s.settle.CompareAndSwap(settleIdle, settleArmed) {
				s.settleQuiet.Store(s.settleClock())
				s.settleTimer.Reset(s.cfg.analyzeSettle)
				return
			}
		}
	}
}

// settleClock is the settle trigger's monotonic clock.
func (s *Store) settleClock() int64 { return int64(time.Since(s.settleBase)) }

// settled runs when the settle timer fires. Saving has paused once no
// event was stored for a settle period since settleQuiet (the last look
// that found saves, or the save that armed the timer); then it starts a
// round if enough events were stored since the last one began. Otherwise
// it looks again: a fraction of the period later if saves continue, or
// when the period would end.
func (s *Store) settled() {
	select {
	case <-s.stop:
		return
	default:
	}
	now := s.settleClock()
	if s.settle.CompareAndSwap(settleDirty, settleArmed) {
		s.settleQuiet.Store(now)
		s.settleTimer.Reset(s.cfg.analyzeSettle / settleLooks)
		return
	}
	if left := s.settleQuiet.Load() + int64(s.cfg.analyzeSettle) - now; left > 0 {
		s.settleTimer.Reset(time.Duration(left))
		return
	}
	if !s.settle.CompareAndSwap(settleArmed, settleIdle) {
		// A save made it dirty just now.
		if s.settle.CompareAndSwap(settleDirty, settleArmed) {
			s.settleQuiet.Store(s.settleClock())
			s.settleTimer.Reset(s.cfg.analyzeSettle / settleLooks)
		}
		return
	}
	if s.saved.Load() < analyzeFirst || s.analyzeSoon() {
		return
	}
	// A round is running, and its list of stale tables may predate the
	// last saves, or the store is closing (then stop is closed too: Close
	// closes it as it marks the store closed). Look again a period later.
	select {
	case <-s.stop:
		return
	default:
	}
	if s.settle.CompareAndSwap(settleIdle, settleArmed) {
		s.settleTimer.Reset(s.cfg.analyzeSettle)
	}
}

// analyzeSoon starts a background analysis round unless one is running,
// the store's analyser is off or the store is closed, and reports whether
// it started one.
func (s *Store) analyzeSoon() bool {
	if s.cfg.analyzeEvery == 0 || !s.analyzing.CompareAndSwap(false, true) {
		return false
	}
	// A Save acknowledged while Close runs must not start one: Close marks
	// the store closed under mu before it waits for s.wg.
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.analyzing.Store(false)
		return false
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
		if _, err := s.AnalyzeStale(ctx); err != nil && ctx.Err() == nil {
			s.cfg.logger.Warn("postgres: ANALYZE of the event tables failed; query plans may be poor until it succeeds", "err", err)
		}
	}()
	return true
}

// startAnalyzer starts the analyser: a round now, one every analyze
// interval, and the settle timer (armed by noteSaved). Open calls it,
// before any Save, when the analyser is on.
func (s *Store) startAnalyzer() {
	// Stopped until the first save arms it.
	s.settleBase = time.Now()
	s.settleTimer = time.AfterFunc(time.Duration(math.MaxInt64), s.settled)
	s.settleTimer.Stop()
	s.wg.Add(1)
	go s.analyzer()
	s.analyzeSoon() // a partition never analysed plans blind from its first query
}

// analyzer runs an analysis round every analyze interval, and stops the
// settle timer when the store closes.
func (s *Store) analyzer() {
	defer s.wg.Done()
	defer s.settleTimer.Stop()
	t := time.NewTicker(s.cfg.analyzeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.analyzeSoon()
		}
	}
}

// AnalyzeStale vacuums the event tables (partitions of events, event_tags,
// event_search) that grew or lost rows since their last vacuum, then
// analyses those whose planner statistics are stale or missing (staleSQL),
// and returns the names of both, partitions first. The store does so by
// itself unless its analyser is off (WithAnalyzeInterval(0)).
//
// It first has the pool's idle connections publish the row counts the
// server holds back (publishRowCounts), so the store's own saves count up
// to the last. It connects as the database URL's user, like partition
// maintenance: the pool's row-level-security role does not own the
// tables, and PostgreSQL only lets an owner analyse them.
func (s *Store) AnalyzeStale(ctx context.Context) ([]string, error) {
	s.publishRowCounts(ctx)
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return nil, fmt.Errorf("postgres: analyze: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, staleSQL)
	if err != nil {
		return nil, fmt.Errorf("postgres: analyze: list stale tables: %w", err)
	}
	type stale struct {
		Name    string // a regclass name, already quoted where it needs to be
		Vacuum  bool
		Analyze bool
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[stale])
	if err != nil {
		return nil, fmt.Errorf("postgres: analyze: list stale tables: %w", err)
	}
	tables := make([]string, len(list))
	for i, t := range list {
		tables[i] = t.Name
		if !t.Vacuum {
			continue
		}
		if _, err := conn.Exec(ctx, "VACUUM "+t.Name); err != nil {
			return nil, fmt.Errorf("postgres: vacuum %s: %w", t.Name, err)
		}
	}
	if slices.ContainsFunc(list, func(t stale) bool { return t.Analyze }) {
		if err := skipUnreadStats(ctx, conn); err != nil {
			return nil, fmt.Errorf("postgres: analyze: %w", err)
		}
	}
	for _, t := range list {
		if !t.Analyze {
			continue
		}
		if _, err := conn.Exec(ctx, "ANALYZE "+t.Name); err != nil {
			return nil, fmt.Errorf("postgres: analyze %s: %w", t.Name, err)
		}
	}
	return tables, nil
}

// publishRowCounts has each idle connection of the pool publish its
// pending table statistics to pg_stat_user_tables now. A server backend
// publishes them at most once a second, and what it holds back when it
// goes idle only ten seconds later; a round that ran seconds after a burst
// of saves would otherwise miss the burst's last second. Best effort
// (pg_stat_force_next_flush is PostgreSQL 15's): a connection that fails
// is left as it is.
func (s *Store) publishRowCounts(ctx context.Context) {
	for _, c := range s.pool.AcquireAllIdle(ctx) {
		if ctx.Err() == nil {
			_, _ = c.Exec(ctx, `SELECT pg_stat_force_next_flush()`, pgx.QueryExecModeSimpleProtocol)
		}
		c.Release()
	}
}

// Analyze vacuums all the event tables and their partitions and updates
// their planner statistics now, stale or not: for tools that load data behind the
// store's back (BulkLoad) and want plans at once.
func (s *Store) Analyze(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return fmt.Errorf("postgres: analyze: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := analyzeAll(ctx, conn); err != nil {
		return fmt.Errorf("postgres: analyze: %w", err)
	}
	return nil
}
