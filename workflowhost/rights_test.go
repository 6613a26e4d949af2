package workflowhost

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// Workflows act with their owner's rights as they are when they act, and
// the workflow routes read by a REQ's rules (workflows_rights.go,
// workflows_http.go). Every test here is an attack by a member whose
// rights were taken away, or by a reader who may not read.

// rightsEnv is a community owned by owner, with a channel ch that owner
// created and mal joined, on a relay with workflows whose clock the test
// moves (advance).
type rightsEnv struct {
	t      *testing.T
	st     wfBackend
	tr     *testRelay
	host   string
	c      tenant.CommunityID
	owner  *signer
	mal    *signer
	oc, mc *rawClient // authenticated as owner and as mal
	watch  *rawClient // the owner's, subscribed to the channel ("live")
	ch     channel.ID
	offset *atomic.Int64
}

type communityCreator interface {
	CreateCommunity(ctx context.Context, nc store.NewCommunity) (store.Community, bool, error)
}

func newRightsEnv(t *testing.T, st wfBackend, membersOnly bool) *rightsEnv {
	t.Helper()
	e := &rightsEnv{t: t, st: st, host: "rights.example", owner: newSigner(t), mal: newSigner(t), offset: new(atomic.Int64)}
	e.tr = workflowRelay(t, st, newHookServer(t), buzz.WithClock(e.now))
	cm, _, err := st.(communityCreator).CreateCommunity(t.Context(), store.NewCommunity{Host: e.host, OwnerPubKey: e.owner.Pub()})
	if err != nil {
		t.Fatal(err)
	}
	e.c = cm.ID
	if membersOnly {
		if err := st.SetCommunityAccess(t.Context(), e.c, channel.AccessMembers); err != nil {
			t.Fatal(err)
		}
	}
	e.oc = e.authed(e.owner)
	if membersOnly {
		e.oc.MustAccept(e.owner.Event(nostr.KindAddCommunityMember, now(), "", nostr.Tag{"p", e.mal.Pub()}))
	}
	e.ch = e.oc.createChannel(e.owner, "ops", channel.VisibilityOpen)
	e.mc = e.authed(e.mal)
	e.mc.MustAccept(e.mal.Event(nostr.KindJoinRequest, now(), "", chanTag(e.ch)))
	e.watch = e.authed(e.owner)
	e.watch.Subscribe("live", nostr.Filter{Kinds: []int{nostr.KindChatMessage, nostr.KindRunFailed, nostr.KindRunCompleted,
		nostr.KindApprovalRequested}, Tags: map[string][]string{"h": {e.ch.String()}}})
	return e
}

func (e *rightsEnv) now() time.Time          { return time.Now().Add(time.Duration(e.offset.Load())) }
func (e *rightsEnv) advance(d time.Duration) { e.offset.Add(int64(d)) }

// authed dials the community and authenticates as s.
func (e *rightsEnv) authed(s *signer) *rawClient {
	e.t.Helper()
	c := e.tr.dialHost(e.t, e.host)
	c.AuthAs(s, e.host)
	return c
}

// defineHook has s define a webhook workflow in ch (through c, which is
// authenticated as s) and returns its id and secret.
func (e *rightsEnv) defineHook(c *rawClient, s *signer, yaml string) (workflow.ID, string) {
	e.t.Helper()
	id, secret, _ := e.defineHookEvent(c, s, yaml)
	return id, secret
}

// defineHookEvent is defineHook that also returns the 30620's id.
func (e *rightsEnv) defineHookEvent(c *rawClient, s *signer, yaml string) (workflow.ID, string, string) {
	e.t.Helper()
	id := workflow.NewID()
	ev, ok := c.define(s, id, e.ch, yaml)
	return id, webhookSecretOf(e.t, ok), ev.ID
}

// accept delivers body to the hook and expects 202.
func (e *rightsEnv) accept(id workflow.ID, secret, body string) map[string]string {
	e.t.Helper()
	code, b := e.deliver(id, secret, body)
	return hookAccepted(e.t, code, b)
}

// deliver posts body to the workflow's hook.
func (e *rightsEnv) deliver(id workflow.ID, secret, body string) (int, []byte) {
	e.t.Helper()
	return hookPost(e.t, e.tr.Srv.URL, e.host, id.String(), secret, "", []byte(body))
}

// unknownHook is the answer for a hook that does not exist.
func (e *rightsEnv) unknownHook() []byte {
	e.t.Helper()
	code, body := e.deliver(workflow.NewID(), strings.Repeat("ab", 32), `{}`)
	if code != http.StatusNotFound || string(body) != webhookNotFoundBody {
		e.t.Fatalf("unknown hook: %d %s", code, body)
	}
	return body
}

// runEnd waits, on the owner's live subscription, for the final status
// event of a run of workflow wf (runID "" = any run) and returns its body.
func (e *rightsEnv) runEnd(wf workflow.ID, runID string) map[string]any {
	e.t.Helper()
	var body map[string]any
	e.watch.waitFor("live", func(ev *nostr.Event) bool {
		if ev.Kind != nostr.KindRunFailed && ev.Kind != nostr.KindRunCompleted {
			return false
		}
		body = nil
		if json.Unmarshal([]byte(ev.Content), &body) != nil {
			return false
		}
		return body["workflow_id"] == wf.String() && (runID == "" || body["run_id"] == runID)
	})
	return body
}

// posted returns the relay-signed kind 9 and gift wraps the store holds
// in the community (what workflows published).
func (e *rightsEnv) posted() (messages []string, wraps int) {
	e.t.Helper()
	for rec, err := range e.st.Query(e.t.Context(), e.c, nostr.Filter{Kinds: []int{nostr.KindChatMessage, nostr.KindGiftWrap}}) {
		if err != nil {
			e.t.Fatal(err)
		}
		ev, err := nostr.ParseEvent(rec.Raw)
		if err != nil {
			e.t.Fatal(err)
		}
		if ev.Kind == nostr.KindGiftWrap {
			wraps++
		} else if ev.PubKey != e.mal.Pub() && ev.PubKey != e.owner.Pub() {
			messages = append(messages, ev.Content)
		}
	}
	return messages, wraps
}

// hookWorks delivers to the hook and expects the run to complete
// (posting "said <n>" and a DM).
func (e *rightsEnv) hookWorks(id workflow.ID, secret string, n int) {
	e.t.Helper()
	m := e.accept(id, secret, `{"n":"`+strconv.Itoa(n)+`"}`)
	body := e.runEnd(id, m["run_id"])
	if body["status"] != "completed" {
		e.t.Fatalf("run before the change: %v", body)
	}
}

// hookRefused delivers to the hook and expects the unknown-hook answer,
// no run stored and nothing published.
func (e *rightsEnv) hookRefused(what string, id workflow.ID, secret string) {
	e.t.Helper()
	msgs, wraps := e.posted()
	runs, _, err := e.st.Runs(e.t.Context(), e.c, id, workflow.RunPage{})
	if err != nil {
		e.t.Fatal(err)
	}
	code, body := e.deliver(id, secret, `{"n":"after"}`)
	if code != http.StatusNotFound || !bytes.Equal(body, e.unknownHook()) {
		e.t.Fatalf("%s: hook answered %d %s, want the unknown hook's 404", what, code, body)
	}
	after, _, err := e.st.Runs(e.t.Context(), e.c, id, workflow.RunPage{})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(after) != len(runs) {
		e.t.Fatalf("%s: a refused delivery stored a run", what)
	}
	msgs2, wraps2 := e.posted()
	if len(msgs2) != len(msgs) || wraps2 != wraps {
		e.t.Fatalf("%s: something was published: %q, %d gift wraps (before %q, %d)", what, msgs2, wraps2, msgs, wraps)
	}
}

// dmHookYAML posts into the channel and DMs the workflow's owner (%OWNER%).
const dmHookYAML = `name: buzz.Relay
trigger: {on: webhook}
steps:
  - id: say
    action: send_message
    text: "said {{trigger.n}}"
  - id: dm
    action: send_dm
    to: "%OWNER%"
    text: "dm {{trigger.n}}"
`

func (e *rightsEnv) malHook() (workflow.ID, string) {
	id, secret, _ := e.malHookEvent()
	return id, secret
}

func (e *rightsEnv) malHookEvent() (workflow.ID, string, string) {
	return e.defineHookEvent(e.mc, e.mal, strings.ReplaceAll(dmHookYAML, "%OWNER%", e.mal.Pub()))
}

// TestWorkflowBannedOwnerHookIsUnknown: once the community owner bans
// the workflow's owner (9040), its webhook answers like an unknown hook
// and nothing is posted, message nor DM; a channel member's 46020 for it
// is refused; a message-triggered workflow of theirs fails with
// owner_unauthorized and posts nothing.
func TestWorkflowBannedOwnerHookIsUnknown(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		e := newRightsEnv(t, b.(wfBackend), false)
		id, secret, defID := e.malHookEvent()
		echo := workflow.NewID()
		okResponse(t, func() *nostr.OKMessage { _, ok := e.mc.define(e.mal, echo, e.ch, echoYAML); return ok }())
		e.hookWorks(id, secret, 1)
		if msgs, wraps := e.posted(); len(msgs) != 1 || wraps != 1 {
			t.Fatalf("before the ban: %q, %d gift wraps", msgs, wraps)
		}

		e.oc.MustAccept(e.owner.Event(nostr.KindBan, now(), "", nostr.Tag{"p", e.mal.Pub()}))
		e.hookRefused("banned owner", id, secret)
		manual := e.owner.Event(nostr.KindManualTrigger, now(), `{"n":"manual"}`, nostr.Tag{"d", id.String()}, nostr.Tag{"e", defID}, chanTag(e.ch))
		relaytest.Eq(t, "46020 for the banned owner's workflow", e.oc.Publish(manual).Message, msgManualOwner)

		// A message trigger still creates a run; it fails before acting.
		before, _ := e.posted()
		e.oc.MustAccept(e.owner.Event(nostr.KindChatMessage, now(), "ping after the ban", chanTag(e.ch)))
		body := e.runEnd(echo, "")
		relaytest.Eq(t, "status", body["status"], any("failed"))
		relaytest.Eq(t, "error_code", body["error_code"], any(workflow.CodeOwnerUnauthorized))
		if after, _ := e.posted(); len(after) != len(before) {
			t.Fatalf("the banned owner's echo posted: %q", after)
		}
	})
}

// TestWorkflowRemovedMemberHookIsUnknown: removed from a members-only
// community (9031), a member's webhook answers like an unknown hook.
func TestWorkflowRemovedMemberHookIsUnknown(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		e := newRightsEnv(t, b.(wfBackend), true)
		id, secret := e.malHook()
		e.hookWorks(id, secret, 1)
		e.oc.MustAccept(e.owner.Event(nostr.KindRemoveCommunityMember, now(), "", nostr.Tag{"p", e.mal.Pub()}))
		e.hookRefused("removed member", id, secret)
	})
}

// TestWorkflowTimedOutOwnerHookIsUnknown: while its owner is timed out
// (9042), a webhook answers like an unknown hook; once the timeout ends
// (the relay's clock moved past it) it runs again.
func TestWorkflowTimedOutOwnerHookIsUnknown(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		e := newRightsEnv(t, b.(wfBackend), false)
		id, secret := e.malHook()
		e.hookWorks(id, secret, 1)
		end := e.now().Add(10 * time.Minute)
		e.oc.MustAccept(e.owner.Event(nostr.KindTimeout, now(), "", nostr.Tag{"p", e.mal.Pub()}, expTag(end)))
		e.hookRefused("timed-out owner", id, secret)
		e.advance(9 * time.Minute)
		e.hookRefused("timed-out owner, a minute before the end", id, secret)
		e.advance(time.Minute + time.Second)
		e.hookWorks(id, secret, 2)
	})
}

// TestWorkflowApprovalAfterOwnerBanDoesNotResume: a run waiting for
// approval whose owner is banned before the grant fails at resumption
// with owner_unauthorized; the step after the approval never runs.
func TestWorkflowApprovalAfterOwnerBanDoesNotResume(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		e := newRightsEnv(t, b.(wfBackend), false)
		yaml := `name: Gate
trigger: {on: webhook}
steps:
  - id: ask
    action: request_approval
    from: any
    message: "go?"
    timeout: 1h
  - id: done
    action: send_message
    text: "approved {{trigger.n}}"
`
		id, secret := e.defineHook(e.mc, e.mal, yaml)
		m := e.accept(id, secret, `{"n":"x"}`)
		var req map[string]any
		e.watch.waitFor("live", func(ev *nostr.Event) bool {
			if ev.Kind != nostr.KindApprovalRequested {
				return false
			}
			req = approvalRequest(t, ev)
			return req["run_id"] == m["run_id"]
		})
		e.oc.MustAccept(e.owner.Event(nostr.KindBan, now(), "", nostr.Tag{"p", e.mal.Pub()}))
		approval, _ := req["approval_id"].(string)
		e.oc.MustAccept(e.owner.Event(nostr.KindApprovalGrant, now(), "", nostr.Tag{"d", approval}, chanTag(e.ch)))
		body := e.runEnd(id, m["run_id"])
		relaytest.Eq(t, "status", body["status"], any("failed"))
		relaytest.Eq(t, "error_code", body["error_code"], any(workflow.CodeOwnerUnauthorized))
		if msgs, _ := e.posted(); len(msgs) != 0 {
			t.Fatalf("the run went on after its owner's ban: %q", msgs)
		}
	})
}

// TestWorkflowTopicNeedsEditMetadataRole: set_channel_topic needs the
// role a 9002 needs. A plain member (whose 9002 is refused) cannot define
// it; an admin can and the topic changes; demoted to member, the admin's
// workflow fails at the step with owner_unauthorized and the topic stays.
func TestWorkflowTopicNeedsEditMetadataRole(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		e := newRightsEnv(t, b.(wfBackend), false)
		topic := func() string {
			t.Helper()
			ch, err := e.st.Channel(t.Context(), e.c, e.ch)
			if err != nil {
				t.Fatal(err)
			}
			return ch.About
		}
		yaml := "name: Topic\ntrigger: {on: webhook}\nsteps:\n  - id: t\n    action: set_channel_topic\n    topic: \"{{trigger.topic}}\"\n"
		// The plain member: 9002 refused, and so is the workflow.
		relaytest.MustPrefix(t, "member's 9002", e.mc.command(e.mal, nostr.KindEditMetadata, e.ch, nostr.Tag{"about", "pwned"}).Message, "restricted: ")
		_, ok := e.mc.define(e.mal, workflow.NewID(), e.ch, yaml)
		relaytest.Eq(t, "member's set_channel_topic workflow", ok.Message, msgWorkflowNotAllowed)

		// An admin's workflow sets the topic.
		adam := newSigner(t)
		ac := e.authed(adam)
		ac.MustAccept(adam.Event(nostr.KindJoinRequest, now(), "", chanTag(e.ch)))
		relaytest.Eq(t, "owner makes adam admin", e.oc.command(e.owner, nostr.KindPutUser, e.ch, nostr.Tag{"p", adam.Pub(), "admin"}).OK, true)
		id, secret := e.defineHook(ac, adam, yaml)
		m := e.accept(id, secret, `{"topic":"by adam"}`)
		relaytest.Eq(t, "admin's run", e.runEnd(id, m["run_id"])["status"], any("completed"))
		relaytest.Eq(t, "topic", topic(), "by adam")

		// Demoted: the step is refused, the topic unchanged.
		relaytest.Eq(t, "owner demotes adam", e.oc.command(e.owner, nostr.KindPutUser, e.ch, nostr.Tag{"p", adam.Pub(), "member"}).OK, true)
		m = e.accept(id, secret, `{"topic":"pwned"}`)
		body := e.runEnd(id, m["run_id"])
		relaytest.Eq(t, "status", body["status"], any("failed"))
		relaytest.Eq(t, "error_code", body["error_code"], any(workflow.CodeOwnerUnauthorized))
		relaytest.Eq(t, "topic after the demotion", topic(), "by adam")
	})
}

// TestWorkflowRoutesFollowReadPolicy: in a members-only community, a
// stranger, a banned member and a removed member get, on every workflow
// route, exactly the answer for an unknown workflow or channel; a member
// reads them. channel= accepts what a REQ's "#h" matches: a channel
// created with a name is listed by that name, not by its storage key.
func TestWorkflowRoutesFollowReadPolicy(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		e := newRightsEnv(t, b.(wfBackend), true)
		wf := workflow.NewID()
		okResponse(t, func() *nostr.OKMessage { _, ok := e.mc.define(e.mal, wf, e.ch, echoYAML); return ok }())
		e.mc.MustAccept(e.mal.Event(nostr.KindChatMessage, now(), "ping secret plans", chanTag(e.ch)))
		e.runEnd(wf, "")
		// A channel created with a name for a group id.
		named := "pizza-lovers"
		e.oc.MustAccept(e.owner.Event(nostr.KindCreateChannel, now(), "", nostr.Tag{"h", named}, nostr.Tag{"name", "Pizza"}))
		key, _ := channel.ParseID(named)
		e.mc.MustAccept(e.mal.Event(nostr.KindJoinRequest, now(), "", nostr.Tag{"h", named}))
		namedWF := workflow.NewID()
		okResponse(t, e.mc.Publish(e.mal.Event(nostr.KindDefinition, now(), echoYAML, nostr.Tag{"d", namedWF.String()}, nostr.Tag{"h", named})))

		stranger, banned, removed := newSigner(t), newSigner(t), newSigner(t)
		for _, s := range []*signer{banned, removed} {
			e.oc.MustAccept(e.owner.Event(nostr.KindAddCommunityMember, now(), "", nostr.Tag{"p", s.Pub()}))
			e.authed(s).MustAccept(s.Event(nostr.KindJoinRequest, now(), "", chanTag(e.ch)))
		}
		get := func(s *signer, path string) (int, []byte) { return wfCall(t, e.tr, s, "GET", e.host, path) }
		// Before: the soon banned and removed read like the member.
		for _, s := range []*signer{e.mal, banned, removed} {
			for _, path := range []string{"/workflows?channel=" + e.ch.String(), "/workflows/" + wf.String(), "/workflows/" + wf.String() + "/runs"} {
				if code, body := get(s, path); code != 200 || !strings.Contains(string(body), wf.String()) {
					t.Fatalf("member %s: %d %s", path, code, body)
				}
			}
		}
		if code, body := get(e.mal, "/workflows?channel="+named); code != 200 || !strings.Contains(string(body), namedWF.String()) {
			t.Fatalf("list by group name: %d %s", code, body)
		}
		e.oc.MustAccept(e.owner.Event(nostr.KindBan, now(), "", nostr.Tag{"p", banned.Pub()}))
		e.oc.MustAccept(e.owner.Event(nostr.KindRemoveCommunityMember, now(), "", nostr.Tag{"p", removed.Pub()}))

		random := workflow.NewID().String()
		_, unknownList := get(e.mal, "/workflows?channel="+workflow.NewID().String())
		_, unknownGet := get(e.mal, "/workflows/"+random)
		_, unknownRuns := get(e.mal, "/workflows/"+random+"/runs")
		for name, s := range map[string]*signer{"stranger": stranger, "banned": banned, "removed": removed} {
			for path, want := range map[string][]byte{
				"/workflows?channel=" + e.ch.String():      unknownList,
				"/workflows?channel=" + named:              unknownList,
				"/workflows/" + wf.String():                unknownGet,
				"/workflows/" + wf.String() + "/runs":      unknownRuns,
				"/workflows/" + namedWF.String():           unknownGet,
				"/workflows/" + namedWF.String() + "/runs": unknownRuns,
			} {
				code, body := get(s, path)
				if code != http.StatusNotFound || !bytes.Equal(body, want) {
					t.Errorf("%s GET %s: %d %s, want %s", name, path, code, body, want)
				}
			}
		}
		// The storage key of a named channel names nothing, as in a REQ.
		if code, body := get(e.mal, "/workflows?channel="+key.String()); code != http.StatusNotFound || !bytes.Equal(body, unknownList) {
			t.Errorf("list by a named channel's key: %d %s", code, body)
		}
	})
}

// TestWorkflowOwnerRightsAcrossPods: two relays (pods) on one store, with
// no control bus between them. A delivery through the second pod runs; the
// owner is banned through the first; the second pod's next delivery is
// the unknown hook's 404 — it decides from the store, not from what it
// saw before.
func TestWorkflowOwnerRightsAcrossPods(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		e := newRightsEnv(t, b.(wfBackend), false)
		pod2 := workflowRelay(t, e.st, newHookServer(t))
		id, secret := e.malHook()
		deliver2 := func(body string) (int, []byte) {
			return hookPost(t, pod2.Srv.URL, e.host, id.String(), secret, "", []byte(body))
		}
		if code, body := deliver2(`{"n":"1"}`); code != http.StatusAccepted {
			t.Fatalf("pod 2 before the ban: %d %s", code, body)
		}
		e.oc.MustAccept(e.owner.Event(nostr.KindBan, now(), "", nostr.Tag{"p", e.mal.Pub()}))
		if code, body := deliver2(`{"n":"2"}`); code != http.StatusNotFound || !bytes.Equal(body, e.unknownHook()) {
			t.Fatalf("pod 2 after the ban on pod 1: %d %s", code, body)
		}
	})
}
