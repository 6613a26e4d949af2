package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

func TestEngineMessageTrigger(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t))
		w := ev.define(`
name: Echo
trigger: {on: message_posted, filter: 'str_contains(trigger_text, "ping")'}
steps:
  - id: reply
    action: send_message
    text: "pong to {{trigger.author}}: {{trigger.text}}"
    reply_in_thread: true
  - id: again
    if: 'steps_reply_output_sent == true && len(trigger_text) > 2'
    action: send_message
    text: "echoed as {{steps.reply.output.event_id | truncate(8)}}"
`)
		ev.post(nostr.KindChatMessage, "no match here")
		// Template injection: the user's {{…}} stays literal.
		msg := ev.post(nostr.KindChatMessage, "ping {{steps.reply.output.event_id}} {{trigger.author}}")
		runs := ev.finished(w, 1)
		r := runs[0]
		if r.Status != workflow.RunCompleted || r.TriggerEventID != msg.ID {
			t.Fatalf("run %+v", r)
		}
		if len(r.Trace) != 2 || r.Trace[0].Status != workflow.StepCompleted || r.Trace[1].Status != workflow.StepCompleted {
			t.Fatalf("trace %+v", r.Trace)
		}
		if r.Trace[0].StartedAt.IsZero() || r.Trace[0].FinishedAt.Before(r.Trace[0].StartedAt) {
			t.Fatalf("trace timestamps %+v", r.Trace[0])
		}
		eventually(t, func() bool { return len(ev.pub.statuses(r.ID)) == 6 }, "status events")
		want := []string{"triggered:", "step_started:reply", "step_completed:reply", "step_started:again", "step_completed:again", "completed:"}
		if got := ev.pub.statuses(r.ID); !slices.Equal(got, want) {
			t.Fatalf("statuses %v, want %v", got, want)
		}
		msgs := ev.pub.of(nostr.KindChatMessage)
		if len(msgs) != 2 {
			t.Fatalf("%d messages published", len(msgs))
		}
		wantText := "pong to " + ev.user.PublicKey() + ": ping {{steps.reply.output.event_id}} {{trigger.author}}"
		if msgs[0].Content != wantText {
			t.Fatalf("message %q\nwant %q", msgs[0].Content, wantText)
		}
		if msgs[1].Content != "echoed as "+msgs[0].ID[:8]+"…" {
			t.Fatalf("second message %q", msgs[1].Content)
		}
		if !hasTag(msgs[0], "e", msg.ID) || !hasTag(msgs[0], "h", ev.ch.String()) || !hasTag(msgs[0], workflow.ProvenanceTag, w.ID.String()) {
			t.Fatalf("message tags %v", msgs[0].Tags)
		}
		// Status events: h tag and the JSON content.
		st := ev.pub.of(nostr.KindRunTriggered)[0]
		var body map[string]any
		if err := json.Unmarshal([]byte(st.Content), &body); err != nil || body["workflow_id"] != w.ID.String() || body["run_id"] != r.ID.String() || body["status"] != "triggered" || !hasTag(st, "h", ev.ch.String()) {
			t.Fatalf("status event %v %s", st.Tags, st.Content)
		}
		// Loop guard: the engine's own messages (fed back by the relay)
		// contain "ping" but never trigger. The feed is handled in order,
		// each event's runs persisted before the next: once a later user
		// message's run exists, a run of theirs would too.
		sentinel := ev.post(nostr.KindChatMessage, "ping sentinel")
		eventually(t, func() bool {
			return slices.ContainsFunc(ev.runs(w), func(r workflow.Run) bool { return r.TriggerEventID == sentinel.ID })
		}, "the sentinel's run")
		for _, r := range ev.runs(w) {
			if r.TriggerEventID != msg.ID && r.TriggerEventID != sentinel.ID {
				t.Fatalf("run triggered by %s: the engine's own messages triggered it", r.TriggerEventID)
			}
		}
	})
}

func hasTag(ev *nostr.Event, name, value string) bool {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == name && t[1] == value {
			return true
		}
	}
	return false
}

func TestEngineReactionTrigger(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t))
		w := ev.define(`
name: Thanks
trigger: {on: reaction_added, emoji: "🎉"}
steps:
  - id: react
    action: add_reaction
    emoji: "🙌"
`)
		target := workflowtest.Hex32()
		ev.post(7, "👍", nostr.Tag{"e", target})
		ev.post(7, "🎉", nostr.Tag{"e", target})
		runs := ev.finished(w, 1)
		if runs[0].Status != workflow.RunCompleted || runs[0].Trigger["emoji"] != "🎉" {
			t.Fatalf("run %+v", runs[0])
		}
		var mine []*nostr.Event
		for _, r := range ev.pub.of(7) {
			if r.PubKey != ev.user.PublicKey() {
				mine = append(mine, r)
			}
		}
		if len(mine) != 1 || mine[0].Content != "🙌" || !hasTag(mine[0], "e", target) {
			t.Fatalf("engine reactions %+v", mine)
		}
	})
}

func TestEngineManualTriggerConditionsAndSkips(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t))
		w := ev.define(`
name: Hook
trigger: {on: webhook}
steps:
  - id: first
    action: send_message
    text: "deploy {{trigger.service}} by {{trigger.author | npub}} {{trigger.meta | json}}"
  - id: never
    if: 'trigger_service == "other"'
    action: send_message
    text: unreachable
  - id: after_never
    depends_on: [never]
    action: send_message
    text: unreachable either
  - id: bad
    if: 'trigger_missing == 1'
    action: send_message
    text: unreachable
`)
		ctx := context.Background()
		// Wrong revision, wrong channel, foreign community, non-member.
		base := workflow.ManualTrigger{Workflow: w.ID, Channel: ev.ch, Revision: w.EventID, Author: ev.user.PublicKey(),
			EventID: workflowtest.Hex32(), Fields: map[string]any{"service": "api", "meta": map[string]any{"v": 2}}}
		bad := base
		bad.Revision = workflowtest.Hex32()
		if _, _, err := ev.e.TriggerManual(ctx, ev.c, bad); !errors.Is(err, workflow.ErrRevisionConflict) {
			t.Fatalf("stale revision: %v", err)
		}
		bad = base
		bad.Channel = workflowtest.ChannelID()
		if _, _, err := ev.e.TriggerManual(ctx, ev.c, bad); !errors.Is(err, workflow.ErrNotFound) {
			t.Fatalf("other channel: %v", err)
		}
		other := workflowtest.Community(t, ev.b, "other.example")
		if _, _, err := ev.e.TriggerManual(ctx, other, base); !errors.Is(err, workflow.ErrNotFound) {
			t.Fatalf("foreign community: %v", err)
		}
		bad = base
		bad.Author = workflowtest.Hex32()
		if _, _, err := ev.e.TriggerManual(ctx, ev.c, bad); !errors.Is(err, workflow.ErrNotPermitted) {
			t.Fatalf("non-member: %v", err)
		}
		run, created, err := ev.e.TriggerManual(ctx, ev.c, base)
		if err != nil || !created {
			t.Fatalf("trigger: %v %v", created, err)
		}
		if again, created, err := ev.e.TriggerManual(ctx, ev.c, base); err != nil || created || again.ID != run.ID {
			t.Fatalf("same trigger event twice: %v %v", created, err)
		}
		r := ev.finished(w, 1)[0]
		if r.Status != workflow.RunFailed || r.ErrorCode != workflow.CodeConditionError {
			t.Fatalf("run %+v", r)
		}
		got := make([]string, len(r.Trace))
		for i, s := range r.Trace {
			got[i] = s.StepID + ":" + string(s.Status) + ":" + s.ErrorCode
		}
		want := []string{"first:completed:", "never:skipped:", "after_never:skipped:dependency_skipped", "bad:failed:condition_error"}
		if !slices.Equal(got, want) {
			t.Fatalf("trace %v, want %v", got, want)
		}
		msgs := ev.pub.of(nostr.KindChatMessage)
		if len(msgs) != 1 || !strings.HasPrefix(msgs[0].Content, "deploy api by npub1") || !strings.HasSuffix(msgs[0].Content, ` {"v":2}`) {
			t.Fatalf("messages %+v", msgs)
		}
		eventually(t, func() bool { return slices.Contains(ev.pub.statuses(r.ID), "failed:") }, "failed status")
		if !slices.Contains(ev.pub.statuses(r.ID), "step_failed:bad") {
			t.Fatalf("statuses %v", ev.pub.statuses(r.ID))
		}
	})
}

func TestEngineOwnerAuthorityRechecked(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t))
		w := ev.define(`
name: Auth
trigger: {on: message_posted}
steps: [{id: a, action: send_message, text: hi}]
`)
		ev.auth.set(ev.ch, ev.owner, "") // the owner left the channel
		ev.post(nostr.KindChatMessage, "hello")
		r := ev.finished(w, 1)[0]
		if r.Status != workflow.RunFailed || r.ErrorCode != workflow.CodeOwnerUnauthorized {
			t.Fatalf("run %+v", r)
		}
		if n := len(ev.pub.of(nostr.KindChatMessage)); n != 0 {
			t.Fatalf("%d messages sent for an unauthorized owner", n)
		}
		// A non-member cannot define a workflow; a member cannot define one
		// that calls webhooks.
		_, err := ev.e.Define(context.Background(), ev.c, workflow.DefineRequest{ID: workflow.NewID(), Channel: ev.ch,
			Author: workflowtest.Hex32(), YAML: []byte("name: x\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]")})
		if !errors.Is(err, workflow.ErrNotPermitted) {
			t.Fatalf("non-member define: %v", err)
		}
	})
}

// gate is a custom action that blocks its first call until released, so a
// test can stop an engine in the middle of a run.
type gate struct {
	entered chan struct{}
	calls   atomic.Int32
}

func (g *gate) Name() string                                         { return "gate" }
func (g *gate) Validate(workflow.Fields, *workflow.Definition) error { return nil }
func (g *gate) Run(ctx context.Context, x *workflow.StepContext) (map[string]any, error) {
	if g.calls.Add(1) == 1 {
		close(g.entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return map[string]any{"passed": true}, nil
}

// webhookCounter counts calls (a real receiver would see them).
type webhookCounter struct{ n atomic.Int32 }

func (w *webhookCounter) Call(ctx context.Context, r workflow.WebhookRequest) (workflow.WebhookResponse, error) {
	w.n.Add(1)
	return workflow.WebhookResponse{Status: 200, Body: []byte(`{"ok":true}`)}, nil
}

// takeoverTTL and takeoverHeartbeat are the lease of the takeover tests: short, so a halted
// pod's run is taken over within seconds, yet ten heartbeats long, so a
// live pod on a loaded machine (a -race run of every package at load 20)
// keeps its lease. With 300 ms a slow pod lost its own lease again and
// again until the run failed too_many_attempts.
const takeoverTTL, takeoverHeartbeat = 2 * time.Second, 200 * time.Millisecond

func TestEngineLeaseTakeoverMidRun(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		g := &gate{entered: make(chan struct{})}
		hooks := &webhookCounter{}
		lease := workflow.WithLease(takeoverTTL, takeoverHeartbeat)
		a := newEnv(t, open(t), lease, workflow.WithAction(g), workflow.WithWebhookCaller(hooks), workflow.WithWorkerName("pod-a"))
		w := a.define(`
name: Takeover
trigger: {on: message_posted}
steps:
  - {id: before, action: send_message, text: "before {{trigger.text}}"}
  - {id: hook, action: call_webhook, url: "https://hooks.example/x", body: {text: "{{trigger.text}}"}}
  - {id: wait, action: gate}
  - {id: after, action: send_message, text: "after {{steps.hook.output.status}}"}
`)
		a.post(nostr.KindChatMessage, "go")
		<-g.entered
		a.e.Halt() // pod A dies mid-run: no more heartbeats, lease not released
		b := a.sibling(lease, workflow.WithAction(g), workflow.WithWebhookCaller(hooks), workflow.WithWorkerName("pod-b"))
		r := b.finished(w, 1)[0]
		if r.Status != workflow.RunCompleted {
			t.Fatalf("run %+v", r)
		}
		var texts []string
		for _, m := range a.pub.of(nostr.KindChatMessage) {
			texts = append(texts, m.Content)
		}
		if !slices.Equal(texts, []string{"before go", "after 200"}) {
			t.Fatalf("messages %q (each effect exactly once)", texts)
		}
		// A replayed effect would publish the same event again (status
		// events may repeat after a takeover; effects may not).
		for _, m := range a.pub.of(nostr.KindChatMessage) {
			a.pub.mu.Lock()
			n := a.pub.publishes[m.ID]
			a.pub.mu.Unlock()
			if n != 1 {
				t.Fatalf("message %q published %d times", m.Content, n)
			}
		}
		if hooks.n.Load() != 1 {
			t.Fatalf("webhook called %d times", hooks.n.Load())
		}
	})
}

func TestEngineDurableDelayTakeover(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		lease := workflow.WithLease(takeoverTTL, takeoverHeartbeat)
		a := newEnv(t, open(t), lease, workflow.WithWorkerName("pod-a"))
		w := a.define(`
name: Later
trigger: {on: message_posted}
steps:
  - {id: one, action: send_message, text: "one"}
  - {id: pause, action: delay, duration: 1s}
  - {id: two, action: send_message, text: "two"}
`)
		a.post(nostr.KindChatMessage, "go")
		// Wait until the run is parked on the delay, then pod A dies.
		eventually(t, func() bool {
			rs := a.runs(w)
			return len(rs) == 1 && !rs[0].ResumeAt.IsZero()
		}, "the run to park")
		parked := a.runs(w)[0]
		if parked.Status != workflow.RunRunning || parked.CurrentStep != 1 {
			t.Fatalf("parked run %+v", parked)
		}
		a.e.Halt()
		b := a.sibling(lease, workflow.WithWorkerName("pod-b"))
		r := b.finished(w, 1)[0]
		if r.Status != workflow.RunCompleted || r.CompletedAt.Before(parked.ResumeAt) {
			t.Fatalf("run %+v (resume %v)", r, parked.ResumeAt)
		}
		var texts []string
		for _, m := range a.pub.of(nostr.KindChatMessage) {
			texts = append(texts, m.Content)
		}
		if !slices.Equal(texts, []string{"one", "two"}) {
			t.Fatalf("messages %q", texts)
		}
	})
}

func TestEngineQueuesBeyondConcurrency(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t), workflow.WithConcurrency(1))
		w := ev.define(`
name: Busy
trigger: {on: message_posted}
steps: [{id: a, action: send_message, text: "re {{trigger.text}}"}]
`)
		const n = 25
		for i := range n {
			ev.post(nostr.KindChatMessage, fmt.Sprint(i))
		}
		rs := ev.finished(w, n)
		for _, r := range rs {
			if r.Status != workflow.RunCompleted {
				t.Fatalf("run %+v", r)
			}
		}
	})
}

// flakySource panics on its first Subscribe, then works.
type flakySource struct {
	feed  *workflow.Feed
	calls atomic.Int32
}

func (f *flakySource) Subscribe(ctx context.Context, deliver func(context.Context, tenant.CommunityID, *nostr.Event) error) error {
	if f.calls.Add(1) == 1 {
		panic("source exploded")
	}
	return f.feed.Subscribe(ctx, deliver)
}

func TestEngineSupervisesLoops(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		b := open(t)
		feed := workflow.NewFeed(8)
		src := &flakySource{feed: feed}
		auth := newMembers()
		ch, owner := workflowtest.ChannelID(), workflowtest.Hex32()
		auth.set(ch, owner, channel.RoleMember)
		pub := newRecorder(t, nil)
		e, err := workflow.New(b, src, pub, workflow.WithAuthority(auth), workflow.WithPollInterval(20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Check(); err == nil {
			t.Fatal("Check passes before Run")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = e.Run(ctx) }()
		defer func() { cancel(); <-done }()
		c := workflowtest.Community(t, b, "sup.example")
		w, err := e.Define(ctx, c, workflow.DefineRequest{ID: workflow.NewID(), Channel: ch, Author: owner,
			YAML: []byte("name: s\ntrigger: {on: message_posted}\nsteps: [{id: a, action: send_message, text: ok}]")})
		if err != nil {
			t.Fatal(err)
		}
		sk, _ := nostr.GenerateSecretKey()
		msg := &nostr.Event{CreatedAt: time.Now().Unix(), Kind: nostr.KindChatMessage, Content: "x", Tags: nostr.Tags{{"h", ch.String()}}}
		_ = msg.Sign(sk)
		if err := feed.Publish(ctx, c, msg); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() bool {
			rs, _, _ := b.Runs(ctx, c, w.ID, workflow.RunPage{})
			return len(rs) == 1 && rs[0].Status == workflow.RunCompleted
		}, "the event delivered after the source restarted")
		h := e.Health()
		var ev workflow.LoopHealth
		for _, l := range h.Loops {
			if l.Name == workflow.LoopEvents {
				ev = l
			}
		}
		if ev.Restarts != 1 || !strings.Contains(ev.LastError, "source exploded") || !ev.Running {
			t.Fatalf("events loop health %+v", ev)
		}
		if err := e.Check(); err != nil {
			t.Fatalf("Check after recovery: %v", err)
		}
	})
}

// fakeTopics and fakeSealer stand in for the relay's implementations.
type fakeTopics struct {
	mu     sync.Mutex
	topics []string
}

func (f *fakeTopics) SetChannelTopic(_ context.Context, _ tenant.CommunityID, _ channel.ID, topic string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topics = append(f.topics, topic)
	return nil
}

type fakeSealer struct{ sk nostr.SecretKey }

func (f fakeSealer) SealDM(_ context.Context, _ tenant.CommunityID, to, text string) ([]*nostr.Event, error) {
	ev := &nostr.Event{CreatedAt: time.Now().Unix(), Kind: 1059, Content: "sealed:" + text, Tags: nostr.Tags{{"p", to}}}
	return []*nostr.Event{ev}, ev.Sign(f.sk)
}

func TestEngineTopicAndDM(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		topics := &fakeTopics{}
		sk, _ := nostr.GenerateSecretKey()
		ev := newEnv(t, open(t), workflow.WithTopicSetter(topics), workflow.WithDMSealer(fakeSealer{sk}))
		w := ev.define(`
name: Topic
trigger: {on: message_posted, filter: 'starts_with(trigger_text, "/topic ")'}
steps:
  - {id: set, action: set_channel_topic, topic: "{{trigger.text | truncate(20)}}"}
  - {id: tell, action: send_dm, to: "{{trigger.author}}", text: "topic set to {{steps.set.output.topic}}"}
`)
		ev.post(nostr.KindChatMessage, "/topic release day is tomorrow")
		r := ev.finished(w, 1)[0]
		if r.Status != workflow.RunCompleted {
			t.Fatalf("run %+v", r)
		}
		topics.mu.Lock()
		got := slices.Clone(topics.topics)
		topics.mu.Unlock()
		if !slices.Equal(got, []string{"/topic release day i…"}) {
			t.Fatalf("topics %q", got)
		}
		dms := ev.pub.of(1059)
		if len(dms) != 1 || dms[0].Content != "sealed:topic set to /topic release day i…" || !hasTag(dms[0], "p", ev.user.PublicKey()) {
			t.Fatalf("DMs %+v", dms)
		}
	})
}

// crashingPub stores events through the shared recorder but makes its
// engine "die" right after the relay stored the first message: the effect
// was performed, its completion never recorded.
type crashingPub struct {
	*recorder
	crash func()
	once  sync.Once
}

func (p *crashingPub) Publish(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	if err := p.recorder.Publish(ctx, c, ev); err != nil {
		return err
	}
	crashed := false
	if ev.Kind == nostr.KindChatMessage {
		p.once.Do(func() { p.crash(); crashed = true })
	}
	if crashed {
		return errors.New("pod died")
	}
	return nil
}

// crashingHook crashes its engine during the first call, after the
// receiver got the request.
type crashingHook struct {
	calls atomic.Int32
	crash func()
}

func (h *crashingHook) Call(ctx context.Context, r workflow.WebhookRequest) (workflow.WebhookResponse, error) {
	if h.calls.Add(1) == 1 {
		h.crash()
		return workflow.WebhookResponse{}, errors.New("pod died")
	}
	return workflow.WebhookResponse{Status: 200}, nil
}

func TestEngineTakeoverMidEffect(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		b := open(t)
		lease := workflow.WithLease(takeoverTTL, takeoverHeartbeat)
		a := newEnv(t, b, lease, workflow.WithWorkerName("pod-a"))
		a.stop()
		// Rebuild pod A with a publisher that crashes it mid-publish.
		cp := &crashingPub{recorder: a.pub}
		var err error
		a.e, err = workflow.New(b, a.feed, cp, workflow.WithAuthority(a.auth), workflow.WithPollInterval(20*time.Millisecond), lease)
		if err != nil {
			t.Fatal(err)
		}
		cp.crash = a.e.Halt
		a.start()
		w := a.define(`
name: MidEffect
trigger: {on: message_posted}
steps:
  - {id: say, action: send_message, text: "said once"}
`)
		a.post(nostr.KindChatMessage, "go")
		eventually(t, func() bool { return len(a.pub.of(nostr.KindChatMessage)) == 1 }, "the message stored")
		b2 := a.sibling(lease, workflow.WithWorkerName("pod-b"))
		r := b2.finished(w, 1)[0]
		if r.Status != workflow.RunCompleted {
			t.Fatalf("run %+v", r)
		}
		msgs := a.pub.of(nostr.KindChatMessage)
		if len(msgs) != 1 || msgs[0].Content != "said once" {
			t.Fatalf("messages %+v", msgs)
		}
		// Pod B replayed the recorded event: the same id, deduplicated by
		// the relay's store, so one message exists.
		if id, _ := r.Trace[0].Output["event_id"].(string); id != msgs[0].ID {
			t.Fatalf("trace names %q, stored %q", id, msgs[0].ID)
		}
	})
}

func TestEngineWebhookNeverCalledTwice(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		b := open(t)
		lease := workflow.WithLease(takeoverTTL, takeoverHeartbeat)
		hook := &crashingHook{}
		a := newEnv(t, b, lease, workflow.WithWebhookCaller(hook), workflow.WithWorkerName("pod-a"))
		hook.crash = a.e.Halt
		w := a.define(`
name: Hook
trigger: {on: message_posted}
steps:
  - {id: call, action: call_webhook, url: "https://hooks.example/x"}
`)
		a.post(nostr.KindChatMessage, "go")
		eventually(t, func() bool { return hook.calls.Load() == 1 }, "the webhook call")
		b2 := a.sibling(lease, workflow.WithWebhookCaller(hook), workflow.WithWorkerName("pod-b"))
		r := b2.finished(w, 1)[0]
		// The call may have reached the receiver: pod B does not repeat it.
		if r.Status != workflow.RunFailed || r.ErrorCode != workflow.CodeEffectUncertain {
			t.Fatalf("run %+v", r)
		}
		if n := hook.calls.Load(); n != 1 {
			t.Fatalf("webhook called %d times", n)
		}
	})
}

func TestEngineMemberRemovedDeleteAndEnable(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t))
		ctx := context.Background()
		w := ev.define(`
name: Removed
trigger: {on: message_posted}
steps: [{id: a, action: send_message, text: "hi {{trigger.text}}"}]
`)
		n, err := ev.e.MemberRemoved(ctx, ev.c, ev.ch, ev.owner)
		if err != nil || n != 1 {
			t.Fatalf("MemberRemoved: %d, %v", n, err)
		}
		// Handled synchronously, so it is matched before the re-enable.
		ignored := &nostr.Event{CreatedAt: time.Now().Unix(), Kind: nostr.KindChatMessage, Content: "ignored",
			Tags: nostr.Tags{{"h", ev.ch.String()}}}
		if err := ignored.Sign(ev.user); err != nil {
			t.Fatal(err)
		}
		if err := ev.e.HandleEvent(ctx, ev.c, ignored); err != nil {
			t.Fatal(err)
		}
		if err := ev.e.SetEnabled(ctx, ev.c, w.ID, true); err != nil {
			t.Fatal(err)
		}
		ev.post(nostr.KindChatMessage, "seen")
		rs := ev.finished(w, 1)
		if rs[0].Trigger["text"] != "seen" {
			t.Fatalf("run of %v", rs[0].Trigger["text"])
		}
		if err := ev.e.Delete(ctx, ev.c, w.ID, ev.user.PublicKey()); !errors.Is(err, workflow.ErrNotPermitted) {
			t.Fatalf("delete by non-owner: %v", err)
		}
		other := workflowtest.Community(t, ev.b, "elsewhere.example")
		if err := ev.e.Delete(ctx, other, w.ID, ev.owner); !errors.Is(err, workflow.ErrNotFound) {
			t.Fatalf("delete from another community: %v", err)
		}
		if err := ev.e.Delete(ctx, ev.c, w.ID, ev.owner); err != nil {
			t.Fatal(err)
		}
		if _, err := ev.b.Workflow(ctx, ev.c, w.ID); !errors.Is(err, workflow.ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
	})
}

func TestEngineRedefinitionCancelsParkedRun(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t))
		src := `
name: V1
trigger: {on: message_posted}
steps:
  - {id: wait, action: delay, duration: 1s}
  - {id: say, action: send_message, text: "v1"}
`
		w := ev.define(src)
		ev.post(nostr.KindChatMessage, "go")
		eventually(t, func() bool {
			rs := ev.runs(w)
			return len(rs) == 1 && !rs[0].ResumeAt.IsZero()
		}, "the run to park")
		_, err := ev.e.Define(context.Background(), ev.c, workflow.DefineRequest{ID: w.ID, Channel: ev.ch, Author: ev.owner,
			YAML: []byte(strings.ReplaceAll(src, "v1", "v2"))})
		if err != nil {
			t.Fatal(err)
		}
		r := ev.finished(w, 1)[0]
		if r.Status != workflow.RunCancelled || r.ErrorCode != workflow.CodeDefinitionChanged {
			t.Fatalf("run %+v", r)
		}
		if n := len(ev.pub.of(nostr.KindChatMessage)); n != 0 {
			t.Fatalf("%d messages sent by a run of an old definition", n)
		}
	})
}

// Heartbeats racing with runs that finish (a finished run's lease is gone
// when the heartbeat renews it) must not lose the runs' final status.
func TestEngineEveryRunReportsCompletion(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t), workflow.WithLease(5*time.Second, 2*time.Millisecond))
		w := ev.define(`
name: Report
trigger: {on: message_posted}
steps: [{id: a, action: send_message, text: "re {{trigger.text}}"}]
`)
		const n = 40
		for i := range n {
			ev.post(nostr.KindChatMessage, fmt.Sprint("m", i))
		}
		for _, r := range ev.finished(w, n) {
			eventually(t, func() bool { return slices.Contains(ev.pub.statuses(r.ID), "completed:") },
				"run %s's completed status (have %v)", r.ID, ev.pub.statuses(r.ID))
		}
	})
}
