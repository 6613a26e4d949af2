package workflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

// worstFilter is a condition of MaxConditionBytes whose every call scans
// the whole message the slowest way (a needle that almost matches at every
// position of a message of "a"s) and never matches: the most expensive
// trigger filter a definition can carry.
func worstFilter() string {
	call := `str_contains(trigger_text, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab")`
	n := (workflow.MaxConditionBytes + 4) / (len(call) + 4)
	return strings.Repeat(call+" || ", n-1) + call
}

// worstChannel defines MaxWorkflowsPerChannel workflows with worstFilter in
// ev's channel.
func worstChannel(t testing.TB, ev *env) {
	t.Helper()
	for i := range workflow.MaxWorkflowsPerChannel {
		ev.define("name: W" + string(rune('A'+i%26)) + "\ntrigger: {on: message_posted, filter: '" + worstFilter() + "'}\n" +
			"steps: [{id: a, action: send_message, text: matched}]\n")
	}
}

func (ev *env) message(content string) *nostr.Event {
	ev.t.Helper()
	e := &nostr.Event{CreatedAt: time.Now().Unix(), Kind: nostr.KindChatMessage, Content: content,
		Tags: nostr.Tags{{"h", ev.ch.String()}}}
	if err := e.Sign(ev.user); err != nil {
		ev.t.Fatal(err)
	}
	return e
}

func statsDelta(a, b workflow.TriggerStats) workflow.TriggerStats {
	return workflow.TriggerStats{Evaluations: b.Evaluations - a.Evaluations, Cost: b.Cost - a.Cost,
		Exhausted: b.Exhausted - a.Exhausted, Skipped: b.Skipped - a.Skipped}
}

// TestTriggerMatchingBudget: matching one event against a channel with the
// most workflows allowed, each with the most expensive filter, spends at
// most MaxTriggerCost (plus one condition's limit), then skips the rest and
// counts it; a short message still evaluates every filter. Measured in cost
// units and evaluations, not time.
func TestTriggerMatchingBudget(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t))
		worstChannel(t, ev)
		ctx := context.Background()

		before := ev.e.TriggerStats()
		if err := ev.e.HandleEvent(ctx, ev.c, ev.message(strings.Repeat("a", 256<<10))); err != nil {
			t.Fatal(err)
		}
		d := statsDelta(before, ev.e.TriggerStats())
		t.Logf("maximum-size message: %+v", d)
		if d.Cost > workflow.MaxTriggerCost+workflow.MaxConditionCost {
			t.Errorf("matching one event cost %d units, more than the budget %d plus one condition %d",
				d.Cost, workflow.MaxTriggerCost, workflow.MaxConditionCost)
		}
		if d.Exhausted != 1 || d.Evaluations >= workflow.MaxWorkflowsPerChannel ||
			d.Evaluations+d.Skipped != workflow.MaxWorkflowsPerChannel {
			t.Errorf("stats %+v: want the budget exhausted once and every workflow evaluated or counted as skipped", d)
		}

		before = ev.e.TriggerStats()
		if err := ev.e.HandleEvent(ctx, ev.c, ev.message("a short message")); err != nil {
			t.Fatal(err)
		}
		d = statsDelta(before, ev.e.TriggerStats())
		if d.Evaluations != workflow.MaxWorkflowsPerChannel || d.Exhausted != 0 || d.Skipped != 0 {
			t.Errorf("short message: %+v, want every filter evaluated", d)
		}
	})
}

// TestDefineRefusedAtChannelCap: the engine refuses a definition past the
// channel's cap with the store's LimitError, and accepts a redefinition.
func TestDefineRefusedAtChannelCap(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		ev := newEnv(t, open(t))
		var first workflow.Workflow
		for i := range workflow.MaxWorkflowsPerChannel {
			w := ev.define("name: w\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]\n")
			if i == 0 {
				first = w
			}
		}
		_, err := ev.e.Define(context.Background(), ev.c, workflow.DefineRequest{ID: workflow.NewID(), Channel: ev.ch,
			Author: ev.owner, YAML: []byte("name: one too many\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]\n")})
		var le *workflow.LimitError
		if !errors.As(err, &le) || !le.PerChannel {
			t.Fatalf("definition past the channel cap: %v", err)
		}
		if _, err := ev.e.Define(context.Background(), ev.c, workflow.DefineRequest{ID: first.ID, Channel: ev.ch,
			Author: ev.owner, YAML: []byte("name: renamed\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]\n")}); err != nil {
			t.Fatalf("redefinition in a full channel: %v", err)
		}
	})
}
