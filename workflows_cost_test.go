package buzz

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

// aliasBombYAML is a definition of about n bytes whose YAML nests aliases
// ten wide (each level under the YAML decoder's own alias-ratio guard):
// expanded it would be 10^levels scalars.
func aliasBombYAML(n int) string {
	var b strings.Builder
	b.WriteString("name: x\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]\ndescription: &l000000000000 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; b.Len() < n-200; i++ {
		fmt.Fprintf(&b, "x%d: &l%012d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%012d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestWorkflowAliasBombRefusedCheaply: three 60 KB definitions built from
// YAML anchors and aliases, sent at once by a channel member, are each
// refused with invalid: naming anchors and aliases, and refusing them
// allocates a few MB in all, not the gigabytes expanding them would take.
func TestWorkflowAliasBombRefusedCheaply(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		tr := workflowRelay(t, st, newHookServer(t))
		alice := newSigner(t)
		ac := tr.dial(t)
		ac.authAs(alice, tr.host)
		ch := ac.createChannel(alice, "bombs", channel.VisibilityOpen)
		bomb := aliasBombYAML(60 << 10)
		clients := make([]*rawClient, 3)
		for i := range clients {
			clients[i] = tr.dial(t)
			clients[i].authAs(alice, tr.host)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		oks := make([]*nostr.OKMessage, len(clients))
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, oks[i] = c.define(alice, workflow.NewID(), ch, bomb)
			}()
		}
		wg.Wait()
		runtime.ReadMemStats(&after)
		for i, ok := range oks {
			if ok.OK || !strings.HasPrefix(ok.Message, "invalid: ") || !strings.Contains(ok.Message, "anchors and aliases") {
				t.Errorf("alias bomb %d: OK %v %q, want invalid: refusing anchors and aliases", i, ok.OK, ok.Message)
			}
		}
		// The whole relay allocates while it answers (three 60 KB events
		// read, verified and refused); expanding the aliases took 690 MB
		// for one definition.
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
			t.Errorf("refusing three alias bombs allocated %d MB", n>>20)
		}
		c, _, err := st.EnsureCommunity(t.Context(), tr.host)
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
		ac.authAs(alice, tr.host)
		ch := ac.createChannel(alice, "busy", channel.VisibilityOpen)
		mc := tr.dial(t)
		mc.authAs(mallory, tr.host)
		mc.mustAccept(mallory.event(nostr.KindJoinRequest, now(), "", chanTag(ch)))

		yaml := "name: slow\ntrigger: {on: message_posted, filter: '" + worstFilterCondition() + "'}\n" +
			"steps: [{id: a, action: send_message, text: matched}]\n"
		for i := range workflow.MaxWorkflowsPerChannel {
			if _, ok := mc.define(mallory, workflow.NewID(), ch, yaml); !ok.OK {
				t.Fatalf("definition %d: %q", i, ok.Message)
			}
		}
		_, ok := mc.define(mallory, workflow.NewID(), ch, yaml)
		eq(t, "definition past the channel's cap", ok.Message,
			fmt.Sprintf("restricted: a channel may have at most %d workflows", workflow.MaxWorkflowsPerChannel))
		_, ok = ac.define(alice, workflow.NewID(), ch, echoYAML)
		eq(t, "another member's definition past the cap", ok.OK, false)

		e := tr.relay.Workflows()
		before := e.TriggerStats()
		ac.mustAccept(alice.event(nostr.KindChatMessage, now(), strings.Repeat("a", 250<<10), chanTag(ch)))
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
