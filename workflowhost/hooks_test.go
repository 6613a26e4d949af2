package workflowhost

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

const hookYAML = `name: Deploy hook
trigger: {on: webhook}
steps:
  - id: say
    action: send_message
    text: "deployed {{trigger.service}}"
`

// hookPost delivers body to POST /hooks/{id} on host (secret and key
// omitted when ""); a transport failure is reported and answers 0.
func hookPost(t *testing.T, url, host, id, secret, key string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+HooksPath+"/"+id, bytes.NewReader(body))
	if err != nil {
		t.Error(err) // not Fatal: called from goroutines
		return 0, nil
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Webhook-Secret", secret)
	}
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

// hookAccepted decodes a 202 answer.
func hookAccepted(t *testing.T, status int, body []byte) map[string]string {
	t.Helper()
	var m map[string]string
	if status != http.StatusAccepted || json.Unmarshal(body, &m) != nil || m["run_id"] == "" {
		t.Fatalf("delivery: %d %s, want 202 with a run_id", status, body)
	}
	return m
}

// webhookSecretOf returns the webhook_secret of a 30620's OK response.
func webhookSecretOf(t *testing.T, ok *nostr.OKMessage) string {
	t.Helper()
	s, _ := okResponse(t, ok)["webhook_secret"].(string)
	if len(s) != 64 {
		t.Fatalf("OK %q carries no 64-hex webhook_secret", ok.Message)
	}
	return s
}

func TestWebhooksOverHTTP(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		tr := workflowRelay(t, st, newHookServer(t))
		accepted := func(status int, body []byte) map[string]string { t.Helper(); return hookAccepted(t, status, body) }
		c, _, err := st.EnsureCommunity(t.Context(), tr.Host)
		if err != nil {
			t.Fatal(err)
		}
		alice, bob := newSigner(t), newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		ch := ac.createChannel(alice, "ops", channel.VisibilityOpen)
		bc := tr.dial(t)
		bc.AuthAs(bob, tr.Host)
		bc.MustAccept(bob.Event(nostr.KindJoinRequest, now(), "", chanTag(ch)))

		// The first definition returns the secret, once.
		id := workflow.NewID()
		_, okm := ac.define(alice, id, ch, hookYAML)
		secret := webhookSecretOf(t, okm)
		okm = ac.Publish(alice.Event(nostr.KindDefinition, now()+1, strings.Replace(hookYAML, "Deploy hook", "Deploy hook v2", 1),
			nostr.Tag{"d", id.String()}, chanTag(ch), nostr.Tag{"expected-revision", okResponse(t, okm)["revision"].(string)}))
		if _, again := okResponse(t, okm)["webhook_secret"]; again {
			t.Fatalf("a redefinition returned the secret again: %s", okm.Message)
		}
		echoID := workflow.NewID()
		_, okm = ac.define(alice, echoID, ch, echoYAML)
		if _, has := okResponse(t, okm)["webhook_secret"]; has {
			t.Fatalf("a message workflow got a webhook secret: %s", okm.Message)
		}

		// A delivery: 202, the run stored before the answer, its fields
		// reaching the step.
		wc := tr.dial(t) // a connection that only watches
		wc.AuthAs(bob, tr.Host)
		wc.Subscribe("live", nostr.Filter{Kinds: []int{nostr.KindChatMessage}, Tags: map[string][]string{"h": {ch.String()}}})
		m := accepted(hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, "", []byte(`{"service":"api"}`)))
		relaytest.Eq(t, "workflow_id", m["workflow_id"], id.String())
		relaytest.Eq(t, "status", m["status"], string(workflow.RunPending))
		runID, _ := workflow.ParseID(m["run_id"])
		run, err := st.Run(t.Context(), c, runID)
		if err != nil {
			t.Fatalf("the accepted run is not stored: %v", err)
		}
		relaytest.Eq(t, "trigger service", run.Trigger["service"], any("api"))
		wc.waitFor("live", func(e *nostr.Event) bool { return e.Content == "deployed api" })

		// Idempotency-Key: a retried delivery answers the first run.
		first := accepted(hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, "delivery-7", []byte(`{"service":"db"}`)))
		retry := accepted(hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, "delivery-7", []byte(`{"service":"db"}`)))
		relaytest.Eq(t, "retried run", retry["run_id"], first["run_id"])
		other := accepted(hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, "delivery-8", nil))
		if other["run_id"] == first["run_id"] {
			t.Fatal("another key answered the same run")
		}
		runs, _, err := st.Runs(t.Context(), c, id, workflow.RunPage{})
		if err != nil || len(runs) != 3 {
			t.Fatalf("runs after 4 deliveries (one retried): %d, %v; want 3", len(runs), err)
		}

		// Every refusal is the same 404, byte for byte.
		foreign := "other.example"
		if _, _, err := st.EnsureCommunity(t.Context(), foreign); err != nil {
			t.Fatal(err)
		}
		fid := workflow.NewID()
		fc := tr.dialHost(t, foreign)
		fc.AuthAs(alice, foreign)
		fch := fc.createChannel(alice, "ops", channel.VisibilityOpen)
		_, okm = fc.define(alice, fid, fch, hookYAML)
		fsecret := webhookSecretOf(t, okm)
		disabledID := workflow.NewID()
		_, okm = ac.define(alice, disabledID, ch, hookYAML+"enabled: false\n")
		disabledSecret := webhookSecretOf(t, okm)
		body := []byte(`{"service":"x"}`)
		refusals := map[string]func() (int, []byte){
			"random id": func() (int, []byte) {
				return hookPost(t, tr.Srv.URL, tr.Host, workflow.NewID().String(), secret, "", body)
			},
			"malformed id":    func() (int, []byte) { return hookPost(t, tr.Srv.URL, tr.Host, "not-a-uuid", secret, "", body) },
			"wrong secret":    func() (int, []byte) { return hookPost(t, tr.Srv.URL, tr.Host, id.String(), fsecret, "", body) },
			"no secret":       func() (int, []byte) { return hookPost(t, tr.Srv.URL, tr.Host, id.String(), "", "", body) },
			"secret's prefix": func() (int, []byte) { return hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret[:32], "", body) },
			"message trigger": func() (int, []byte) { return hookPost(t, tr.Srv.URL, tr.Host, echoID.String(), secret, "", body) },
			"disabled": func() (int, []byte) {
				return hookPost(t, tr.Srv.URL, tr.Host, disabledID.String(), disabledSecret, "", body)
			},
			"foreign id here":  func() (int, []byte) { return hookPost(t, tr.Srv.URL, tr.Host, fid.String(), fsecret, "", body) },
			"this id, foreign": func() (int, []byte) { return hookPost(t, tr.Srv.URL, foreign, id.String(), secret, "", body) },
			"random, foreign": func() (int, []byte) {
				return hookPost(t, tr.Srv.URL, foreign, workflow.NewID().String(), secret, "", body)
			},
		}
		for name, f := range refusals {
			status, got := f()
			if status != http.StatusNotFound || string(got) != webhookNotFoundBody {
				t.Errorf("%s: %d %s, want 404 %s", name, status, got, webhookNotFoundBody)
			}
		}
		// The foreign community's own delivery works on its own host.
		accepted(hookPost(t, tr.Srv.URL, foreign, fid.String(), fsecret, "", body))
		// None of the refusals started a run.
		runs, _, _ = st.Runs(t.Context(), c, id, workflow.RunPage{})
		relaytest.Eq(t, "runs after refusals", len(runs), 3)
		for _, wid := range []workflow.ID{echoID, disabledID} {
			if runs, _, _ := st.Runs(t.Context(), c, wid, workflow.RunPage{}); len(runs) != 0 {
				t.Errorf("workflow %s: %d runs after refused deliveries", wid, len(runs))
			}
		}

		// Bad bodies and keys are refused whatever the id, before it is
		// looked up.
		if status, got := hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, "", []byte(`[1]`)); status != http.StatusBadRequest {
			t.Errorf("array body: %d %s", status, got)
		}
		if status, got := hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, "", bytes.Repeat([]byte(" "), buzz.MaxHTTPBodyBytes+1)); status != http.StatusRequestEntityTooLarge {
			t.Errorf("oversized body: %d %s", status, got)
		}
		if status, got := hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, strings.Repeat("k", MaxIdempotencyKeyBytes+1), nil); status != http.StatusBadRequest {
			t.Errorf("oversized key: %d %s", status, got)
		}

		// Rotation: the owner only; the old secret stops working at once.
		if status, got := wfCall(t, tr, bob, http.MethodPost, tr.Host, WorkflowsPath+"/"+id.String()+"/webhook-secret"); status != http.StatusForbidden {
			t.Errorf("rotation by a member: %d %s", status, got)
		}
		if status, got := wfCall(t, tr, alice, http.MethodPost, tr.Host, WorkflowsPath+"/"+echoID.String()+"/webhook-secret"); status != http.StatusBadRequest {
			t.Errorf("rotation of a message workflow: %d %s", status, got)
		}
		_, want := wfCall(t, tr, alice, http.MethodPost, foreign, WorkflowsPath+"/"+workflow.NewID().String()+"/webhook-secret")
		if _, got := wfCall(t, tr, alice, http.MethodPost, foreign, WorkflowsPath+"/"+id.String()+"/webhook-secret"); !bytes.Equal(got, want) {
			t.Errorf("rotation from another host: %s, want %s", got, want)
		}
		status, rb := wfCall(t, tr, alice, http.MethodPost, tr.Host, WorkflowsPath+"/"+id.String()+"/webhook-secret")
		var rot map[string]string
		if status != http.StatusOK || json.Unmarshal(rb, &rot) != nil || len(rot["webhook_secret"]) != 64 || rot["webhook_secret"] == secret {
			t.Fatalf("rotation: %d %s", status, rb)
		}
		if status, got := hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, "", nil); status != http.StatusNotFound || string(got) != webhookNotFoundBody {
			t.Errorf("old secret after rotation: %d %s", status, got)
		}
		accepted(hookPost(t, tr.Srv.URL, tr.Host, id.String(), rot["webhook_secret"], "", nil))
	})
}

// TestWebhookIdempotencyRace: concurrent deliveries with one key yield one
// run on both backends.
func TestWebhookIdempotencyRace(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		tr := workflowRelay(t, st, newHookServer(t))
		alice := newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		ch := ac.createChannel(alice, "ops", channel.VisibilityOpen)
		id := workflow.NewID()
		_, okm := ac.define(alice, id, ch, hookYAML)
		secret := webhookSecretOf(t, okm)
		const n = 8
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, body := hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, "same-key", []byte(`{"service":"api"}`))
				var m map[string]string
				if status != http.StatusAccepted || json.Unmarshal(body, &m) != nil {
					t.Errorf("delivery %d: %d %s", i, status, body)
					return
				}
				ids[i] = m["run_id"]
			}()
		}
		wg.Wait()
		for i := range ids {
			if ids[i] == "" || ids[i] != ids[0] {
				t.Fatalf("run ids of concurrent deliveries with one key: %v", ids)
			}
		}
		c, _, err := st.EnsureCommunity(t.Context(), tr.Host)
		if err != nil {
			t.Fatal(err)
		}
		if runs, _, err := st.Runs(t.Context(), c, id, workflow.RunPage{}); err != nil || len(runs) != 1 {
			t.Fatalf("runs: %d, %v; want 1", len(runs), err)
		}
	})
}
