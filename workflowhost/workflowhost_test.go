package workflowhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/internal/tracetest"

	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip59"
	"github.com/buzzrelay/buzz/safehttp"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

// wfBackend is a store the relay and the workflow engine both run on.
type wfBackend interface {
	store.Backend
	store.ChannelStore
	workflow.Store
}

// hookServer is a local webhook receiver reached through safehttp's
// injected dialer under a public-looking name.
type hookServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []string // bodies
	keys  []string // Idempotency-Key headers
}

func newHookServer(t testing.TB) *hookServer {
	h := &hookServer{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.calls = append(h.calls, string(b))
		h.keys = append(h.keys, r.Header.Get("Idempotency-Key"))
		h.mu.Unlock()
		_, _ = w.Write([]byte(`{"received":true}`))
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookServer) bodies() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

type staticDNS map[string]netip.Addr

func (d staticDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := d[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// workflowRelay serves a relay with workflows on st, its engine running
// (poll 20 ms) until the test ends. Webhooks to hooks.example reach hook.
func workflowRelay(t testing.TB, st wfBackend, hook *hookServer, extra ...buzz.Option) *testRelay {
	t.Helper()
	caller, err := safehttp.New(
		safehttp.WithResolver(staticDNS{"hooks.example": netip.MustParseAddr("93.184.216.34")}),
		safehttp.WithDialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, hook.srv.Listener.Addr().String())
		}))
	if err != nil {
		t.Fatal(err)
	}
	apiV, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	wf, err := New(st, WithWebhookCaller(workflow.SafeHTTPWebhooks(caller)),
		WithEngineOptions(workflow.WithPollInterval(20*time.Millisecond), workflow.WithLogger(relaytest.Quiet())))
	if err != nil {
		t.Fatal(err)
	}
	tr := backendRelay(t, st, append([]buzz.Option{buzz.WithRelayKey(testMaster), buzz.WithHTTPAuth(apiV), buzz.WithFeature(wf)}, extra...)...)
	tr.wf = wf
	return tr
}

// define publishes a 30620 and returns its OK.
func (c *rawClient) define(s *signer, id workflow.ID, ch channel.ID, yaml string, extra ...nostr.Tag) (*nostr.Event, *nostr.OKMessage) {
	c.T.Helper()
	tags := append([]nostr.Tag{{"d", id.String()}, chanTag(ch)}, extra...)
	ev := s.Event(nostr.KindDefinition, now(), yaml, tags...)
	return ev, c.Publish(ev)
}

// okResponse decodes an OK "response:{…}" message.
func okResponse(t *testing.T, ok *nostr.OKMessage) map[string]any {
	t.Helper()
	if !ok.OK || !strings.HasPrefix(ok.Message, "response:") {
		t.Fatalf("OK %v %q, want accepted with response:", ok.OK, ok.Message)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(ok.Message, "response:")), &m); err != nil {
		t.Fatalf("response %q: %v", ok.Message, err)
	}
	return m
}

// waitFor reads live events on sub until one satisfies match.
func (c *rawClient) waitFor(sub string, match func(*nostr.Event) bool) *nostr.Event {
	c.T.Helper()
	for {
		ev := c.NextLive(sub)
		if match(ev) {
			return ev
		}
	}
}

const echoYAML = `name: Echo
trigger: {on: message_posted, filter: 'str_contains(trigger_text, "ping")'}
steps:
  - id: reply
    action: send_message
    text: "pong to {{trigger.author}}: {{trigger.text}}"
`

func TestWorkflowsOverWebSocket(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st, ok := b.(wfBackend)
		if !ok {
			t.Fatalf("%T does not implement the workflow store", b)
		}
		hook := newHookServer(t)
		rec := trace.NewRecorder()
		tr := workflowRelay(t, st, hook, buzz.WithTracer(rec.Open))
		defer tracetest.CheckTraces(t, rec, false)
		alice, bob, carol := newSigner(t), newSigner(t), newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		ch := ac.createChannel(alice, "ops", channel.VisibilityOpen)
		bc := tr.dial(t)
		bc.AuthAs(bob, tr.Host)
		bc.MustAccept(bob.Event(nostr.KindJoinRequest, now(), "", chanTag(ch)))

		// Definition: accepted with workflow_id and revision.
		echoID := workflow.NewID()
		_, okm := ac.define(alice, echoID, ch, echoYAML)
		resp := okResponse(t, okm)
		relaytest.Eq(t, "workflow_id", resp["workflow_id"], any(echoID.String()))
		rev, _ := resp["revision"].(string)
		if rev == "" {
			t.Fatalf("no revision in %v", resp)
		}

		// Validation errors name the field; nothing is stored.
		for yaml, want := range map[string]string{
			"name: x\n": "invalid: ",
			"name: x\ntrigger: {on: nope}\nsteps: []\n":              "invalid: ",
			strings.Replace(echoYAML, "id: reply", "id: bad-id!", 1): "invalid: steps",
		} {
			_, okm := ac.define(alice, workflow.NewID(), ch, yaml)
			if okm.OK || !strings.HasPrefix(okm.Message, want) {
				t.Errorf("definition %q: OK %v %q, want prefix %q", yaml, okm.OK, okm.Message, want)
			}
		}
		// Stale expected-revision.
		_, okm = ac.define(alice, echoID, ch, echoYAML, nostr.Tag{"expected-revision", strings.Repeat("0", 32)})
		relaytest.MustPrefix(t, "stale revision", okm.Message, "invalid: ")
		// A version older than the stored 30620 is refused before it can
		// change the workflow: the revision the first define returned is
		// still current afterwards.
		older := alice.Event(nostr.KindDefinition, now()-60, strings.Replace(echoYAML, "Echo", "Older", 1),
			nostr.Tag{"d", echoID.String()}, chanTag(ch))
		relaytest.Eq(t, "older definition", ac.Publish(older).Message, ingest.MsgSuperseded)
		newer := alice.Event(nostr.KindDefinition, now()+1, echoYAML,
			nostr.Tag{"d", echoID.String()}, chanTag(ch), nostr.Tag{"expected-revision", rev})
		relaytest.Eq(t, "revision after the refused older version", okResponse(t, ac.Publish(newer))["revision"], any(rev))
		// Authority: a non-member; a member defining a webhook caller;
		// another author naming an existing id.
		cc := tr.dial(t)
		cc.AuthAs(carol, tr.Host)
		_, okm = cc.define(carol, workflow.NewID(), ch, echoYAML)
		relaytest.MustPrefix(t, "non-member", okm.Message, "restricted: ")
		hookYAML := "name: Hook\ntrigger: {on: webhook}\nsteps:\n  - id: call\n    action: call_webhook\n    url: http://hooks.example/in\n    body: {who: '{{trigger.who}}'}\n"
		_, okm = bc.define(bob, workflow.NewID(), ch, hookYAML)
		relaytest.MustPrefix(t, "member with call_webhook", okm.Message, "restricted: ")
		_, okm = bc.define(bob, echoID, ch, echoYAML)
		relaytest.Eq(t, "another author's id", okm.Message, msgWorkflowNotOwner)
		// Clients cannot forge status events.
		okm = bc.Publish(bob.Event(nostr.KindRunCompleted, now(), "{}", chanTag(ch)))
		relaytest.Eq(t, "client status event", okm.Message, msgWorkflowStatus)

		// message_posted: bob's "ping" gets a relay-signed pong and the
		// run's status events, each with h, workflow_id, run_id, status.
		ac.Subscribe("live", nostr.Filter{Kinds: []int{9, nostr.KindRunTriggered, nostr.KindRunCompleted}, Tags: map[string][]string{"h": {ch.String()}}})
		ping := bob.Event(nostr.KindChatMessage, now(), "ping please", chanTag(ch))
		bc.MustAccept(ping)
		// The run's events arrive in any order relative to each other.
		var pong *nostr.Event
		statuses := map[int]*nostr.Event{}
		for pong == nil || len(statuses) < 2 {
			e := ac.NextLive("live")
			switch {
			case e.Kind == 9 && e.PubKey != bob.Pub():
				pong = e
			case e.Kind != 9:
				statuses[e.Kind] = e
			}
		}
		relaytest.Eq(t, "pong", pong.Content, "pong to "+bob.Pub()+": ping please")
		// Engine output is traced like a connection's writes: bound
		// through the community's host, as a write in the channel.
		engineTraced := false
		for _, rt := range rec.Traces() {
			if bytes.Contains(rt.JSONL, []byte(`"type":"write_insert"`)) && bytes.Contains(rt.JSONL, []byte(pong.ID[:16])) {
				engineTraced = true
			}
		}
		if !engineTraced {
			t.Fatal("the relay-signed pong is in no conformance trace")
		}
		var runID string
		for _, kind := range []int{nostr.KindRunTriggered, nostr.KindRunCompleted} {
			st := statuses[kind]
			var body map[string]any
			if err := json.Unmarshal([]byte(st.Content), &body); err != nil {
				t.Fatal(err)
			}
			if body["workflow_id"] != echoID.String() || body["run_id"] == "" || body["status"] == "" || st.Tags.Find("h").Value() != ch.String() {
				t.Fatalf("status %d = %s %v", kind, st.Content, st.Tags)
			}
			if st.PubKey != pong.PubKey {
				t.Fatal("status event and message signed by different keys")
			}
			runID = body["run_id"].(string)
		}
		if runID == "" {
			t.Fatal("no run id")
		}
		// A message that does not match the filter triggers nothing; the
		// relay's own pong did not trigger a loop (one pong only).
		bc.MustAccept(bob.Event(nostr.KindChatMessage, now(), "hello", chanTag(ch)))
		marker := bob.Event(nostr.KindChatMessage, now(), "marker", chanTag(ch))
		bc.MustAccept(marker)
		for {
			e := ac.NextLive("live")
			if e.ID == marker.ID {
				break
			}
			if e.Kind == 9 && e.PubKey == pong.PubKey {
				t.Fatalf("unexpected relay message %q", e.Content)
			}
		}

		ac = tr.dial(t) // the old connection keeps its live subscription
		ac.AuthAs(alice, tr.Host)

		// Manual runs (46020) of a webhook-triggered workflow: call_webhook
		// (alice owns the channel) and send_dm to bob, each effect once.
		dmYAML := hookYAML + "  - id: dm\n    action: send_dm\n    to: '" + bob.Pub() + "'\n    text: 'hook said {{steps.call.output.status}} for {{trigger.who}}'\n"
		hookID := workflow.NewID()
		def, okm := ac.define(alice, hookID, ch, dmYAML)
		okResponse(t, okm)
		manual := func(c *rawClient, s *signer, id workflow.ID, e string, content string) *nostr.OKMessage {
			return c.Publish(s.Event(nostr.KindManualTrigger, now(), content, nostr.Tag{"d", id.String()}, nostr.Tag{"e", e}, chanTag(ch)))
		}
		okm = manual(bc, bob, hookID, strings.Repeat("0", 64), `{"who":"bob"}`)
		relaytest.Eq(t, "stale e", okm.Message, msgManualStale)
		okm = manual(bc, bob, echoID, def.ID, `{}`)
		relaytest.MustPrefix(t, "not a webhook workflow", okm.Message, "invalid: ")
		okm = manual(bc, bob, hookID, def.ID, `[1]`)
		relaytest.Eq(t, "array content", okm.Message, msgManualContent)
		okm = manual(cc, carol, hookID, def.ID, `{"who":"carol"}`)
		relaytest.Eq(t, "non-member trigger", okm.Message, msgManualNotMember)
		run := okResponse(t, manual(bc, bob, hookID, def.ID, `{"who":"bob"}`))
		if run["run_id"] == "" || run["workflow_id"] != hookID.String() {
			t.Fatalf("manual response %v", run)
		}
		bc.Subscribe("dm", nostr.Filter{Kinds: []int{nostr.KindGiftWrap}})
		wrap := bc.NextLive("dm")
		v, err := nostr.NewVerifier()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		rumor, err := nip59.Unwrap(wrap, bob.SK, v)
		if err != nil {
			t.Fatal(err)
		}
		relaytest.Eq(t, "dm text", rumor.Content, "hook said 200 for bob")
		relaytest.Eq(t, "dm sender", rumor.PubKey, pong.PubKey)
		if got := hook.bodies(); len(got) != 1 || got[0] != `{"who":"bob"}` {
			t.Fatalf("webhook calls %q, want one", got)
		}
		bc = tr.dial(t)
		bc.AuthAs(bob, tr.Host)
		// Alice is not the recipient: the wrap is invisible to her.
		ac2 := tr.dial(t)
		ac2.AuthAs(alice, tr.Host)
		if evs := ac2.Req("w", nostr.Filter{IDs: []string{wrap.ID}}); len(evs) != 0 {
			t.Fatal("alice read bob's DM")
		}

		// Cross-community: the same ids from another host answer exactly
		// as random ones.
		other := "other.example"
		if _, _, err := st.EnsureCommunity(context.Background(), other); err != nil {
			t.Fatal(err)
		}
		oc := tr.dialHost(t, other)
		oc.AuthAs(bob, other)
		och := oc.createChannel(bob, "x", channel.VisibilityOpen)
		probe := func(id workflow.ID) string {
			return oc.Publish(bob.Event(nostr.KindManualTrigger, now(), `{}`, nostr.Tag{"d", id.String()}, nostr.Tag{"e", def.ID}, chanTag(och))).Message
		}
		relaytest.Eq(t, "foreign workflow id vs random", probe(hookID), probe(workflow.NewID()))
		relaytest.Eq(t, "foreign workflow id", probe(hookID), msgWorkflowUnknown)
		// Defining the same id there makes an unrelated workflow.
		_, okm = oc.define(bob, echoID, och, echoYAML)
		okResponse(t, okm)

		// set_channel_topic on a reaction, republishing 39000.
		topicYAML := "name: Pin\ntrigger: {on: reaction_added, emoji: '📌'}\nsteps:\n  - id: t\n    action: set_channel_topic\n    topic: 'pinned: {{trigger.emoji}} by {{trigger.author | npub}}'\n"
		_, okm = ac.define(alice, workflow.NewID(), ch, topicYAML)
		okResponse(t, okm)
		mc := tr.dial(t)
		mc.Subscribe("meta", nostr.Filter{Kinds: []int{nostr.KindChannelMetadata}, Tags: map[string][]string{"d": {ch.String()}}, Limit: 0, LimitSet: true})
		bc.MustAccept(bob.Event(7, now(), "📌", nostr.Tag{"e", ping.ID}, chanTag(ch)))
		meta := mc.waitFor("meta", func(e *nostr.Event) bool { return strings.Contains(string(e.AppendJSON(nil)), "pinned: 📌") })
		if meta.PubKey != pong.PubKey {
			t.Fatal("39000 not signed by the community key")
		}
		chRow, err := st.Channel(context.Background(), tr.tc.Community(), ch)
		if err != nil || !strings.HasPrefix(chRow.About, "pinned: 📌 by npub1") {
			t.Fatalf("channel about %q, %v", chRow.About, err)
		}

		// Removing a member disables the workflows they own there.
		bobWF := workflow.NewID()
		_, okm = bc.define(bob, bobWF, ch, strings.Replace(echoYAML, "ping", "bobping", 1))
		okResponse(t, okm)
		ac.MustAccept(alice.Event(nostr.KindRemoveUser, now(), "", chanTag(ch), nostr.Tag{"p", bob.Pub()}))
		wf, err := st.Workflow(context.Background(), tr.tc.Community(), bobWF)
		if err != nil || wf.Enabled {
			t.Fatalf("removed member's workflow: enabled %v, %v", wf.Enabled, err)
		}

		// NIP-09 deletion of the coordinate deletes the workflow.
		ac.MustAccept(alice.Event(nostr.KindDeletion, now(), "", nostr.Tag{"a", fmt.Sprintf("%d:%s:%s", nostr.KindDefinition, alice.Pub(), hookID)}))
		if _, err := st.Workflow(context.Background(), tr.tc.Community(), hookID); err == nil {
			t.Fatal("workflow survived the deletion of its coordinate")
		}
		okm = manual(ac, alice, hookID, def.ID, `{}`)
		relaytest.Eq(t, "deleted workflow", okm.Message, msgWorkflowUnknown)
	})
}

// A workflow in a group whose NIP-29 id is a name, not a UUID: what it
// publishes carries the group's own id in h, so members reading the group
// by that id see it (and admission accepts it).
func TestWorkflowInNamedGroup(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st, ok := b.(wfBackend)
		if !ok {
			t.Fatalf("%T does not implement the workflow store", b)
		}
		tr := workflowRelay(t, st, newHookServer(t))
		alice := newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		const gid = "pizza-lovers"
		h := nostr.Tag{"h", gid}
		ac.MustAccept(alice.Event(nostr.KindCreateChannel, now(), "", h, nostr.Tag{"name", "Pizza"}))
		def := alice.Event(nostr.KindDefinition, now(), echoYAML, nostr.Tag{"d", workflow.NewID().String()}, h)
		okResponse(t, ac.Publish(def))

		sub := tr.dial(t)
		sub.Subscribe("live", nostr.Filter{Kinds: []int{nostr.KindChatMessage, nostr.KindRunCompleted}, Tags: map[string][]string{"h": {gid}}})
		ac.MustAccept(alice.Event(nostr.KindChatMessage, now(), "ping", h))
		var pong, done *nostr.Event
		for pong == nil || done == nil {
			e := sub.NextLive("live")
			switch {
			case e.Kind == nostr.KindChatMessage && e.PubKey != alice.Pub():
				pong = e
			case e.Kind == nostr.KindRunCompleted:
				done = e
			}
		}
		for _, e := range []*nostr.Event{pong, done} {
			relaytest.Eq(t, "h of the engine's event", e.Tags.Find("h").Value(), gid)
		}
		// Stored under the group: a REQ by the group's id finds the pong.
		found := false
		for _, e := range sub.Req("r", nostr.Filter{Kinds: []int{nostr.KindChatMessage}, Tags: map[string][]string{"h": {gid}}}) {
			found = found || e.ID == pong.ID
		}
		if !found {
			t.Fatal("the pong is not returned by a REQ for the group's id")
		}
	})
}

// TestMountNeedsChannels: the workflow host refuses a relay without
// channels, and New refuses what it cannot build.
func TestMountNeedsChannels(t *testing.T) {
	st := relaytest.Embedded(t)
	wf, err := New(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithFeature(wf), buzz.WithLogger(relaytest.Quiet())); err == nil || !strings.Contains(err.Error(), "WithChannels") {
		t.Fatalf("workflows without WithChannels: %v", err)
	}
	if _, err := New(nil); err == nil {
		t.Fatal("New accepted a nil store")
	}
	if _, err := New(st, WithEngineOptions(workflow.WithConcurrency(0))); err == nil {
		t.Fatal("New accepted an invalid engine option")
	}
	if _, err := New(st, WithWebhookCaller(nil)); err == nil {
		t.Fatal("New accepted a nil webhook caller")
	}
}
