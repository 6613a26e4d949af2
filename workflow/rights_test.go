package workflow_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/fakeclock"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

// rights is an OwnerRights that records what it was asked and, once
// refuse is set, refuses one right.
type rights struct {
	refuse atomic.Bool
	deny   workflow.Right
	mu     sync.Mutex
	asked  []workflow.Right
}

func (r *rights) OwnerMay(_ context.Context, _ tenant.CommunityID, _ channel.ID, _ string, right workflow.Right) (string, error) {
	r.mu.Lock()
	r.asked = append(r.asked, right)
	r.mu.Unlock()
	if r.refuse.Load() && right == r.deny {
		return "no " + right.String() + " for you", nil
	}
	return "", nil
}

func (r *rights) reset() []workflow.Right {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.asked
	r.asked = nil
	return a
}

// meta is a custom action needing RightMetadata; ran counts its runs.
type meta struct{ ran atomic.Int32 }

func (*meta) Name() string                                         { return "meta" }
func (*meta) NeededRight() workflow.Right                          { return workflow.RightMetadata }
func (*meta) Validate(workflow.Fields, *workflow.Definition) error { return nil }
func (m *meta) Run(context.Context, *workflow.StepContext) (map[string]any, error) {
	m.ran.Add(1)
	return nil, nil
}

// TestEngineOwnerRightsBeforeEveryStep: the engine asks its OwnerRights
// before the run (RightRun) and before each step (the step's right, from
// RightNeeder); a refusal fails that step with owner_unauthorized after
// the earlier steps completed, and the refused action never runs. A
// definition needing a right its author lacks is ErrNotPermitted.
func TestEngineOwnerRightsBeforeEveryStep(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		r, m := &rights{deny: workflow.RightMetadata}, &meta{}
		ev := newEnv(t, open(t), workflow.WithOwnerRights(r), workflow.WithAction(m))
		w := ev.define(`
name: Steps
trigger: {on: message_posted}
steps:
  - {id: say, action: send_message, text: hi}
  - {id: touch, action: meta}
`)
		if got := r.reset(); !slices.Contains(got, workflow.RightPost) || !slices.Contains(got, workflow.RightMetadata) {
			t.Fatalf("Define asked %v, want every right its steps need", got)
		}
		r.refuse.Store(true)
		ev.post(nostr.KindChatMessage, "go")
		run := ev.finished(w, 1)[0]
		if run.Status != workflow.RunFailed || run.ErrorCode != workflow.CodeOwnerUnauthorized || run.Error != "no metadata for you" {
			t.Fatalf("run %s %s %q", run.Status, run.ErrorCode, run.Error)
		}
		if len(run.Trace) != 2 || run.Trace[0].Status != workflow.StepCompleted ||
			run.Trace[1].Status != workflow.StepFailed || run.Trace[1].ErrorCode != workflow.CodeOwnerUnauthorized {
			t.Fatalf("trace %+v", run.Trace)
		}
		if m.ran.Load() != 0 {
			t.Fatal("the refused step's action ran")
		}
		if got, want := r.reset(), []workflow.Right{workflow.RightRun, workflow.RightPost, workflow.RightMetadata}; !slices.Equal(got, want) {
			t.Fatalf("asked %v, want %v", got, want)
		}
		_, err := ev.e.Define(context.Background(), ev.c, workflow.DefineRequest{ID: workflow.NewID(), Channel: ev.ch,
			Author: ev.owner, YAML: []byte("name: x\ntrigger: {on: webhook}\nsteps: [{id: a, action: meta}]")})
		if !errors.Is(err, workflow.ErrNotPermitted) || !strings.Contains(err.Error(), "no metadata for you") {
			t.Fatalf("Define needing a refused right: %v", err)
		}
	})
}

// TestScheduleSkipsUnauthorizedOwner: a slot whose owner may not run the
// workflow passes without a run; once the owner may again, the next slot
// fires (no catch-up).
func TestScheduleSkipsUnauthorizedOwner(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		b := open(t)
		ctx := context.Background()
		c := workflowtest.Community(t, b, "sched.example")
		r := &rights{deny: workflow.RightRun}
		clock := fakeclock.New(time.Time{})
		e, err := workflow.New(b, nopSource{}, nopPub{}, workflow.WithAuthority(allMembers{}), workflow.WithOwnerRights(r))
		if err != nil {
			t.Fatal(err)
		}
		e.SetClock(clock.Now)
		wf, err := e.Define(ctx, c, workflow.DefineRequest{ID: workflow.NewID(), Channel: workflowtest.ChannelID(), Author: workflowtest.Hex32(),
			YAML: []byte("name: tick\ntrigger: {on: schedule, interval: 1m}\nsteps: [{id: a, action: send_message, text: hi}]")})
		if err != nil {
			t.Fatal(err)
		}
		base := time.Now().UTC().Truncate(time.Minute).Add(2 * time.Minute)
		r.refuse.Store(true)
		clock.Set(base.Add(10 * time.Second))
		if n := tick(t, e); n != 0 {
			t.Fatalf("an unauthorized owner's slot fired %d runs", n)
		}
		r.refuse.Store(false)
		if n := tick(t, e); n != 0 {
			t.Fatalf("the skipped slot fired later: %d", n)
		}
		clock.Set(base.Add(time.Minute + 10*time.Second))
		if n := tick(t, e); n != 1 {
			t.Fatalf("next slot: %d fires, want 1", n)
		}
		if rs, _, err := b.Runs(ctx, c, wf.ID, workflow.RunPage{}); err != nil || len(rs) != 1 {
			t.Fatalf("runs: %d, %v", len(rs), err)
		}
	})
}
