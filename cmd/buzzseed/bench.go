package main

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/tenant"
)

// tagText turns an event_tags.value back into the tag value (see the
// event_tags comment in the schema; hashed long values are not sampled).
const tagText = `CASE WHEN get_byte(value, 0) = 254 THEN encode(substr(value, 2), 'hex') ELSE convert_from(value, 'UTF8') END`

// samples are real values drawn from the loaded data.
type samples struct {
	ids, authors, hashtags, roots, mentioned []string
	channels                                 []channel.ID
	minTS, maxTS                             int64
}

func loadSamples(ctx context.Context, db string, c tenant.CommunityID) (*samples, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	s := &samples{}
	hexes := func(sql string, args ...any) ([]string, error) {
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		bs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		out := make([]string, len(bs))
		for i, b := range bs {
			out[i] = hex.EncodeToString(b)
		}
		return out, err
	}
	texts := func(sql string, args ...any) ([]string, error) {
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[string])
	}
	cid := c.UUID()
	if s.ids, err = hexes(`SELECT id FROM events TABLESAMPLE SYSTEM (1) WHERE community_id = $1 LIMIT 2000`, cid); err != nil {
		return nil, err
	}
	if s.authors, err = hexes(`SELECT pubkey FROM events WHERE community_id = $1 AND kind = 0`, cid); err != nil {
		return nil, err
	}
	if s.hashtags, err = texts(`SELECT DISTINCT `+tagText+` FROM event_tags WHERE community_id = $1 AND name = 't'`, cid); err != nil {
		return nil, err
	}
	if s.roots, err = texts(`SELECT `+tagText+` FROM event_tags TABLESAMPLE SYSTEM (2) WHERE community_id = $1 AND name = 'e' LIMIT 2000`, cid); err != nil {
		return nil, err
	}
	if s.mentioned, err = texts(`SELECT `+tagText+` FROM event_tags TABLESAMPLE SYSTEM (2) WHERE community_id = $1 AND name = 'p' LIMIT 2000`, cid); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT DISTINCT channel_id FROM events WHERE community_id = $1 AND channel_id IS NOT NULL`, cid)
	if err != nil {
		return nil, err
	}
	chs, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
	if err != nil {
		return nil, err
	}
	for _, ch := range chs {
		s.channels = append(s.channels, channel.ID(ch))
	}
	if err := conn.QueryRow(ctx, `SELECT min(created_at), max(created_at) FROM events WHERE community_id = $1 AND created_at > 1767225600`, cid).Scan(&s.minTS, &s.maxTS); err != nil {
		return nil, err
	}
	if len(s.ids) == 0 || len(s.authors) < 10 || len(s.hashtags) == 0 || len(s.roots) == 0 || len(s.mentioned) == 0 {
		return nil, fmt.Errorf("community has too little data to sample (load it first)")
	}
	return s, nil
}

type shape struct {
	name  string
	query func(r *rand.Rand) nostr.Filter
	count bool
	// scope, if set, runs the filter through QueryScoped with the scope it
	// returns (called after query, with the same random source).
	scope func(r *rand.Rand) channel.Scope
}

func shapes(s *samples) []shape {
	pick := func(r *rand.Rand, l []string) string { return l[r.IntN(len(l))] }
	lim := func(f nostr.Filter, n int) nostr.Filter { f.Limit, f.LimitSet = n, true; return f }
	out := []shape{
		{name: "id lookup", query: func(r *rand.Rand) nostr.Filter { return nostr.Filter{IDs: []string{pick(r, s.ids)}} }},
		{name: "author+kind limit 20", query: func(r *rand.Rand) nostr.Filter {
			return lim(nostr.Filter{Authors: []string{pick(r, s.authors)}, Kinds: []int{1}}, 20)
		}},
		{name: "10 authors+kinds limit 50", query: func(r *rand.Rand) nostr.Filter {
			a := make([]string, 10)
			for i := range a {
				a[i] = pick(r, s.authors)
			}
			return lim(nostr.Filter{Authors: a, Kinds: []int{1, 7}}, 50)
		}},
		{name: "kind limit 50", query: func(r *rand.Rand) nostr.Filter {
			return lim(nostr.Filter{Kinds: []int{[]int{1, 7, 30023}[r.IntN(3)]}}, 50)
		}},
		{name: "#t limit 20", query: func(r *rand.Rand) nostr.Filter {
			return lim(nostr.Filter{Tags: map[string][]string{"t": {pick(r, s.hashtags)}}}, 20)
		}},
		{name: "#e thread limit 100", query: func(r *rand.Rand) nostr.Filter {
			return lim(nostr.Filter{Kinds: []int{1, 7}, Tags: map[string][]string{"e": {pick(r, s.roots)}}}, 100)
		}},
		{name: "#p mentions limit 50", query: func(r *rand.Rand) nostr.Filter {
			return lim(nostr.Filter{Tags: map[string][]string{"p": {pick(r, s.mentioned)}}}, 50)
		}},
		{name: "since/until 1h limit 100", query: func(r *rand.Rand) nostr.Filter {
			since := s.minTS + r.Int64N(max(1, s.maxTS-s.minTS-3600))
			until := since + 3600
			return lim(nostr.Filter{Since: &since, Until: &until}, 100)
		}},
		{name: "COUNT by author", count: true, query: func(r *rand.Rand) nostr.Filter {
			return nostr.Filter{Authors: []string{pick(r, s.authors)}}
		}},
	}
	if len(s.channels) == 0 {
		return out
	}
	var ch channel.ID
	return append(out,
		shape{name: "channel timeline #h limit 50", query: func(r *rand.Rand) nostr.Filter {
			ch = s.channels[r.IntN(len(s.channels))]
			return lim(nostr.Filter{Kinds: []int{9}, Tags: map[string][]string{"h": {ch.String()}}}, 50)
		}, scope: func(*rand.Rand) channel.Scope { return channel.ScopeOf(ch) }},
		shape{name: "channel scope only limit 50", query: func(r *rand.Rand) nostr.Filter {
			ch = s.channels[r.IntN(len(s.channels))]
			return lim(nostr.Filter{Kinds: []int{9}}, 50)
		}, scope: func(*rand.Rand) channel.Scope { return channel.ScopeOf(ch) }},
	)
}

func runQueryBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("query-bench", flag.ExitOnError)
	db, host := dbFlags(fs)
	n := fs.Int("n", 2000, "measured queries per shape")
	rls := fs.Bool("rls", true, "run as the RLS role (false: as the URL's user, bypassing RLS if it is a superuser)")
	seed := fs.Uint64("seed", 7, "random seed for parameter choice")
	_ = fs.Parse(args)
	opts := []postgres.Option{postgres.WithMaxConns(4), postgres.WithCommitters(1)}
	if !*rls {
		opts = append(opts, postgres.WithRLSRole(""))
	}
	st, err := postgres.Open(ctx, *db, opts...)
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := st.LookupHost(ctx, *host)
	if err != nil {
		return fmt.Errorf("community %q: %w", *host, err)
	}
	smp, err := loadSamples(ctx, *db, c)
	if err != nil {
		return err
	}
	total, err := st.Count(ctx, c, []nostr.Filter{{}})
	if err != nil {
		return err
	}
	fmt.Printf("community %s: %d live events; %d queries per shape, sequential, RLS=%v\n\n", *host, total, *n, *rls)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tp50\tp90\tp99\tmax\tavg rows\t")
	for _, sh := range shapes(smp) {
		r := rand.New(rand.NewPCG(*seed, 1))
		lat := make([]time.Duration, 0, *n)
		rows := 0
		for i := range *n + *n/10 {
			f := sh.query(r)
			t0 := time.Now()
			got := 0
			if sh.count {
				k, err := st.Count(ctx, c, []nostr.Filter{f})
				if err != nil {
					return err
				}
				got = int(k)
			} else {
				sc := channel.AllChannels()
				if sh.scope != nil {
					sc = sh.scope(r)
				}
				for _, err := range st.QueryScoped(ctx, c, f, sc) {
					if err != nil {
						return err
					}
					got++
				}
			}
			d := time.Since(t0)
			if i >= *n/10 { // the first tenth warms caches and statement plans
				lat = append(lat, d)
				rows += got
			}
		}
		slices.Sort(lat)
		q := func(p float64) string { return fmtDur(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\t\n", sh.name, q(0.50), q(0.90), q(0.99), fmtDur(lat[len(lat)-1]), float64(rows)/float64(len(lat)))
	}
	return tw.Flush()
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
