package sqlite

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestCountAndIndexFirstPlans checks, on a fresh database nobody analysed,
// the plans of the COUNT statements (countSQL) and the index-first REQs
// (indexFirstQuery): every table access is a search through the index the
// shape names, never a scan of the community, and the branch taken when
// nothing can be hidden reads the index alone where the shape allows.
func TestCountAndIndexFirstPlans(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := storetest.Community(t, s, "plans.example")
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	a, b := storetest.NewAuthor(t), storetest.NewAuthor(t)
	root := a.Event(t, 1, 1_700_000_000, "root")
	now := time.Now().Unix()
	scope := channel.ScopeOf()
	type shape struct {
		name    string
		filters []nostr.Filter
		count   bool
		want    []string // substrings the plan must show
	}
	shapes := []shape{
		{"COUNT author", []nostr.Filter{{Authors: []string{a.PubKey}}}, true,
			[]string{"COVERING INDEX events_author (community=? AND pubkey=?)"}},
		{"COUNT #e", []nostr.Filter{{Tags: map[string][]string{"e": {root.ID}}}}, true,
			[]string{"SEARCH t USING PRIMARY KEY (community=? AND name=? AND value=?)"}},
		{"COUNT kind+#t", []nostr.Filter{{Kinds: []int{1}, Tags: map[string][]string{"t": {"go"}}}}, true,
			[]string{"COVERING INDEX events_kind", "SEARCH t USING PRIMARY KEY (community=? AND name=? AND value=?)", "INTEGER PRIMARY KEY (rowid=?)"}},
		{"COUNT two filters", []nostr.Filter{{Authors: []string{a.PubKey}}, {Kinds: []int{7}}}, true,
			[]string{"events_author (community=? AND pubkey=?)", "events_kind (community=? AND kind=?)"}},
		{"REQ author", []nostr.Filter{{Authors: []string{a.PubKey}, Limit: 20, LimitSet: true}}, false,
			[]string{"events_author (community=? AND pubkey=? AND kind>?)", // the author's kinds, a seek each
				"SEARCH x USING INDEX events_author (community=? AND pubkey=? AND kind=? AND created_at>?)",
				"SEARCH y USING INDEX events_author (community=? AND pubkey=? AND kind=?)",
				"INTEGER PRIMARY KEY (rowid=?)"}},
		{"REQ home", []nostr.Filter{{Authors: []string{a.PubKey, b.PubKey}, Kinds: []int{1, 6}, Limit: 50, LimitSet: true}}, false,
			[]string{"events_author (community=? AND pubkey=? AND kind=?)"}},
		{"REQ kind", []nostr.Filter{{Kinds: []int{1}, Limit: 50, LimitSet: true}}, false,
			[]string{"events_kind (community=? AND kind=?)"}},
		{"REQ window", []nostr.Filter{{Since: ptr(int64(1_700_000_000)), Until: ptr(int64(1_700_003_600)), Limit: 100, LimitSet: true}}, false,
			[]string{"events_time (community=? AND created_at>? AND created_at<?)"}},
	}
	for _, sh := range shapes {
		var q *sqlBuilder
		if sh.count {
			var ok, residual bool
			q, ok, residual = countSQL(cseq, sh.filters, now, scope)
			if !ok || residual {
				t.Fatalf("%s: countSQL ok=%v residual=%v", sh.name, ok, residual)
			}
		} else {
			var ok, residual bool
			q, _, ok, residual = indexFirstQuery(cseq, &sh.filters[0], now, scope)
			if q == nil || !ok || residual {
				t.Fatalf("%s: indexFirstQuery = %v, ok=%v residual=%v", sh.name, q, ok, residual)
			}
		}
		rows, err := s.rdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q.sb.String(), q.args...)
		if err != nil {
			t.Fatalf("%s: %v", sh.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		for _, line := range plan {
			if strings.HasPrefix(line, "SCAN e") || strings.HasPrefix(line, "SCAN t") || strings.HasPrefix(line, "SCAN events") ||
				strings.Contains(line, "(community=?)") {
				t.Errorf("%s: walks the community: %q\n%s", sh.name, line, text)
			}
		}
		for _, w := range sh.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: plan lacks %q:\n%s", sh.name, w, text)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestAuthorKindsQuery checks authorKindsQuery against a brute-force
// evaluation: author filters without kinds, with time bounds and limits,
// over a corpus of several kinds per author with tied timestamps and
// expired events (so the hidden branch runs), both when the query takes
// authorKindsQuery's path and, for comparison, through the plain query.
func TestAuthorKindsQuery(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	c := storetest.Community(t, s, "authors.example")
	authors := storetest.NewAuthors(t, 4)
	corpus := storetest.RandomCorpus(t, r, authors, 400)
	storetest.SaveAll(t, s, c, corpus)
	now := time.Now()
	var live []*nostr.Event
	for _, ev := range corpus {
		if storetest.Live(ev, now) {
			live = append(live, ev)
		}
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	base := corpus[0].CreatedAt
	for _, ev := range corpus {
		base = min(base, ev.CreatedAt)
	}
	taken := 0
	for i := 0; i < 200; i++ {
		var f nostr.Filter
		for j := 1 + r.IntN(3); j > 0; j-- {
			f.Authors = append(f.Authors, authors[r.IntN(len(authors))].PubKey)
		}
		if r.IntN(5) == 0 {
			f.Authors = append(f.Authors, "not-a-key")
		}
		switch r.IntN(8) {
		case 0:
			f.Tags = map[string][]string{"t": {}} // matches nothing
		case 1:
			f.Tags = map[string][]string{"t": nil} // no condition
		case 2:
			f.Tags = map[string][]string{"tt": {"x"}} // not indexed: checked row by row
		case 3:
			f.IDs = []string{} // matches nothing
		}
		if r.IntN(3) == 0 {
			f.Since = storetest.Ptr(base + int64(r.IntN(42)) - 1)
		}
		if r.IntN(3) == 0 {
			f.Until = storetest.Ptr(base + int64(r.IntN(42)) - 1)
		}
		f.LimitSet, f.Limit = true, 1+r.IntN(40)
		if _, _, _, handled := authorKindsQuery(cseq, &f, now.Unix(), channel.AllChannels()); handled {
			taken++
		}
		got := storetest.QueryIDs(t, s, c, f)
		want := storetest.Expected(live, f)
		if !slices.Equal(got, want) {
			t.Fatalf("filter %d %s:\n got %v\nwant %v", i, f.AppendJSON(nil), got, want)
		}
	}
	if taken == 0 {
		t.Fatal("no filter took authorKindsQuery's path")
	}
}
