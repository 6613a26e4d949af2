package main

import (
	"encoding/json"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

// TestScaleOutApprovalSurvivesRestartAndRace runs two buzzd pods over
// PostgreSQL and Redis. A run waits for an approval (from any member);
// every pod is then killed with SIGKILL and started again; the approval is
// still pending, and two members approving at once through different pods
// get exactly one OK true. The run then finishes once, with the winner as
// its approver.
func TestScaleOutApprovalSurvivesRestartAndRace(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	dbURL := freshDatabase(t)
	extra := map[string]string{"BUZZ_WORKFLOW_POLL": "50ms", "BUZZ_WORKFLOW_LEASE": "2s"}
	d := startDeployment(t, 2, dbURL, "redis://127.0.0.1:6379/0", extra)

	alice, bob := mustKey(t), mustKey(t)
	ca := dialAs(t, d.pods[0].port, hostAlpha)
	ch := newUUID()
	if ok := ca.publish(sign(t, alice, 9007, nostr.Tag{"h", ch}, nostr.Tag{"name", "deploys"})); !ok.OK {
		t.Fatalf("create channel: %q", ok.Message)
	}
	if ok := dialAs(t, d.pods[1].port, hostAlpha).publish(sign(t, bob, 9021, nostr.Tag{"h", ch})); !ok.OK {
		t.Fatalf("join: %q", ok.Message)
	}
	def := &nostr.Event{Kind: 30620, CreatedAt: time.Now().Unix(), Tags: nostr.Tags{{"d", newUUID()}, {"h", ch}},
		Content: `name: Gate
trigger: {on: message_posted, filter: 'str_contains(trigger_text, "deploy")'}
steps:
  - {id: ask, action: request_approval, from: any, message: "ship {{trigger.text}}?", timeout: 1h}
  - {id: done, action: send_message, text: "approved by {{steps.ask.output.approver}}"}
`}
	if err := def.Sign(alice); err != nil {
		t.Fatal(err)
	}
	if ok := ca.publish(def); !ok.OK {
		t.Fatalf("define: %q", ok.Message)
	}
	msg := &nostr.Event{Kind: 9, CreatedAt: time.Now().Unix(), Content: "deploy v7", Tags: nostr.Tags{{"h", ch}}}
	if err := msg.Sign(bob); err != nil {
		t.Fatal(err)
	}
	if ok := ca.publish(msg); !ok.OK {
		t.Fatalf("trigger message: %q", ok.Message)
	}
	// The 46010 names the approval; wait for it to be stored.
	var approvalID string
	for deadline := time.Now().Add(30 * time.Second); approvalID == ""; time.Sleep(100 * time.Millisecond) {
		evs, _ := ca.req(nostr.Filter{Kinds: []int{46010}, Tags: map[string][]string{"h": {ch}}})
		for _, e := range evs {
			var body map[string]any
			_ = json.Unmarshal([]byte(e.Content), &body)
			approvalID, _ = body["approval_id"].(string)
		}
		if approvalID == "" && time.Now().After(deadline) {
			t.Fatal("no 46010 approval request")
		}
	}

	// Every pod dies and comes back; the approval waits in the database.
	for i, p := range d.pods {
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		settings := map[string]string{}
		for _, kv := range p.cmd.Env {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "PATH" && k != "HOME" && k != "BUZZ_BIND_ADDR" {
				settings[k] = v
			}
		}
		np := &pod{buzzdProc: startBuzzd(t, p.port, settings), name: p.name}
		np.waitReady(t, 30*time.Second)
		d.pods[i] = np
	}

	// Two members approve at once through different pods: one wins.
	clients := []*wsClient{dialAs(t, d.pods[0].port, hostAlpha), dialAs(t, d.pods[1].port, hostAlpha)}
	grants := []*nostr.Event{
		sign(t, alice, 46030, nostr.Tag{"d", approvalID}, nostr.Tag{"h", ch}),
		sign(t, bob, 46030, nostr.Tag{"d", approvalID}, nostr.Tag{"h", ch}),
	}
	oks := make([]*nostr.OKMessage, 2)
	var wg sync.WaitGroup
	for i := range grants {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			oks[i] = clients[i].publish(grants[i])
		}(i)
	}
	wg.Wait()
	winners, winner := 0, ""
	for i, ok := range oks {
		if ok.OK {
			winners++
			winner = grants[i].PubKey
		}
	}
	if winners != 1 {
		t.Fatalf("OKs %+v %+v: want exactly one approval accepted", oks[0], oks[1])
	}

	// The run resumes after the restart and posts once, naming the winner.
	var posted []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		evs, _ := clients[0].req(nostr.Filter{Kinds: []int{9}, Tags: map[string][]string{"h": {ch}}})
		posted = posted[:0]
		for _, e := range evs {
			if strings.HasPrefix(e.Content, "approved by") {
				posted = append(posted, e.Content)
			}
		}
		if len(posted) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(posted) != 1 || !strings.Contains(posted[0], winner) {
		t.Fatalf("messages %q, want one naming the winner %s", posted, winner)
	}
}
