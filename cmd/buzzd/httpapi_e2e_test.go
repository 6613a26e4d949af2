package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
)

// apiPost sends a NIP-98-signed POST of raw to path on host through the pod.
func (p *pod) apiPost(t *testing.T, host, path string, raw []byte, auth string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(p.port)+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestE2EHTTPAPIAcrossPods runs two buzzd processes on one PostgreSQL and
// one Redis: an event posted over HTTP to one pod is read over HTTP from
// the other, a NIP-98 token used on one pod is a replay on the other (the
// Redis replay guard), and a NIP-05 name claimed through one pod resolves
// through the other.
func TestE2EHTTPAPIAcrossPods(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	d := startDeployment(t, 2, freshDatabase(t), "redis://127.0.0.1:6379", nil)
	a, b := d.pods[0], d.pods[1]
	sk, pk := newKey(t)

	ev := signed(t, sk, 1, time.Now().Unix(), "over http", nil)
	raw, _ := json.Marshal(ev)
	code, body := a.apiPost(t, hostAlpha, "/events", raw, nip98Header(t, sk, "http://"+hostAlpha+"/events", http.MethodPost, raw))
	if code != http.StatusOK || string(body) != `{"event_id":"`+ev.ID+`","accepted":true,"message":""}` {
		t.Fatalf("/events on pod a: %d %s", code, body)
	}

	q, _ := json.Marshal(gonostr.Filter{IDs: []string{ev.ID}})
	auth := nip98Header(t, sk, "http://"+hostAlpha+"/query", http.MethodPost, q)
	code, body = b.apiPost(t, hostAlpha, "/query", q, auth)
	var got []gonostr.Event
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got) != 1 || got[0].ID != ev.ID || !got[0].CheckID() {
		t.Fatalf("/query on pod b: %d %s", code, body)
	}
	if ok, err := got[0].CheckSignature(); !ok || err != nil {
		t.Fatalf("returned event does not verify: %v", err)
	}
	code, body = a.apiPost(t, hostAlpha, "/query", q, auth)
	if code != http.StatusUnauthorized || string(body) != `{"error":"unauthorized","message":"NIP-98: replay detected"}` {
		t.Fatalf("replay on pod a: %d %s", code, body)
	}

	// A name claimed through one pod resolves through the other.
	claim := []byte(`{"name":"Alice"}`)
	code, body = a.apiPost(t, hostAlpha, "/names", claim, nip98Header(t, sk, "http://"+hostAlpha+"/names", http.MethodPost, claim))
	if code != http.StatusOK {
		t.Fatalf("/names on pod a: %d %s", code, body)
	}
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(b.port)+"/.well-known/nostr.json?name=alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = hostAlpha
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Names  map[string]string
		Relays map[string][]string
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.Names["alice"] != pk ||
		len(doc.Relays[pk]) != 1 || doc.Relays[pk][0] != "ws://"+hostAlpha || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("nostr.json on pod b: %v %+v", err, doc)
	}
}
