package main

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
)

// TestSyncTwoBuzzd: "buzzd sync" reconciles a community of a stopped
// buzzd's store with a running buzzd over NIP-77, both ways, on both
// backends (the embedded store syncing with a PostgreSQL relay, and the
// reverse); a gift wrap the remote holds is not copied (sync reads as a
// reader who has not authenticated), and a second run finds nothing to do.
func TestSyncTwoBuzzd(t *testing.T) {
	for _, tc := range []struct{ name, local, remote string }{
		{"embedded syncs with postgres", "embedded", "postgres"},
		{"postgres syncs with embedded", "postgres", "embedded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := func(kind string) map[string]string {
				if kind == "postgres" {
					return e2eSettings("DATABASE_URL", freshDatabase(t), "BUZZ_AUTO_MIGRATE", "on", "BUZZ_DATA_DIR", t.TempDir())
				}
				return e2eSettings("BUZZ_DATA_DIR", t.TempDir())
			}
			localSettings, remoteSettings := store(tc.local), store(tc.remote)
			sk, _ := newKey(t)
			var shared, localOnly, remoteOnly []gonostr.Event
			base := time.Now().Unix() - 1000
			for i := range 60 {
				ev := signed(t, sk, 1, base+int64(i), fmt.Sprintf("note %d", i), nil)
				switch i % 10 {
				case 2:
					localOnly = append(localOnly, ev)
				case 5, 8:
					remoteOnly = append(remoteOnly, ev)
				default:
					shared = append(shared, ev)
				}
			}
			publishAll := func(url string, evs ...[]gonostr.Event) {
				c := connect(t, url)
				for _, list := range evs {
					for _, ev := range list {
						if err := c.publish(ev); err != nil {
							t.Fatalf("publish to %s: %v", url, err)
						}
					}
				}
			}
			// The local relay gets its events, then stops (an embedded
			// store is opened by one process at a time).
			localPort := freePort(t)
			l := startBuzzd(t, localPort, localSettings)
			publishAll(l.url, shared, localOnly)
			stop := func(p *buzzdProc) {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				if code := p.wait(t, 30*time.Second); code != 0 {
					t.Fatalf("buzzd exited %d", code)
				}
			}
			stop(l)

			r := startBuzzd(t, freePort(t), remoteSettings)
			publishAll(r.url, shared, remoteOnly)
			// A gift wrap for someone: no reader without authentication sees it.
			_, pk := newKey(t)
			wrap := signed(t, gonostr.GeneratePrivateKey(), 1059, base, "sealed", gonostr.Tags{{"p", pk}})
			publishAll(r.url, []gonostr.Event{wrap})

			env := map[string]string{"RELAY_URL": l.url}
			for k, v := range localSettings {
				env[k] = v
			}
			out, code := runBuzzdCmd(t, env, "sync", r.url, "-dir", "both")
			if code != 0 {
				t.Fatalf("buzzd sync exited %d:\n%s", code, out)
			}
			for _, want := range []string{
				fmt.Sprintf("reconciled %d local events", len(shared)+len(localOnly)),
				fmt.Sprintf("%d only here, %d only there", len(localOnly), len(remoteOnly)),
				fmt.Sprintf("down: %d to copy, %d fetched, %d stored", len(remoteOnly), len(remoteOnly), len(remoteOnly)),
				fmt.Sprintf("up: %d to copy, %d fetched, %d stored", len(localOnly), len(localOnly), len(localOnly)),
			} {
				if !strings.Contains(out, want) {
					t.Fatalf("sync output lacks %q:\n%s", want, out)
				}
			}
			// Converged: a second run has nothing to copy.
			out, code = runBuzzdCmd(t, env, "sync", r.url)
			if code != 0 || !strings.Contains(out, "0 only here, 0 only there") {
				t.Fatalf("second sync (exit %d):\n%s", code, out)
			}

			all := append(append(append([]gonostr.Event(nil), shared...), localOnly...), remoteOnly...)
			var want []string
			for _, ev := range all {
				want = append(want, ev.ID)
			}
			slices.Sort(want)
			check := func(url string) {
				evs, err := connect(t, url).query(gonostr.Filter{Kinds: []int{1}, Limit: 500})
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
			check(r.url)
			stop(r)
			l = startBuzzd(t, localPort, localSettings)
			check(l.url)
			evs, err := connect(t, l.url).query(gonostr.Filter{IDs: []string{wrap.ID}})
			if err != nil || len(evs) != 0 {
				t.Fatalf("the gift wrap reached the local store: %d events, %v", len(evs), err)
			}
		})
	}
}

func TestSyncUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "the remote relay's URL is required"},
		{[]string{"http://x"}, "must start with ws://"},
		{[]string{"ws://x", "-dir", "sideways"}, "want up, down or both"},
		{[]string{"ws://x", "ws://y"}, "one URL only"},
		{[]string{"ws://x", "-host"}, "-host needs a value"},
	} {
		_, _, err := syncFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	o, rest, err := syncFlags([]string{"-data-dir", "d", "ws://x", "-filter={\"kinds\":[1]}", "-dir=up", "-host", "h"})
	if err != nil || o.url != "ws://x" || o.dir != "up" || o.host != "h" || o.filter != `{"kinds":[1]}` || !slices.Equal(rest, []string{"-data-dir", "d"}) {
		t.Fatalf("%+v %v %v", o, rest, err)
	}
}
