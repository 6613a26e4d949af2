package main

import (
	"context"
	"flag"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/tenant"
)

// searchStore is what search-bench needs of a backend.
type searchStore interface {
	LookupHost(ctx context.Context, host string) (tenant.CommunityID, error)
	QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, sc channel.Scope) iter.Seq2[store.Record, error]
	CountScoped(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter, sc channel.Scope) (int64, error)
	Close() error
}

// communityHost is the host of community k of n (-communities): the -host
// itself when n is 1, else c000.<host>, c001.<host>, ….
func communityHost(host string, k, n int) string {
	if n <= 1 {
		return host
	}
	return fmt.Sprintf("c%03d.%s", k, host)
}

// runSearchBench measures NIP-50 searches, the way the relay runs them for
// a reader without channel access (QueryScoped with an empty scope), on a
// corpus written by gen -vocab: words are drawn from the same vocabulary by
// frequency rank, so "common" words match a large part of the community and
// "rare" ones a handful of events.
func runSearchBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("search-bench", flag.ExitOnError)
	db, host := dbFlags(fs)
	backend := fs.String("backend", "postgres", "postgres (-db) or sqlite (-dir)")
	dir := fs.String("dir", "/tmp/buzzseed-sqlite", "embedded store directory (-backend sqlite)")
	vocab := fs.Int("vocab", 50000, "the -vocab the corpus was generated with")
	communities := fs.Int("communities", 1, "the -communities it was loaded into; the first is measured")
	n := fs.Int("n", 500, "measured queries per shape")
	skip := fs.String("skip", "", "comma-separated shape numbers (1-based) not to run")
	seed := fs.Uint64("seed", 7, "random seed for word choice")
	_ = fs.Parse(args)
	var st searchStore
	var err error
	switch *backend {
	case "postgres":
		st, err = postgres.Open(ctx, *db, postgres.WithMaxConns(4), postgres.WithCommitters(1))
	case "sqlite":
		st, err = embedded.Open(ctx, *dir)
	default:
		return fmt.Errorf("unknown -backend %q", *backend)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	h := communityHost(*host, 0, *communities)
	c, err := st.LookupHost(ctx, h)
	if err != nil {
		return fmt.Errorf("community %q: %w", h, err)
	}
	total, err := st.CountScoped(ctx, c, []nostr.Filter{{}}, channel.AllChannels())
	if err != nil {
		return err
	}
	v := vocabulary(*vocab)
	word := func(r *rand.Rand, lo, hi int) string { return v[lo+r.IntN(min(hi, len(v))-lo)] }
	search := func(q string, limit int, kinds ...int) nostr.Filter {
		f := nostr.Filter{Search: q, Kinds: kinds}
		if limit > 0 {
			f.Limit, f.LimitSet = limit, true
		}
		return f
	}
	shapes := []struct {
		name  string
		query func(r *rand.Rand) nostr.Filter
		count bool
	}{
		{"rare word (rank 10k-50k) limit 20", func(r *rand.Rand) nostr.Filter { return search(word(r, 10000, 50000), 20) }, false},
		{"medium word (rank 100-1k) limit 20", func(r *rand.Rand) nostr.Filter { return search(word(r, 100, 1000), 20) }, false},
		{"common word (rank 10-100) limit 20", func(r *rand.Rand) nostr.Filter { return search(word(r, 10, 100), 20) }, false},
		{"top-10 word limit 20", func(r *rand.Rand) nostr.Filter { return search(word(r, 0, 10), 20) }, false},
		{"two words (common + medium) limit 20", func(r *rand.Rand) nostr.Filter {
			return search(word(r, 10, 100)+" "+word(r, 100, 1000), 20)
		}, false},
		{"phrase of two common words limit 20", func(r *rand.Rand) nostr.Filter {
			return search(`"`+word(r, 0, 30)+" "+word(r, 0, 30)+`"`, 20)
		}, false},
		{"medium word + kinds [1] limit 20", func(r *rand.Rand) nostr.Filter { return search(word(r, 100, 1000), 20, 1) }, false},
		{"COUNT medium word", func(r *rand.Rand) nostr.Filter { return search(word(r, 100, 1000), 0) }, true},
	}
	fmt.Printf("%s, community %s: %d live events (%d communities loaded); %d queries per shape, sequential, empty channel scope\n\n",
		*backend, h, total, *communities, *n)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tp50\tp90\tp99\tmax\tavg rows\t")
	for i, sh := range shapes {
		if slices.Contains(strings.Split(*skip, ","), strconv.Itoa(i+1)) {
			continue
		}
		r := rand.New(rand.NewPCG(*seed, 1))
		lat := make([]time.Duration, 0, *n)
		rows := 0
		for i := range *n + *n/10 {
			f := sh.query(r)
			t0 := time.Now()
			got := 0
			if sh.count {
				k, err := st.CountScoped(ctx, c, []nostr.Filter{f}, channel.ScopeOf())
				if err != nil {
					return err
				}
				got = int(k)
			} else {
				for _, err := range st.QueryScoped(ctx, c, f, channel.ScopeOf()) {
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
		if err := tw.Flush(); err != nil { // a row as soon as it is measured
			return err
		}
	}
	return nil
}
