package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/sqlite"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// convertFilters are the queries whose answers a conversion must keep.
var convertFilters = []nostr.Filter{
	{},
	{Kinds: []int{1}},
	{Kinds: []int{0, 3}},
	{Kinds: []int{30023}},
	{Kinds: []int{5}},
	{Tags: map[string][]string{"t": {"go"}}},
	{Limit: 7, LimitSet: true},
	{Since: storetest.Ptr(int64(1_700_000_010)), Until: storetest.Ptr(int64(1_700_000_040))},
	{Search: "hello"},
	{Kinds: []int{1059}},
}

// TestConvertToLSM: a store with its events in SQLite, converted to the
// engine, answers every query as before, still refuses what its deletions
// refused, and converting again does nothing; a store open elsewhere is
// not converted.
func TestConvertToLSM(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := storetest.NewAuthor(t), storetest.NewAuthor(t)
	comms := []tenant.CommunityID{storetest.Community(t, s, "a.example"), storetest.Community(t, s, "b.example")}
	var refused []*nostr.Event // saves the converted store must refuse as deleted
	for ci, c := range comms {
		var notes []*nostr.Event
		for i := range 40 {
			tags := []nostr.Tag{}
			if i%3 == 0 {
				tags = append(tags, nostr.Tag{"t", "go"})
			}
			ev := alice.Event(t, 1, 1_700_000_000+int64(i), fmt.Sprintf("hello %d from %d", i, ci), tags...)
			storetest.MustSave(t, s, c, ev)
			notes = append(notes, ev)
		}
		storetest.MustSave(t, s, c, alice.Event(t, 0, 1_700_000_001, `{"name":"alice"}`))
		storetest.MustSave(t, s, c, alice.Event(t, 0, 1_700_000_002, `{"name":"alice 2"}`))
		storetest.MustSave(t, s, c, bob.Event(t, 3, 1_700_000_003, ""))
		old := alice.Event(t, 30023, 1_700_000_004, "draft", nostr.Tag{"d", "post"})
		storetest.MustSave(t, s, c, old)
		storetest.MustSave(t, s, c, alice.Event(t, 30023, 1_700_000_005, "other", nostr.Tag{"d", "other"}))
		storetest.MustSave(t, s, c, alice.Event(t, 1, 1_700_000_006, "expires", nostr.Tag{"expiration", fmt.Sprint(time.Now().Add(time.Hour).Unix())}))
		storetest.MustSave(t, s, c, bob.Event(t, 1059, 1_700_000_007, "wrapped", nostr.Tag{"p", alice.PubKey}))
		// Deletions: alice's own note (removed), bob's note by alice
		// (kept, refused to alice), a coordinate (watermark).
		bobNote := bob.Event(t, 1, 1_700_000_008, "bob's")
		storetest.MustSave(t, s, c, bobNote)
		storetest.MustSave(t, s, c, alice.Deletion(t, 1_700_000_050, []string{notes[5].ID, bobNote.ID},
			[]string{storetest.Coordinate(30023, alice.PubKey, "post")}))
		storetest.MustSave(t, s, c, bob.Deletion(t, 1_700_000_051, []string{"ff" + strings.Repeat("0", 62)}, nil))
		refused = append(refused, notes[5], old)
	}
	want := answers(t, s, comms)
	s.Close()
	for fi, f := range convertFilters {
		if len(want[0][fi]) < 2 {
			t.Fatalf("filter %+v matches nothing before the conversion", f)
		}
	}

	// Open in another process's stead: the conversion refuses, changing
	// nothing.
	other, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.ConvertToLSM(ctx, dir); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("ConvertToLSM of a store open elsewhere = %v, want ErrInUse", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	// A directory left by an interrupted conversion is replaced.
	if err := os.MkdirAll(filepath.Join(dir, sqlite.DefaultFileName+sqlite.EventsDirSuffix+".converting", "junk"), 0o700); err != nil {
		t.Fatal(err)
	}

	info, err := sqlite.ConvertToLSM(ctx, dir)
	if err != nil {
		t.Fatalf("ConvertToLSM: %v", err)
	}
	if info.Already || info.Events != int64(len(want[0][0])-1+len(want[1][0])-1) || info.Tombstones != 6 || info.Watermarks != 2 {
		t.Fatalf("ConvertInfo = %+v", info)
	}
	if info, err := sqlite.ConvertToLSM(ctx, dir); err != nil || !info.Already {
		t.Fatalf("a second ConvertToLSM = %+v, %v", info, err)
	}

	check := func(lsmEvents bool) *sqlite.Store {
		t.Helper()
		c, err := sqlite.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if c.LSMEvents() != lsmEvents {
			t.Fatalf("the converted store's events in the engine: %v, want %v", c.LSMEvents(), lsmEvents)
		}
		got := answers(t, c, comms)
		for ci := range comms {
			for fi, f := range convertFilters {
				if !slices.Equal(got[ci][fi], want[ci][fi]) {
					t.Errorf("community %d, filter %+v: after %v, before %v", ci, f, got[ci][fi], want[ci][fi])
				}
			}
		}
		for i, ev := range refused {
			storetest.SaveIs(t, c, comms[i/2], ev, store.ErrDeleted)
		}
		return c
	}
	if err := check(true).Close(); err != nil {
		t.Fatal(err)
	}
	// And back: SQLite holds the same events, refusing the same ones.
	back, err := sqlite.ConvertToSQLite(ctx, dir)
	if err != nil || back.Already || back.Events != info.Events || back.Tombstones != info.Tombstones || back.Watermarks != info.Watermarks {
		t.Fatalf("ConvertToSQLite = %+v, %v; ConvertToLSM was %+v", back, err, info)
	}
	if again, err := sqlite.ConvertToSQLite(ctx, dir); err != nil || !again.Already {
		t.Fatalf("a second ConvertToSQLite = %+v, %v", again, err)
	}
	if err := check(false).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.ConvertToLSM(ctx, dir); err != nil {
		t.Fatal(err)
	}
	c := check(true)
	defer c.Close()
	// A second store opened WithLSMEvents on it is fine too.
	storetest.MustSave(t, c, comms[0], alice.Event(t, 1, 1_700_000_100, "hello after"))
	if n := storetest.CountOf(t, c, comms[0], nostr.Filter{Search: "hello"}); n != 40 {
		t.Fatalf("search after the conversion: %d", n)
	}
}

// answers runs convertFilters in each community: the ids in order, then
// the count.
func answers(t *testing.T, s store.EventStore, comms []tenant.CommunityID) [][][]string {
	t.Helper()
	out := make([][][]string, len(comms))
	for ci, c := range comms {
		for _, f := range convertFilters {
			ids := storetest.QueryIDs(t, s, c, f)
			if f.Search != "" {
				slices.Sort(ids) // ranks may tie differently
			}
			n := storetest.CountOf(t, s, c, f)
			out[ci] = append(out[ci], append(ids, fmt.Sprint(n)))
		}
	}
	return out
}

// TestConvertInterrupted: a conversion stopped after the engine took the
// events but before SQLite's tables were emptied (the database file as it
// was before, the engine's directory in place) is refused by Open and
// finished by running the conversion again.
func TestConvertInterrupted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, "a.example")
	alice := storetest.NewAuthor(t)
	for i := range 20 {
		storetest.MustSave(t, s, c, alice.Event(t, 1, 1_700_000_000+int64(i), "hello"))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, sqlite.DefaultFileName)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.ConvertToLSM(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, before, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(ctx, dir); err == nil || !strings.Contains(err.Error(), "conversion was interrupted") {
		t.Fatalf("Open of a half-converted store = %v", err)
	}
	if info, err := sqlite.ConvertToLSM(ctx, dir); err != nil || info.Already {
		t.Fatalf("finishing the conversion = %+v, %v", info, err)
	}
	s, err = sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := storetest.CountOf(t, s, c, nostr.Filter{}); n != 20 || !s.LSMEvents() {
		t.Fatalf("after finishing: %d events, in the engine %v", n, s.LSMEvents())
	}
	if n := storetest.CountOf(t, s, c, nostr.Filter{Search: "hello"}); n != 20 {
		t.Fatalf("search after finishing: %d", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Back to SQLite, stopped after SQLite's transaction committed but
	// before the engine's directory was renamed away (put back here).
	events := filepath.Join(dir, sqlite.DefaultFileName+sqlite.EventsDirSuffix)
	saved := filepath.Join(t.TempDir(), "events")
	if err := os.CopyFS(saved, os.DirFS(events)); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.ConvertToSQLite(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(events, os.DirFS(saved)); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(ctx, dir); err == nil || !strings.Contains(err.Error(), "conversion was interrupted") {
		t.Fatalf("Open of a half-converted store = %v", err)
	}
	if info, err := sqlite.ConvertToSQLite(ctx, dir); err != nil || info.Already {
		t.Fatalf("finishing the conversion back = %+v, %v", info, err)
	}
	s, err = sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := storetest.CountOf(t, s, c, nostr.Filter{}); n != 20 || s.LSMEvents() {
		t.Fatalf("after finishing the conversion back: %d events, in the engine %v", n, s.LSMEvents())
	}
}
