package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
)

// TestSyncKhatru: buzzd sync against another implementation of NIP-77's
// relay side — khatru (v0.19.1 with eventstore v0.16.2's slicestore and
// Negentropy on), built in a scratch module outside this repository.
// BUZZ_KHATRU_NEG names that module's directory (it is built here) or a
// built binary; the binary takes its listen address as its one argument.
// Without it the test skips: khatru is no dependency of buzz.
// docs/operator.md shows the scratch module.
func TestSyncKhatru(t *testing.T) {
	src := os.Getenv("BUZZ_KHATRU_NEG")
	if src == "" {
		t.Skip("BUZZ_KHATRU_NEG is not set (a khatru scratch module or binary)")
	}
	bin := src
	if fi, err := os.Stat(src); err != nil {
		t.Fatal(err)
	} else if fi.IsDir() {
		bin = filepath.Join(t.TempDir(), "khatruneg")
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build khatru: %v\n%s", err, out)
		}
	}
	port := freePort(t)
	k := exec.Command(bin, "127.0.0.1:"+strconv.Itoa(port))
	out := &lockedBuffer{}
	k.Stdout, k.Stderr = out, out
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k.Process.Kill()
		_ = k.Wait()
		if t.Failed() {
			t.Logf("khatru output:\n%s", out.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("khatru does not listen: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // polling a port another process opens
	}
	kURL := "ws://127.0.0.1:" + strconv.Itoa(port)

	sk, _ := newKey(t)
	var shared, localOnly, remoteOnly []gonostr.Event
	base := time.Now().Unix() - 1000
	for i := range 300 {
		ev := signed(t, sk, 1, base+int64(i/3), fmt.Sprintf("note %d", i), nil)
		switch i % 20 {
		case 4:
			localOnly = append(localOnly, ev)
		case 9, 14:
			remoteOnly = append(remoteOnly, ev)
		default:
			shared = append(shared, ev)
		}
	}
	publishAll := func(url string, lists ...[]gonostr.Event) {
		c := connect(t, url)
		for _, l := range lists {
			for _, ev := range l {
				if err := c.publish(ev); err != nil {
					t.Fatalf("publish to %s: %v", url, err)
				}
			}
		}
	}
	publishAll(kURL, shared, remoteOnly)
	settings := e2eSettings("BUZZ_DATA_DIR", t.TempDir())
	localPort := freePort(t)
	l := startBuzzd(t, localPort, settings)
	publishAll(l.url, shared, localOnly)
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("buzzd exited %d", code)
	}

	env := map[string]string{"RELAY_URL": l.url}
	for k, v := range settings {
		env[k] = v
	}
	syncOut, code := runBuzzdCmd(t, env, "sync", kURL, "-filter", `{"kinds":[1]}`)
	t.Logf("buzzd sync %s:\n%s", kURL, syncOut)
	if code != 0 || !strings.Contains(syncOut, fmt.Sprintf("%d only here, %d only there", len(localOnly), len(remoteOnly))) {
		t.Fatalf("buzzd sync exited %d:\n%s", code, syncOut)
	}
	syncOut, code = runBuzzdCmd(t, env, "sync", kURL, "-filter", `{"kinds":[1]}`)
	if code != 0 || !strings.Contains(syncOut, "0 only here, 0 only there") {
		t.Fatalf("second sync exited %d:\n%s", code, syncOut)
	}
	var want []string
	for _, l := range [][]gonostr.Event{shared, localOnly, remoteOnly} {
		for _, ev := range l {
			want = append(want, ev.ID)
		}
	}
	slices.Sort(want)
	check := func(url string) {
		evs, err := connect(t, url).query(gonostr.Filter{Kinds: []int{1}, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range evs {
			got = append(got, ev.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s holds %d notes, want %d", url, len(got), len(want))
		}
	}
	check(kURL)
	l = startBuzzd(t, localPort, settings)
	check(l.url)
}
