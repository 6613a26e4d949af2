package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	gonostr "github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

func TestParseConfigOperator(t *testing.T) {
	_, pk1 := newKey(t)
	_, pk2 := newKey(t)
	npub2, err := nip19.EncodePublicKey(pk2) // go-nostr: an independent encoder
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseConfig("serve", nil, envMap(map[string]string{
		"RELAY_OPERATOR_PUBKEYS":         " " + strings.ToUpper(pk1) + ", " + npub2 + ",",
		"RELAY_OPERATOR_API_ORIGIN":      "HTTPS://Ops.Example:443/",
		"BUZZ_MAX_COMMUNITIES_PER_OWNER": "3",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Operator; len(got.PubKeys) != 2 || got.PubKeys[0] != pk1 || got.PubKeys[1] != pk2 ||
		got.APIOrigin != "https://ops.example" || got.MaxCommunitiesPerOwner != 3 {
		t.Fatalf("operator config = %+v", got)
	}
	cfg, err = parseConfig("serve", nil, envMap(nil), io.Discard)
	if err != nil || len(cfg.Operator.PubKeys) != 0 {
		t.Fatalf("default: %+v, %v", cfg.Operator, err)
	}

	// A checksum error: the last character changed (npub2 is random, so it
	// may already end in the character that replaces it).
	badNpub := npub2[:len(npub2)-1] + "x"
	if badNpub == npub2 {
		badNpub = npub2[:len(npub2)-1] + "q"
	}
	for name, env := range map[string]map[string]string{
		"invalid key":           {"RELAY_OPERATOR_PUBKEYS": pk1 + ",nothex", "RELAY_OPERATOR_API_ORIGIN": "https://ops.example"},
		"short key":             {"RELAY_OPERATOR_PUBKEYS": pk1[:60], "RELAY_OPERATOR_API_ORIGIN": "https://ops.example"},
		"bad npub":              {"RELAY_OPERATOR_PUBKEYS": badNpub, "RELAY_OPERATOR_API_ORIGIN": "https://ops.example"},
		"keys without origin":   {"RELAY_OPERATOR_PUBKEYS": pk1},
		"origin with path":      {"RELAY_OPERATOR_PUBKEYS": pk1, "RELAY_OPERATOR_API_ORIGIN": "https://ops.example/api"},
		"origin without scheme": {"RELAY_OPERATOR_API_ORIGIN": "ops.example"},
		"origin ws":             {"RELAY_OPERATOR_API_ORIGIN": "wss://ops.example"},
		"quota zero":            {"BUZZ_MAX_COMMUNITIES_PER_OWNER": "0"},
		"quota not a number":    {"BUZZ_MAX_COMMUNITIES_PER_OWNER": "ten"},
	} {
		if _, err := parseConfig("serve", nil, envMap(env), io.Discard); err == nil {
			t.Errorf("%s: parseConfig succeeded", name)
		}
	}
}

// nip98Header signs a NIP-98 token with go-nostr (an implementation
// independent of this module's).
func nip98Header(t *testing.T, sk, url, method string, body []byte) string {
	t.Helper()
	tags := gonostr.Tags{{"u", url}, {"method", method}}
	if method == http.MethodPost {
		sum := sha256.Sum256(body)
		tags = append(tags, gonostr.Tag{"payload", hex.EncodeToString(sum[:])})
	}
	ev := signed(t, sk, 27235, time.Now().Unix(), "", tags)
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return "Nostr " + base64.StdEncoding.EncodeToString(raw)
}

// TestE2EOperatorAPI provisions and archives a community through a running
// buzzd: the API answers on its own host (mapped to no community), the new
// community serves WebSockets, archiving closes them and unmaps the host,
// and the RELAY_URL community cannot be archived.
func TestE2EOperatorAPI(t *testing.T) {
	opSK, opPK := newKey(t)
	port := freePort(t)
	ps := strconv.Itoa(port)
	origin := "http://ops.example:" + ps
	p := startBuzzd(t, port, e2eSettings(
		"BUZZ_DATA_DIR", t.TempDir(),
		"RELAY_OPERATOR_PUBKEYS", opPK,
		"RELAY_OPERATOR_API_ORIGIN", origin,
		"BUZZ_MAX_COMMUNITIES_PER_OWNER", "1",
	))
	base := "http://127.0.0.1:" + ps
	call := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		var raw []byte
		if body != nil {
			raw, _ = json.Marshal(body)
		}
		req, err := http.NewRequest(method, base+path, bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "ops.example:" + ps
		req.Header.Set("Authorization", nip98Header(t, opSK, origin+path, method, raw))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("%s %s: not JSON: %v", method, path, err)
		}
		return resp.StatusCode, m
	}
	dial := func(host string) (*websocket.Conn, int) {
		t.Helper()
		h := http.Header{}
		h.Set("Host", host)
		ws, resp, err := websocket.DefaultDialer.Dial("ws://127.0.0.1:"+ps, h)
		if err != nil {
			if resp == nil {
				t.Fatal(err)
			}
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { ws.Close() })
		return ws, http.StatusSwitchingProtocols
	}

	_, alice := newKey(t)
	st, body := call("POST", "/operator/communities", map[string]any{"host": "team.example", "initial_owner_pubkey": alice, "create_only": true})
	if st != http.StatusCreated || body["status"] != "created" {
		t.Fatalf("create: %d %v", st, body)
	}
	st, body = call("POST", "/operator/communities", map[string]any{"host": "second.example", "initial_owner_pubkey": alice})
	if st != http.StatusConflict || body["error"] != "limit_reached" || body["max_communities_per_owner"] != float64(1) {
		t.Fatalf("quota of 1: %d %v", st, body)
	}
	ws, st := dial("team.example")
	if st != http.StatusSwitchingProtocols {
		t.Fatalf("dial new community: %d", st)
	}
	st, body = call("POST", "/operator/communities/archive", map[string]any{"host": "localhost:" + ps, "owner_pubkey": ""})
	if st != http.StatusConflict || body["error"] != "protected_community" {
		t.Fatalf("archive RELAY_URL community: %d %v", st, body)
	}
	st, body = call("POST", "/operator/communities/archive", map[string]any{"host": "team.example", "owner_pubkey": alice})
	if st != http.StatusOK || body["status"] != "archived" {
		t.Fatalf("archive: %d %v", st, body)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
				t.Fatalf("archived community socket: %v", err)
			}
			break
		}
	}
	if _, st := dial("team.example"); st != http.StatusNotFound {
		t.Fatalf("dial archived community: %d", st)
	}
	// Unarchiving takes effect at once: the very next upgrade is served,
	// though the archive fenced the community a moment ago.
	st, body = call("POST", "/operator/communities/unarchive", map[string]any{"host": "team.example", "owner_pubkey": alice})
	if st != http.StatusOK || body["status"] != "unarchived" {
		t.Fatalf("unarchive: %d %v", st, body)
	}
	if _, st := dial("team.example"); st != http.StatusSwitchingProtocols {
		t.Fatalf("dial right after unarchive: %d", st)
	}
	// The API host itself is no community; the relay's own host still is.
	if _, st := dial("ops.example:" + ps); st != http.StatusNotFound {
		t.Fatalf("dial API host: %d", st)
	}
	if _, st := dial("localhost:" + ps); st != http.StatusSwitchingProtocols {
		t.Fatalf("dial RELAY_URL host: %d", st)
	}
	_ = p
}
