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
)

// TestAnalyzesAfterGrowth checks that the store keeps planner statistics
// itself: after 1,000 events stored into a never-analysed database, the
// event partitions have row estimates of all of them without anyone
// running ANALYZE (the round started by growth may see the statistics
// collector's counts a little behind; the next round, on the interval,
// catches up).
func TestAnalyzesAfterGrowth(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(time.Second))
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
// longer stale; with the analyser on, a round on its interval does the
// same without anyone asking.
func TestAnalyzeStale(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, _, err := s.EnsureCommunity(ctx, "stale.example")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	insert := func(from int) {
		t.Helper()
		_, err := owner.Exec(ctx, `INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw)
SELECT $1::uuid, $2::bigint - g, sha256(g::text::bytea), sha256('k'::bytea), 1, '[]', 'x', decode(repeat('00', 64), 'hex'), '{}'::bytea
FROM generate_series($3::int, $3::int + 1999) AS g`, c.UUID(), time.Now().Unix(), from)
		if err != nil {
			t.Fatal(err)
		}
		// Publish this connection's counts now (the server otherwise may
		// hold them for up to ten seconds while the connection is idle).
		if _, err := owner.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
	}
	insert(1)
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
	var pages, visible int64
	if err := owner.QueryRow(ctx, `SELECT coalesce(sum(c.relpages), 0), coalesce(sum(c.relallvisible), 0) FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`).Scan(&pages, &visible); err != nil {
		t.Fatal(err)
	}
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

	// The analyser on its interval.
	s2, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	insert(10001)
	insert(20001)
	for deadline := time.Now().Add(30 * time.Second); estimate() < 6000; {
		if time.Now().After(deadline) {
			t.Fatalf("6,000 events, partitions estimate %v rows 30 s later: the analyser did not run", estimate())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestAnalyzeIntervalValidated(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 25 * time.Hour} {
		if _, err := postgres.Open(context.Background(), "postgres://127.0.0.1:1/x", postgres.WithAnalyzeInterval(d)); err == nil ||
			!strings.Contains(err.Error(), "analyze interval") {
			t.Errorf("WithAnalyzeInterval(%v): err %v, want the interval refused", d, err)
		}
	}
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
