package postgres

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// planShape is one REQ or COUNT the plan test runs.
type planShape struct {
	name   string
	filter string // REQ filter JSON, or the COUNT's one filter
	count  bool
	scope  channel.Scope
	// drive, unless "", is (part of) the name of an index the plan must
	// read (partition indexes are named after their columns) or an index
	// condition it must show; only once analysed if analysedOnly.
	drive        string
	analysedOnly bool
	// indexOnly: once analysed (and so vacuumed), every scan of a
	// partition holding rows must be an index-only scan.
	indexOnly bool
	// tagsOnly: a COUNT answered from the tag rows alone (migration 170):
	// the plan reads no events partition, and once analysed reads
	// event_tags by an index-only scan.
	tagsOnly bool
}

// seedPlanData fills community a with 50,000 events and b with 10,000
// behind the store's back (as the schema owner, with their event_tags
// rows), so nothing analyses them: 500 authors, kinds 1 (70%), 7 (20%),
// 3 (5%) and 9 in 5 channels (5%), over about 17 days ending now; every
// note has a `t` (100 hashtags) and a `z` (7 values) tag, reactions an
// `e` (one of 50 thread roots) and a `p` (an author) tag.
func seedPlanData(t *testing.T, ctx context.Context, owner *pgx.Conn, a, b tenant.CommunityID, now int64) {
	t.Helper()
	_, err := owner.Exec(ctx, `
CREATE TEMP TABLE seed AS
SELECT CASE WHEN g <= 50000 THEN $1::uuid ELSE $2::uuid END AS community_id,
       $3::bigint - g * 30 AS created_at,
       sha256(('ev' || g)::bytea) AS id,
       sha256(('au' || g % 500)::bytea) AS pubkey,
       CASE WHEN g % 20 < 14 THEN 1 WHEN g % 20 < 18 THEN 7 WHEN g % 20 = 18 THEN 3 ELSE 9 END AS kind,
       g
FROM generate_series(1, 60000) AS g`, a.UUID(), b.UUID(), now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = owner.Exec(ctx, `INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw, channel_id)
SELECT community_id, created_at, id, pubkey, kind, '[]', 'note ' || g, decode(repeat('00', 64), 'hex'), '{}'::bytea,
       CASE WHEN kind = 9 THEN md5('ch' || g % 100)::uuid END
FROM seed;
INSERT INTO event_tags (community_id, name, value, created_at, event_id, kind, channel_id)
SELECT community_id, 't', convert_to('topic' || g % 100, 'UTF8'), created_at, id, kind, NULL::uuid FROM seed WHERE kind = 1
UNION ALL
SELECT community_id, 'z', convert_to('z' || g % 7, 'UTF8'), created_at, id, kind, NULL FROM seed WHERE kind = 1
UNION ALL
SELECT community_id, 'e', '\xfe'::bytea || sha256(('ev' || 1000 + g % 50)::bytea), created_at, id, kind, NULL FROM seed WHERE kind = 7
UNION ALL
SELECT community_id, 'p', '\xfe'::bytea || sha256(('au' || g % 499)::bytea), created_at, id, kind, NULL FROM seed WHERE kind = 7
UNION ALL
SELECT community_id, 'h', convert_to(md5('ch' || g % 100)::uuid::text, 'UTF8'), created_at, id, kind, md5('ch' || g % 100)::uuid
FROM seed WHERE kind = 9;
DROP TABLE seed`)
	if err != nil {
		t.Fatal(err)
	}
}

func hexOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestPlansWithoutStatistics loads 60,000 events into a database nobody
// analysed (the store's own analyser off, autovacuum not relied on) and
// checks every REQ and COUNT shape: its generic plan (as the relay runs it,
// as the RLS role) reads no events partition sequentially, reads the index
// that serves the shape, and reaches events from tag rows only through the
// primary key; and the query answers within a bound generous enough for a
// loaded machine, where such plans once ran for minutes. The same
// after ANALYZE.
func TestPlansWithoutStatistics(t *testing.T) {
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
	seedPlanData(t, ctx, owner, a, b, now)
	rows, err := owner.Query(ctx, `SELECT DISTINCT tableoid::regclass::text FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	filled, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte("ch19")) // one of the five channels of kind 9 (seedPlanData)
	chID := channel.ID(sum)

	authors := make([]string, 10)
	for i := range authors {
		authors[i] = fmt.Sprintf("%q", hexOf(fmt.Sprint("au", i*7)))
	}
	var topics40, pubkeys200 []string
	for i := range 40 {
		topics40 = append(topics40, fmt.Sprintf(`"topic%d"`, i))
	}
	for i := range 200 {
		pubkeys200 = append(pubkeys200, fmt.Sprintf("%q", hexOf(fmt.Sprint("au", i))))
	}
	ids := []string{fmt.Sprintf("%q", hexOf("ev123")), fmt.Sprintf("%q", hexOf("ev40000"))}
	all := channel.AllChannels()
	// An author's events are read through an index bound by the author
	// (either of the two), not by community and kind.
	const authorBound = "Index Cond: ((community_id = $1) AND (pubkey = $"
	shapes := []planShape{
		{name: "ids", filter: `{"ids":[` + strings.Join(ids, ",") + `]}`, scope: all, drive: "_community_id_id_idx"},
		// Without statistics the kind index and the author+kind index look
		// alike (both bound to one row by the default selectivities), and
		// the planner may walk the kind's events for the author's: bounded
		// by the limit, and the store analyses a filled partition soon.
		{name: "author+kind limit", filter: `{"authors":[` + authors[3] + `],"kinds":[1],"limit":20}`, scope: all, drive: authorBound, analysedOnly: true},
		{name: "authors+kinds", filter: `{"authors":[` + strings.Join(authors, ",") + `],"kinds":[1,7],"limit":50}`, scope: all},
		{name: "kind limit", filter: `{"kinds":[1],"limit":50}`, scope: all, drive: "_community_id_kind_created_at_id_idx"},
		{name: "#t limit 20", filter: `{"#t":["topic7"],"limit":20}`, scope: all, drive: "event_tags_key"},
		{name: "#t 40 values", filter: `{"#t":[` + strings.Join(topics40, ",") + `],"limit":20}`, scope: all, drive: "event_tags_key"},
		{name: "#p", filter: `{"#p":[` + pubkeys200[5] + `],"limit":50}`, scope: all, drive: "event_tags_key"},
		{name: "#p 200 values", filter: `{"#p":[` + strings.Join(pubkeys200, ",") + `],"limit":50}`, scope: all, drive: "event_tags_key"},
		{name: "#e thread", filter: `{"kinds":[1,7],"#e":["` + hexOf("ev1007") + `"],"limit":100}`, scope: all, drive: "event_tags_key"},
		// Not the partial author index, bound by community_id alone,
		// which without statistics once looked cheapest (liveUnauthored).
		{name: "since/until", filter: fmt.Sprintf(`{"since":%d,"until":%d,"limit":100}`, now-86400, now-82800), scope: all, drive: "_pkey"},
		{name: "since/until, community-wide scope", filter: fmt.Sprintf(`{"since":%d,"until":%d,"limit":100}`, now-86400, now-82800), scope: channel.ScopeOf(), drive: "_pkey"},
		{name: "#t + #z", filter: `{"#t":["topic7"],"#z":["z3"],"limit":20}`, scope: all, drive: "event_tags_key"},
		{name: "COUNT #t", filter: `{"#t":["topic7"]}`, count: true, scope: all, drive: "event_tags_key", tagsOnly: true},
		{name: "COUNT kind #t, channel scope", filter: `{"kinds":[1],"#t":["topic7"]}`, count: true, scope: channel.ScopeOf(chID), drive: "event_tags_key", tagsOnly: true},
		{name: "COUNT #t 40 values", filter: `{"#t":[` + strings.Join(topics40, ",") + `]}`, count: true, scope: all, drive: "event_tags_key", tagsOnly: true},
		{name: "COUNT #e thread", filter: `{"#e":["` + hexOf("ev1007") + `"]}`, count: true, scope: channel.ScopeOf(), drive: "event_tags_key", tagsOnly: true},
		{name: "COUNT #t + #z", filter: `{"#t":["topic7"],"#z":["z3"]}`, count: true, scope: all, drive: "event_tags_key"},
		{name: "COUNT author", filter: `{"authors":[` + authors[3] + `]}`, count: true, scope: all, drive: authorBound},
		// In a channel scope (every client read has one) the author index
		// covers the channel condition too (migration 160): without it the
		// count visited the heap for every event of the author, and for a
		// prolific author the planner chose a sequential scan.
		{name: "COUNT author, community-wide scope", filter: `{"authors":[` + authors[3] + `]}`, count: true, scope: channel.ScopeOf(), drive: authorBound, indexOnly: true},
		{name: "COUNT author, channel scope", filter: `{"authors":[` + authors[3] + `]}`, count: true, scope: channel.ScopeOf(chID), drive: authorBound, indexOnly: true},
		{name: "channel timeline", filter: `{"kinds":[9],"#h":["` + chID.String() + `"],"limit":50}`, scope: channel.ScopeOf(chID), drive: "event_tags_key"},
		{name: "channel scope kinds", filter: `{"kinds":[9],"limit":50}`, scope: channel.ScopeOf(chID), drive: "channel_id"},
	}
	check := func(label string, analysed bool) {
		for _, sh := range shapes {
			f, err := nostr.ParseFilter([]byte(sh.filter))
			if err != nil {
				t.Fatalf("%s: %v", sh.name, err)
			}
			var sqlStr string
			var args []any
			if sh.count {
				sqlStr, args, err = buildCount(a, []nostr.Filter{f}, now, sh.scope, false, nil)
			} else {
				sqlStr, args, err = buildScopedQuery(a, &f, now, sh.scope)
			}
			if err != nil {
				t.Fatalf("%s: %v", sh.name, err)
			}
			plan := explainAs(t, s, a, sqlStr, args)
			drive := sh.drive
			if sh.analysedOnly && !analysed {
				drive = ""
			}
			bad := planProblem(plan, drive, filled)
			if bad == "" && sh.indexOnly && analysed {
				bad = notIndexOnly(plan, filled)
			}
			if bad == "" && sh.tagsOnly {
				bad = notTagsOnly(plan, filled, analysed)
			}
			if bad != "" {
				t.Errorf("%s, %s: %s:\n%s", label, sh.name, bad, plan)
				continue
			}
			qctx, cancel := context.WithTimeout(ctx, 4*planBound)
			start := time.Now()
			if sh.count {
				_, err = s.CountScoped(qctx, a, []nostr.Filter{f}, sh.scope)
			} else {
				for _, err = range s.QueryScoped(qctx, a, f, sh.scope) {
					if err != nil {
						break
					}
				}
			}
			took := time.Since(start)
			cancel()
			switch {
			case err != nil:
				t.Errorf("%s, %s: %v after %v:\n%s", label, sh.name, err, took, plan)
			case took > planBound:
				t.Errorf("%s, %s: took %v (bound %v):\n%s", label, sh.name, took, planBound, plan)
			default:
				t.Logf("%s, %s: %v", label, sh.name, took)
			}
		}
	}
	check("never analysed", false)
	if err := s.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
	check("analysed", true)
}

// planBound is far above what every shape takes with the plans checked
// here (milliseconds, on a loaded 2-core machine), and far below what the
// plans once took (seconds to minutes).
const planBound = 2 * time.Second

// planProblem says what is wrong with plan, or "", looking at the scans of
// the events partitions that hold rows (filled): none may be sequential;
// reached from tag rows, each must be an index probe by id; and each must
// show drive (an index name or an index condition) unless drive is the tag
// index, which the plan must read.
func planProblem(plan, drive string, filled []string) string {
	lines := strings.Split(plan, "\n")
	tagDriven := strings.Contains(plan, "event_tags t ")
	if strings.HasPrefix(drive, "event_tags") && !strings.Contains(plan, drive) {
		return "does not read " + drive
	}
	for i, l := range lines {
		part := ""
		for _, p := range filled {
			if strings.Contains(l, " on "+p+" ") {
				part = p
			}
		}
		if part == "" {
			continue
		}
		// The scan and its conditions; a bitmap heap scan's index
		// condition is its Recheck Cond (and its bitmap index scan's).
		node := l
		if i+1 < len(lines) {
			node += "\n" + strings.Replace(lines[i+1], "Recheck Cond: ", "Index Cond: ", 1)
		}
		switch {
		case strings.Contains(l, "Seq Scan"):
			return "sequential scan of " + part
		case tagDriven && !strings.Contains(node, "Index Cond: ") || tagDriven && !strings.Contains(node, "id = t.event_id"):
			return "events of " + part + " reached from tag rows without an index probe by id"
		case drive != "" && !strings.HasPrefix(drive, "event_tags") && !strings.Contains(node, drive):
			return part + " not read through " + drive
		}
	}
	return ""
}

// notIndexOnly names a partition holding rows (filled) that plan reads
// other than by an index-only scan, or is "".
func notIndexOnly(plan string, filled []string) string {
	for _, l := range strings.Split(plan, "\n") {
		for _, p := range filled {
			if strings.Contains(l, " on "+p+" ") && !strings.Contains(l, "Index Only Scan") {
				return p + " not read by an index-only scan"
			}
		}
	}
	return ""
}

// notTagsOnly says why plan is not a read of event_tags alone (index-only
// once analysed), or is "".
func notTagsOnly(plan string, filled []string, analysed bool) string {
	for _, l := range strings.Split(plan, "\n") {
		for _, p := range filled {
			if strings.Contains(l, " on "+p+" ") {
				return "reads " + p
			}
		}
	}
	if analysed && !strings.Contains(plan, "Index Only Scan using event_tags_key") {
		return "event_tags not read by an index-only scan"
	}
	return ""
}

// explainAs returns the generic plan of sqlStr as the relay runs it: on a
// pooled connection (RLS role, plan_cache_mode) with the community set.
func explainAs(t *testing.T, s *Store, c tenant.CommunityID, sqlStr string, args []any) string {
	t.Helper()
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, setCommunitySQL, c.String()); err != nil {
		t.Fatal(err)
	}
	// EXPLAIN with bound parameters plans for their values; the relay
	// runs generic plans (plan_cache_mode), so explain the prepared one.
	if _, err := tx.Exec(ctx, "PREPARE plantest AS "+sqlStr, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DEALLOCATE plantest") //nolint:errcheck
	ph := make([]string, len(args))
	for i := range ph {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	exec := "EXPLAIN EXECUTE plantest"
	if len(ph) > 0 {
		exec += "(" + strings.Join(ph, ", ") + ")"
	}
	lit := []any{pgx.QueryExecModeSimpleProtocol} // values spelled into the EXECUTE
	for _, a := range args {
		switch v := a.(type) {
		case [16]byte:
			a = pgtype.UUID{Bytes: v, Valid: true}
		case [][16]byte:
			us := make([]pgtype.UUID, len(v))
			for i := range v {
				us[i] = pgtype.UUID{Bytes: v[i], Valid: true}
			}
			a = us
		}
		lit = append(lit, a)
	}
	rows, err := tx.Query(ctx, exec, lit...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
