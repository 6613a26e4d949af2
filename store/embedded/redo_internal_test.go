package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/storetest"
)

// redoRows returns how many redo records the closed store in dir holds.
func redoRows(t *testing.T, dir string) int {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, DefaultFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM event_redo`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// writeRedoRecord writes a redo record of ops into the closed store in
// dir with SQL: what a crash right after SQLite's commit leaves.
func writeRedoRecord(t *testing.T, dir string, ops []redoOp) {
	t.Helper()
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, DefaultFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO event_redo (ops) VALUES (?)`, raw); err != nil {
		t.Fatal(err)
	}
}

// TestRedoAppliedOnOpen: a redo record a crash left after SQLite's commit
// (written here with SQL into the closed store) is applied to the events
// engine by the next Open, before it serves, and deleted; applying it
// again (a crash after the engine's part was durable, before the record
// was deleted) changes nothing.
func TestRedoAppliedOnOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, "redo.example")
	alice := storetest.NewAuthor(t)
	note := alice.Event(t, 1, 1_700_000_000, "deleted by the redo record")
	storetest.MustSave(t, s, c, note)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := redoRows(t, dir); n != 0 {
		t.Fatalf("%d redo records after a clean Close, want none", n)
	}

	del := alice.Deletion(t, 1_700_000_001, []string{note.ID}, nil)
	fresh := alice.Event(t, 1, 1_700_000_002, "saved by the redo record")
	ops := []redoOp{
		{Op: "save", C: communityHex(c), Event: del.AppendJSON(nil)},
		{Op: "save", C: communityHex(c), Event: fresh.AppendJSON(nil)},
	}
	check := func(when string) {
		t.Helper()
		s, err := Open(ctx, dir)
		if err != nil {
			t.Fatalf("%s: Open: %v", when, err)
		}
		if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: []string{note.ID}}); len(got) != 0 {
			t.Errorf("%s: the deleted note is served: %v", when, got)
		}
		storetest.SaveIs(t, s, c, note, store.ErrDeleted)
		if got := storetest.QueryIDs(t, s, c, nostr.Filter{}); len(got) != 2 || got[0] != fresh.ID || got[1] != del.ID {
			t.Errorf("%s: events %v, want [%.8s %.8s]", when, got, fresh.ID, del.ID)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if n := redoRows(t, dir); n != 0 {
			t.Errorf("%s: %d redo records left", when, n)
		}
	}
	writeRedoRecord(t, dir, ops)
	check("after a crash before the engine's part")
	writeRedoRecord(t, dir, ops)
	check("after a crash before the record was deleted")
}

// TestConcurrentWritesThroughRedo: channel commands (with their channel
// rows and audit entries), deletion requests (with their audit entries),
// thread replies (with their thread nodes) and plain events saved at once
// all land in both engines, and a clean Close leaves no redo record
// behind.
func TestConcurrentWritesThroughRedo(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, "concurrent.example")
	const writers, each = 4, 12
	authors := storetest.NewAuthors(t, writers)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		deleted []string
		kept    []string
		roots   = make([]string, writers)
		names   = make([]string, writers)
		chans   = make([]channel.ID, writers)
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := authors[w]
			ch := storetest.NewChannelID()
			chans[w] = ch
			name := fmt.Sprintf("channel %d", w)
			if _, err := storetest.Apply(t, s, c, a, channel.Command{Kind: nostr.KindCreateChannel, Channel: ch, Name: &name, Visibility: channel.VisibilityOpen}); err != nil {
				t.Errorf("create channel: %v", err)
				return
			}
			h := nostr.Tag{"h", ch.String()}
			root := a.Event(t, nostr.KindChatMessage, 1_600_000_000, "the thread", h)
			if err := s.Save(ctx, c, root); err != nil {
				t.Errorf("save root: %v", err)
				return
			}
			roots[w] = root.ID
			for i := range each {
				at := int64(1_700_000_000 + w*1000 + i*10)
				note := a.Event(t, 1, at, fmt.Sprintf("note %d %d", w, i))
				reply := a.Event(t, nostr.KindChatMessage, at+1, fmt.Sprintf("reply %d %d", w, i), h, nostr.Tag{"e", root.ID, "", "reply"})
				for _, ev := range []*nostr.Event{note, reply} {
					if err := s.Save(ctx, c, ev); err != nil {
						t.Errorf("save: %v", err)
						return
					}
				}
				name := fmt.Sprintf("channel %d, edit %d", w, i)
				if _, err := storetest.Apply(t, s, c, a, channel.Command{Kind: nostr.KindEditMetadata, Channel: ch, Name: &name}); err != nil {
					t.Errorf("edit channel: %v", err)
					return
				}
				names[w] = name
				if i%2 == 0 {
					mu.Lock()
					kept = append(kept, note.ID)
					mu.Unlock()
					continue
				}
				if err := s.Save(ctx, c, a.Deletion(t, at+2, []string{note.ID}, nil)); err != nil {
					t.Errorf("save deletion: %v", err)
					return
				}
				mu.Lock()
				deleted = append(deleted, note.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := redoRows(t, dir); n != 0 {
		t.Fatalf("%d redo records after a clean Close", n)
	}
	s, err = Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: deleted}); len(got) != 0 {
		t.Fatalf("%d deleted notes served", len(got))
	}
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: kept}); len(got) != len(kept) {
		t.Fatalf("%d of %d kept notes served", len(got), len(kept))
	}
	deletions := storetest.QueryIDs(t, s, c, nostr.Filter{Kinds: []int{nostr.KindDeletion}})
	commands := storetest.QueryIDs(t, s, c, nostr.Filter{Kinds: []int{nostr.KindCreateChannel, nostr.KindEditMetadata}})
	entries, err := s.AuditEntries(ctx, c, 0, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	deletionsAudited, commandsAudited := 0, 0
	for _, e := range entries {
		switch {
		case e.Action == audit.EventDeletionRequested:
			deletionsAudited++
		case e.Action == audit.ChannelCreated || e.Action == audit.ChannelUpdated:
			commandsAudited++
		}
	}
	if len(deletions) != len(deleted) || deletionsAudited != len(deleted) {
		t.Fatalf("%d deletion requests stored, %d audited, %d sent", len(deletions), deletionsAudited, len(deleted))
	}
	if want := writers * (1 + each); len(commands) != want || commandsAudited != want {
		t.Fatalf("%d channel commands stored, %d audited, want %d", len(commands), commandsAudited, want)
	}
	for w := range writers {
		sum, err := s.ThreadSummary(ctx, c, roots[w])
		if err != nil {
			t.Fatal(err)
		}
		if sum.ReplyCount != each {
			t.Fatalf("thread %d: summary %+v, want %d replies", w, sum, each)
		}
		chs, err := s.Channels(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, got := range chs {
			if got.ID == chans[w] {
				found = got.Name == names[w]
			}
		}
		if !found {
			t.Fatalf("channel %d: not found with its last name %q in %+v", w, names[w], chs)
		}
	}
}
