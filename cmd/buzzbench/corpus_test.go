package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
)

func TestCorpusDeterministic(t *testing.T) {
	a, err := buildCorpus(7, 600)
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildCorpus(7, 600)
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint != b.Fingerprint || len(a.Fingerprint) != 64 {
		t.Fatalf("same seed, different fingerprints: %s vs %s", a.Fingerprint, b.Fingerprint)
	}
	c, err := buildCorpus(8, 600)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fingerprint == a.Fingerprint {
		t.Fatal("different seeds gave the same fingerprint")
	}
	if len(a.Events) != 600 {
		t.Fatalf("main corpus has %d events, want 600", len(a.Events))
	}
}

func TestCorpusShape(t *testing.T) {
	c, err := buildCorpus(3, 2000)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[int]int{}
	ids := map[string]bool{}
	coords := map[string]bool{}
	tagged := map[string]int{}
	var prev int64
	for i, ce := range c.Events {
		e := &ce.Ev
		kinds[e.Kind]++
		if ids[e.ID] {
			t.Fatalf("duplicate id %s", e.ID)
		}
		ids[e.ID] = true
		if e.ComputeID() != e.ID {
			t.Fatalf("event %d: id does not hash", i)
		}
		if e.CreatedAt < prev {
			t.Fatalf("event %d: publish order is not created_at ascending", i)
		}
		prev = e.CreatedAt
		if nostr.IsReplaceable(e.Kind) || nostr.IsAddressable(e.Kind) {
			k := e.Coordinate()
			if coords[k] {
				t.Fatalf("coordinate %s is not unique: the relay would replace an event", k)
			}
			coords[k] = true
		}
		for _, tg := range e.Tags {
			tagged[tg[0]]++
		}
	}
	for _, k := range []int{0, 1, 3, 6, 7, 30023} {
		if kinds[k] == 0 {
			t.Errorf("no events of kind %d", k)
		}
	}
	for _, name := range []string{"e", "p", "t", "d"} {
		if tagged[name] == 0 {
			t.Errorf("no %q tags", name)
		}
	}
	var maxMain int64
	for _, ce := range c.Events {
		maxMain = max(maxMain, ce.Ev.CreatedAt)
	}
	for _, x := range c.Extras {
		if x.Ev.CreatedAt <= maxMain || x.Ev.Kind != 1 {
			t.Fatal("extras must be kind 1 and newer than every main event")
		}
		if slices.ContainsFunc(c.Authors, func(a author) bool { return a.Pub == x.Ev.PubKey }) {
			t.Fatal("extras must not be authored by main authors (the oracle would miss them)")
		}
	}
	if len(c.Roots) == 0 {
		t.Fatal("no thread roots")
	}
}

func TestCorpusSignAndCache(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	c1, cached, err := loadCorpus(ctx, dir, 11, 100)
	if err != nil {
		t.Fatal(err)
	}
	if cached {
		t.Fatal("first load claims to come from the cache")
	}
	v, err := nostr.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, part := range [][]corpusEvent{c1.Events, c1.Extras} {
		for _, ce := range part {
			ev, err := nostr.ParseEvent(ce.Raw)
			if err != nil {
				t.Fatalf("raw event does not parse: %v", err)
			}
			if err := v.Verify(ev); err != nil {
				t.Fatalf("signature: %v", err)
			}
		}
	}
	c2, cached, err := loadCorpus(ctx, dir, 11, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !cached {
		t.Fatal("second load signed again instead of using the cache")
	}
	if c2.Fingerprint != c1.Fingerprint {
		t.Fatal("cached corpus has another fingerprint")
	}
	for i := range c1.Events {
		if string(c1.Events[i].Raw) != string(c2.Events[i].Raw) {
			t.Fatalf("event %d differs after the cache round trip", i)
		}
	}
	// A corrupted cache is ignored, and rewritten.
	path := cachePath(dir, 11, 100)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := len(data) / 2
	data[i] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, cached, err := loadCorpus(ctx, dir, 11, 100); err != nil || cached {
		t.Fatalf("corrupted cache: cached=%v err=%v", cached, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".corpus-*")); len(m) != 0 {
		t.Fatalf("temporary files left behind: %v", m)
	}
}

func TestOracleHandMade(t *testing.T) {
	ev := func(id string, pub string, at int64, kind int, tags ...nostr.Tag) corpusEvent {
		return corpusEvent{Ev: nostr.Event{ID: id, PubKey: pub, CreatedAt: at, Kind: kind, Tags: tags}}
	}
	c := &corpus{Events: []corpusEvent{
		ev("01", "alice", 100, 1, nostr.Tag{"t", "go"}),
		ev("02", "alice", 200, 1),
		ev("03", "bob", 200, 1, nostr.Tag{"t", "go"}, nostr.Tag{"e", "01"}),
		ev("04", "bob", 300, 7, nostr.Tag{"e", "01"}),
		ev("05", "carol", 50, 6, nostr.Tag{"t", "rust"}),
	}}
	lim := func(n int) (int, bool) { return n, true }
	cases := []struct {
		name string
		f    []nostr.Filter
		want []string
	}{
		{"ids", []nostr.Filter{{IDs: []string{"02", "05", "99"}}}, []string{"02", "05"}},
		{"author limit: newest first, then lowest id", func() []nostr.Filter {
			f := nostr.Filter{Authors: []string{"alice", "bob"}}
			f.Limit, f.LimitSet = lim(2)
			return []nostr.Filter{f}
		}(), []string{"02", "04"}},
		{"tie at the limit: lowest id wins", func() []nostr.Filter {
			f := nostr.Filter{Kinds: []int{1}}
			f.Limit, f.LimitSet = lim(1)
			return []nostr.Filter{f}
		}(), []string{"02"}},
		{"tag", []nostr.Filter{{Tags: map[string][]string{"t": {"go"}}}}, []string{"01", "03"}},
		{"two tags are AND-ed", []nostr.Filter{{Tags: map[string][]string{"t": {"go"}, "e": {"01"}}}}, []string{"03"}},
		{"since/until inclusive", []nostr.Filter{{Since: ptr[int64](100), Until: ptr[int64](200)}}, []string{"01", "02", "03"}},
		{"filters are OR-ed, once each", []nostr.Filter{{Kinds: []int{6}}, {Authors: []string{"carol"}}}, []string{"05"}},
		{"limit 0", func() []nostr.Filter {
			f := nostr.Filter{}
			f.Limit, f.LimitSet = lim(0)
			return []nostr.Filter{f}
		}(), []string{}},
	}
	for _, tc := range cases {
		got := c.expected(tc.f, 0)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if n := c.countExpected([]nostr.Filter{{Authors: []string{"bob"}}, {Kinds: []int{7}}}); n != 2 {
		t.Errorf("count = %d, want 2", n)
	}
}

// TestOracleAgreesWithNostrMatches cross-checks the oracle's matcher with
// the nostr package's, which was written independently, on every planned
// query over a real corpus.
func TestOracleAgreesWithNostrMatches(t *testing.T) {
	c, err := buildCorpus(5, 1500)
	if err != nil {
		t.Fatal(err)
	}
	plan := c.planQueries(0, 8)
	for _, shape := range reqShapes {
		for _, q := range plan[shape] {
			f := q.Filters[0]
			n := 0
			for i := range c.Events {
				a := matches(&f, &c.Events[i].Ev)
				if b := f.Matches(&c.Events[i].Ev); a != b {
					t.Fatalf("%s: oracle says %v, nostr.Filter.Matches says %v", shape, a, b)
				}
				if a {
					n++
				}
			}
			want := n
			if f.LimitSet && f.Limit < n {
				want = f.Limit
			}
			if q.WantCount != want {
				t.Fatalf("%s: WantCount %d, want %d", shape, q.WantCount, want)
			}
			if shape != "kind" && shape != "ids" && q.WantCount == 0 {
				t.Errorf("%s: a planned query expects nothing; the shape tests little", shape)
			}
		}
	}
	perShape := map[string]int{}
	for _, pc := range c.planCounts(0, 5) {
		perShape[pc.Shape]++
		if pc.Want == 0 && pc.Shape != "kind1_tag_t" {
			t.Errorf("COUNT %s expects 0", pc.Shape)
		}
	}
	for _, shape := range countShapes {
		if perShape[shape.name] != 5 {
			t.Errorf("%d planned COUNTs of shape %s, want 5", perShape[shape.name], shape.name)
		}
	}
	if len(perShape) != len(countShapes) {
		t.Errorf("planned COUNT shapes %v, want the %d of countShapes", perShape, len(countShapes))
	}
}
