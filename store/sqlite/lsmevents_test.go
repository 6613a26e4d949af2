package sqlite_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/operator/optest"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/sqlite"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

// The store with its events in the LSM engine passes every suite the
// SQLite-only store does.

func openLSM(tb testing.TB) *sqlite.Store {
	tb.Helper()
	s := openTemp(tb, sqlite.WithLSMEvents())
	if !s.LSMEvents() {
		tb.Fatal("WithLSMEvents: the events are not in the LSM engine")
	}
	return s
}

func TestLSMConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Backend { return openLSM(t) })
}

// TestRestoreBatch: with the events in the LSM engine a batch is restored
// at once; with them in SQLite RestoreEvents declines, writing nothing.
func TestRestoreBatch(t *testing.T) {
	storetest.RunRestoreBatch(t, func(t *testing.T) storetest.RestoreBatchBackend { return openLSM(t) })
	s := openTemp(t)
	c := storetest.Community(t, s, "a.example")
	ev := storetest.NewAuthor(t).Event(t, 1, 1_700_000_000, "one by one")
	if _, err := s.RestoreEvents(context.Background(), c, []*nostr.Event{ev}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("RestoreEvents with the events in SQLite = %v, want errors.ErrUnsupported", err)
	}
	if n := storetest.CountOf(t, s, c, nostr.Filter{}); n != 0 {
		t.Fatalf("%d events stored, want none", n)
	}
}

func TestLSMChannels(t *testing.T) {
	storetest.RunChannels(t, func(t *testing.T) storetest.ChannelBackend { return openLSM(t) })
}

func TestLSMModeration(t *testing.T) {
	storetest.RunModeration(t, func(t *testing.T) storetest.ModerationBackend { return openLSM(t) })
}

func TestLSMProfilesNamesListings(t *testing.T) {
	storetest.RunProfiles(t, func(t *testing.T) storetest.ProfileBackend { return openLSM(t) })
	storetest.RunNames(t, func(t *testing.T) storetest.NameBackend { return openLSM(t) })
	storetest.RunListings(t, func(t *testing.T) storetest.ListingBackend { return openLSM(t) })
}

func TestLSMSearch(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) storetest.ChannelBackend { return openLSM(t) })
}

func TestLSMChannelTopic(t *testing.T) {
	storetest.RunChannelTopic(t, func(t *testing.T) storetest.TopicBackend { return openLSM(t) })
}

func TestLSMAudit(t *testing.T) {
	storetest.RunAudit(t, func(t *testing.T) storetest.AuditBackend { return openLSM(t) })
}

func TestLSMWorkflows(t *testing.T) {
	workflowtest.Run(t, func(t *testing.T) workflowtest.Backend { return openLSM(t) })
	workflowtest.RunAudit(t, func(t *testing.T) workflowtest.AuditBackend { return openLSM(t) })
	workflowtest.RunWebhooks(t, func(t *testing.T) workflowtest.WebhookBackend { return openLSM(t) })
	workflowtest.RunApprovals(t, func(t *testing.T) workflowtest.ApprovalBackend { return openLSM(t) })
}

func TestLSMOperatorStore(t *testing.T) {
	optest.Run(t, func(t *testing.T) optest.Backend { return openLSM(t) })
}

// TestLSMEventsAreOneOrTheOther: a store keeps its events in SQLite or in
// the engine for its whole life: asking for the engine on a store with its
// events in SQLite is refused, and a store with its events in the engine
// opens with them there, option or not.
func TestLSMEventsAreOneOrTheOther(t *testing.T) {
	ctx := context.Background()
	alice := storetest.NewAuthor(t)

	sqlDir := t.TempDir()
	s, err := sqlite.Open(ctx, sqlDir)
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustSave(t, s, storetest.Community(t, s, "a.example"), alice.Event(t, 1, 1_700_000_000, "in sqlite"))
	s.Close()
	if s, err := sqlite.Open(ctx, sqlDir, sqlite.WithLSMEvents()); err == nil || !strings.Contains(err.Error(), "BUZZ_DB_EVENTS=sqlite") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("WithLSMEvents on a store with its events in SQLite = %v", err)
	}

	lsmDir := t.TempDir()
	s, err = sqlite.Open(ctx, lsmDir, sqlite.WithLSMEvents())
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, "b.example")
	ev := alice.Event(t, 1, 1_700_000_000, "in the engine")
	storetest.MustSave(t, s, c, ev)
	del := alice.Deletion(t, 1_700_000_001, []string{ev.ID}, nil)
	storetest.MustSave(t, s, c, del)
	s.Close()
	s, err = sqlite.Open(ctx, lsmDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.LSMEvents() {
		t.Fatal("a store with its events in the engine opened with them in SQLite")
	}
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{Kinds: []int{5}}); len(got) != 1 || got[0] != del.ID {
		t.Fatalf("after reopening: deletions %v", got)
	}
	storetest.SaveIs(t, s, c, ev, store.ErrDeleted)
}

// TestWithoutEvents: a tool opens a store whose events engine a relay
// holds open; the registry works, every event operation fails.
func TestWithoutEvents(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	relay, err := sqlite.Open(ctx, dir, sqlite.WithLSMEvents())
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	c := storetest.Community(t, relay, "a.example")
	if _, err := sqlite.Open(ctx, dir); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("a second open of the events engine = %v, want the engine's lock refused", err)
	}
	tool, err := sqlite.Open(ctx, dir, sqlite.WithoutEvents())
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

// TestLSMTextIndex: the text of the engine's events is indexed by seq,
// removed with them, and found after a restart that came before the
// indexer ran.
func TestLSMTextIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, dir, sqlite.WithLSMEvents())
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
	s, err = sqlite.Open(ctx, dir)
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
