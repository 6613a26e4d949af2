package lsm_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded/lsm"
	"github.com/buzzrelay/buzz/store/storetest"
)

// gatedFS holds every sync of a write-ahead log file back while its gate is
// closed.
type gatedFS struct {
	vfs.FS
	mu     sync.Mutex
	open   chan struct{} // closed while syncs may proceed
	waiter chan struct{} // signalled when a sync starts waiting at the closed gate
}

func newGatedFS() *gatedFS {
	g := &gatedFS{FS: vfs.Default, open: make(chan struct{}), waiter: make(chan struct{}, 64)}
	close(g.open)
	return g
}

// hold closes the gate. Signals of syncs held before are dropped first:
// while the gate is open no sync signals, so every signal after hold is
// of a sync it holds.
func (g *gatedFS) hold() {
	for drained := false; !drained; {
		select {
		case <-g.waiter:
		default:
			drained = true
		}
	}
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedFS) release() {
	g.mu.Lock()
	close(g.open)
	g.mu.Unlock()
}

func (g *gatedFS) wait() {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
		return // the gate is open: nothing is held
	default:
	}
	select {
	case g.waiter <- struct{}{}:
	default:
	}
	<-ch
}

func (g *gatedFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return gatedFile{File: f, g: g}, nil
}

func (g *gatedFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.Create(name, c)
	return g.wrap(f, name, err)
}

func (g *gatedFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.ReuseForWrite(old, name, c)
	return g.wrap(f, name, err)
}

func (g *gatedFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := g.FS.OpenReadWrite(name, c, opts...)
	return g.wrap(f, name, err)
}

type gatedFile struct {
	vfs.File
	g *gatedFS
}

func (f gatedFile) Sync() error     { f.g.wait(); return f.File.Sync() }
func (f gatedFile) SyncData() error { f.g.wait(); return f.File.SyncData() }
func (f gatedFile) SyncTo(n int64) (bool, error) {
	f.g.wait()
	return f.File.SyncTo(n)
}

// holdSyncs holds g's syncs back until the returned release (idempotent)
// is called, or the test ends (before the store's Close, which syncs).
func holdSyncs(t *testing.T, g *gatedFS) (release func()) {
	g.hold()
	var once sync.Once
	release = func() { once.Do(g.release) }
	t.Cleanup(release)
	return release
}

// awaitHeldSync returns once a sync waits at g's gate, failing the test
// with what if none does.
func awaitHeldSync(t *testing.T, g *gatedFS, what string) {
	t.Helper()
	select {
	case <-g.waiter:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// awaitReturn waits for the result of what on done once the held syncs are
// released, failing the test if it is an error or none comes within 10 s.
func awaitReturn(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s = %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return after the syncs were released", what)
	}
}

// TestAckAfterSync: a saved event is visible to readers once applied, but
// Save returns only after the log holding it has been synced; so does a
// Save refused as a duplicate of it.
func TestAckAfterSync(t *testing.T) {
	g := newGatedFS()
	s := openTemp(t, lsm.WithFS(g))
	c := storetest.Community(t, s, "sync.example")
	ev := storetest.NewAuthor(t).Event(t, 1, 1_700_000_000, "held")

	release := holdSyncs(t, g)
	done := make(chan error, 2)
	go func() { done <- s.Save(context.Background(), c, ev) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(storetest.QueryIDs(t, s, c, nostr.Filter{IDs: []string{ev.ID}})) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the event never became visible")
		}
		time.Sleep(time.Millisecond)
	}
	go func() { done <- s.Save(context.Background(), c, ev) }()
	awaitHeldSync(t, g, "no log sync started")
	select {
	case err := <-done:
		t.Fatalf("Save returned (%v) while its log sync was held", err)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	got := map[string]int{}
	for i := 0; i < 2; i++ {
		select {
		case err := <-done:
			got[fmt.Sprint(err)]++
		case <-time.After(10 * time.Second):
			t.Fatal("Save did not return after the sync was released")
		}
	}
	if got["<nil>"] != 1 || got[store.ErrDuplicate.Error()] != 1 {
		t.Fatalf("results %v, want one nil and one duplicate", got)
	}
}

// TestSaveStagedDurableAfterSync: SaveStaged returns once the event is
// applied, visible to readers while its log sync is held; its durable
// returns only after that sync, and then nil.
func TestSaveStagedDurableAfterSync(t *testing.T) {
	g := newGatedFS()
	s := openTemp(t, lsm.WithFS(g))
	c := storetest.Community(t, s, "staged.example")
	ev := storetest.NewAuthor(t).Event(t, 1, 1_700_000_000, "staged")

	release := holdSyncs(t, g)
	staged := make(chan func() error, 1)
	go func() {
		durable, err := s.SaveStaged(context.Background(), c, ev)
		if err != nil || durable == nil {
			t.Errorf("SaveStaged = %v, %v; want a durable func and nil", durable != nil, err)
		}
		staged <- durable
	}()
	var durable func() error
	select {
	case durable = <-staged:
	case <-time.After(10 * time.Second):
		t.Fatal("SaveStaged waited for the held log sync")
	}
	if durable == nil {
		return
	}
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: []string{ev.ID}}); len(got) != 1 {
		t.Fatalf("staged event visible %d times before its sync, want 1", len(got))
	}
	done := make(chan error, 1)
	go func() { done <- durable() }()
	awaitHeldSync(t, g, "durable started no log sync")
	select {
	case err := <-done:
		t.Fatalf("durable returned (%v) while its log sync was held", err)
	default:
	}
	release()
	awaitReturn(t, done, "durable")
}

const (
	childEnvDir  = "BUZZ_LSM_KILL_CHILD_DIR"
	childEnvHost = "kill.example"
)

// TestKillDurability re-executes the test binary as a child that saves
// events from many goroutines and prints each id once Save returned nil.
// The parent SIGKILLs it mid-stream, reopens the store and checks that
// every acknowledged id is there. The events are about 3 KB each, so the
// acknowledged ones fill several log files and pass the size a log file
// was given ahead of its writes (logsize_linux.go).
func TestKillDurability(t *testing.T) {
	if os.Getenv(childEnvDir) != "" {
		t.Skip("running as the child")
	}
	dir := t.TempDir()
	acked := storetest.KillAfterAcks(t, "TestKillChild", childEnvDir, dir, 800)
	s := reopen(t, dir)
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
	s, err := lsm.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, childEnvHost)
	pad := strings.Repeat("k", 3000)
	storetest.SaveAndAck(ctx, t, s, c, 8, func(w, i int) string { return fmt.Sprintf("worker %d event %d %s", w, i, pad) })
}

// TestSyncIntervalFollowsWaiters: the least interval between two log syncs
// applies only while more than one save waits for a sync; a lone writer's
// next sync may start at once. (How long the second save then takes is
// pebble's doing, and not a promise: pebble asks for the interval after it
// has told the sync's saves, one of which may have returned by then.)
func TestSyncIntervalFollowsWaiters(t *testing.T) {
	const interval = 400 * time.Millisecond
	g := newGatedFS()
	s := openTemp(t, lsm.WithFS(g), lsm.WithMinSyncInterval(interval))
	c := storetest.Community(t, s, "pacing.example")
	alice := storetest.NewAuthor(t)
	if got := s.SyncInterval(); got != 0 {
		t.Fatalf("interval with no save waiting = %v, want 0", got)
	}

	release := holdSyncs(t, g)
	done := make(chan error, 2)
	go func() { done <- s.Save(context.Background(), c, alice.Event(t, 1, 1_700_000_000, "first")) }()
	awaitHeldSync(t, g, "the first save started no log sync")
	if got := s.SyncInterval(); got != 0 {
		t.Fatalf("interval with one save waiting = %v, want 0", got)
	}
	go func() { done <- s.Save(context.Background(), c, alice.Event(t, 1, 1_700_000_001, "second")) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.SyncInterval() != interval {
		if time.Now().After(deadline) {
			t.Fatalf("interval with two saves waiting = %v, want %v", s.SyncInterval(), interval)
		}
		time.Sleep(time.Millisecond)
	}
	release()
	for range 2 {
		awaitReturn(t, done, "Save")
	}
	if got := s.SyncInterval(); got != 0 {
		t.Fatalf("interval once both saves returned = %v, want 0", got)
	}
}
