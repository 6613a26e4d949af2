package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
)

// buzzdExec runs the built buzzd with exactly env (plus PATH and HOME), as
// an operator's shell would, and returns its combined output.
func buzzdExec(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(buildBuzzd(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// relayPubKey returns the NIP-11 document's pubkey served on host.
func relayPubKey(t *testing.T, port int, host string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
	req.Host = host
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct{ PubKey string }
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.PubKey == "" {
		t.Fatalf("NIP-11 on %s: %v %+v", host, err, doc)
	}
	return doc.PubKey
}

// nameHolder returns who holds name on host.
func nameHolder(t *testing.T, port int, host, name string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/.well-known/nostr.json?name=%s", port, name), nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct{ Names map[string]string }
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc.Names[name]
}

// TestMoveEmbeddedToPostgres follows the procedure of docs/operator.md
// ("Moving from the embedded store to PostgreSQL") with the buzzd binary:
// a relay on the embedded store takes events, a channel, a NIP-05 name and
// a ban over WebSocket; it is stopped; buzzd export -all -with-relay-key,
// buzzd migrate and buzzd import move everything into a new PostgreSQL
// database; buzzd started on it serves the same events, channel state
// signed with the same relay key, the name and the ban.
func TestMoveEmbeddedToPostgres(t *testing.T) {
	const host = "move.example"
	dir := t.TempDir()
	src := map[string]string{"BUZZ_DATA_DIR": dir}
	owner, alice, bob := mustKey(t), mustKey(t), mustKey(t)
	if out, err := buzzdExec(t, src, "admin", "community", "add", host, "-owner", owner.PublicKey()); err != nil {
		t.Fatalf("community add: %v\n%s", err, out)
	}

	// The relay on the embedded store, written to by clients.
	port := freePort(t)
	p := startBuzzd(t, port, e2eSettings("BUZZ_DATA_DIR", dir))
	c := dialAs(t, port, host)
	ch := newUUID()
	var events []*nostr.Event
	publish := func(ev *nostr.Event) {
		t.Helper()
		if ok := c.publish(ev); !ok.OK {
			t.Fatalf("publish kind %d: %q", ev.Kind, ok.Message)
		}
		events = append(events, ev)
	}
	publish(sign(t, owner, 9007, nostr.Tag{"h", ch}, nostr.Tag{"name", "general"}))
	events = events[:0] // a command, not stored as such
	publish(sign(t, owner, nostr.KindChatMessage, nostr.Tag{"h", ch}))
	note := &nostr.Event{Kind: nostr.KindNote, CreatedAt: time.Now().Unix(), Content: "hello from the embedded store"}
	profile := &nostr.Event{Kind: 0, CreatedAt: time.Now().Unix(), Content: `{"name":"alice","nip05":"alice@` + host + `"}`}
	for _, ev := range []*nostr.Event{note, profile} {
		if err := ev.Sign(alice); err != nil {
			t.Fatal(err)
		}
		publish(ev)
	}
	if ok := c.publish(sign(t, owner, nostr.KindBan, nostr.Tag{"p", bob.PublicKey()}, nostr.Tag{"reason", "spam"})); !ok.OK {
		t.Fatalf("ban: %q", ok.Message)
	}
	state, _ := c.req(nostr.Filter{Kinds: []int{39000}, Tags: map[string][]string{"d": {ch}}})
	if len(state) != 1 {
		t.Fatalf("%d channel metadata events before the move", len(state))
	}
	relayPK := relayPubKey(t, port, host)
	if got := nameHolder(t, port, host, "alice"); got != alice.PublicKey() {
		t.Fatalf("alice@%s is %q before the move", host, got)
	}

	// 1. PostgreSQL prepared while the relay serves: a new database, migrated.
	pg := map[string]string{"DATABASE_URL": freshDatabase(t)}
	if out, err := buzzdExec(t, pg, "migrate"); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}

	// 2. The write pause: stop buzzd. 3. Export, with the relay key.
	pause := time.Now()
	stopBuzzd(t, p)
	file := filepath.Join(t.TempDir(), "buzz-export.jsonl")
	if out, err := buzzdExec(t, src, "export", "-all", "-with-relay-key", "-o", file); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	// 4. Import (twice: the second adds nothing).
	out, err := buzzdExec(t, pg, "import", "-f", file)
	if err != nil || !strings.Contains(out, "relay_key: 1 read, 1 new") || !strings.Contains(out, " 0 refused") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	out, err = buzzdExec(t, pg, "import", "-f", file)
	if err != nil || !strings.Contains(out, "relay_key: 1 read, 0 new") {
		t.Fatalf("second import: %v\n%s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(l, " read, ") && !strings.Contains(l, " read, 0 new") {
			t.Errorf("second import added something: %q", l)
		}
	}
	if out, err := buzzdExec(t, pg, "audit", "verify", "-all"); err != nil {
		t.Fatalf("audit verify: %v\n%s", err, out)
	}

	// 5. buzzd on PostgreSQL: a client reads everything, signed as before.
	port2 := freePort(t)
	startBuzzd(t, port2, e2eSettings("DATABASE_URL", pg["DATABASE_URL"]))
	t.Logf("write pause (stop, export, import twice, audit verify, start): %v", time.Since(pause).Round(time.Millisecond))
	if got := relayPubKey(t, port2, host); got != relayPK {
		t.Errorf("NIP-11 pubkey %s after the move, want %s", got, relayPK)
	}
	c2 := dialAs(t, port2, host)
	for _, ev := range events {
		got, closed := c2.req(nostr.Filter{IDs: []string{ev.ID}})
		if closed != "" || len(got) != 1 || string(got[0].AppendJSON(nil)) != string(ev.AppendJSON(nil)) {
			t.Errorf("event kind %d after the move: %v %q", ev.Kind, got, closed)
		}
	}
	after, _ := c2.req(nostr.Filter{Kinds: []int{39000}, Tags: map[string][]string{"d": {ch}}})
	if len(after) != 1 || after[0].PubKey != state[0].PubKey || after[0].ID != state[0].ID {
		t.Errorf("channel metadata after the move: %v, want %s by %s", after, state[0].ID, state[0].PubKey)
	}
	if got := nameHolder(t, port2, host, "alice"); got != alice.PublicKey() {
		t.Errorf("alice@%s is %q after the move", host, got)
	}
	if ok := c2.publish(sign(t, bob, nostr.KindNote)); ok.OK || !strings.HasPrefix(ok.Message, "blocked:") {
		t.Errorf("banned bob after the move: %v %q", ok.OK, ok.Message)
	}
	// A new write lands on PostgreSQL.
	if ok := c2.publish(sign(t, alice, nostr.KindNote)); !ok.OK {
		t.Errorf("publish after the move: %q", ok.Message)
	}
}

// TestImportRefusesAnotherRelayKey: an export's relay key is stored by
// import only where no key is; a store holding another key keeps it and
// the line is refused. An export without -with-relay-key carries none.
func TestImportRefusesAnotherRelayKey(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	seedTransfer(t, src)
	file := filepath.Join(tmp, "x.jsonl")
	if _, e, err := buzzdRun(t, map[string]string{"BUZZ_DATA_DIR": src}, "export", "-host", "b.example", "-with-relay-key", "-o", file); err != nil {
		t.Fatalf("%v\n%s", err, e)
	}
	plain, _, err := buzzdRun(t, map[string]string{"BUZZ_DATA_DIR": src}, "export", "-host", "b.example")
	if err != nil || strings.Contains(plain, `"relay_key"`) || strings.Contains(plain, "secret_key") {
		t.Fatalf("an export without -with-relay-key carries the key: %v", err)
	}
	ctx := context.Background()
	srcStore, err := embedded.Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	srcKey, err := srcStore.RelayKey(ctx, mustKey(t))
	srcStore.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readFile(t, file)), srcKey.Hex()) {
		t.Fatal("the export does not carry the source's relay key")
	}

	dstDir := filepath.Join(tmp, "dst")
	dst, err := embedded.Open(ctx, dstDir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := dst.RelayKey(ctx, mustKey(t))
	dst.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := buzzdRun(t, map[string]string{"BUZZ_DATA_DIR": dstDir}, "import", "-f", file)
	if err == nil || !strings.Contains(err.Error(), "line 2: the destination holds a different relay key") {
		t.Fatalf("import over another key: %v\n%s", err, out)
	}
	dst, err = embedded.Open(ctx, dstDir)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if kept, err := dst.RelayKey(ctx, srcKey); err != nil || kept != other {
		t.Fatalf("the destination's key changed: %v", err)
	}
}
