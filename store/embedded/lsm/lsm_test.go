package lsm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded/lsm"
	"github.com/buzzrelay/buzz/store/storetest"
)

func openTemp(tb testing.TB, opts ...lsm.Option) *lsm.Store {
	tb.Helper()
	s, err := lsm.Open(context.Background(), tb.TempDir(), opts...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Backend { return openTemp(t) })
}

func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, func(b *testing.B) store.Backend { return openTemp(b) })
}

// TestConformanceWithoutRecordCache runs the suite with every record read
// through pebble.
func TestConformanceWithoutRecordCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Backend { return openTemp(t, lsm.WithRecordCacheBytes(0)) })
}

func TestOptions(t *testing.T) {
	for _, o := range []lsm.Option{lsm.WithCacheBytes(1000), lsm.WithRecordCacheBytes(-1), lsm.WithLogger(nil), lsm.WithMinSyncInterval(-time.Microsecond), lsm.WithMinSyncInterval(2 * time.Second), lsm.WithMemTableBytes(1<<20 - 1), lsm.WithMemTableBytes(1<<30 + 1)} {
		if s, err := lsm.Open(context.Background(), t.TempDir(), o); err == nil || !strings.HasPrefix(err.Error(), "lsm: ") {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open with a bad option = %v, want an lsm: error", err)
		}
	}
}

// TestSmallMemTable: with the smallest memtable, a few megabytes of events
// are written out to table files while saves go on; every event is found
// before and after a reopen with the default size.
func TestSmallMemTable(t *testing.T) {
	dir := t.TempDir()
	s, err := lsm.Open(context.Background(), dir, lsm.WithMemTableBytes(1<<20))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	c := storetest.Community(t, s, "memtable.example")
	alice := storetest.NewAuthor(t)
	body := strings.Repeat("x", 2000)
	const n = 1500 // about 3 MiB of events
	for i := range n {
		storetest.MustSave(t, s, c, alice.Event(t, 1, int64(1_700_000_000+i), fmt.Sprintf("%d %s", i, body)))
	}
	all := nostr.Filter{Kinds: []int{1}}
	if got := storetest.CountOf(t, s, c, all); got != n {
		t.Fatalf("count before reopen = %d, want %d", got, n)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s, err = lsm.Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if got := storetest.CountOf(t, s, c, all); got != n {
		t.Fatalf("count after reopen = %d, want %d", got, n)
	}
}

// TestNoMinSyncInterval: with no interval between syncs the store works
// (timings are not asserted; TestSyncIntervalFollowsWaiters covers the
// interval).
func TestNoMinSyncInterval(t *testing.T) {
	alice := storetest.NewAuthor(t)
	a := alice.Event(t, 1, 1_700_000_000, "first")
	b := alice.Event(t, 1, 1_700_000_001, "second")
	s0 := openTemp(t, lsm.WithMinSyncInterval(0))
	c0 := storetest.Community(t, s0, "interval.example")
	storetest.SaveAll(t, s0, c0, []*nostr.Event{a, b})
	if got := storetest.QueryIDs(t, s0, c0, nostr.Filter{Authors: []string{alice.PubKey}}); len(got) != 2 {
		t.Fatalf("saved 2 without an interval, found %d", len(got))
	}
}

// TestRestart: everything saved before Close is there after reopening:
// events, tombstones, watermarks, the registry, and the sequence numbers
// (a new event after reopening overwrites none).
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := lsm.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, "restart.example")
	alice := storetest.NewAuthor(t)
	var drafts []storetest.Draft
	for i := 0; i < 200; i++ {
		drafts = append(drafts, storetest.Draft{Author: alice, Event: nostr.Event{Kind: 1, CreatedAt: 1_700_000_000 + int64(i), Content: fmt.Sprint(i), Tags: nostr.Tags{{"t", "restart"}}}})
	}
	evs := storetest.SignAll(t, drafts)
	storetest.SaveAll(t, s, c, evs)
	del := alice.Deletion(t, 1_700_001_000, []string{evs[0].ID}, []string{storetest.Coordinate(30023, alice.PubKey, "gone")})
	storetest.MustSave(t, s, c, del)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, c, alice.Event(t, 1, 1, "after close")); !errors.Is(err, lsm.ErrClosed) {
		t.Fatalf("Save after Close = %v, want ErrClosed", err)
	}
	for _, err := range s.Query(ctx, c, nostr.Filter{}) {
		if !errors.Is(err, lsm.ErrClosed) {
			t.Fatalf("Query after Close = %v, want ErrClosed", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}

	s2 := reopen(t, dir)
	c2, err := s2.LookupHost(ctx, "restart.example")
	if err != nil || c2 != c {
		t.Fatalf("LookupHost after restart = %v, %v; want %v", c2, err, c)
	}
	other := storetest.Community(t, s2, "other.example")
	if other == c {
		t.Fatal("a new community after restart reused an old id")
	}
	later := alice.Event(t, 1, 1_700_002_000, "after restart", nostr.Tag{"t", "restart"})
	storetest.MustSave(t, s2, c, later)
	f := nostr.Filter{Tags: map[string][]string{"t": {"restart"}}}
	want := storetest.Expected(append(slices.Clone(evs[1:]), later), f)
	if got := storetest.QueryIDs(t, s2, c, f); !slices.Equal(got, want) {
		t.Fatalf("after restart: %d events, want %d", len(got), len(want))
	}
	storetest.SaveIs(t, s2, c, evs[0], store.ErrDeleted)
	storetest.SaveIs(t, s2, c, alice.Event(t, 30023, 1_700_000_999, "old", nostr.Tag{"d", "gone"}), store.ErrDeleted)
	storetest.SaveIs(t, s2, c, evs[1], store.ErrDuplicate)
}

func reopen(t *testing.T, dir string) *lsm.Store {
	t.Helper()
	s, err := lsm.Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestFormatVersion: a store written with another key layout is refused,
// not misread.
func TestFormatVersion(t *testing.T) {
	dir := t.TempDir()
	s, err := lsm.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte{'V'}, []byte{99}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := lsm.Open(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "key layout") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of a store with layout 99 = %v", err)
	}
}

// TestScope: the scoped reads return the community-wide events plus the
// events of the scope's channels, and count the same.
func TestScope(t *testing.T) {
	s := openTemp(t)
	c := storetest.Community(t, s, "scope.example")
	alice := storetest.NewAuthor(t)
	a, _ := channel.ParseID("alpha")
	b, _ := channel.ParseID("beta")
	wide := alice.Event(t, 1, 1_700_000_000, "everyone")
	inA := alice.Event(t, 1, 1_700_000_001, "a", nostr.Tag{"h", "alpha"})
	inB := alice.Event(t, 1, 1_700_000_002, "b", nostr.Tag{"h", "beta"})
	storetest.SaveAll(t, s, c, []*nostr.Event{wide, inA, inB})
	for _, tc := range []struct {
		name  string
		scope channel.Scope
		want  []*nostr.Event
	}{
		{"community-wide only", channel.Scope{}, []*nostr.Event{wide}},
		{"channel a", channel.ScopeOf(a), []*nostr.Event{inA, wide}},
		{"both", channel.ScopeOf(b, a), []*nostr.Event{inB, inA, wide}},
		{"all", channel.AllChannels(), []*nostr.Event{inB, inA, wide}},
	} {
		for _, f := range []nostr.Filter{{}, {Kinds: []int{1}}, {Authors: []string{alice.PubKey}}, {IDs: []string{wide.ID, inA.ID, inB.ID}}} {
			var got []string
			for r, err := range s.QueryScoped(context.Background(), c, f, tc.scope) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, r.ID)
			}
			var want []string
			for _, ev := range tc.want {
				want = append(want, ev.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, filter %+v: got %v, want %v", tc.name, f, got, want)
			}
			n, err := s.CountScoped(context.Background(), c, []nostr.Filter{f}, tc.scope)
			if err != nil || n != int64(len(want)) {
				t.Errorf("%s, filter %+v: count %d, %v; want %d", tc.name, f, n, err, len(want))
			}
		}
	}
}

// TestTexts: an indexer reading Texts from 0 gets the content of every
// searchable event in seq order and ends at LastSeq, even when the last
// events were removed; WithOnRemove reports each removal.
func TestTexts(t *testing.T) {
	var mu sync.Mutex
	var removed []uint64
	s := openTemp(t, lsm.WithOnRemove(func(seqs []uint64) {
		mu.Lock()
		removed = append(removed, seqs...)
		mu.Unlock()
	}))
	c := storetest.Community(t, s, "text.example")
	alice := storetest.NewAuthor(t)
	storetest.MustSave(t, s, c, alice.Event(t, 1, 1_700_000_000, "first words"))
	storetest.MustSave(t, s, c, alice.Event(t, 1059, 1_700_000_001, "a gift wrap is never searchable"))
	storetest.MustSave(t, s, c, alice.Event(t, 1, 1_700_000_002, ""))
	last := alice.Event(t, 1, 1_700_000_003, "removed soon")
	storetest.MustSave(t, s, c, last)
	storetest.MustSave(t, s, c, alice.Deletion(t, 1_700_000_004, []string{last.ID}, nil))

	var got []string
	var from uint64
	for {
		texts, next, err := s.Texts(context.Background(), from, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range texts {
			got = append(got, x.Content)
		}
		if next == from {
			break
		}
		from = next
	}
	if want := []string{"first words"}; !slices.Equal(got, want) {
		t.Fatalf("texts %q, want %q", got, want)
	}
	if from != s.LastSeq() {
		t.Fatalf("indexer ended at %d, LastSeq %d", from, s.LastSeq())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(removed) != 1 || removed[0] != 4 {
		t.Fatalf("removals reported %v, want [4]", removed)
	}
}

// TestSearchCandidates: candidates are checked against the whole filter
// and the community, ranked, and limited; unknown seqs are skipped.
func TestSearchCandidates(t *testing.T) {
	s := openTemp(t)
	c := storetest.Community(t, s, "search.example")
	other := storetest.Community(t, s, "other.example")
	alice, bob := storetest.NewAuthor(t), storetest.NewAuthor(t)
	once := alice.Event(t, 1, 1_700_000_000, "bee")
	twice := alice.Event(t, 1, 1_700_000_001, "bee bee")
	bobs := bob.Event(t, 1, 1_700_000_002, "bee")
	wrap := alice.Event(t, 1059, 1_700_000_003, "bee")
	elsewhere := alice.Event(t, 1, 1_700_000_004, "bee")
	storetest.SaveAll(t, s, c, []*nostr.Event{once, twice, bobs, wrap})
	storetest.MustSave(t, s, other, elsewhere)
	all := []uint64{1, 2, 3, 4, 5, 99}
	ids := func(f nostr.Filter) []string {
		var out []string
		for r, err := range s.SearchCandidates(context.Background(), c, f, channel.AllChannels(), all) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r.ID)
		}
		return out
	}
	if got, want := ids(nostr.Filter{Search: "bee"}), []string{twice.ID, bobs.ID, once.ID}; !slices.Equal(got, want) {
		t.Fatalf("search = %v, want %v", got, want)
	}
	if got, want := ids(nostr.Filter{Search: "bee", Authors: []string{alice.PubKey}, Limit: 1, LimitSet: true}), []string{twice.ID}; !slices.Equal(got, want) {
		t.Fatalf("alice's, limit 1 = %v, want %v", got, want)
	}
	if got := ids(nostr.Filter{Search: "wasp"}); len(got) != 0 {
		t.Fatalf("no match = %v", got)
	}
}

// TestSearchCandidatesSkipRemoved: a removed event's seq, still in a text
// index (and in the record cache), is not returned.
func TestSearchCandidatesSkipRemoved(t *testing.T) {
	s := openTemp(t)
	c := storetest.Community(t, s, "search.example")
	alice := storetest.NewAuthor(t)
	ev := alice.Event(t, 1, 1_700_000_000, "bee")
	storetest.MustSave(t, s, c, ev)
	for range s.SearchCandidates(context.Background(), c, nostr.Filter{Search: "bee"}, channel.AllChannels(), []uint64{1}) {
	} // cached
	storetest.MustSave(t, s, c, alice.Deletion(t, 1_700_000_001, []string{ev.ID}, nil))
	for r, err := range s.SearchCandidates(context.Background(), c, nostr.Filter{Search: "bee"}, channel.AllChannels(), []uint64{1}) {
		t.Fatalf("a removed event came back: %v, %v", r.ID, err)
	}
}
