package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

// TestAnalyzesAfterGrowth checks that the store keeps planner statistics
// itself: after 1,000 events stored into a never-analysed database, the
// event partitions have row estimates of all of them without anyone
// running ANALYZE. The interval is far beyond the test, so the round is
// the one growth starts at the 1,000th stored event (or, if Open's round
// still runs then, the one the pause after the saves starts). A round on
// the interval could instead come mid-way and analyse fewer rows, leaving
// the rest within the 10% a table may change before it is stale again.
func TestAnalyzesAfterGrowth(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, _, err := s.EnsureCommunity(ctx, "analyze.example")
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := nostr.GenerateSecretKey()
	now := time.Now().Unix()
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for i := range 1000 {
		ev := signed(t, sk, 1, now-int64(i), fmt.Sprint("event ", i), nostr.Tag{"t", fmt.Sprint("topic", i%40)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Save(ctx, c, ev); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var est float64
		err := mon.QueryRow(ctx, `SELECT coalesce(sum(greatest(c.reltuples, 0)), 0) FROM pg_inherits i
			JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`).Scan(&est)
		if err != nil {
			t.Fatal(err)
		}
		if est >= 1000 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("event partitions estimate %v rows after 1,000 saves: not analysed", est)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAnalyzeStale checks the store's analyser against rows it did not
// store itself (another pod, or BulkLoad): events inserted behind its back
// into a never-analysed database are found stale, analysed, and then no
// longer stale; with the analyser on, its rounds (at Open, then on the
// interval) do the same without anyone asking.
func TestAnalyzeStale(t *testing.T) {
	ctx := context.Background()
	url, s, c, owner := analyserOff(t, "stale.example")
	insertBehind(t, owner, c, 1)
	analysed, err := s.AnalyzeStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(analysed) == 0 {
		t.Fatal("2,000 events inserted behind the store's back: no table found stale")
	}
	if again, err := s.AnalyzeStale(ctx); err != nil || len(again) != 0 {
		t.Fatalf("just analysed %v, still stale: %v (%v)", analysed, again, err)
	}
	// The round vacuumed too: the new pages are all-visible, so counts and
	// index-first reads are index-only scans without heap fetches.
	pages, visible := eventPages(t, owner)
	if pages == 0 || visible != pages {
		t.Fatalf("after the round %d of %d event pages are all-visible; want all (VACUUM sets the visibility map)", visible, pages)
	}
	estimate := func() float64 {
		var est float64
		err := owner.QueryRow(ctx, `SELECT coalesce(sum(greatest(c.reltuples, 0)), 0) FROM pg_inherits i
			JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`).Scan(&est)
		if err != nil {
			t.Fatal(err)
		}
		return est
	}
	if est := estimate(); est < 2000 {
		t.Fatalf("after analysing %v: partitions estimate %v rows, want 2,000", analysed, est)
	}

	// The analyser on its own. The rows go in before it starts: an
	// ANALYZE that ends after an insert it did not see has published its
	// counts sets the table's changes since the last ANALYZE to zero, so a
	// round running between two inserts could leave the second never
	// stale again.
	insertBehind(t, owner, c, 10001)
	insertBehind(t, owner, c, 20001)
	s2, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for deadline := time.Now().Add(30 * time.Second); estimate() < 6000; {
		if time.Now().After(deadline) {
			t.Fatalf("6,000 events, partitions estimate %v rows 30 s later: the analyser did not run", estimate())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestVacuumsWhatAnotherAnalysed checks that a round vacuums a partition
// whose statistics someone else took (an operator's ANALYZE) since rows
// were added: the statistics are current, but the visibility map is not,
// and without it every index-only scan visits the heap.
func TestVacuumsWhatAnotherAnalysed(t *testing.T) {
	ctx := context.Background()
	_, s, c, owner := analyserOff(t, "analysed.example")
	// The insert's counts are published before the ANALYZE, which then
	// finds no change since it ran.
	insertBehind(t, owner, c, 1)
	if _, err := owner.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	done, err := s.AnalyzeStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pages, visible := eventPages(t, owner)
	if pages == 0 || visible != pages {
		t.Fatalf("analysed by the owner, then a round (on %v): %d of %d event pages all-visible, want all", done, visible, pages)
	}
	if again, err := s.AnalyzeStale(ctx); err != nil || len(again) != 0 {
		t.Fatalf("after the round %v, still to do: %v (%v)", done, again, err)
	}
}

// analyserOff opens a store on a new database with its analyser off,
// makes the community host on it, and connects as the schema owner; all
// are closed when the test ends.
func analyserOff(t *testing.T, host string) (url string, s *postgres.Store, c tenant.CommunityID, owner *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url = pgtest.NewDatabase(t)
	s, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if c, _, err = s.EnsureCommunity(ctx, host); err != nil {
		t.Fatal(err)
	}
	if owner, err = pgx.Connect(ctx, url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close(context.Background()) })
	return url, s, c, owner
}

// insertBehind inserts 2,000 events of community c, numbered from on, as
// the schema owner (behind the store's back), and has the connection
// publish its row counts now (the server otherwise may hold them for up
// to ten seconds while the connection is idle).
func insertBehind(t *testing.T, owner *pgx.Conn, c tenant.CommunityID, from int) {
	t.Helper()
	ctx := context.Background()
	_, err := owner.Exec(ctx, `INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw)
SELECT $1::uuid, $2::bigint - g, sha256(g::text::bytea), sha256('k'::bytea), 1, '[]', 'x', decode(repeat('00', 64), 'hex'), '{}'::bytea
FROM generate_series($3::int, $3::int + 1999) AS g`, c.UUID(), time.Now().Unix(), from)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
}

// eventPages returns the pages of the event partitions, and how many of
// them the visibility map has all-visible, as of their last vacuum.
func eventPages(t *testing.T, owner *pgx.Conn) (pages, visible int64) {
	t.Helper()
	if err := owner.QueryRow(context.Background(), `SELECT coalesce(sum(c.relpages), 0), coalesce(sum(c.relallvisible), 0) FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`).Scan(&pages, &visible); err != nil {
		t.Fatal(err)
	}
	return pages, visible
}

func TestAnalyzeIntervalValidated(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 25 * time.Hour} {
		if _, err := postgres.Open(context.Background(), "postgres://127.0.0.1:1/x", postgres.WithAnalyzeInterval(d)); err == nil ||
			!strings.Contains(err.Error(), "analyze interval") {
			t.Errorf("WithAnalyzeInterval(%v): err %v, want the interval refused", d, err)
		}
	}
}

// TestAnalyzesWhenSavingPauses checks the settle trigger: events stored
// after the last round, fewer than the next growth step, are analysed and
// vacuumed once saving pauses, without waiting for the interval, and not
// while the saves continue.
func TestAnalyzesWhenSavingPauses(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	// An interval far beyond the test: only Open, growth and pauses start
	// rounds. The default settle period, which no save here waits for.
	s, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(24*time.Hour), postgres.WithAnalyzeSettle(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, _, err := s.EnsureCommunity(ctx, "settle.example")
	if err != nil {
		t.Fatal(err)
	}
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	sk, _ := nostr.GenerateSecretKey()
	now := time.Now().Unix()
	events := make([]*nostr.Event, 2500)
	for i := range events {
		events[i] = signed(t, sk, 1, now-int64(i), fmt.Sprint("settle event ", i), nostr.Tag{"t", fmt.Sprint("topic", i%40)})
	}

	// The first 1,000 start the round that sets the next step to 2,000
	// (growth, or the pause if Open's round was still running).
	saveAll(t, s, c, events[:1000])
	waitUntil(t, "the round after 1,000 events", func() (bool, string) {
		next, running := s.AnalyzeStepForTest()
		return next >= 2000 && !running, fmt.Sprintf("next step %d, round running %v", next, running)
	})
	if next, _ := s.AnalyzeStepForTest(); next != 2000 {
		t.Fatalf("after 1,000 events the next growth step is %d, want 2,000", next)
	}

	// 1,500 more cross no growth step; only the pause analyses them, and
	// no round starts before it (the step doubles with every round).
	saveAll(t, s, c, events[1000:])
	if next, _ := s.AnalyzeStepForTest(); next != 2000 {
		t.Fatalf("a round started while saving: the next growth step is %d, want still 2,000", next)
	}
	// Wait for the pause's round to end before looking at the tables: a
	// scan of them pins pages, and a VACUUM that finds a page pinned skips
	// setting it all-visible, so reading the tables while the round runs
	// could leave a page behind that no later round would visit.
	waitUntil(t, "the round after the pause", func() (bool, string) {
		next, running := s.AnalyzeStepForTest()
		return next >= 4000 && !running, fmt.Sprintf("next step %d, round running %v", next, running)
	})
	if next, _ := s.AnalyzeStepForTest(); next != 4000 {
		t.Fatalf("after the pause the next growth step is %d, want 4,000 (one round for the pause)", next)
	}
	if st := eventTableStats(t, mon); st.rows < 2500 || st.pages == 0 || st.missing != 0 {
		t.Fatalf("after the pause's round: estimate %v rows, %d pages hold rows, %d of them not all-visible%s; want 2,500 rows, all pages all-visible",
			st.rows, st.pages, st.missing, st.detail)
	}
}

// TestAnalyzeStaleSeesTheLastSaves checks that a round right after a
// burst of saves counts all of them. A server backend publishes its row
// counts at most once a second and holds back the rest for up to ten
// seconds unless asked to publish them; with one committer, one
// connection commits the burst, publishing its first batch (more than a
// second after its last publication) and holding back the others.
func TestAnalyzeStaleSeesTheLastSaves(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	sk, _ := nostr.GenerateSecretKey()
	now := time.Now().Unix()
	events := make([]*nostr.Event, 1300)
	for i := range events {
		events[i] = signed(t, sk, 1, now-int64(i), fmt.Sprint("burst event ", i), nostr.Tag{"t", "burst"})
	}
	// 1,000 events, all published (a closing backend publishes its
	// counts), then analysed.
	s1, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s1.Close() })
	c, _, err := s1.EnsureCommunity(ctx, "burst.example")
	if err != nil {
		t.Fatal(err)
	}
	saveAll(t, s1, c, events[:1000])
	s1.Close()
	s, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(0), postgres.WithMaxConns(2), postgres.WithCommitters(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the burst's first commit publishes
	// 300 rows change a 1,000-row table by more than 50 + 10%.
	saveAll(t, s, c, events[1000:])
	stale, err := s.AnalyzeStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var partition, tags bool
	for _, name := range stale {
		partition = partition || strings.HasPrefix(name, "events_")
		tags = tags || name == "event_tags"
	}
	if !partition || !tags {
		t.Fatalf("300 events saved into 1,000 just analysed: stale %v, want their partition and event_tags", stale)
	}
}

// TestNoSettleRoundWithAnalyzerOff checks that a pause in saving starts
// no round while the analyser is off.
func TestNoSettleRoundWithAnalyzerOff(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	const settle = 10 * time.Millisecond
	s, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(0), postgres.WithAnalyzeSettle(settle))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, _, err := s.EnsureCommunity(ctx, "settle-off.example")
	if err != nil {
		t.Fatal(err)
	}
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	sk, _ := nostr.GenerateSecretKey()
	now := time.Now().Unix()
	events := make([]*nostr.Event, 1500)
	for i := range events {
		events[i] = signed(t, sk, 1, now-int64(i), fmt.Sprint("event ", i), nostr.Tag{"t", "off"})
	}
	saveAll(t, s, c, events)
	time.Sleep(100 * settle) // a hundred settle periods without a save
	var rounds int64
	if err := mon.QueryRow(ctx, `SELECT coalesce(sum(vacuum_count + analyze_count), 0) FROM pg_stat_user_tables
		WHERE relid IN ('event_tags'::regclass, 'event_search'::regclass)
		   OR relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass)`).Scan(&rounds); err != nil {
		t.Fatal(err)
	}
	if rounds != 0 {
		t.Fatalf("analyser off: the event tables were vacuumed or analysed %d times", rounds)
	}
}

func TestAnalyzeSettleValidated(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond, 2 * time.Hour} {
		if _, err := postgres.Open(context.Background(), "postgres://127.0.0.1:1/x", postgres.WithAnalyzeSettle(d)); err == nil ||
			!strings.Contains(err.Error(), "settle") {
			t.Errorf("WithAnalyzeSettle(%v): err %v, want the period refused", d, err)
		}
	}
}

// saveAll saves events concurrently (16 at a time) and fails the test on
// any error.
func saveAll(t *testing.T, s *postgres.Store, c tenant.CommunityID, events []*nostr.Event) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(events))
	sem := make(chan struct{}, 16)
	for _, ev := range events {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := s.Save(context.Background(), c, ev); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitUntil polls cond for up to a minute and fails the test, with cond's
// last description of the state, if it never holds.
func waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after a minute (%s)", what, state)
		}
	}
}

type tableStats struct {
	rows    float64 // the event partitions' row estimate
	pages   int64   // the event tables' pages holding rows
	missing int64   // how many more pages hold rows than the last round found all-visible
	detail  string  // per table
}

// eventTableStats reads the event partitions' row estimate, and for the
// event tables (partitions, event_tags, event_search) how many pages hold
// rows now against how many were all-visible when the last VACUUM or
// ANALYZE ran (relallvisible). A VACUUM leaves every page holding rows
// all-visible, but not the empty pages a bulk extension of the table adds,
// so the table's size would not do.
func eventTableStats(t *testing.T, conn *pgx.Conn) tableStats {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
WITH filled AS (
	SELECT tableoid AS oid, count(DISTINCT (ctid::text::point)[0]) AS pages FROM events GROUP BY 1
	UNION ALL SELECT 'event_tags'::regclass, count(DISTINCT (ctid::text::point)[0]) FROM event_tags
	UNION ALL SELECT 'event_search'::regclass, count(DISTINCT (ctid::text::point)[0]) FROM event_search)
SELECT c.relname, c.relname IN ('event_tags', 'event_search'), greatest(c.reltuples, 0),
       f.pages, c.relallvisible, coalesce(s.vacuum_count, 0)
FROM filled f JOIN pg_class c ON c.oid = f.oid LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var st tableStats
	var name string
	var side bool
	var tuples float64
	var pages, visible, vacuums int64
	_, err = pgx.ForEachRow(rows, []any{&name, &side, &tuples, &pages, &visible, &vacuums}, func() error {
		if !side {
			st.rows += tuples
		}
		st.pages += pages
		st.missing += max(pages-visible, 0)
		st.detail += fmt.Sprintf("; %s: %v rows estimated, %d pages hold rows, %d all-visible, %d vacuums",
			name, tuples, pages, visible, vacuums)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestWarnsWithoutAutovacuum checks that Open warns exactly when the
// server runs without autovacuum.
func TestWarnsWithoutAutovacuum(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	s, err := postgres.Open(ctx, url, postgres.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	var on string
	if err := mon.QueryRow(ctx, `SHOW autovacuum`).Scan(&on); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	warned := strings.Contains(logs.String(), "autovacuum is off")
	mu.Unlock()
	if warned != (on == "off") {
		t.Fatalf("autovacuum %s, warned %v", on, warned)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
