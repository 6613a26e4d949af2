package embedded_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// TestBackupUnderLoad: a backup taken while a writer saves events (notes,
// and deletions of earlier notes, which write to both engines) holds every
// event acknowledged before it started, only events the writer sent, and
// its two engines agree: each deletion request stored has its audit entry
// and each audit entry of a deletion its stored request.
func TestBackupUnderLoad(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	c := storetest.Community(t, s, "a.example")
	alice := storetest.NewAuthor(t)

	var mu sync.Mutex
	var acked []string
	sent := map[string]bool{}
	stop := make(chan struct{})
	enough := make(chan struct{})
	var werr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var notes []string
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ev := alice.Event(t, 1, 1_700_000_000+int64(i), fmt.Sprintf("note %d", i))
			if i%10 == 9 {
				ev = alice.Deletion(t, 1_700_000_000+int64(i), []string{notes[len(notes)-5]}, nil)
			}
			mu.Lock()
			sent[ev.ID] = true
			mu.Unlock()
			if err := s.Save(ctx, c, ev); err != nil {
				werr = err
				return
			}
			if ev.Kind == 1 {
				notes = append(notes, ev.ID)
			}
			mu.Lock()
			acked = append(acked, ev.ID)
			if len(acked) == 300 {
				close(enough)
			}
			mu.Unlock()
		}
	}()
	<-enough
	mu.Lock()
	before := slices.Clone(acked)
	mu.Unlock()
	dir := filepath.Join(t.TempDir(), "backup")
	info, err := s.Backup(ctx, dir)
	mu.Lock()
	during := len(acked) - len(before)
	mu.Unlock()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	if info.Events != "lsm" || info.Bytes <= 0 {
		t.Fatalf("BackupInfo = %+v", info)
	}
	if got, err := embedded.CheckBackup(dir); err != nil || got.Events != "lsm" {
		t.Fatalf("CheckBackup = %+v, %v", got, err)
	}
	t.Logf("%d events acknowledged before the backup, %d while it ran; %d bytes in %v", len(before), during, info.Bytes, info.Duration)

	b, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	defer b.Close()
	inBackup := map[string]*nostr.Event{}
	for _, r := range storetest.Collect(t, b.Query(ctx, c, nostr.Filter{})) {
		ev, err := nostr.ParseEvent(r.Raw)
		if err != nil {
			t.Fatal(err)
		}
		inBackup[r.ID] = ev
	}
	// Every acknowledged event is there, unless a deletion
	// acknowledged before the backup removed it.
	deleted := map[string]bool{}
	for _, ev := range inBackup {
		if ev.Kind == nostr.KindDeletion {
			for _, tg := range ev.Tags {
				if len(tg) > 1 && tg[0] == "e" {
					deleted[tg[1]] = true
				}
			}
		}
	}
	for _, id := range before {
		if inBackup[id] == nil && !deleted[id] {
			t.Fatalf("event %.8s acknowledged before the backup is not in it", id)
		}
	}
	for id := range inBackup {
		if !sent[id] {
			t.Fatalf("the backup holds an event %.8s nobody sent", id)
		}
	}
	// The two engines agree: deletions and their audit entries.
	audited := map[string]bool{}
	entries, err := b.AuditEntries(ctx, c, 0, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Action == audit.EventDeletionRequested {
			audited[e.Object] = true
		}
	}
	stored := 0
	for id, ev := range inBackup {
		if ev.Kind == nostr.KindDeletion {
			stored++
			if !audited[id] {
				t.Fatalf("deletion %.8s is in the backup without its audit entry", id)
			}
		}
	}
	if stored != len(audited) {
		t.Fatalf("%d deletions stored, %d audited", stored, len(audited))
	}
	// The backup is a store: it takes writes, and a search finds
	// its events (the text index catches up on open).
	storetest.MustSave(t, b, c, alice.Event(t, 1, 1_800_000_000, "after the restore"))
	if n := storetest.CountOf(t, b, c, nostr.Filter{Search: "restore"}); n != 1 {
		t.Fatalf("search in the backup: %d", n)
	}
}

// TestBackupRefusals: a backup goes into a new or empty directory only,
// an interrupted one is replaced, and a store opened WithoutEvents cannot
// back up its events.
func TestBackupRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Backup(ctx, full); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("backup into a directory holding a file = %v", err)
	}
	if _, err := s.Backup(ctx, dir); err == nil {
		t.Fatal("backup into the store's own directory succeeded")
	}
	empty := t.TempDir()
	if _, err := s.Backup(ctx, empty); err != nil {
		t.Fatalf("backup into an empty directory: %v", err)
	}
	if _, err := s.Backup(ctx, empty); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("backup over a complete backup = %v", err)
	}
	tool, err := embedded.Open(ctx, dir, embedded.WithoutEvents())
	if err != nil {
		t.Fatal(err)
	}
	defer tool.Close()
	if _, err := tool.Backup(ctx, filepath.Join(t.TempDir(), "b")); err == nil {
		t.Fatal("a store opened WithoutEvents backed up")
	}
	if _, err := embedded.CheckBackup(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no backup") {
		t.Fatalf("CheckBackup of an empty directory = %v", err)
	}
}

// TestBackupRestore: Restore copies a backup into a new data directory,
// refuses a directory holding anything, and leaves the backup as it was.
func TestBackupRestore(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	c := storetest.Community(t, s, "a.example")
	alice := storetest.NewAuthor(t)
	evs := make([]*nostr.Event, 50)
	for i := range evs {
		evs[i] = alice.Event(t, 1, 1_700_000_000+int64(i), "hello "+strconv.Itoa(i))
	}
	storetest.SaveAll(t, s, c, evs)
	key, err := s.RelayKey(ctx, newSecretKey(t))
	if err != nil {
		t.Fatal(err)
	}
	bdir := filepath.Join(t.TempDir(), "b")
	if _, err := s.Backup(ctx, bdir); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "data")
	if err := embedded.Restore(ctx, bdir, to); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if err := embedded.Restore(ctx, bdir, to); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Restore over a store = %v", err)
	}
	r, err := embedded.Open(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := storetest.CountOf(t, r, c, nostr.Filter{}); n != 50 {
		t.Fatalf("restored store holds %d events, want 50", n)
	}
	if got, err := r.RelayKey(ctx, newSecretKey(t)); err != nil || got != key {
		t.Fatalf("the restored store's relay key is not the store's: %v", err)
	}
	if _, err := embedded.CheckBackup(bdir); err != nil {
		t.Fatalf("the backup after a restore: %v", err)
	}
}

// killHelperEnv names the variable that makes TestBackupKilledHelper run
// (as a child process of TestBackupKilled): "dir backupDir stage".
const killHelperEnv = "SQLITE_BACKUP_KILL_HELPER"

// TestBackupKilledHelper is not a test: TestBackupKilled runs it in a
// child process, which saves events, starts a backup and stops at a stage
// of it, for its parent to kill.
func TestBackupKilledHelper(t *testing.T) {
	args := strings.Fields(os.Getenv(killHelperEnv))
	if len(args) != 3 {
		t.Skip("runs as a child of TestBackupKilled")
	}
	ctx := context.Background()
	dir, bdir, stage := args[0], args[1], args[2]
	s, err := embedded.Open(ctx, dir, embedded.WithLogger(slog.New(stageStop{stage})))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	c, _, err := s.EnsureCommunity(ctx, "a.example")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	alice := storetest.NewAuthor(t)
	for i := range 200 {
		if err := s.Save(ctx, c, alice.Event(t, 1, 1_700_000_000+int64(i), "before")); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
	}
	fmt.Println("saved 200")
	_, err = s.Backup(ctx, bdir)
	fmt.Println("backup returned", err)
	os.Exit(1)
}

// backupStages are the stages TestBackupKilled kills a backup at: the
// message of the debug record the backup logs at each.
var backupStages = map[string]string{
	"snapshot": embedded.BackupSnapshotTaken,
	"database": embedded.BackupDatabaseCopied,
}

// stageStop is the log of TestBackupKilledHelper's store: on the record
// of the backup reaching its stage, it says so and blocks the backup
// until the process is killed.
type stageStop struct{ stage string }

func (stageStop) Enabled(context.Context, slog.Level) bool { return true }
func (h stageStop) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h stageStop) WithGroup(string) slog.Handler          { return h }

func (h stageStop) Handle(_ context.Context, r slog.Record) error {
	if r.Message == backupStages[h.stage] {
		fmt.Println("stage", h.stage)
		select {} // until killed
	}
	return nil
}

// TestBackupKilled: a process killed (SIGKILL) in the middle of a backup
// leaves its store whole, and a backup directory that no store opens and
// CheckBackup refuses; the next backup into it replaces it.
func TestBackupKilled(t *testing.T) {
	for _, stage := range []string{"snapshot", "database"} {
		t.Run(stage, func(t *testing.T) {
			ctx := context.Background()
			dir, bdir := t.TempDir(), filepath.Join(t.TempDir(), "backup")
			cmd := exec.Command(os.Args[0], "-test.run=^TestBackupKilledHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), killHelperEnv+"="+dir+" "+bdir+" "+stage)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(out)
			var saw []string
			for lines.Scan() {
				saw = append(saw, lines.Text())
				if strings.HasPrefix(lines.Text(), "stage ") {
					break
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if len(saw) == 0 || saw[len(saw)-1] != "stage "+stage {
				t.Fatalf("the helper never reached stage %s: %q", stage, saw)
			}

			if _, err := embedded.Open(ctx, bdir); !errors.Is(err, embedded.ErrIncompleteBackup) {
				t.Fatalf("Open of the interrupted backup = %v, want ErrIncompleteBackup", err)
			}
			if _, err := embedded.CheckBackup(bdir); !errors.Is(err, embedded.ErrIncompleteBackup) {
				t.Fatalf("CheckBackup of the interrupted backup = %v", err)
			}
			if err := embedded.Restore(ctx, bdir, filepath.Join(t.TempDir(), "r")); !errors.Is(err, embedded.ErrIncompleteBackup) {
				t.Fatalf("Restore of the interrupted backup = %v", err)
			}

			s, err := embedded.Open(ctx, dir)
			if err != nil {
				t.Fatalf("the store after the kill: %v", err)
			}
			defer s.Close()
			c := mustLookup(t, s, "a.example")
			if n := storetest.CountOf(t, s, c, nostr.Filter{}); n != 200 {
				t.Fatalf("the store after the kill holds %d events, want 200", n)
			}
			storetest.MustSave(t, s, c, storetest.NewAuthor(t).Event(t, 1, 1_700_000_999, "after"))
			if _, err := s.Backup(ctx, bdir); err != nil {
				t.Fatalf("a backup over the interrupted one: %v", err)
			}
			b, err := embedded.Open(ctx, bdir)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if n := storetest.CountOf(t, b, c, nostr.Filter{}); n != 201 {
				t.Fatalf("the new backup holds %d events, want 201", n)
			}
		})
	}
}

func mustLookup(tb testing.TB, s store.Communities, host string) tenant.CommunityID {
	tb.Helper()
	c, err := s.LookupHost(context.Background(), host)
	if err != nil {
		tb.Fatalf("LookupHost(%q): %v", host, err)
	}
	return c
}

// TestBackupMeasure measures a backup of a store of
// BUZZ_BACKUP_MEASURE events (docs/benchmarks.md).
func TestBackupMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BUZZ_BACKUP_MEASURE"))
	if n <= 0 {
		t.Skip("set BUZZ_BACKUP_MEASURE to a number of events to measure")
	}
	ctx := context.Background()
	dir := t.TempDir()
	s, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, "a.example")
	authors := storetest.NewAuthors(t, 50)
	drafts := make([]storetest.Draft, n)
	for i := range drafts {
		drafts[i] = storetest.Draft{Author: authors[i%len(authors)], Event: nostr.Event{
			Kind: 1, CreatedAt: 1_700_000_000 + int64(i),
			Content: fmt.Sprintf("note %d: the quick brown fox jumps over the lazy dog, %d times", i, i%97),
			Tags:    nostr.Tags{{"t", fmt.Sprintf("topic%d", i%20)}},
		}}
	}
	evs := storetest.SignAll(t, drafts)
	storetest.SaveAll(t, s, c, evs)
	measure := func(s *embedded.Store, label string) {
		src, err := dirSizeOf(dir)
		if err != nil {
			t.Fatal(err)
		}
		b := filepath.Join(t.TempDir(), "b")
		info, err := s.Backup(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d events, data directory %.1f MiB, backup %.1f MiB in %v, writes paused %v", label, n,
			float64(src)/(1<<20), float64(info.Bytes)/(1<<20), info.Duration.Round(time.Millisecond), info.Pause.Round(time.Microsecond))
	}
	defer s.Close()
	if _, err := s.TextRows(ctx); err != nil { // the text index caught up
		t.Fatal(err)
	}
	measure(s, "events in the LSM engine")
}

func dirSizeOf(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

func newSecretKey(t *testing.T) nostr.SecretKey {
	t.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	return sk
}
