package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

// TestScaleOutWorkflowTakeover runs buzzd pods over PostgreSQL and Redis
// with a short workflow lease. A webhook-triggered run posts a message,
// calls a webhook and reaches a 3 s delay on pod A; A is killed with
// SIGKILL right then (holding the run, or having parked it). Two other pods
// start, take the run over (once its lease lapses, or its delay is due)
// and finish it: every effect — the two messages and the webhook call —
// happened exactly once.
func TestScaleOutWorkflowTakeover(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	dbURL := freshDatabase(t)

	var mu sync.Mutex
	var calls []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, string(b)+" key="+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer hook.Close()
	hookCalls := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), calls...)
	}

	extra := map[string]string{
		"BUZZ_WORKFLOW_LEASE":         "1s",
		"BUZZ_WORKFLOW_POLL":          "50ms",
		"BUZZ_WORKFLOW_WEBHOOK_ALLOW": "127.0.0.1/32",
	}
	d := startDeployment(t, 1, dbURL, "redis://127.0.0.1:6379/0", extra)
	a := d.pods[0]

	owner := mustKey(t)
	ca := dialAs(t, a.port, hostAlpha)
	ch := newUUID()
	if ok := ca.publish(sign(t, owner, 9007, nostr.Tag{"h", ch}, nostr.Tag{"name", "deploys"})); !ok.OK {
		t.Fatalf("create channel: %q", ok.Message)
	}
	wfID := newUUID()
	yaml := fmt.Sprintf(`name: Takeover
trigger: {on: webhook}
steps:
  - id: start
    action: send_message
    text: "started {{trigger.tag}}"
  - id: hook
    action: call_webhook
    url: %s/hook
    body: {tag: "{{trigger.tag}}"}
  - id: wait
    action: delay
    duration: 3s
  - id: done
    action: send_message
    text: "done {{trigger.tag}} after {{steps.hook.output.status}}"
`, hook.URL)
	def := &nostr.Event{Kind: 30620, CreatedAt: time.Now().Unix(), Content: yaml,
		Tags: nostr.Tags{{"d", wfID}, {"h", ch}}}
	if err := def.Sign(owner); err != nil {
		t.Fatal(err)
	}
	if ok := ca.publish(def); !ok.OK || !strings.HasPrefix(ok.Message, "response:") {
		t.Fatalf("define: %v %q", ok.OK, ok.Message)
	}

	// Watch for step "wait" starting, then trigger by hand.
	if err := ca.ws.WriteMessage(1, nostr.AppendReq(nil, "st", nostr.Filter{Kinds: []int{46002},
		Tags: map[string][]string{"h": {ch}}, Limit: 0, LimitSet: true})); err != nil {
		t.Fatal(err)
	}
	for {
		if _, eose := ca.next().(*nostr.EOSEMessage); eose {
			break
		}
	}
	trig := &nostr.Event{Kind: 46020, CreatedAt: time.Now().Unix(), Content: `{"tag":"v42"}`,
		Tags: nostr.Tags{{"d", wfID}, {"e", def.ID}, {"h", ch}}}
	if err := trig.Sign(owner); err != nil {
		t.Fatal(err)
	}
	if ok := ca.publish(trig); !ok.OK || !strings.Contains(ok.Message, "run_id") {
		t.Fatalf("trigger: %v %q", ok.OK, ok.Message)
	}
	for {
		m, ok := ca.next().(*nostr.EventMessage)
		if !ok {
			continue
		}
		var body map[string]any
		_ = json.Unmarshal([]byte(m.Event.Content), &body)
		if body["step_id"] == "wait" {
			break
		}
	}
	// Pod A is running (or has just parked) the run: kill it.
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done

	// Two more pods of the same deployment take over.
	ns := strings.TrimPrefix(a.name, "pod-0-")
	var pods []*pod
	for i := 1; i <= 2; i++ {
		settings := map[string]string{
			"RELAY_URL": "ws://" + hostAlpha, "DATABASE_URL": dbURL, "BUZZ_DB_MAX_CONNS": "8",
			"REDIS_URL": "redis://127.0.0.1:6379/0", "BUZZ_REDIS_NAMESPACE": ns,
			"BUZZ_POD_NAME": fmt.Sprintf("pod-%d-%s", i, ns), "BUZZ_LOG_LEVEL": "warn",
		}
		for k, v := range extra {
			settings[k] = v
		}
		p := &pod{buzzdProc: startBuzzd(t, freePort(t), settings), name: settings["BUZZ_POD_NAME"]}
		p.waitReady(t, 30*time.Second)
		pods = append(pods, p)
	}
	cb := dialAs(t, pods[0].port, hostAlpha)
	messages := func() []string {
		evs, closed := cb.req(nostr.Filter{Kinds: []int{9}, Tags: map[string][]string{"h": {ch}}})
		if closed != "" {
			t.Fatalf("REQ closed: %s", closed)
		}
		var out []string
		for _, e := range evs {
			out = append(out, e.Content)
		}
		return out
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		msgs := messages()
		if strings.Contains(strings.Join(msgs, "|"), "done v42") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish on the surviving pods; messages %q, webhook calls %q", msgs, hookCalls())
		}
		time.Sleep(100 * time.Millisecond)
	}
	msgs := messages()
	count := map[string]int{}
	for _, m := range msgs {
		count[m]++
	}
	if count["started v42"] != 1 || count["done v42 after 200"] != 1 || len(msgs) != 2 {
		t.Fatalf("messages %q: want each exactly once", msgs)
	}
	if got := hookCalls(); len(got) != 1 || !strings.HasPrefix(got[0], `{"tag":"v42"} key=`) {
		t.Fatalf("webhook calls %q, want exactly one", got)
	}
	// The run's 46005 is published after its last step's message: poll
	// for it rather than expect it with the message.
	for {
		evs, _ := cb.req(nostr.Filter{Kinds: []int{46005}, Tags: map[string][]string{"h": {ch}}})
		if len(evs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no run-completed status event")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
