package embedded_test

import (
	"context"
	"database/sql"
	"encoding/hex"
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
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
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

// oldLayout is the content of a data directory in the old layout, where
// SQLite's tables held the events: per community host, its live events
// and the NIP-09 state (deleted ids by their requester, coordinate
// watermarks) that refuses deleted ones.
type oldLayout struct {
	events     map[string][]*nostr.Event
	tombstones map[string][][2]string // id, requester pubkey
	watermarks map[string][]oldWatermark
}

type oldWatermark struct {
	kind   int
	pubkey string
	d      string
	upTo   int64
}

// layoutOf reads what a data directory in the old layout would hold for
// the events of s's communities named by hosts: the live events, and the deletion
// state their deletion requests left.
func layoutOf(t *testing.T, s *embedded.Store, hosts []string) oldLayout {
	t.Helper()
	ctx := context.Background()
	l := oldLayout{events: map[string][]*nostr.Event{}, tombstones: map[string][][2]string{}, watermarks: map[string][]oldWatermark{}}
	for _, h := range hosts {
		c, err := s.LookupHost(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		for r, err := range s.Query(ctx, c, nostr.Filter{}) {
			if err != nil {
				t.Fatal(err)
			}
			ev, err := nostr.ParseEvent(r.Raw)
			if err != nil {
				t.Fatal(err)
			}
			l.events[h] = append(l.events[h], ev)
			if ev.Kind != nostr.KindDeletion {
				continue
			}
			ids, coords := store.DeletionTargets(ev)
			for _, id := range ids {
				l.tombstones[h] = append(l.tombstones[h], [2]string{id, ev.PubKey})
			}
			for _, co := range coords {
				l.watermarks[h] = append(l.watermarks[h], oldWatermark{co.Kind, ev.PubKey, co.D, ev.CreatedAt})
			}
		}
	}
	return l
}

// writeOldLayout creates, in dir, a data directory in the old layout
// holding l: the schema of this build (an Open WithoutEvents, which
// neither creates the events engine nor converts), the communities, and
// l's rows written into SQLite's event tables with SQL, as the builds
// that kept events there wrote them.
func writeOldLayout(t *testing.T, dir string, l oldLayout) {
	t.Helper()
	ctx := context.Background()
	s, err := embedded.Open(ctx, dir, embedded.WithoutEvents())
	if err != nil {
		t.Fatal(err)
	}
	for h := range l.events {
		if _, _, err := s.EnsureCommunity(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, embedded.DefaultFileName+embedded.EventsDirSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an Open WithoutEvents created the events engine: %v", err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, embedded.DefaultFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for h, evs := range l.events {
		var cseq int64
		if err := tx.QueryRowContext(ctx, `SELECT seq FROM communities WHERE host = ?`, h).Scan(&cseq); err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			var d, expires, ch any
			if nostr.IsReplaceable(ev.Kind) {
				d = ""
			} else if nostr.IsAddressable(ev.Kind) {
				d = ev.DTag()
			}
			if at, ok := ev.Expiration(); ok {
				expires = at
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO events (community, id, pubkey, created_at, kind, d_tag, expires_at, raw, channel)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, cseq, unhex(ev.ID), unhex(ev.PubKey), ev.CreatedAt, ev.Kind, d, expires, ev.AppendJSON(nil), ch); err != nil {
				t.Fatal(err)
			}
		}
		for _, tb := range l.tombstones[h] {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO deleted_ids (community, id, pubkey) VALUES (?, ?, ?)`, cseq, unhex(tb[0]), unhex(tb[1])); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range l.watermarks[h] {
			if _, err := tx.ExecContext(ctx, `INSERT INTO coord_deletions (community, kind, pubkey, d_tag, deleted_up_to) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (community, kind, pubkey, d_tag) DO UPDATE SET deleted_up_to = max(deleted_up_to, excluded.deleted_up_to)`,
				cseq, w.kind, unhex(w.pubkey), w.d, w.upTo); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenConvertsOldLayout: a data directory in the old layout (events
// in SQLite's tables, no events directory) is converted by Open: the
// converted store answers every query as a store that always had its
// events in the engine, refuses what the deletions refused, and finds
// what a search found. An Open while another connection holds the
// database changes nothing; a directory left by an interrupted conversion
// is replaced; a conversion interrupted after the engine took the events
// is finished by the next Open.
func TestOpenConvertsOldLayout(t *testing.T) {
	ctx := context.Background()
	hosts := []string{"a.example", "b.example"}
	ref := openTemp(t) // the same saves, in a store that always had the engine
	alice, bob := storetest.NewAuthor(t), storetest.NewAuthor(t)
	var refused [][]*nostr.Event // per community: saves the converted store must refuse as deleted
	for ci, h := range hosts {
		c := storetest.Community(t, ref, h)
		var notes []*nostr.Event
		for i := range 40 {
			tags := []nostr.Tag{}
			if i%3 == 0 {
				tags = append(tags, nostr.Tag{"t", "go"})
			}
			ev := alice.Event(t, 1, 1_700_000_000+int64(i), fmt.Sprintf("hello %d from %d", i, ci), tags...)
			storetest.MustSave(t, ref, c, ev)
			notes = append(notes, ev)
		}
		storetest.MustSave(t, ref, c, alice.Event(t, 0, 1_700_000_001, `{"name":"alice"}`))
		storetest.MustSave(t, ref, c, alice.Event(t, 0, 1_700_000_002, `{"name":"alice 2"}`))
		storetest.MustSave(t, ref, c, bob.Event(t, 3, 1_700_000_003, ""))
		old := alice.Event(t, 30023, 1_700_000_004, "draft", nostr.Tag{"d", "post"})
		storetest.MustSave(t, ref, c, old)
		storetest.MustSave(t, ref, c, alice.Event(t, 30023, 1_700_000_005, "other", nostr.Tag{"d", "other"}))
		storetest.MustSave(t, ref, c, alice.Event(t, 1, 1_700_000_006, "expires", nostr.Tag{"expiration", fmt.Sprint(time.Now().Add(time.Hour).Unix())}))
		storetest.MustSave(t, ref, c, bob.Event(t, 1059, 1_700_000_007, "wrapped", nostr.Tag{"p", alice.PubKey}))
		// Deletions: alice's own note (removed), bob's note by alice
		// (kept, refused to alice), a coordinate (watermark).
		bobNote := bob.Event(t, 1, 1_700_000_008, "bob's")
		storetest.MustSave(t, ref, c, bobNote)
		storetest.MustSave(t, ref, c, alice.Deletion(t, 1_700_000_050, []string{notes[5].ID, bobNote.ID},
			[]string{storetest.Coordinate(30023, alice.PubKey, "post")}))
		storetest.MustSave(t, ref, c, bob.Deletion(t, 1_700_000_051, []string{"ff" + strings.Repeat("0", 62)}, nil))
		refused = append(refused, []*nostr.Event{notes[5], old})
	}
	want := answers(t, ref, hosts)
	for fi, f := range convertFilters {
		if len(want[0][fi]) < 2 {
			t.Fatalf("filter %+v matches nothing in the reference store", f)
		}
	}
	layout := layoutOf(t, ref, hosts)

	dir := t.TempDir()
	writeOldLayout(t, dir, layout)
	db := filepath.Join(dir, embedded.DefaultFileName)
	engine := db + embedded.EventsDirSuffix
	oldFile, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}

	// A tool holds the database: the conversion refuses, changing nothing.
	tool, err := embedded.Open(ctx, dir, embedded.WithoutEvents())
	if err != nil {
		t.Fatal(err)
	}
	if s, err := embedded.Open(ctx, dir); !errors.Is(err, store.ErrInUse) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of an old-layout directory another connection holds = %v, want ErrInUse", err)
	}
	if err := tool.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(engine); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused conversion left the events directory: %v", err)
	}
	// A directory left by an interrupted conversion is replaced.
	if err := os.MkdirAll(filepath.Join(engine+".converting", "junk"), 0o700); err != nil {
		t.Fatal(err)
	}

	check := func() {
		t.Helper()
		s, err := embedded.Open(ctx, dir)
		if err != nil {
			t.Fatalf("Open of an old-layout directory: %v", err)
		}
		defer s.Close()
		got := answers(t, s, hosts)
		for ci := range hosts {
			for fi, f := range convertFilters {
				if !slices.Equal(got[ci][fi], want[ci][fi]) {
					t.Errorf("community %d, filter %+v: converted %v, want %v", ci, f, got[ci][fi], want[ci][fi])
				}
			}
		}
		for ci, h := range hosts {
			c, err := s.LookupHost(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range refused[ci] {
				storetest.SaveIs(t, s, c, ev, store.ErrDeleted)
			}
		}
		if _, err := os.Stat(engine + ".converting"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the conversion left its temporary directory: %v", err)
		}
	}
	check()
	check() // converted once: a second Open finds nothing to convert

	// Interrupted after the engine took the events, before SQLite's
	// tables were emptied: the database file as it was before, the
	// engine's directory in place. The next Open finishes it.
	if err := os.WriteFile(db, oldFile, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(db + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	check()
}

// answers runs convertFilters in each community of s named by hosts: the
// ids in order, then the count.
func answers(t *testing.T, s store.Backend, hosts []string) [][][]string {
	t.Helper()
	out := make([][][]string, len(hosts))
	for ci, h := range hosts {
		c, err := s.LookupHost(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
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
