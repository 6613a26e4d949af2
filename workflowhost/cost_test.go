package workflowhost

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

// aliasBombYAML is a definition of about 60 KB whose aliases stay under
// the YAML decoder's own alias-ratio guard (few aliases, each expanding a
// large anchor): 1200 aliases of a 1000-element list, over a million
// scalars once expanded.
func aliasBombYAML() string {
	name := strings.Repeat("n", 40)
	return "name: x\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]\n" +
		"description: &" + name + " [" + strings.Repeat("lol, ", 999) + "lol]\n" +
		"fan: [" + strings.Repeat("*"+name+", ", 1199) + "*" + name + "]\n"
}

// TestWorkflowAliasBombRefusedCheaply: definitions built to make the YAML
// decoder expand (anchors and aliases under its alias-ratio guard) or
// report quadratically (a mapping repeating one key), three of each sent at
// once by a channel member, are each refused with invalid: saying why, and
// refusing them all allocates a few MB, not the gigabytes decoding them
// took.
func TestWorkflowAliasBombRefusedCheaply(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		tr := workflowRelay(t, st, newHookServer(t))
		alice := newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		ch := ac.createChannel(alice, "bombs", channel.VisibilityOpen)
		bombs := map[string]string{
			aliasBombYAML(): "anchors and aliases are not allowed",
			"name: x\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]\n" +
				strings.Repeat("k: v\n", 2000): `mapping key "k" is repeated`,
		}
		type sent struct {
			ok   *nostr.OKMessage
			want string
		}
		var (
			mu      sync.Mutex
			results []sent
			wg      sync.WaitGroup
		)
		clients := make([]*rawClient, 3)
		for i := range clients {
			clients[i] = tr.dial(t)
			clients[i].AuthAs(alice, tr.Host)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for yaml, want := range bombs {
					_, ok := c.define(alice, workflow.NewID(), ch, yaml)
					mu.Lock()
					results = append(results, sent{ok, want})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		runtime.ReadMemStats(&after)
		if len(results) != len(clients)*len(bombs) {
			t.Fatalf("%d OKs, want %d", len(results), len(clients)*len(bombs))
		}
		for _, r := range results {
			if r.ok.OK || !strings.HasPrefix(r.ok.Message, "invalid: ") || !strings.Contains(r.ok.Message, r.want) {
				t.Errorf("OK %v %q, want invalid: … %s", r.ok.OK, r.ok.Message, r.want)
			}
		}
		// The whole relay allocates while it answers (six events read,
		// verified and refused); decoding one such definition took
		// hundreds of MB.
		n := after.TotalAlloc - before.TotalAlloc
		t.Logf("six definition bombs refused with %d KB allocated", n>>10)
		if n > 64<<20 {
			t.Errorf("refusing six definition bombs allocated %d MB", n>>20)
		}
		c, _, err := st.EnsureCommunity(t.Context(), tr.Host)
		if err != nil {
			t.Fatal(err)
		}
		if wfs, err := st.Workflows(t.Context(), c, ch); err != nil || len(wfs) != 0 {
			t.Errorf("workflows stored after the refusals: %d (%v)", len(wfs), err)
		}
	})
}

// worstFilterCondition is a trigger filter of workflow.MaxConditionBytes
// whose every call scans the whole message and never matches.
func worstFilterCondition() string {
	call := `str_contains(trigger_text, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab")`
	n := (workflow.MaxConditionBytes + 4) / (len(call) + 4)
	return strings.Repeat(call+" || ", n-1) + call
}

// TestWorkflowTriggerCostBounded: a member fills a channel with the most
// workflows it may hold, each with the most expensive filter; the next
// definition is refused with restricted: naming the cap; a maximum-size
// message posted to the channel is accepted, and matching it spends no more
// than the per-event budget, skipping (and counting) what the budget does
// not cover — which is what bounds how long its OK waits.
func TestWorkflowTriggerCostBounded(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		tr := workflowRelay(t, st, newHookServer(t))
		alice, mallory := newSigner(t), newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		ch := ac.createChannel(alice, "busy", channel.VisibilityOpen)
		mc := tr.dial(t)
		mc.AuthAs(mallory, tr.Host)
		mc.MustAccept(mallory.Event(nostr.KindJoinRequest, now(), "", chanTag(ch)))

		yaml := "name: slow\ntrigger: {on: message_posted, filter: '" + worstFilterCondition() + "'}\n" +
			"steps: [{id: a, action: send_message, text: matched}]\n"
		for i := range workflow.MaxWorkflowsPerChannel {
			if _, ok := mc.define(mallory, workflow.NewID(), ch, yaml); !ok.OK {
				t.Fatalf("definition %d: %q", i, ok.Message)
			}
		}
		_, ok := mc.define(mallory, workflow.NewID(), ch, yaml)
		relaytest.Eq(t, "definition past the channel's cap", ok.Message,
			fmt.Sprintf("restricted: a channel may have at most %d workflows", workflow.MaxWorkflowsPerChannel))
		_, ok = ac.define(alice, workflow.NewID(), ch, echoYAML)
		relaytest.Eq(t, "another member's definition past the cap", ok.OK, false)

		e := tr.wf.Engine()
		before := e.TriggerStats()
		ac.MustAccept(alice.Event(nostr.KindChatMessage, now(), strings.Repeat("a", 250<<10), chanTag(ch)))
		after := e.TriggerStats()
		cost, evals := after.Cost-before.Cost, after.Evaluations-before.Evaluations
		skipped, exhausted := after.Skipped-before.Skipped, after.Exhausted-before.Exhausted
		t.Logf("matching one 250 KB message: %d evaluations, %d cost units, %d skipped", evals, cost, skipped)
		if cost > workflow.MaxTriggerCost+workflow.MaxConditionCost {
			t.Errorf("matching one message cost %d units before its OK; the budget is %d (+%d)",
				cost, workflow.MaxTriggerCost, workflow.MaxConditionCost)
		}
		if exhausted != 1 || evals+skipped != workflow.MaxWorkflowsPerChannel || evals >= workflow.MaxWorkflowsPerChannel {
			t.Errorf("%d evaluated, %d skipped, budget exhausted %d times; want the budget to stop matching once",
				evals, skipped, exhausted)
		}
	})
}
