package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
)

func TestRelayKeyConfig(t *testing.T) {
	good := strings.Repeat("1f", 32)
	cfg, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_RELAY_PRIVATE_KEY": good}), io.Discard)
	if err != nil || cfg.RelayKey == nil || cfg.RelayKey.Hex() != good {
		t.Fatalf("cfg.RelayKey = %v, %v", cfg.RelayKey, err)
	}
	cfg, err = parseConfig("serve", nil, envMap(nil), io.Discard)
	if err != nil || cfg.RelayKey != nil {
		t.Fatalf("unset key: %v, %v", cfg.RelayKey, err)
	}
	for _, bad := range []string{"zz" + good[2:], good[:62], strings.Repeat("ff", 32), strings.Repeat("00", 32)} {
		_, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_RELAY_PRIVATE_KEY": bad}), io.Discard)
		if err == nil {
			t.Fatalf("key %q accepted", bad)
		}
		if strings.Contains(err.Error(), bad) {
			t.Fatalf("the error echoes the secret: %v", err)
		}
		_, err = parseConfig("serve", []string{"-relay-private-key", bad}, envMap(nil), io.Discard)
		if err == nil || strings.Contains(err.Error(), bad) {
			t.Fatalf("flag: %v", err)
		}
	}
}

// TestRelayKeySurvivesRestart: without BUZZ_RELAY_PRIVATE_KEY, buzzd
// generates the relay key on first start and keeps it with the data, so a
// restarted buzzd signs a community's channel state (39000) with the same
// key and names the same NIP-11 pubkey; a process configured with another
// key refuses to start. On both backends.
func TestRelayKeySurvivesRestart(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		signer, out := relaySignerAcrossRestart(t, e2eSettings("BUZZ_DATA_DIR", dir))
		fi, err := os.Stat(filepath.Join(dir, embedded.RelayKeyFileName))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("relay.key: %v %v, want mode 0600", fi, err)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, embedded.RelayKeyFileName))
		sk, err := nostr.ParseSecretKey(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, sk.Hex()) {
			t.Fatal("the relay key was logged")
		}
		// The community's host advertises its state signer (checked in
		// relaySignerAcrossRestart), never the stored key itself.
		if signer.nip11 == sk.PublicKey() {
			t.Fatal("a community host advertises the relay key, not its state signer")
		}
		refusesOtherKey(t, e2eSettings("BUZZ_DATA_DIR", dir))
	})
	t.Run("postgres", func(t *testing.T) {
		settings := e2eSettings("DATABASE_URL", freshDatabase(t), "BUZZ_AUTO_MIGRATE", "on", "BUZZ_DATA_DIR", t.TempDir())
		relaySignerAcrossRestart(t, settings)
		refusesOtherKey(t, settings)
	})
}

type relaySigner struct{ state, nip11 string }

// relaySignerAcrossRestart starts buzzd twice with settings, creating a
// channel each time, and checks that both state events and NIP-11 name the
// same keys. It returns them and the first run's output.
func relaySignerAcrossRestart(t *testing.T, settings map[string]string) (relaySigner, string) {
	t.Helper()
	var first relaySigner
	var out string
	port := freePort(t) // the same RELAY_URL, hence the same community, twice
	for run := range 2 {
		p := startBuzzd(t, port, settings)
		c := dialAs(t, port, fmt.Sprintf("localhost:%d", port))
		ch := newUUID()
		if ok := c.publish(sign(t, mustKey(t), 9007, nostr.Tag{"h", ch}, nostr.Tag{"name", "restart"})); !ok.OK {
			t.Fatalf("create channel: %q", ok.Message)
		}
		st, _ := c.req(nostr.Filter{Kinds: []int{39000}, Tags: map[string][]string{"d": {ch}}})
		if len(st) != 1 {
			t.Fatalf("run %d: %d state events", run, len(st))
		}
		pub, self := nip11Keys(t, fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("localhost:%d", port))
		if pub != st[0].PubKey || self != st[0].PubKey {
			t.Fatalf("run %d: NIP-11 pubkey %s, self %s; state signed by %s", run, pub, self, st[0].PubKey)
		}
		got := relaySigner{state: st[0].PubKey, nip11: pub}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("run %d exited %d", run, code)
		}
		if run == 0 {
			first, out = got, p.out.String()
			if strings.Contains(out, "ephemeral") {
				t.Fatalf("first start still runs on an ephemeral key:\n%s", out)
			}
			continue
		}
		if got != first {
			t.Fatalf("after restart the relay signs as %+v, before as %+v", got, first)
		}
	}
	return first, out
}

// refusesOtherKey starts buzzd with settings plus a new BUZZ_RELAY_PRIVATE_KEY
// and expects it to refuse to start, without echoing the key.
func refusesOtherKey(t *testing.T, settings map[string]string) {
	t.Helper()
	other := mustKey(t)
	s := maps.Clone(settings)
	s["BUZZ_RELAY_PRIVATE_KEY"] = other.Hex()
	cmd := exec.Command(buildBuzzd(t))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"RELAY_URL=ws://localhost:" + strconv.Itoa(freePort(t))}
	for k, v := range s {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "differs from the deployment's stored relay key") {
		t.Fatalf("a process with another relay key started or failed otherwise: %v\n%s", err, out)
	}
	if strings.Contains(string(out), other.Hex()) {
		t.Fatal("the configured key was echoed")
	}
}

// nip11Keys returns the "pubkey" and "self" of the NIP-11 document served
// at addr for host.
func nip11Keys(t *testing.T, addr, host string) (pubkey, self string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Host = host
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		PubKey string `json:"pubkey"`
		Self   string `json:"self"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc.PubKey, doc.Self
}
