package postgres

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// TestSearchReadsOnlyItsCommunityPostings: a search of community A reads
// the same part of the search index whether or not community B writes the
// word, 10,000 times or not at all. What is measured is what the search
// reads, not how long it takes: EXPLAIN (ANALYZE, BUFFERS) of the search
// the store runs, as the relay's role, its index scan of event_search_idx
// (forced, as it is at any size that matters), buffers touched and rows
// found. GIN's pending list (recent inserts, scanned by every search
// whatever its words) is flushed into the index before each measure.
//
// The store's analyser is off and the test analyses after each seed
// instead: an ANALYZE committed while a search runs invalidates the
// catalog caches, and buzz_search_tsquery, evaluated on the index scan's
// account, would read the catalog again there.
func TestSearchReadsOnlyItsCommunityPostings(t *testing.T) {
	s := internalStore(t, WithAnalyzeInterval(0))
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
	seed := func(c tenant.CommunityID, n int, content string) {
		t.Helper()
		_, err := owner.Exec(ctx, `INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw)
SELECT $1::uuid, $2::bigint - g, sha256(($1::text || g::text)::bytea), sha256('k'::bytea), 1, '[]', $4,
       decode(repeat('00', 64), 'hex'), '{}'::bytea
FROM generate_series(1, $3::int) AS g`, c.UUID(), now, n, content)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := owner.Exec(ctx, `ANALYZE`); err != nil {
			t.Fatal(err)
		}
	}
	seed(a, 2, "hello world from a")

	type reading struct{ buffers, rows int }
	measure := func(q string) reading {
		t.Helper()
		if _, err := owner.Exec(ctx, `SELECT gin_clean_pending_list('event_search_idx'::regclass)`); err != nil {
			t.Fatal(err)
		}
		f := nostr.Filter{Kinds: []int{1}, Search: q}
		sqlStr, args, err := buildScopedQuery(a, &f, now, channel.AllChannels())
		if err != nil {
			t.Fatal(err)
		}
		conn, err := s.pool.Acquire(ctx) // SET ROLE buzz_app, as the relay runs
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
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		// Twice, keeping the second: the first run on a connection also
		// reads the catalog (its caches start cold) on the index scan's
		// account, as it evaluates buzz_search_tsquery, and which pooled
		// connection a measure gets is not the test's to choose.
		var out []byte
		for range 2 {
			if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sqlStr, args...).Scan(&out); err != nil {
				t.Fatal(err)
			}
		}
		var plans []struct{ Plan planNode }
		if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
			t.Fatalf("EXPLAIN output: %v\n%s", err, out)
		}
		var r reading
		found := false
		var walk func(n *planNode)
		walk = func(n *planNode) {
			if n.IndexName == "event_search_idx" {
				found = true
				r.buffers += n.SharedHit + n.SharedRead
				r.rows += n.ActualRows
			}
			for i := range n.Plans {
				walk(&n.Plans[i])
			}
		}
		walk(&plans[0].Plan)
		if !found {
			t.Fatalf("search %q does not read event_search_idx:\n%s", q, out)
		}
		return r
	}

	queries := []string{"secretword", "hello", `"hello world"`, "hello secretword"}
	before := map[string]reading{}
	for _, q := range queries {
		before[q] = measure(q)
	}
	seed(b, 10_000, "secretword hello world")
	for _, q := range queries {
		if got := measure(q); got != before[q] {
			t.Errorf("A's search %q reads %+v of the index after B wrote it 10,000 times, %+v before", q, got, before[q])
		}
	}
	if got := before["hello"].rows; got != 2 {
		t.Errorf("A's search for hello: %d rows from the index, want its own 2", got)
	}
}

// planNode is the part of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) a test
// of what a query reads needs.
type planNode struct {
	NodeType   string     `json:"Node Type"`
	IndexName  string     `json:"Index Name"`
	ActualRows int        `json:"Actual Rows"`
	SharedHit  int        `json:"Shared Hit Blocks"`
	SharedRead int        `json:"Shared Read Blocks"`
	Plans      []planNode `json:"Plans"`
}
