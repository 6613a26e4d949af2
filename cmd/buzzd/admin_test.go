package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	gonostr "github.com/nbd-wtf/go-nostr"
)

func TestAdminHostConfig(t *testing.T) {
	op := strings.Repeat("ab", 32)
	base := map[string]string{"RELAY_OPERATOR_PUBKEYS": op, "RELAY_OPERATOR_API_ORIGIN": "https://ops.example"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cfg, err := parseConfig("serve", nil, envMap(with("BUZZ_ADMIN_HOST", "Admin.Example:443")), io.Discard)
	if err != nil || cfg.AdminHost != "admin.example" {
		t.Fatalf("AdminHost = %q, %v", cfg.AdminHost, err)
	}
	if cfg, err := parseConfig("serve", nil, envMap(base), io.Discard); err != nil || cfg.AdminHost != "" {
		t.Fatalf("unset: %q, %v", cfg.AdminHost, err)
	}
	for name, env := range map[string]map[string]string{
		"no operators":          {"BUZZ_ADMIN_HOST": "admin.example"},
		"the relay's host":      with("BUZZ_ADMIN_HOST", "localhost:3000"),
		"the operator API host": with("BUZZ_ADMIN_HOST", "ops.example"),
		"a URL":                 with("BUZZ_ADMIN_HOST", "https://admin.example"),
		"a path":                with("BUZZ_ADMIN_HOST", "admin.example/x"),
	} {
		if _, err := parseConfig("serve", nil, envMap(env), io.Discard); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), op) {
			t.Errorf("%s: error echoes a key: %v", name, err)
		}
	}
}

// TestE2EAdminHost runs buzzd with BUZZ_ADMIN_HOST: a report filed on the
// relay's host appears in the operators' GET /reports on the admin host,
// the admin host upgrades no WebSocket, and the relay's host has no admin
// route.
func TestE2EAdminHost(t *testing.T) {
	opSK, opPK := newKey(t)
	const adminHost = "admin.e2e.test"
	port := freePort(t)
	p := startBuzzd(t, port, e2eSettings("BUZZ_DATA_DIR", t.TempDir(), "RELAY_OPERATOR_PUBKEYS", opPK,
		"RELAY_OPERATOR_API_ORIGIN", "http://ops.e2e.test", "BUZZ_ADMIN_HOST", adminHost))
	relayHost := "localhost:" + strconv.Itoa(port)

	alice, _ := newKey(t)
	_, target := newKey(t)
	c := connect(t, p.url)
	rep := signed(t, alice, 1984, time.Now().Unix(), "", gonostr.Tags{{"p", target, "spam"}})
	if err := c.publish(rep); err != nil {
		t.Fatalf("report: %v", err)
	}

	get := func(host, auth string, hdr ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/reports", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := get(adminHost, nip98Header(t, opSK, "http://"+adminHost+"/reports", http.MethodGet, nil))
	if status != http.StatusOK || !strings.Contains(body, rep.ID) || !strings.Contains(body, `"host":"`+relayHost+`"`) {
		t.Fatalf("GET /reports on the admin host: %d %s", status, body)
	}
	if status, _ := get(adminHost, nip98Header(t, opSK, "http://"+adminHost+"/reports", http.MethodGet, nil), "Origin", "http://evil.example"); status != http.StatusForbidden {
		t.Fatalf("foreign Origin: %d", status)
	}
	if status, _ := get(adminHost, ""); status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", status)
	}
	if status, _ := get(relayHost, nip98Header(t, opSK, "http://"+relayHost+"/reports", http.MethodGet, nil)); status != http.StatusNotFound {
		t.Fatalf("GET /reports on the relay's host: %d", status)
	}
	if _, resp, err := websocket.DefaultDialer.Dial("ws://127.0.0.1:"+strconv.Itoa(port), http.Header{"Host": {adminHost}}); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("WebSocket upgrade on the admin host: %v", err)
	}
}
