package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

// TestSearchPlanAndAnswer runs a search as the RLS role with a channel
// scope, kinds and a limit over 20,000 rows in two communities, on a
// database that was never analysed (autovacuum is not relied on) and again
// after ANALYZE: both plans must drive from event_search and reach events
// only by primary-key probes of the matches (the plan that filters every
// event of the community took 7–9 s at 1M events, where event_search_idx
// answers in milliseconds), and the answer must be the
// community's matches only.
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
	sqlStr, args, err := buildScopedQuery(a, &f, now, channel.ScopeOf())
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
	// The plan must drive from event_search (its GIN index, or at this
	// small size a scan of it) and touch events only by primary-key
	// probes of the matches.
	drivenBySearch := func(plan string) bool {
		lines := strings.Split(plan, "\n")
		if !strings.Contains(plan, " on event_search s") {
			return false
		}
		for i, l := range lines {
			if !strings.Contains(l, " on events_") {
				continue
			}
			switch {
			case strings.Contains(l, "Seq Scan"):
				// Only of a partition PostgreSQL knows to be empty.
				if !strings.Contains(l, "(cost=0.00..0.00 ") && !strings.Contains(l, "(cost=0.01..0.01 ") {
					return false
				}
			case i+1 >= len(lines) || !strings.Contains(lines[i+1], "Index Cond: ") ||
				!strings.Contains(lines[i+1], "(id = s.event_id)"):
				return false
			}
		}
		return true
	}
	if plan := explain(); !drivenBySearch(plan) {
		t.Fatalf("never analysed: search not driven by event_search:\n%s", plan)
	}
	if _, err := owner.Exec(ctx, "ANALYZE events; ANALYZE event_search"); err != nil {
		t.Fatal(err)
	}
	if plan := explain(); !drivenBySearch(plan) {
		t.Fatalf("analysed: search not driven by event_search:\n%s", plan)
	}
	// And the answer: the aardvarks of community a only (even g), best first.
	var got int
	for r, err := range s.QueryScoped(ctx, a, f, channel.ScopeOf()) {
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
