package workflow_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

// observed records a RunObserver's calls.
type observed struct {
	mu    sync.Mutex
	calls []string
	outs  []workflow.RunOutcome
}

func (o *observed) add(s string) { o.mu.Lock(); o.calls = append(o.calls, s); o.mu.Unlock() }
func (o *observed) RunStarted(_ tenant.CommunityID, wf workflow.ID) {
	o.add("started")
}
func (o *observed) StepFinished(_ tenant.CommunityID, _ workflow.ID, step string, st workflow.StepStatus, d time.Duration) {
	if d < 0 {
		st = "negative"
	}
	o.add(fmt.Sprintf("step:%s:%s", step, st))
}
func (o *observed) RunFinished(_ tenant.CommunityID, out workflow.RunOutcome) {
	o.mu.Lock()
	o.outs = append(o.outs, out)
	o.mu.Unlock()
	o.add("finished:" + string(out.Status))
}
func (o *observed) snapshot() ([]string, []workflow.RunOutcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls), slices.Clone(o.outs)
}

// TestRunObserver: the observer hears a run start, each step end with its
// status, and the run's outcome — for a failed run, the failing step and
// its error.
func TestRunObserver(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		obs := &observed{}
		ev := newEnv(t, open(t), workflow.WithRunObserver(obs))
		w := ev.define(`
name: Observed
trigger: {on: message_posted}
steps:
  - id: first
    action: send_message
    text: hi
  - id: skipped
    if: 'trigger_text == "never"'
    action: send_message
    text: no
  - id: bad
    if: 'trigger_missing == 1'
    action: send_message
    text: unreachable
`)
		ev.post(nostr.KindChatMessage, "hello")
		r := ev.finished(w, 1)[0]
		eventually(t, func() bool { c, _ := obs.snapshot(); return len(c) == 5 }, "five observer calls")
		calls, outs := obs.snapshot()
		want := []string{"started", "step:first:completed", "step:skipped:skipped", "step:bad:failed", "finished:failed"}
		if !slices.Equal(calls, want) {
			t.Fatalf("calls %v, want %v", calls, want)
		}
		o := outs[0]
		if o.Workflow != w.ID || o.Run != r.ID || o.Status != workflow.RunFailed || o.Step != "bad" || o.ErrorCode != workflow.CodeConditionError || o.Error == "" {
			t.Fatalf("outcome %+v", o)
		}
	})
}

func TestWithRunObserverNil(t *testing.T) {
	_, err := workflow.New(nopStore{}, nopSource{}, nopPub{}, workflow.WithRunObserver(nil))
	if err == nil || !strings.Contains(err.Error(), "RunObserver") {
		t.Fatalf("nil observer: %v", err)
	}
}
