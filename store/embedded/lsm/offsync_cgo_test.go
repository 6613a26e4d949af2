//go:build linux && cgo

package lsm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestOffPSync: a log file's syncs run on its thread and report success;
// other files are not wrapped; a closed file refuses to sync.
func TestOffPSync(t *testing.T) {
	fs := offPSyncFS(vfs.Default)
	dir := t.TempDir()
	f, err := fs.Create(filepath.Join(dir, "000001.log"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(*offPFile); !ok {
		t.Fatalf("a log file is a %T, want *offPFile", f)
	}
	// Concurrent syncs take turns on the one thread.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := f.Write([]byte("record\n")); err != nil {
					t.Error(err)
					return
				}
				if err := f.SyncData(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.SyncData(); !errors.Is(err, os.ErrClosed) || !strings.HasPrefix(err.Error(), "lsm: ") {
		t.Fatalf("SyncData after Close = %v, want an lsm: error wrapping os.ErrClosed", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "000001.log"))
	if err != nil || len(b) != 8*20*len("record\n") {
		t.Fatalf("log holds %d bytes (%v), want %d", len(b), err, 8*20*len("record\n"))
	}

	other, err := fs.Create(filepath.Join(dir, "MANIFEST-000001"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, ok := other.(*offPFile); ok {
		t.Fatal("a file other than a log got a sync thread")
	}
}

// badFdFile is a file whose descriptor is not open: its syncs fail.
type badFdFile struct {
	vfs.File
	fd uintptr
}

func (f badFdFile) Fd() uintptr  { return f.fd }
func (f badFdFile) Close() error { return nil }

// TestOffPSyncError: the thread's errno comes back as the sync's error.
func TestOffPSyncError(t *testing.T) {
	const fd = 1<<31 - 1 // above any descriptor limit: never open
	f, err := newOffPFile(badFdFile{fd: fd}, "bad.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = f.SyncData()
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "fdatasync" || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("SyncData on a descriptor that is not open = %v, want fdatasync: EBADF", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Sync on a descriptor that is not open = %v, want EBADF", err)
	}
}
