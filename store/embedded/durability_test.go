package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestRestart: everything saved before Close is there after reopening, and
// the community registry survives too.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := embedded.Open(ctx, dir)
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
	if err := s.Save(ctx, c, alice.Event(t, 1, 1, "after close")); err == nil {
		t.Fatal("Save after Close succeeded")
	}

	s2, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	c2, err := s2.LookupHost(ctx, "restart.example")
	if err != nil || c2 != c {
		t.Fatalf("LookupHost after restart = %v, %v; want %v", c2, err, c)
	}
	f := nostr.Filter{Tags: map[string][]string{"t": {"restart"}}}
	if got, want := storetest.QueryIDs(t, s2, c, f), storetest.Expected(evs[1:], f); !equal(got, want) {
		t.Fatalf("after restart: %d events, want %d", len(got), len(want))
	}
	// Tombstones and watermarks are durable.
	storetest.SaveIs(t, s2, c, evs[0], errDeleted)
	storetest.SaveIs(t, s2, c, alice.Event(t, 30023, 1_700_000_999, "old", nostr.Tag{"d", "gone"}), errDeleted)
	storetest.SaveIs(t, s2, c, evs[1], errDuplicate)
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

const (
	childEnvDir  = "BUZZ_SQLITE_KILL_CHILD_DIR"
	childEnvHost = "kill.example"
)

// TestKillDurability re-executes the test binary as a child that saves
// events from many goroutines and prints each id once Save returned nil.
// The parent SIGKILLs it mid-stream, reopens the database and checks that
// every acknowledged id is there.
func TestKillDurability(t *testing.T) {
	if os.Getenv(childEnvDir) != "" {
		t.Skip("running as the child")
	}
	dir := t.TempDir()
	acked := storetest.KillAfterAcks(t, "TestKillChild", childEnvDir, dir, 300)
	s, err := embedded.Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer s.Close()
	c, err := s.LookupHost(context.Background(), childEnvHost)
	if err != nil {
		t.Fatal(err)
	}
	storetest.RequireStored(t, s, c, acked)
}

// TestKillChild is the child side of TestKillDurability; it does nothing in
// a normal run.
func TestKillChild(t *testing.T) {
	dir := os.Getenv(childEnvDir)
	if dir == "" {
		t.Skip("only runs as TestKillDurability's child")
	}
	ctx := context.Background()
	s, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, childEnvHost)
	storetest.SaveAndAck(ctx, t, s, c, 8, func(w, i int) string { return fmt.Sprintf("worker %d event %d", w, i) })
}

// TestAckAfterSync: a committed write (already visible to readers) is not
// acknowledged until the write-ahead log holding it has been synced.
func TestAckAfterSync(t *testing.T) {
	ctx := context.Background()
	var gate chan struct{} // nil until armed: Community's write syncs freely
	var armed atomic.Bool
	reached := make(chan struct{}, 16)
	s := openSynced(t, t.TempDir(), func() error {
		if armed.Load() {
			reached <- struct{}{}
			<-gate
		}
		return nil
	})
	gate = make(chan struct{})
	armed.Store(true)
	saved := make(chan error, 1)
	go func() {
		_, _, err := s.EnsureCommunity(ctx, "sync.example")
		saved <- err
	}()

	<-reached // the batch committed and waits for its sync
	if _, err := s.LookupHost(ctx, "sync.example"); err != nil {
		t.Fatalf("committed community not visible before its sync: %v", err)
	}
	select {
	case err := <-saved:
		t.Fatalf("EnsureCommunity returned (%v) before the write-ahead log was synced", err)
	case <-time.After(100 * time.Millisecond):
	}
	armed.Store(false)
	close(gate)
	if err := <-saved; err != nil {
		t.Fatalf("EnsureCommunity after sync: %v", err)
	}
}

// openSynced opens the store in dir with no background maintenance and
// before called ahead of every sync of the write-ahead log; an error before
// returns stands for the sync's.
func openSynced(t *testing.T, dir string, before func() error) *embedded.Store {
	t.Helper()
	s, err := embedded.OpenWithSyncForTest(context.Background(), dir, func(f *os.File) error {
		if err := before(); err != nil {
			return err
		}
		return embedded.SyncData(f)
	}, embedded.WithMaintenanceDelay(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestOverlappingSyncs: a batch committed while an earlier batch's sync is
// still running starts a sync of its own (it does not wait for the running
// one to end first), and is not answered, though its own sync has ended,
// while the earlier batch's is still running: callers are answered in
// commit order.
func TestOverlappingSyncs(t *testing.T) {
	ctx := context.Background()
	var first atomic.Bool // the next sync is the one to hold
	gate := make(chan struct{})
	held := make(chan struct{}, 1)
	started := make(chan struct{}, 16)
	s := openSynced(t, t.TempDir(), func() error {
		if first.CompareAndSwap(true, false) {
			held <- struct{}{}
			<-gate
			return nil
		}
		started <- struct{}{}
		return nil
	})
	for len(started) > 0 {
		<-started
	}
	first.Store(true)
	done := make(chan string, 2)
	go func() {
		if _, _, err := s.EnsureCommunity(ctx, "earlier.example"); err != nil {
			t.Errorf("EnsureCommunity earlier: %v", err)
		}
		done <- "earlier"
	}()
	<-held // the earlier batch's sync is running (and held)
	go func() {
		if _, _, err := s.EnsureCommunity(ctx, "later.example"); err != nil {
			t.Errorf("EnsureCommunity later: %v", err)
		}
		done <- "later"
	}()
	select {
	case <-started: // the later batch's own sync began
	case <-time.After(5 * time.Second):
		close(gate)
		t.Fatal("a batch committed during a running sync started no sync of its own")
	}
	select {
	case who := <-done:
		close(gate)
		t.Fatalf("%s answered while the earlier batch's sync was still running", who)
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	<-done
	<-done
}

// TestSyncFailureIsSticky: once a sync of the write-ahead log fails, the
// write it covered gets the failure, and so does every later write to
// SQLite (the engine's events have the engine's own policy), even
// when later syncs would succeed: after a failed fdatasync the kernel may
// have dropped pages it could not write, so nothing after them can be
// acknowledged as durable. Reads go on; reopening the store recovers.
func TestSyncFailureIsSticky(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var fail atomic.Bool
	s := openSynced(t, dir, func() error {
		if fail.Load() {
			return errors.New("injected EIO")
		}
		return nil
	})
	c := storetest.Community(t, s, "sticky.example")
	alice := storetest.NewAuthor(t)
	note := alice.Event(t, 1, 1_700_000_000, "before the failure")
	storetest.MustSave(t, s, c, note)
	// Deletion requests go through SQLite's writer (their audit entries).
	deletion := func(at int64) *nostr.Event { return alice.Deletion(t, at, []string{note.ID}, nil) }
	before := deletion(1_700_000_001)
	storetest.MustSave(t, s, c, before)

	fail.Store(true)
	if err := s.Save(ctx, c, deletion(1_700_000_002)); err == nil || !strings.Contains(err.Error(), "injected EIO") {
		t.Fatalf("Save whose sync failed = %v, want the sync's error", err)
	}
	fail.Store(false)
	err := s.Save(ctx, c, deletion(1_700_000_003))
	if err == nil || !strings.Contains(err.Error(), "reopen the store") {
		t.Fatalf("Save after a failed sync = %v, want it refused until the store is reopened", err)
	}
	if _, _, err := s.EnsureCommunity(ctx, "other.example"); err == nil || !strings.Contains(err.Error(), "reopen the store") {
		t.Fatalf("EnsureCommunity after a failed sync = %v, want it refused until the store is reopened", err)
	}
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: []string{before.ID}}); len(got) != 1 {
		t.Fatalf("reads after a failed sync: %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.MustSave(t, s, c, deletion(1_700_000_004))
}

// TestTextIndexWritesAreNotSynced: the text index is derived data (its rows
// commit together with the position they index through, and a crash that
// loses them has the indexer take up from there at the next open), so the
// indexer's writes cause no sync of SQLite's write-ahead log; a search still
// sees every event saved before it. The events themselves are durable in the
// engine's own log before Save returns.
func TestTextIndexWritesAreNotSynced(t *testing.T) {
	var syncs atomic.Int64
	s := openSynced(t, t.TempDir(), func() error {
		syncs.Add(1)
		return nil
	})
	c := storetest.Community(t, s, "text.example")
	a := storetest.NewAuthor(t)
	const n = 300 // more than one batch of the indexer
	before := syncs.Load()
	for i := range n {
		storetest.MustSave(t, s, c, a.Event(t, 1, 1_700_000_000+int64(i), fmt.Sprintf("needle %d", i)))
	}
	got := storetest.QueryIDs(t, s, c, nostr.Filter{Search: "needle", Limit: n})
	if len(got) != n {
		t.Fatalf("search found %d of the %d events saved before it", len(got), n)
	}
	if d := syncs.Load() - before; d != 0 {
		t.Fatalf("saving %d events and indexing their text synced SQLite's write-ahead log %d times, want 0", n, d)
	}
}
