package embedded_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestRestoreBatch: a batch of events is restored at once.
func TestRestoreBatch(t *testing.T) {
	storetest.RunRestoreBatch(t, func(t *testing.T) storetest.RestoreBatchBackend { return openTemp(t) })
}

// TestWithoutEvents: a tool opens a store whose events engine a relay
// holds open; the registry works, every event operation fails.
func TestWithoutEvents(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	relay, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	c := storetest.Community(t, relay, "a.example")
	if _, err := embedded.Open(ctx, dir); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("a second open of the events engine = %v, want the engine's lock refused", err)
	}
	tool, err := embedded.Open(ctx, dir, embedded.WithoutEvents())
	if err != nil {
		t.Fatalf("WithoutEvents beside a relay: %v", err)
	}
	defer tool.Close()
	if got, err := tool.LookupHost(ctx, "a.example"); err != nil || got != c {
		t.Fatalf("LookupHost = %v, %v", got, err)
	}
	storetest.Community(t, tool, "b.example")
	if err := tool.Save(ctx, c, storetest.NewAuthor(t).Event(t, 1, 1_700_000_000, "x")); err == nil || !strings.HasPrefix(err.Error(), "sqlite: ") {
		t.Fatalf("Save without events = %v", err)
	}
	for _, err := range tool.Query(ctx, c, nostr.Filter{}) {
		if err == nil {
			t.Fatal("Query without events returned an event")
		}
	}
	if _, err := tool.Count(ctx, c, []nostr.Filter{{}}); err == nil {
		t.Fatal("Count without events succeeded")
	}
}

// TestTextIndex: the text of the engine's events is indexed by seq,
// removed with them, and found after a restart that came before the
// indexer ran.
func TestTextIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, "text.example")
	alice := storetest.NewAuthor(t)
	keep := alice.Event(t, 1, 1_700_000_000, "honey bee")
	gone := alice.Event(t, 1, 1_700_000_001, "bumble bee")
	storetest.SaveAll(t, s, c, []*nostr.Event{keep, gone})
	if err := s.Close(); err != nil { // likely before the indexer's first run
		t.Fatal(err)
	}
	s, err = embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	search := func(q string) []string { return storetest.QueryIDs(t, s, c, nostr.Filter{Search: q}) }
	if got := search("bee"); len(got) != 2 {
		t.Fatalf("after restart, search bee = %v", got)
	}
	rows, err := s.TextRows(ctx)
	if err != nil || len(rows) != 2 {
		t.Fatalf("indexed rows %v, %v; want 2", rows, err)
	}
	storetest.MustSave(t, s, c, alice.Deletion(t, 1_700_000_002, []string{gone.ID}, nil))
	if got := search("bumble"); len(got) != 0 {
		t.Fatalf("search bumble after deletion = %v", got)
	}
	after, err := s.TextRows(ctx)
	if err != nil || len(after) != 1 || !slices.Contains(rows, after[0]) {
		t.Fatalf("indexed rows after deletion %v, %v; want one of %v", after, err, rows)
	}
	if got := search("honey"); len(got) != 1 || got[0] != keep.ID {
		t.Fatalf("search honey after deleting the other = %v", got)
	}
	// Read your writes: a search right after a save finds it.
	fresh := alice.Event(t, 1, 1_700_000_003, "wasp")
	storetest.MustSave(t, s, c, fresh)
	if got := search("wasp"); len(got) != 1 || got[0] != fresh.ID {
		t.Fatalf("search right after saving = %v", got)
	}
}
