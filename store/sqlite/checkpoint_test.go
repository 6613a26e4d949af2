package sqlite_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/sqlite"
	"github.com/buzzrelay/buzz/store/storetest"
)

// walState reads how many frames the write-ahead log of the store in dir
// holds and how many of them a checkpoint has copied into the database
// file, from the WAL index (the -shm file): mxFrame of the index header,
// nBackfill of the checkpoint information after its two copies.
func walState(t *testing.T, dir string) (frames, copied uint32) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, sqlite.DefaultFileName+"-shm"))
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
	save := func(t *testing.T, s *sqlite.Store, n int, gap time.Duration, after func()) {
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
		s, err := sqlite.Open(ctx, dir, sqlite.WithCheckpointDelay(20*time.Millisecond, time.Hour))
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
		if _, err := sqlite.Open(ctx, t.TempDir(), sqlite.WithCheckpointDelay(time.Second, 500*time.Millisecond)); err == nil {
			t.Fatal("WithCheckpointDelay accepted idle > max")
		}
		dir := t.TempDir()
		s, err := sqlite.Open(ctx, dir, sqlite.WithCheckpointDelay(400*time.Millisecond, 400*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// Writes every 20ms for about 1.2s: the idle delay never passes
		// before the last one, the maximum does. A checkpoint that copied
		// the whole log shows as copied frames until the next write starts
		// the log over, and as a new log generation after that.
		gen := func() uint32 {
			b, err := os.ReadFile(filepath.Join(dir, sqlite.DefaultFileName+"-wal"))
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
		s, err := sqlite.Open(ctx, dir, sqlite.WithCheckpointDelay(0, 0))
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
