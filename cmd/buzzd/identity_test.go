package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// TestE2ECommunityIdentity runs buzzd with the operator API: the operator
// and then the community's owner (NIP-98 on the community's own host) set
// its profile and policy; NIP-11 and the page show the profile on that host
// only; another signer is refused; every change is in the community's
// audit chain with its actor.
func TestE2ECommunityIdentity(t *testing.T) {
	opSK, opPK := newKey(t)
	aliceSK, alice := newKey(t)
	mallorySK, _ := newKey(t)
	dir := t.TempDir()
	port := freePort(t)
	ps := strconv.Itoa(port)
	origin := "http://ops.example:" + ps
	p := startBuzzd(t, port, e2eSettings(
		"BUZZ_DATA_DIR", dir,
		"RELAY_OPERATOR_PUBKEYS", opPK,
		"RELAY_OPERATOR_API_ORIGIN", origin,
		"BUZZ_RELAY_NAME", "relay-wide",
	))
	do := func(host, sk, method, path, accept string, body any) (int, string) {
		t.Helper()
		var raw []byte
		if body != nil {
			raw, _ = json.Marshal(body)
		}
		req, err := http.NewRequest(method, "http://127.0.0.1:"+ps+path, bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if sk != "" {
			base := "http://" + host
			if sk == opSK {
				base = origin
			}
			req.Header.Set("Authorization", nip98Header(t, sk, base+path, method, raw))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const team = "team.example"
	ops := "ops.example:" + ps
	if st, b := do(ops, opSK, "POST", "/operator/communities", "", map[string]any{"host": team, "initial_owner_pubkey": alice}); st != http.StatusCreated {
		t.Fatalf("create: %d %s", st, b)
	}
	if st, b := do(ops, opSK, "POST", "/operator/communities/profile", "", map[string]any{"host": team, "name": "Team by operator", "contact": "mailto:team@team.example"}); st != http.StatusOK || !strings.Contains(b, "Team by operator") {
		t.Fatalf("operator profile: %d %s", st, b)
	}
	// The owner, on the community's host.
	if st, b := do(team, aliceSK, "POST", "/community/profile", "", map[string]any{"name": "Team <b>A</b>", "description": "Alice's team", "icon": "https://team.example/i.png", "contact": "mailto:alice@team.example"}); st != http.StatusOK {
		t.Fatalf("owner profile: %d %s", st, b)
	}
	if st, b := do(team, aliceSK, "POST", "/community/policy", "", map[string]any{"access": "members"}); st != http.StatusOK || !strings.Contains(b, `"access":"members"`) {
		t.Fatalf("owner policy: %d %s", st, b)
	}
	if st, b := do(team, aliceSK, "POST", "/community/policy", "", map[string]any{"access": "everyone"}); st != http.StatusBadRequest || !strings.Contains(b, "invalid_policy") {
		t.Fatalf("bad policy: %d %s", st, b)
	}
	// The kind allow-list: the owner turns Buzz's on, the operator off.
	if st, b := do(team, aliceSK, "POST", "/community/kinds", "", map[string]any{"kinds": "buzz"}); st != http.StatusOK || !strings.Contains(b, `"kinds":"buzz"`) {
		t.Fatalf("owner kinds: %d %s", st, b)
	}
	if st, b := do(team, aliceSK, "POST", "/community/kinds", "", map[string]any{"kinds": "buzz,70000"}); st != http.StatusBadRequest || !strings.Contains(b, "invalid_kinds") {
		t.Fatalf("bad kinds: %d %s", st, b)
	}
	if st, b := do(team, mallorySK, "POST", "/community/kinds", "", map[string]any{"kinds": "off"}); st != http.StatusForbidden || !strings.Contains(b, "not_owner") {
		t.Fatalf("kinds by another signer: %d %s", st, b)
	}
	if st, b := do(ops, opSK, "POST", "/operator/communities/kinds", "", map[string]any{"host": team, "kinds": "off"}); st != http.StatusOK || !strings.Contains(b, `"kinds":"off"`) {
		t.Fatalf("operator kinds: %d %s", st, b)
	}
	if st, b := do(team, mallorySK, "POST", "/community/profile", "", map[string]any{"name": "pwned"}); st != http.StatusForbidden || !strings.Contains(b, "not_owner") {
		t.Fatalf("another signer: %d %s", st, b)
	}
	// Signed for another host: the u tag does not match this one.
	if st, _ := do("localhost:"+ps, aliceSK, "POST", "/community/profile", "", map[string]any{"name": "pwned"}); st != http.StatusUnauthorized && st != http.StatusForbidden {
		t.Fatalf("owner on another community's host: %d", st)
	}
	if st, b := do(ops, opSK, "GET", "/operator/communities/profile?host="+team, "", nil); st != http.StatusOK || !strings.Contains(b, `"access":"members"`) || !strings.Contains(b, "Alice's team") {
		t.Fatalf("operator read: %d %s", st, b)
	}

	// NIP-11 and the page, per host.
	st, b := do(team, "", "GET", "/", "application/nostr+json", nil)
	if st != http.StatusOK || !strings.Contains(b, `"name":"Team \u003cb\u003eA\u003c/b\u003e"`) || !strings.Contains(b, "alice@team.example") {
		t.Fatalf("team NIP-11: %d %s", st, b)
	}
	for _, host := range []string{"localhost:" + ps, "unmapped.example"} {
		st, b := do(host, "", "GET", "/", "application/nostr+json", nil)
		if st != http.StatusOK || !strings.Contains(b, `"name":"relay-wide"`) || strings.Contains(b, "Team") || strings.Contains(b, "team.example") {
			t.Fatalf("NIP-11 for %s: %d %s", host, st, b)
		}
	}
	st, b = do(team, "", "GET", "/", "text/html", nil)
	if st != http.StatusOK || !strings.Contains(b, "Team &lt;b&gt;A&lt;/b&gt;") || !strings.Contains(b, "ws://"+team) {
		t.Fatalf("team page: %d %s", st, b)
	}
	if st, b := do("unmapped.example", "", "GET", "/", "text/html", nil); st != http.StatusNotFound || strings.TrimSpace(b) != tenant.ErrUnmappedHost.Error() {
		t.Fatalf("unmapped page: %d %q", st, b)
	}

	// The audit chain names each actor.
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("buzzd exited %d", code)
	}
	ctx := context.Background()
	s, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.CommunityByHost(ctx, team)
	if err != nil {
		t.Fatal(err)
	}
	es, err := s.AuditEntries(ctx, c.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, string(e.Action)+" by "+e.Actor)
	}
	for _, want := range []string{
		string(store.AuditProfileChanged) + " by " + opPK,
		string(store.AuditProfileChanged) + " by " + alice,
		string(audit.CommunityPolicyChanged) + " by " + alice,
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("audit chain lacks %q: %v", want, got)
		}
	}
}
