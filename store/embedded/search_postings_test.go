package embedded_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// TestSearchReadsOnlyItsCommunityPostings: a search of community A reads
// the same postings of the text index whether or not community B writes
// the word, 10,000 times or not at all (what it reads, not how long it
// takes: the number of postings the index holds under the terms A's search
// asks for, and the rows they match).
func TestSearchReadsOnlyItsCommunityPostings(t *testing.T) {
	testSearchPostings(t, openTemp(t))
}

func testSearchPostings(t *testing.T, s *embedded.Store) {
	ctx := context.Background()
	ca := storetest.Community(t, s, "a.example")
	cb := storetest.Community(t, s, "b.example")
	alice, bob := storetest.NewAuthor(t), storetest.NewAuthor(t)
	const base = 1_700_000_000
	for i, content := range []string{"hello world", "hello again", "plans for the week", "Café naïve 日本"} {
		storetest.MustSave(t, s, ca, alice.Event(t, 1, base+int64(i), content))
	}
	type reading struct{ postings, matches int }
	read := func(c tenant.CommunityID, q string) reading {
		t.Helper()
		p, m, err := s.SearchPostings(ctx, c, q)
		if err != nil {
			t.Fatalf("SearchPostings %q: %v", q, err)
		}
		return reading{p, m}
	}
	queries := []string{"secretword", "hello", `"hello world"`, "hello secretword", "café"}
	before := map[string]reading{}
	for _, q := range queries {
		before[q] = read(ca, q)
	}
	if got := before["secretword"]; got != (reading{}) {
		t.Fatalf("A's search for a word nobody wrote reads %+v", got)
	}
	if got := before["hello"]; got != (reading{2, 2}) {
		t.Fatalf("A's search for hello reads %+v, want its own 2 postings", got)
	}

	// B writes the word 10,000 times (and A's words too).
	const n = 10_000
	evs := make(chan *nostr.Event, 64)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ev := range evs {
				storetest.MustSave(t, s, cb, ev)
			}
		})
	}
	for i := range n {
		evs <- bob.Event(t, 1, base+int64(i), fmt.Sprintf("secretword hello world café %d", i))
	}
	close(evs)
	wg.Wait()

	for _, q := range queries {
		if got := read(ca, q); got != before[q] {
			t.Errorf("A's search %q reads %+v after B wrote it %d times, %+v before", q, got, n, before[q])
		}
	}
	// The measure sees postings: B's own search reads B's.
	if got := read(cb, "secretword"); got != (reading{n, n}) {
		t.Fatalf("B's search reads %+v, want %d postings", got, n)
	}
	// And the answers are unchanged.
	got := storetest.QueryIDs(t, s, ca, nostr.Filter{Search: "secretword"})
	if len(got) != 0 {
		t.Fatalf("A found %d events of B", len(got))
	}
	if got := storetest.QueryIDs(t, s, ca, nostr.Filter{Search: "hello"}); len(got) != 2 {
		t.Fatalf("A's search for hello found %d events, want 2", len(got))
	}
}

// TestSearchIndexMigration: a data directory whose text index holds the
// shared words of the schema before version 180 (one index of every
// community's words, FTS5's unicode61 tokenizer) is rebuilt when opened:
// searches find what they found, and read only their community's postings.
func TestSearchIndexMigration(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *embedded.Store {
		s, err := embedded.Open(ctx, dir)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}
	s := open()
	ca := storetest.Community(t, s, "a.example")
	cb := storetest.Community(t, s, "b.example")
	alice := storetest.NewAuthor(t)
	contents := []string{"secret plans", "Café au lait", "secret other"}
	var evs []*nostr.Event
	for i, content := range contents {
		c := ca
		if i == 2 {
			c = cb
		}
		ev := alice.Event(t, 1, 1_700_000_000+int64(i), content)
		storetest.MustSave(t, s, c, ev)
		evs = append(evs, ev)
	}
	rowids, err := s.TextRows(ctx)
	if err != nil || len(rowids) != len(contents) {
		t.Fatalf("TextRows = %v, %v", rowids, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The index as it was before version 180: the contents'
	// words, shared, under the same rowids.
	db, err := sql.Open("sqlite", filepath.Join(dir, embedded.DefaultFileName))
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		`DROP TABLE events_fts`,
		`CREATE VIRTUAL TABLE events_fts USING fts5(content, content = '', contentless_delete = 1,
			tokenize = "unicode61 remove_diacritics 0 categories 'L* N*'")`,
		`DELETE FROM schema_migrations WHERE version = 180`,
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i, id := range rowids {
		if _, err := db.ExecContext(ctx, `INSERT INTO events_fts (rowid, content) VALUES (?, ?)`, id, contents[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s = open()
	t.Cleanup(func() { _ = s.Close() })
	want := map[string]struct {
		c   tenant.CommunityID
		ids []string
	}{
		"secret": {ca, []string{evs[0].ID}}, "café": {ca, []string{evs[1].ID}}, "CAFÉ lait": {ca, []string{evs[1].ID}},
		"other": {ca, nil}, "secret other": {cb, []string{evs[2].ID}},
	}
	for q, w := range want {
		got := storetest.QueryIDs(t, s, w.c, nostr.Filter{Search: q})
		if fmt.Sprint(got) != fmt.Sprint(w.ids) && !(len(got) == 0 && len(w.ids) == 0) {
			t.Errorf("search %q after the migration: %v, want %v", q, got, w.ids)
		}
	}
	if p, m, err := s.SearchPostings(ctx, ca, "other"); err != nil || p != 0 || m != 0 {
		t.Fatalf("A's search for B's word reads %d postings, %d rows (%v)", p, m, err)
	}
	if p, _, err := s.SearchPostings(ctx, cb, "secret"); err != nil || p != 1 {
		t.Fatalf("B's search for secret reads %d postings (%v), want its own 1", p, err)
	}
}
