package embedded_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// walState reads how many frames the write-ahead log of the store in dir
// holds and how many of them a checkpoint has copied into the database
// file, from the WAL index (the -shm file): mxFrame of the index header,
// nBackfill of the checkpoint information after its two copies.
func walState(t *testing.T, dir string) (frames, copied uint32) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, embedded.DefaultFileName+"-shm"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 100 {
		t.Fatalf("WAL index of %d bytes", len(b))
	}
	return binary.NativeEndian.Uint32(b[16:]), binary.NativeEndian.Uint32(b[96:])
}

// TestBackgroundCheckpoint: the store copies its write-ahead log into the
// database file by itself once writing pauses (idle delay) and while it
// keeps going (maximum delay), not only when the log reaches SQLite's
// autocheckpoint size inside a commit; with the checkpointer off, it does
// not.
func TestBackgroundCheckpoint(t *testing.T) {
	ctx := context.Background()
	// save stores n events, one every gap, calling after (when not nil)
	// after each.
	save := func(t *testing.T, s *embedded.Store, n int, gap time.Duration, after func()) {
		c := storetest.Community(t, s, "checkpoint.example")
		alice := storetest.NewAuthor(t)
		for i := range n {
			storetest.MustSave(t, s, c, alice.Event(t, 1, 1_700_000_000+int64(i), fmt.Sprint(i), nostr.Tag{"t", "ckpt"}))
			if after != nil {
				after()
			}
			time.Sleep(gap)
		}
	}
	t.Run("idle", func(t *testing.T) {
		dir := t.TempDir()
		s, err := embedded.Open(ctx, dir, embedded.WithMaintenanceDelay(20*time.Millisecond, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		save(t, s, 50, 0, nil)
		deadline := time.Now().Add(10 * time.Second)
		for {
			frames, copied := walState(t, dir)
			if frames > 0 && copied == frames {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("10s after the last write: %d of %d WAL frames copied", copied, frames)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("busy", func(t *testing.T) {
		if _, err := embedded.Open(ctx, t.TempDir(), embedded.WithMaintenanceDelay(time.Second, 500*time.Millisecond)); err == nil {
			t.Fatal("WithMaintenanceDelay accepted idle > max")
		}
		dir := t.TempDir()
		s, err := embedded.Open(ctx, dir, embedded.WithMaintenanceDelay(400*time.Millisecond, 400*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// Writes every 20ms for about 1.2s: the idle delay never passes
		// before the last one, the maximum does. A checkpoint that copied
		// the whole log shows as copied frames until the next write starts
		// the log over, and as a new log generation after that.
		gen := func() uint32 {
			b, err := os.ReadFile(filepath.Join(dir, embedded.DefaultFileName+"-wal"))
			if err != nil || len(b) < 32 {
				t.Fatalf("WAL header: %d bytes, %v", len(b), err)
			}
			return binary.BigEndian.Uint32(b[12:]) // checkpoint sequence number
		}
		var gen0 uint32
		first, seen := true, false
		save(t, s, 60, 20*time.Millisecond, func() {
			if _, copied := walState(t, dir); copied > 0 {
				seen = true
			}
			if g := gen(); first {
				gen0, first = g, false
			} else if g != gen0 {
				seen = true
			}
		})
		if !seen {
			frames, _ := walState(t, dir)
			t.Fatalf("writing for 1.2s with a 400ms maximum delay: no checkpoint (%d WAL frames)", frames)
		}
	})
	t.Run("off", func(t *testing.T) {
		dir := t.TempDir()
		s, err := embedded.Open(ctx, dir, embedded.WithMaintenanceDelay(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		save(t, s, 50, 0, nil)
		time.Sleep(300 * time.Millisecond)
		if frames, copied := walState(t, dir); frames == 0 || copied != 0 {
			t.Fatalf("checkpointer off: %d of %d WAL frames copied", copied, frames)
		}
	})
}

// TestBackgroundTextMerge: with background maintenance on, commits do not
// merge the text index (each transaction leaves a segment of its own), the
// store merges it once writing pauses, and searches find the same events
// throughout; with maintenance off, FTS5 merges inside commits again
// (automerge back to its default).
func TestBackgroundTextMerge(t *testing.T) {
	ctx := context.Background()
	search := func(t *testing.T, s *embedded.Store, c tenant.CommunityID, want int) {
		t.Helper()
		f, err := nostr.ParseFilter([]byte(`{"search":"shared","limit":1000}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := storetest.QueryIDs(t, s, c, f); len(got) != want {
			t.Fatalf("search found %d events, want %d", len(got), want)
		}
	}
	state := func(t *testing.T, s *embedded.Store) (segments, automerge int) {
		t.Helper()
		segments, automerge, err := embedded.TextIndexState(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return segments, automerge
	}
	open := func(t *testing.T, dir string, idle, max time.Duration, opts ...embedded.Option) *embedded.Store {
		t.Helper()
		s, err := embedded.Open(ctx, dir, append(opts, embedded.WithMaintenanceDelay(idle, max))...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	dir := t.TempDir()
	alice := storetest.NewAuthor(t)

	// Maintenance on, but never during the writes: commits alone.
	s := open(t, dir, time.Hour, time.Hour)
	c := storetest.Community(t, s, "merge.example")
	// Events of many distinct words, so that merging them takes more than
	// one step.
	text := func(i int) string {
		var b strings.Builder
		b.WriteString("shared")
		for j := range 600 {
			fmt.Fprintf(&b, " w%dx%d", i, j)
		}
		return b.String()
	}
	// FTS5 merges by itself only in a crisis (16 segments on one level),
	// here after every 15 one-event transactions: 44 leave 14 segments.
	const writes = 44
	for i := range writes {
		storetest.MustSave(t, s, c, alice.Event(t, 1, 1_700_000_000+int64(i), text(i)))
		// A search waits for the text index to take the event in: one
		// indexing transaction per event.
		if got := storetest.QueryIDs(t, s, c, nostr.Filter{Search: fmt.Sprintf("w%dx0", i)}); len(got) != 1 {
			t.Fatalf("search for event %d: %v", i, got)
		}
	}
	unmerged, automerge := state(t, s)
	if automerge != 0 || unmerged < 12 {
		t.Fatalf("after %d one-event transactions with maintenance on: %d segments, automerge %d; want >= 12, 0", writes, unmerged, automerge)
	}
	search(t, s, c, writes)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Maintenance when writing pauses: one more write wakes it, and it
	// merges, in steps too small to finish at once, until nothing is left
	// to merge. A step of 20 pages is written as transactions of at most 8
	// (8, 8, 4), so no transaction holds the writer long.
	steps := &stepCounter{}
	s = open(t, dir, 10*time.Millisecond, time.Second, embedded.WithMergePagesForTest(20),
		embedded.WithLogger(slog.New(steps)))
	storetest.MustSave(t, s, c, alice.Event(t, 1, 1_700_001_000, "shared last"))
	search(t, s, c, writes+1) // the text index takes it in: a change to merge
	deadline := time.Now().Add(10 * time.Second)
	for n, _ := state(t, s); n > 3; n, _ = state(t, s) {
		if time.Now().After(deadline) {
			t.Fatalf("10s after the last write: %d segments (%d before)", n, unmerged)
		}
		time.Sleep(20 * time.Millisecond)
	}
	search(t, s, c, writes+1)
	// Once a step has found nothing left, the store stays quiet: its own
	// merge steps do not wake it for more.
	for !steps.sawDone() {
		if time.Now().After(deadline) {
			t.Fatalf("no merge step found the index merged (%d steps)", steps.count())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := steps.count(); n < 3 {
		t.Fatalf("%d merge transactions merged the index, want several", n)
	}
	if p := steps.pageCounts(); slices.Max(p) > 8 || !slices.Contains(p, 4) {
		t.Fatalf("merge transactions of %v pages, want at most 8 each and a step of 20 split as 8, 8, 4", p)
	}
	before := steps.count()
	time.Sleep(200 * time.Millisecond)
	if after := steps.count(); after != before {
		t.Fatalf("%d more merge steps after the index was merged", after-before)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Maintenance off: FTS5's own merging is back.
	s = open(t, dir, 0, 0)
	defer s.Close()
	if _, automerge := state(t, s); automerge != 4 {
		t.Fatalf("maintenance off: automerge %d, want FTS5's default 4", automerge)
	}
	search(t, s, c, writes+1)
}

// stepCounter is a slog handler that counts the store's text index merge
// steps and notes whether one found nothing left to merge.
type stepCounter struct {
	mu    sync.Mutex
	steps int
	pages []int64 // each transaction's pages
	done  bool
}

func (h *stepCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *stepCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stepCounter) WithGroup(string) slog.Handler            { return h }
func (h *stepCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "sqlite: text index merge step" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steps++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "done" && a.Value.Bool() {
			h.done = true
		}
		if a.Key == "pages" {
			h.pages = append(h.pages, a.Value.Int64())
		}
		return true
	})
	return nil
}

func (h *stepCounter) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.steps
}

func (h *stepCounter) pageCounts() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.pages)
}

func (h *stepCounter) sawDone() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.done
}
