package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestUnreadColumnsUnanalysed checks that both of the store's ways of
// analysing, the stale round and Analyze, take statistics of every column
// of events on its partitions except unanalysedColumns, and of none of
// those (their statistics target is 0 on a partition created before and
// on one created after).
func TestUnreadColumnsUnanalysed(t *testing.T) {
	s := internalStore(t, WithAnalyzeInterval(0))
	ctx := context.Background()
	owner, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	// names runs q, a query of one text column, and returns its rows.
	names := func(q string, args ...any) []string {
		t.Helper()
		rows, err := owner.Query(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := names(`SELECT attname FROM pg_attribute
WHERE attrelid = 'events'::regclass AND attnum > 0 AND NOT attisdropped AND NOT (attname = ANY($1)) ORDER BY attname`, unanalysedColumns)
	if len(want) < 9 {
		t.Fatalf("events has only %v besides %v", want, unanalysedColumns)
	}

	c, _, err := s.EnsureCommunity(ctx, "stats.example")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw)
SELECT $1::uuid, $2::bigint - g, sha256(g::text::bytea), sha256((g % 7)::text::bytea), 1 + g % 3, '[["t","x"]]', 'note ' || g,
  decode(repeat('00', 64), 'hex'), convert_to('{}' || g, 'UTF8')
FROM generate_series(1, 2000) AS g`, c.UUID(), time.Now().Unix()); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	analysed := func(how string) {
		t.Helper()
		got := names(`SELECT DISTINCT s.attname FROM pg_stats s
JOIN pg_inherits i ON i.inhrelid = (quote_ident(s.schemaname) || '.' || quote_ident(s.tablename))::regclass
WHERE i.inhparent = 'events'::regclass ORDER BY 1`)
		if !slices.Equal(got, want) {
			t.Fatalf("after %s the partitions have statistics of %v, want exactly %v", how, got, want)
		}
	}
	tables, err := s.AnalyzeStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) == 0 {
		t.Fatal("2,000 events inserted: no table found stale")
	}
	analysed("the stale round")

	// A partition created after the round (the next months' exist already;
	// this one is made as buzz_ensure_event_partitions makes them).
	if _, err := owner.Exec(ctx, `CREATE TABLE events_2031_01 (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED)`); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `ALTER TABLE events ATTACH PARTITION events_2031_01 FOR VALUES FROM (1924992000) TO (1927670400)`); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw)
SELECT $1::uuid, 1924992000 + g, sha256(g::text::bytea), sha256('k'::bytea), 1, '[]', 'x', decode(repeat('00', 64), 'hex'), '{}'::bytea
FROM generate_series(1, 100) AS g`, c.UUID()); err != nil {
		t.Fatal(err)
	}

	if _, err := owner.Exec(ctx, `DELETE FROM pg_statistic s USING pg_inherits i
WHERE s.starelid = i.inhrelid AND i.inhparent = 'events'::regclass`); err != nil {
		t.Fatal(err)
	}
	if err := s.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
	analysed("Analyze")
	// Analyze also takes the statistics of events as a whole (inherited).
	whole := names(`SELECT DISTINCT attname FROM pg_stats WHERE tablename = 'events' ORDER BY 1`)
	if !slices.Equal(whole, want) {
		t.Fatalf("after Analyze events has statistics of %v, want exactly %v", whole, want)
	}
}
