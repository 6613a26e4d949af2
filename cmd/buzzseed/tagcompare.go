package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
)

// runTagCompare times the same tag filters under both designs on the same
// data: JSONB containment with a GIN index (raw SQL) and the event_tags
// table (Store.Query). Both run as the URL's user without RLS, because
// under RLS jsonb @> is not leakproof and could not use the GIN index at all.
func runTagCompare(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tag-compare", flag.ExitOnError)
	db, host := dbFlags(fs)
	n := fs.Int("n", 500, "measured queries per shape and design")
	keep := fs.Bool("keep-gin", false, "keep the GIN index afterwards")
	_ = fs.Parse(args)
	st, err := postgres.Open(ctx, *db, postgres.WithMaxConns(2), postgres.WithCommitters(1), postgres.WithRLSRole(""))
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := st.LookupHost(ctx, *host)
	if err != nil {
		return err
	}
	smp, err := loadSamples(ctx, *db, c)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, *db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	t0 := time.Now()
	if _, err := conn.Exec(ctx, `CREATE INDEX IF NOT EXISTS events_tags_gin ON events USING gin (tags jsonb_path_ops)`); err != nil {
		return err
	}
	fmt.Printf("GIN (jsonb_path_ops) index on events.tags ready in %v\n", time.Since(t0).Round(time.Millisecond))
	if !*keep {
		defer conn.Exec(context.WithoutCancel(ctx), `DROP INDEX IF EXISTS events_tags_gin`)
	}
	var ginSize, tagTableSize string
	if err := conn.QueryRow(ctx, `SELECT pg_size_pretty(sum(pg_relation_size(i.indexrelid)))
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
WHERE a.amname = 'gin' AND i.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass)`).Scan(&ginSize); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, `SELECT pg_size_pretty(pg_total_relation_size('event_tags'))`).Scan(&tagTableSize); err != nil {
		return err
	}
	fmt.Printf("sizes: GIN index %s; event_tags table + index %s\n\n", ginSize, tagTableSize)
	now := time.Now().Unix()
	const jsonbSQL = `SELECT e.id, e.created_at, e.raw FROM events e
WHERE e.community_id = $1 AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > $2)
  AND e.tags @> $3::jsonb AND ($5::int[] IS NULL OR e.kind = ANY($5))
ORDER BY e.created_at DESC, e.id LIMIT $4`
	type tshape struct {
		name  string
		tag   string
		vals  []string
		limit int
		kinds []int
	}
	var popular []string
	for _, h := range smp.hashtags {
		if h == "tag1" || h == "tag2" || h == "tag3" {
			popular = append(popular, h)
		}
	}
	tshapes := []tshape{
		{"#t limit 20 (any hashtag)", "t", smp.hashtags, 20, nil},
		{"#t limit 20 (top-3 hashtags)", "t", popular, 20, nil},
		{"#e thread limit 100", "e", smp.roots, 100, []int{1, 7}},
		{"#p mentions limit 50", "p", smp.mentioned, 50, nil},
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tdesign\tp50\tp90\tp99\tmax\t")
	for _, sh := range tshapes {
		if len(sh.vals) == 0 {
			continue
		}
		for _, design := range []string{"jsonb @> + GIN", "event_tags btree"} {
			r := rand.New(rand.NewPCG(3, 4))
			lat := make([]time.Duration, 0, *n)
			for i := range *n + *n/10 {
				v := sh.vals[r.IntN(len(sh.vals))]
				t0 := time.Now()
				if design[0] == 'j' {
					var kinds any
					if sh.kinds != nil {
						k32 := make([]int32, len(sh.kinds))
						for j, k := range sh.kinds {
							k32[j] = int32(k)
						}
						kinds = k32
					}
					js, _ := json.Marshal([][]string{{sh.tag, v}})
					rows, err := conn.Query(ctx, jsonbSQL, c.UUID(), now, string(js), sh.limit, kinds)
					if err != nil {
						return err
					}
					for rows.Next() {
					}
					rows.Close()
					if err := rows.Err(); err != nil {
						return err
					}
				} else {
					f := nostr.Filter{Kinds: sh.kinds, Tags: map[string][]string{sh.tag: {v}}, Limit: sh.limit, LimitSet: true}
					for _, err := range st.Query(ctx, c, f) {
						if err != nil {
							return err
						}
					}
				}
				if i >= *n/10 {
					lat = append(lat, time.Since(t0))
				}
			}
			slices.Sort(lat)
			q := func(p float64) string { return fmtDur(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", sh.name, design, q(0.5), q(0.9), q(0.99), fmtDur(lat[len(lat)-1]))
		}
	}
	return tw.Flush()
}
