package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
)

// backupSettings are a relay's settings for the backup tests: a data
// directory, and rate limits that let one connection publish quickly.
func backupSettings(dataDir string) map[string]string {
	return e2eSettings("BUZZ_DATA_DIR", dataDir, "BUZZ_MESSAGE_RATE", "10000", "BUZZ_MESSAGE_BURST", "10000", "BUZZ_LOG_LEVEL", "info", "BUZZ_MAX_LIMIT", "100000")
}

// buzzdCmd runs a buzzd command with exactly the given settings and
// returns its combined output and exit code.
func buzzdCmd(t *testing.T, settings map[string]string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBuzzd(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range settings {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("buzzd %v: %v", args, err)
	}
	return string(out), 0
}

// publishN publishes n notes of sk through c and returns their ids.
func publishN(t *testing.T, c *client, sk string, n int, label string) []string {
	t.Helper()
	now := time.Now().Unix()
	ids := make([]string, 0, n)
	for i := range n {
		ev := signed(t, sk, 1, now-int64(i%600), fmt.Sprintf("%s %d", label, i), nil)
		if err := c.publish(ev); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		ids = append(ids, ev.ID)
	}
	return ids
}

// storedIDs returns the ids of pk's notes the relay at url serves.
func storedIDs(t *testing.T, url, pk string) map[string]bool {
	t.Helper()
	evs, err := connect(t, url).query(gonostr.Filter{Authors: []string{pk}, Kinds: []int{1}, Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, ev := range evs {
		out[ev.ID] = true
	}
	return out
}

// TestBackupE2E: buzzd backup, run while buzzd serves and a client
// publishes, writes a directory buzzd starts on, holding every event
// acknowledged before the backup began; buzzd restore copies it into a
// new data directory, which serves the same events.
func TestBackupE2E(t *testing.T) {
	data := t.TempDir()
	settings := backupSettings(data)
	// One port for every relay of the test: the community is the
	// relay URL's host, port included.
	port := freePort(t)
	p := startBuzzd(t, port, settings)
	sk, pk := newKey(t)
	before := publishN(t, connect(t, p.url), sk, 200, "before")

	// A writer publishes all along the backup.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var during int
	go func() {
		defer wg.Done()
		c := connect(t, p.url)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := c.publish(signed(t, sk, 1, time.Now().Unix(), fmt.Sprintf("during %d", i), nil)); err != nil {
				t.Errorf("publish during the backup: %v", err)
				return
			}
			during++
		}
	}()
	bdir := filepath.Join(t.TempDir(), "backup")
	// The relay's own listener serves no backups, to any host.
	resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(port)+"/backup?dir="+url.QueryEscape(bdir), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := os.Stat(bdir); resp.StatusCode == http.StatusOK || err == nil {
		t.Fatalf("POST /backup on the relay's port: %s, backup directory: %v", resp.Status, err)
	}
	out, code := buzzdCmd(t, map[string]string{"BUZZ_DATA_DIR": data}, "backup", bdir)
	close(stop)
	wg.Wait()
	if code != 0 || !strings.Contains(out, "backed up") || !strings.Contains(out, "events in lsm") {
		t.Fatalf("buzzd backup: exit %d\n%s", code, out)
	}
	if !strings.Contains(p.out.String(), "backup written") {
		t.Fatalf("the serving buzzd did not take the backup:\n%s", p.out.String())
	}
	t.Logf("%d events published during the backup", during)

	// Start on the backup itself.
	stopBuzzd(t, p)
	b := startBuzzd(t, port, backupSettings(bdir))
	inBackup := storedIDs(t, b.url, pk)
	if key := relayKeyLine(p.out.String()); key == "" || !strings.Contains(b.out.String(), key+" source=stored") {
		t.Fatalf("the backup does not hold the relay key %q:\n%s", key, b.out.String())
	}
	for _, id := range before {
		if !inBackup[id] {
			t.Fatalf("event %.8s acknowledged before the backup is not in it", id)
		}
	}
	stopBuzzd(t, b)

	// Restore into a new data directory.
	restored := filepath.Join(t.TempDir(), "restored")
	if out, code := buzzdCmd(t, map[string]string{"BUZZ_DATA_DIR": restored}, "restore", bdir); code != 0 {
		t.Fatalf("buzzd restore: exit %d\n%s", code, out)
	}
	if out, code := buzzdCmd(t, map[string]string{"BUZZ_DATA_DIR": restored}, "restore", bdir); code == 0 || !strings.Contains(out, "not empty") {
		t.Fatalf("a second buzzd restore over the restored store: exit %d\n%s", code, out)
	}
	r := startBuzzd(t, port, backupSettings(restored))
	if got := storedIDs(t, r.url, pk); len(got) != len(inBackup) {
		t.Fatalf("the restored store serves %d events, the backup %d", len(got), len(inBackup))
	}
}

// stopBuzzd stops p with SIGINT and waits for a clean exit.
func stopBuzzd(t *testing.T, p *buzzdProc) {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("buzzd exited %d", code)
	}
}

// TestBackupKill9E2E: buzzd killed (SIGKILL) while it writes a backup
// leaves its data directory whole — it starts again and serves every
// event — and a backup directory that buzzd refuses to start on and
// buzzd restore refuses; the next backup into it replaces it.
func TestBackupKill9E2E(t *testing.T) {
	data := t.TempDir()
	settings := backupSettings(data)
	port := freePort(t) // every relay of the test: the community is the URL's host and port
	p := startBuzzd(t, port, settings)
	sk, pk := newKey(t)
	// Enough events that a backup takes a while, from a few connections.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var published []string
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := publishN(t, connect(t, p.url), sk, 500, fmt.Sprintf("writer %d", w))
			mu.Lock()
			published = append(published, ids...)
			mu.Unlock()
		}()
	}
	wg.Wait()

	// Ask for backups until one is caught in the middle: kill -9 as soon
	// as its directory appears (it holds the marker from then until the
	// backup completes). A backup that completed first is checked and the
	// next one asked for.
	var bdir string
	killed := false
	for attempt := 0; attempt < 10 && !killed; attempt++ {
		bdir = filepath.Join(t.TempDir(), "backup")
		cmd := exec.Command(buildBuzzd(t), "backup", bdir)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "BUZZ_DATA_DIR=" + data}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
	poll:
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("buzzd backup failed: %v", err)
				}
				if _, err := embedded.CheckBackup(bdir); err != nil {
					t.Fatalf("a backup that completed: %v", err)
				}
				break poll
			default:
			}
			if _, err := os.Stat(filepath.Join(bdir, embedded.BackupIncomplete)); err == nil {
				if err := p.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				<-p.done
				clientErr := <-exited
				if _, err := embedded.CheckBackup(bdir); err == nil {
					// The backup completed before the kill landed.
					p = startBuzzd(t, port, settings)
					break poll
				} else if clientErr == nil {
					t.Fatalf("buzzd backup succeeded, and its backup is not complete: %v", err)
				}
				killed = true
				t.Logf("attempt %d: buzzd killed in the middle of the backup", attempt+1)
				break poll
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	if !killed {
		t.Fatal("no backup was caught in the middle in 10 attempts")
	}
	if _, err := os.Stat(filepath.Join(bdir, embedded.BackupManifest)); err == nil {
		if _, err := os.Stat(filepath.Join(bdir, embedded.BackupIncomplete)); err != nil {
			t.Fatal("the killed backup's directory looks complete")
		}
	}

	// buzzd refuses to start on the interrupted backup, and to restore it.
	out, code := buzzdCmd(t, backupSettings(bdir), "-bind", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	if code == 0 || !strings.Contains(out, "incomplete backup") {
		t.Fatalf("buzzd on an interrupted backup: exit %d\n%s", code, out)
	}
	out, code = buzzdCmd(t, map[string]string{"BUZZ_DATA_DIR": filepath.Join(t.TempDir(), "r")}, "restore", bdir)
	if code == 0 || !strings.Contains(out, "incomplete backup") {
		t.Fatalf("buzzd restore of an interrupted backup: exit %d\n%s", code, out)
	}

	// The data directory starts again and serves every event.
	p = startBuzzd(t, port, settings)
	got := storedIDs(t, p.url, pk)
	for _, id := range published {
		if !got[id] {
			t.Fatalf("event %.8s is gone after the kill", id)
		}
	}
	// A backup into the interrupted one replaces it.
	if out, code := buzzdCmd(t, map[string]string{"BUZZ_DATA_DIR": data}, "backup", bdir); code != 0 {
		t.Fatalf("buzzd backup over the interrupted one: exit %d\n%s", code, out)
	}
	stopBuzzd(t, p)
	b := startBuzzd(t, port, backupSettings(bdir))
	if n := len(storedIDs(t, b.url, pk)); n != len(published) {
		t.Fatalf("the new backup serves %d events, want %d", n, len(published))
	}
}

// TestConvertE2E: buzzd started on a data directory in the old layout
// (its events in SQLite's tables, no events directory) converts it before
// serving: every event is served and found by a search as before.
func TestConvertE2E(t *testing.T) {
	data := t.TempDir()
	settings := backupSettings(data)
	port := freePort(t) // both relays: the community is the URL's host and port
	p := startBuzzd(t, port, settings)
	sk, pk := newKey(t)
	ids := publishN(t, connect(t, p.url), sk, 100, "hello")
	search, err := connect(t, p.url).query(gonostr.Filter{Search: "hello", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	stopBuzzd(t, p)
	toOldLayout(t, data)

	p = startBuzzd(t, port, settings)
	if !waitOutput(p, "converted the data directory") {
		t.Fatalf("buzzd did not log the conversion:\n%s", p.out.String())
	}
	if _, err := os.Stat(filepath.Join(data, embedded.DefaultFileName+embedded.EventsDirSuffix)); err != nil {
		t.Fatalf("no events directory after the conversion: %v", err)
	}
	got := storedIDs(t, p.url, pk)
	for _, id := range ids {
		if !got[id] {
			t.Fatalf("event %.8s is gone after the conversion", id)
		}
	}
	after, err := connect(t, p.url).query(gonostr.Filter{Search: "hello", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(search) {
		t.Fatalf("search finds %d events after the conversion, %d before", len(after), len(search))
	}
}

// toOldLayout rewrites the stopped data directory dir into the layout of
// the builds that kept events in SQLite's tables: its events written there
// with SQL, its events directory removed.
func toOldLayout(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		host string
		ev   *nostr.Event
	}
	var rows []row
	comms, err := st.Communities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range comms {
		for r, err := range st.Query(ctx, c.ID, nostr.Filter{}) {
			if err != nil {
				t.Fatal(err)
			}
			ev, err := nostr.ParseEvent(r.Raw)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, row{c.Host, ev})
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("no events to move")
	}
	if err := os.RemoveAll(filepath.Join(dir, embedded.DefaultFileName+embedded.EventsDirSuffix)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, embedded.DefaultFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range rows {
		id, _ := hex.DecodeString(r.ev.ID)
		pk, _ := hex.DecodeString(r.ev.PubKey)
		if _, err := db.ExecContext(ctx, `INSERT INTO events (community, id, pubkey, created_at, kind, raw)
			SELECT seq, ?, ?, ?, ?, ? FROM communities WHERE host = ?`, id, pk, r.ev.CreatedAt, r.ev.Kind, r.ev.AppendJSON(nil), r.host); err != nil {
			t.Fatal(err)
		}
	}
}

// waitOutput reports whether p's output comes to hold s within 10 s.
func waitOutput(p *buzzdProc, s string) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(p.out.String(), s) {
			return true
		}
	}
	return false
}

// relayKeyLine returns the "pubkey=…" of buzzd's "relay key ready" log
// line in out.
func relayKeyLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, `msg="relay key ready" pubkey=`); i >= 0 {
			f := strings.Fields(l[i+len(`msg="relay key ready" `):])
			return f[0]
		}
	}
	return ""
}
