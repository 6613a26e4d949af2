package lsm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded/lsm"
	"github.com/buzzrelay/buzz/store/storetest"
)

// fallocates reports whether dir's file system sets a file's size with
// fallocate, as the store's log files need for their size to run ahead.
func fallocates(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.CreateTemp(dir, "probe")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	err = unix.Fallocate(int(f.Fd()), 0, 0, 4096)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// TestLogSizeRunsAhead: the write-ahead log's files are sized a step ahead
// of what is written to them, and a store whose logs end in that unwritten
// (zero) tail reopens with every event it acknowledged, after a clean close
// and after several logs (the engine starts with small in-memory tables, so
// a few MiB of events go through several).
func TestLogSizeRunsAhead(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := lsm.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, "sized.example")
	author := storetest.NewAuthor(t)
	pad := strings.Repeat("x", 3000)
	var ids []string
	now := time.Now().Unix()
	for i := range 1200 { // about 4 MiB of log
		ev := author.Unsigned(1, now-int64(i), pad, nostr.Tag{"t", "sized"})
		if err := s.Save(ctx, c, ev); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) < 2 {
		t.Fatalf("log files %v, %v: want several", logs, err)
	}
	sized := fallocates(t, dir)
	written := 0
	for _, l := range logs {
		fi, err := os.Stat(l)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() == 0 {
			continue
		}
		written++
		if sized && fi.Size()%lsm.LogExtendStep != 0 {
			t.Errorf("%s: size %d, want a multiple of %d", filepath.Base(l), fi.Size(), lsm.LogExtendStep)
		}
	}
	if written == 0 {
		t.Fatal("no log file was written")
	}
	if !sized {
		t.Log("this file system has no fallocate: the logs were appended")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, dir)
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: ids}); len(got) != len(ids) {
		t.Fatalf("after reopening: %d of %d events", len(got), len(ids))
	}
}
