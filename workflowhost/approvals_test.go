package workflowhost

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

const approvalYAML = `name: Deploy gate
trigger: {on: message_posted, filter: 'str_contains(trigger_text, "deploy")'}
steps:
  - id: ask
    action: request_approval
    from: %FROM%
    message: "Approve {{trigger.text}}?"
    timeout: %TIMEOUT%
  - id: done
    action: send_message
    text: "approved by {{steps.ask.output.approver}}: {{trigger.text}}"
`

func approvalDef(from, timeout string) string {
	return strings.NewReplacer("%FROM%", from, "%TIMEOUT%", timeout).Replace(approvalYAML)
}

// approvalRequest decodes a 46010's content.
func approvalRequest(t *testing.T, ev *nostr.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(ev.Content), &m); err != nil {
		t.Fatalf("46010 content %q: %v", ev.Content, err)
	}
	return m
}

func TestWorkflowApprovals(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		tr := workflowRelay(t, st, newHookServer(t))
		alice, bob, carol := newSigner(t), newSigner(t), newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		ch := ac.createChannel(alice, "ops", channel.VisibilityOpen)
		bc := tr.dial(t)
		bc.AuthAs(bob, tr.Host)
		bc.MustAccept(bob.Event(nostr.KindJoinRequest, now(), "", chanTag(ch)))
		cc := tr.dial(t)
		cc.AuthAs(carol, tr.Host)
		dc := tr.dial(t) // alice's second connection, without subscriptions
		dc.AuthAs(alice, tr.Host)

		// Role names (anything but any or one pubkey) are refused.
		for _, from := range []string{"admin", "owners", "'{{trigger.author}}'"} {
			_, okm := ac.define(alice, workflow.NewID(), ch, approvalDef(from, "1h"))
			relaytest.MustPrefix(t, "from "+from, okm.Message, "invalid: steps")
		}
		okResponse(t, defineNew(t, ac, alice, ch, approvalDef("any", "1h")))

		ac.Subscribe("live", nostr.Filter{Kinds: []int{9, nostr.KindApprovalRequested, nostr.KindApprovalGranted,
			nostr.KindApprovalDenied, nostr.KindRunCompleted, nostr.KindRunCancelled, nostr.KindRunFailed},
			Tags: map[string][]string{"h": {ch.String()}}})
		isKind := func(k int) func(*nostr.Event) bool { return func(e *nostr.Event) bool { return e.Kind == k } }

		// Grant: the run waits, one of two racing approvers wins, the
		// next step runs with the approval's output.
		bc.MustAccept(bob.Event(nostr.KindChatMessage, now(), "deploy v1", chanTag(ch)))
		req := approvalRequest(t, ac.waitFor("live", isKind(nostr.KindApprovalRequested)))
		id, _ := req["approval_id"].(string)
		token, _ := req["token"].(string)
		sum := sha256.Sum256([]byte(token))
		if token == "" || id != hex.EncodeToString(sum[:]) {
			t.Fatalf("approval_id %q is not the SHA-256 of token %q", id, token)
		}
		for _, k := range []string{"workflow_id", "run_id", "step_id", "message", "expires_at"} {
			if req[k] == nil || req[k] == "" {
				t.Fatalf("46010 without %s: %v", k, req)
			}
		}
		relaytest.Eq(t, "message", req["message"], any("Approve deploy v1?"))
		if !strings.Contains(req["url"].(string), "/approvals/"+token) {
			t.Fatalf("url %v", req["url"])
		}
		runID, _ := workflow.ParseID(req["run_id"].(string))
		// The 46010 is published before the run is parked.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			r, err := st.Run(t.Context(), tr.tc.Community(), runID)
			if err == nil && r.Status == workflow.RunWaitingApproval {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %+v %v, want waiting_approval", r.Status, err)
			}
		}
		// The approval page shows the pending request with its buttons.
		code, page := wfCall(t, tr, nil, "GET", tr.Host, ApprovalsPath+"/"+token)
		alicePub, _ := nostr.EncodeNpub(alice.Pub())
		for _, want := range []string{"Deploy gate", "Approve deploy v1?", alicePub, ">pending<", `id="approve"`, `id="deny"`, id, ch.String()} {
			if code != 200 || !strings.Contains(string(page), want) {
				t.Fatalf("approval page (%d) lacks %q:\n%s", code, want, page)
			}
		}
		// A non-member, a random id, and a clients' forged outcome.
		relaytest.Eq(t, "non-member grant", cc.Publish(carol.Event(nostr.KindApprovalGrant, now(), "", nostr.Tag{"d", id}, chanTag(ch))).Message, msgApprovalNotAllowed)
		relaytest.Eq(t, "unknown id", bc.Publish(bob.Event(nostr.KindApprovalGrant, now(), "", nostr.Tag{"d", strings.Repeat("ab", 32)}, chanTag(ch))).Message, msgApprovalUnknown)
		relaytest.Eq(t, "forged 46011", bc.Publish(bob.Event(nostr.KindApprovalGranted, now(), "{}", chanTag(ch))).Message, msgWorkflowStatus)
		grants := []*nostr.Event{
			bob.Event(nostr.KindApprovalGrant, now(), "", nostr.Tag{"d", id}, chanTag(ch)),
			alice.Event(nostr.KindApprovalDeny, now(), "", nostr.Tag{"d", id}, chanTag(ch)),
		}
		conns := []*rawClient{bc, dc}
		oks := make([]*nostr.OKMessage, 2)
		var wg sync.WaitGroup
		for i := range grants {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				conns[i].SendEvent(grants[i])
			}(i)
		}
		wg.Wait()
		oks[0] = bc.ExpectOK(grants[0].ID)
		oks[1] = dc.ExpectOK(grants[1].ID)
		winners := 0
		winner := -1
		for i, ok := range oks {
			if ok.OK {
				winners++
				winner = i
			} else {
				relaytest.Eq(t, "losing approver", ok.Message, msgApprovalUnknown)
			}
		}
		if winners != 1 {
			t.Fatalf("%d approvers won: %+v", winners, oks)
		}
		if winner == 0 {
			relaytest.Eq(t, "granted status", okResponse(t, oks[0])["status"], any("granted"))
			ac.waitFor("live", isKind(nostr.KindApprovalGranted))
			msg := ac.waitFor("live", func(e *nostr.Event) bool { return e.Kind == 9 && strings.HasPrefix(e.Content, "approved by") })
			relaytest.Eq(t, "next step", msg.Content, "approved by "+bob.Pub()+": deploy v1")
			ac.waitFor("live", isKind(nostr.KindRunCompleted))
		} else {
			ac.waitFor("live", isKind(nostr.KindApprovalDenied))
			ac.waitFor("live", isKind(nostr.KindRunCancelled))
		}

		// A second visit shows the final status, without buttons.
		code, page = wfCall(t, tr, nil, "GET", tr.Host, ApprovalsPath+"/"+token)
		if code != 200 || !strings.Contains(string(page), ">"+[]string{"granted", "denied"}[winner]+"<") || strings.Contains(string(page), "<button") {
			t.Fatalf("decided approval page (%d):\n%s", code, page)
		}

		// Deny: the run is cancelled with approval_denied.
		bc.MustAccept(bob.Event(nostr.KindChatMessage, now(), "deploy v2", chanTag(ch)))
		req = approvalRequest(t, ac.waitFor("live", isKind(nostr.KindApprovalRequested)))
		id2 := req["approval_id"].(string)
		okResponse(t, bc.Publish(bob.Event(nostr.KindApprovalDeny, now(), "", nostr.Tag{"d", id2}, chanTag(ch))))
		ac.waitFor("live", isKind(nostr.KindApprovalDenied))
		cancelled := ac.waitFor("live", isKind(nostr.KindRunCancelled))
		if !strings.Contains(cancelled.Content, `"error_code":"approval_denied"`) {
			t.Fatalf("cancelled run: %s", cancelled.Content)
		}
		// A named approver: the 46010 carries no token (it reaches bob
		// in a NIP-17 DM); only bob may decide.
		bc.Subscribe("dm", nostr.Filter{Kinds: []int{1059}, Tags: map[string][]string{"p": {bob.Pub()}}})
		okResponse(t, defineNew(t, dc, alice, ch, strings.Replace(approvalDef(bob.Pub(), "1h"), "deploy", "ship", 1)))
		bc.MustAccept(bob.Event(nostr.KindChatMessage, now(), "ship v3", chanTag(ch)))
		req = approvalRequest(t, ac.waitFor("live", isKind(nostr.KindApprovalRequested)))
		if req["token"] != nil || req["url"] != nil || req["approver"] != bob.Pub() {
			t.Fatalf("46010 of a named approver: %v", req)
		}
		bc.waitFor("dm", func(e *nostr.Event) bool { return e.Kind == 1059 })
		id3 := req["approval_id"].(string)
		relaytest.Eq(t, "member who is not the approver", dc.Publish(alice.Event(nostr.KindApprovalGrant, now(), "", nostr.Tag{"d", id3}, chanTag(ch))).Message, msgApprovalNotAllowed)
		okResponse(t, bc.Publish(bob.Event(nostr.KindApprovalGrant, now(), "", nostr.Tag{"d", id3}, chanTag(ch))))
		msg := ac.waitFor("live", func(e *nostr.Event) bool { return e.Kind == 9 && strings.HasPrefix(e.Content, "approved by") })
		relaytest.Eq(t, "named approver's step", msg.Content, "approved by "+bob.Pub()+": ship v3")

		// Expiry: the run fails with expired; a late grant is refused.
		okResponse(t, defineNew(t, dc, alice, ch, strings.Replace(approvalDef("", "1s"), "deploy", "hurry", 1)))
		bc.MustAccept(bob.Event(nostr.KindChatMessage, now(), "hurry v4", chanTag(ch)))
		req = approvalRequest(t, ac.waitFor("live", isKind(nostr.KindApprovalRequested)))
		failed := ac.waitFor("live", isKind(nostr.KindRunFailed))
		if !strings.Contains(failed.Content, `"error_code":"expired"`) {
			t.Fatalf("expired run: %s", failed.Content)
		}
		relaytest.Eq(t, "grant after expiry", bc.Publish(bob.Event(nostr.KindApprovalGrant, now(), "", nostr.Tag{"d", req["approval_id"].(string)}, chanTag(ch))).Message, msgApprovalUnknown)

		// Unknown and another community's tokens: the same page; an expired
		// one says so, with 410 Gone.
		other := "other.example"
		if _, _, err := st.EnsureCommunity(t.Context(), other); err != nil {
			t.Fatal(err)
		}
		wantCode, want := wfCall(t, tr, nil, "GET", tr.Host, ApprovalsPath+"/"+strings.Repeat("0", 64))
		if wantCode != 404 || strings.Contains(string(want), "<button") {
			t.Fatalf("unknown token page (%d):\n%s", wantCode, want)
		}
		if code, got := wfCall(t, tr, nil, "GET", other, ApprovalsPath+"/"+token); code != wantCode || string(got) != string(want) {
			t.Errorf("foreign host: %d %q, want the unknown token's page", code, got)
		}
		if code, got := wfCall(t, tr, nil, "GET", tr.Host, ApprovalsPath+"/"+req["token"].(string)); code != 410 ||
			!strings.Contains(string(got), `<h1 id="heading">Expired</h1>`) || strings.Contains(string(got), "<button") {
			t.Errorf("expired: %d %q, want 410 and the Expired page", code, got)
		}

		relaytest.Eq(t, "grant after deny", bc.Publish(bob.Event(nostr.KindApprovalGrant, now(), "", nostr.Tag{"d", id2}, chanTag(ch))).Message, msgApprovalUnknown)
	})
}

// defineNew defines yaml as a new workflow of s in ch and returns its OK.
func defineNew(t *testing.T, c *rawClient, s *signer, ch channel.ID, yaml string) *nostr.OKMessage {
	t.Helper()
	_, okm := c.define(s, workflow.NewID(), ch, yaml)
	return okm
}
