package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// TestSearchPlanAndAnswer runs a search as the RLS role with a channel
// scope, kinds and a limit over 20,000 rows in two communities, and checks
// the answer. It logs the plan on the never-analysed database and after
// ANALYZE (go test -v): at this size PostgreSQL rightly prefers a scan of
// the community; BENCHMARKS.md has the plans at 1M events, where
// events_search_idx answers.
func TestSearchPlanAndAnswer(t *testing.T) {
	s := internalStore(t)
	ctx := context.Background()
	a, _, err := s.EnsureCommunity(ctx, "a.example")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := s.EnsureCommunity(ctx, "b.example")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := pgx.Connect(ctx, s.url) // the schema owner: bypasses RLS to seed rows fast
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	now := time.Now().Unix()
	_, err = owner.Exec(ctx, `INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw)
SELECT CASE WHEN g % 2 = 0 THEN $1::uuid ELSE $2::uuid END, $3::bigint - g, sha256(g::text::bytea), sha256('k'::bytea), 1, '[]',
       'note ' || g || ' about word' || (g % 500) || CASE WHEN g % 997 = 0 THEN ' aardvark' ELSE '' END,
       decode(repeat('00', 64), 'hex'), '{}'::bytea
FROM generate_series(1, 20000) AS g`, a.UUID(), b.UUID(), now)
	if err != nil {
		t.Fatal(err)
	}
	f, err := nostr.ParseFilter([]byte(`{"kinds":[1,9],"search":"aardvark","limit":20}`))
	if err != nil {
		t.Fatal(err)
	}
	sqlStr, args, err := buildScopedQuery(a, &f, now, store.ChannelsScope())
	if err != nil {
		t.Fatal(err)
	}
	explain := func() string {
		t.Helper()
		conn, err := s.pool.Acquire(ctx) // SET ROLE buzz_app, plan_cache_mode as the relay has it
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if _, err := tx.Exec(ctx, setCommunitySQL, a.String()); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "EXPLAIN "+sqlStr, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	usesIndex := func(plan string) bool {
		return strings.Contains(plan, "search_tsv_idx") && strings.Contains(plan, "Index Cond: ((community_id = ") &&
			strings.Contains(plan, "(search_tsv @@ ")
	}
	plan := explain()
	t.Logf("never analysed: uses events_search_idx = %v\n%s", usesIndex(plan), plan)
	if _, err := owner.Exec(ctx, "ANALYZE events"); err != nil {
		t.Fatal(err)
	}
	plan = explain()
	t.Logf("analysed: uses events_search_idx = %v\n%s", usesIndex(plan), plan)
	// And the answer: the aardvarks of community a only (even g), best first.
	var got int
	for r, err := range s.QueryScoped(ctx, a, f, store.ChannelsScope()) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Community != a {
			t.Fatalf("row of %v", r.Community)
		}
		got++
	}
	if want := 20000 / 997 / 2; got < want-1 || got > want+1 {
		t.Fatalf("got %d aardvarks in a, want about %d", got, want)
	}
}
