package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

// hookDeliver POSTs body to /hooks/{id} on host through pod p.
func (p *pod) hookDeliver(t *testing.T, host, id, secret, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(p.port)+"/hooks/"+id, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	req.Host = host
	req.Header.Set("X-Webhook-Secret", secret)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestScaleOutWebhookRetry runs two buzzd pods over PostgreSQL and Redis.
// A webhook delivered to pod A and retried with the same Idempotency-Key
// on pod B yields one run; two deliveries with one key racing on both
// pods yield one run; the workflow's id and secret on the other
// community's host get the same 404 bytes as a random id.
func TestScaleOutWebhookRetry(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	d := startDeployment(t, 2, freshDatabase(t), "redis://127.0.0.1:6379/0", map[string]string{"BUZZ_WORKFLOW_POLL": "50ms"})
	a, b := d.pods[0], d.pods[1]

	owner := mustKey(t)
	ca := dialAs(t, a.port, hostAlpha)
	ch := newUUID()
	if ok := ca.publish(sign(t, owner, 9007, nostr.Tag{"h", ch}, nostr.Tag{"name", "deploys"})); !ok.OK {
		t.Fatalf("create channel: %q", ok.Message)
	}
	wfID := newUUID()
	def := &nostr.Event{Kind: 30620, CreatedAt: time.Now().Unix(), Tags: nostr.Tags{{"d", wfID}, {"h", ch}},
		Content: "name: Deploy\ntrigger: {on: webhook}\nsteps:\n  - id: say\n    action: send_message\n    text: \"deployed {{trigger.service}}\"\n"}
	if err := def.Sign(owner); err != nil {
		t.Fatal(err)
	}
	ok := ca.publish(def)
	var resp map[string]any
	if !ok.OK || json.Unmarshal([]byte(strings.TrimPrefix(ok.Message, "response:")), &resp) != nil {
		t.Fatalf("define: %v %q", ok.OK, ok.Message)
	}
	secret, _ := resp["webhook_secret"].(string)
	if len(secret) != 64 {
		t.Fatalf("define: no webhook_secret in %q", ok.Message)
	}

	runOf := func(status int, body []byte) string {
		t.Helper()
		var m map[string]string
		if status != http.StatusAccepted || json.Unmarshal(body, &m) != nil || m["run_id"] == "" || m["workflow_id"] != wfID {
			t.Fatalf("delivery: %d %s", status, body)
		}
		return m["run_id"]
	}
	first := runOf(a.hookDeliver(t, hostAlpha, wfID, secret, "deploy-1", `{"service":"api"}`))
	if retry := runOf(b.hookDeliver(t, hostAlpha, wfID, secret, "deploy-1", `{"service":"api"}`)); retry != first {
		t.Fatalf("the retry on pod B started run %s, the first delivery %s", retry, first)
	}

	// The same key racing on both pods.
	var wg sync.WaitGroup
	raced := make([]string, 2)
	for i, p := range []*pod{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := p.hookDeliver(t, hostAlpha, wfID, secret, "deploy-2", `{"service":"db"}`)
			var m map[string]string
			if status == http.StatusAccepted && json.Unmarshal(body, &m) == nil {
				raced[i] = m["run_id"]
			} else {
				t.Errorf("raced delivery via pod %d: %d %s", i, status, body)
			}
		}()
	}
	wg.Wait()
	if raced[0] == "" || raced[0] != raced[1] || raced[0] == first {
		t.Fatalf("racing deliveries of one key: runs %v (first key's run %s)", raced, first)
	}

	// Another community's host: the same bytes as a random id.
	_, want := b.hookDeliver(t, hostAlpha, newUUID(), secret, "", `{}`)
	status, got := b.hookDeliver(t, hostBeta, wfID, secret, "", `{}`)
	if status != http.StatusNotFound || !bytes.Equal(got, want) {
		t.Fatalf("the id on the other community's host: %d %s, want 404 %s", status, got, want)
	}

	// Exactly two runs exist, as the HTTP API reports them through pod B.
	path := "/workflows/" + wfID + "/runs"
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(b.port)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = hostAlpha
	req.Header.Set("Authorization", nip98Header(t, hex.EncodeToString(owner[:]), "http://"+hostAlpha+path, http.MethodGet, nil))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var runs struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	if body, _ := io.ReadAll(res.Body); res.StatusCode != http.StatusOK || json.Unmarshal(body, &runs) != nil {
		t.Fatalf("runs: %d %s", res.StatusCode, body)
	}
	if len(runs.Runs) != 2 {
		t.Fatalf("%d runs after two keys delivered four times, want 2: %+v", len(runs.Runs), runs.Runs)
	}
}
