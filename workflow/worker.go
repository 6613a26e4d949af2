package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// dispatchLoop claims runs while workers are free: at once when poked (a
// run was created here or a worker finished), otherwise every poll
// interval (parked runs due, lapsed leases, runs created elsewhere).
func (e *Engine) dispatchLoop(ctx context.Context) error {
	t := time.NewTicker(e.cfg.poll)
	defer t.Stop()
	for {
		free := cap(e.sem) - len(e.sem)
		if free > 0 && !e.isHalted() {
			leases, err := e.store.ClaimRuns(ctx, e.cfg.worker, e.cfg.leaseTTL, free)
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("claim runs: %w", err)
			}
			for _, l := range leases {
				e.sem <- struct{}{}
				e.startRun(ctx, l)
			}
			if len(leases) == free {
				continue // there may be more
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.wake:
		case <-t.C:
		}
	}
}

func (e *Engine) startRun(ctx context.Context, l Lease) {
	rctx, cancel := context.WithCancel(ctx)
	e.heldMu.Lock()
	if old := e.held[l.Run]; old != nil {
		// This engine's own lease lapsed (heartbeats late) and it claimed
		// the run again: the old execution is fenced off; stop it.
		old.cancel()
	}
	e.held[l.Run] = &heldRun{lease: l, cancel: cancel}
	e.heldMu.Unlock()
	e.workers.Add(1)
	go func() {
		defer e.workers.Done()
		defer func() {
			cancel()
			e.heldMu.Lock()
			if h := e.held[l.Run]; h != nil && h.lease.Token == l.Token {
				delete(e.held, l.Run)
			}
			e.heldMu.Unlock()
			<-e.sem
			e.poke()
		}()
		err := e.execute(rctx, l)
		switch {
		case e.isHalted():
			// A simulated crash: leave the lease to lapse.
		case err == nil, errors.Is(err, ErrLeaseLost):
		case rctx.Err() != nil:
			// Shutting down (or the lease was lost): hand the run over.
			rel, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := e.store.ReleaseRun(rel, l); err != nil && !errors.Is(err, ErrLeaseLost) {
				e.log.Warn("workflow: releasing run failed; it continues after the lease lapses", "run", l.Run, "err", err)
			}
			cancel()
		default:
			// A storage failure: the lease lapses and the run is retried.
			e.log.Error("workflow: run interrupted; it is retried after its lease lapses", "run", l.Run, "community", l.Community, "err", err)
		}
	}()
}

// heartbeatLoop renews the leases of executing runs; a lost lease cancels
// its run.
func (e *Engine) heartbeatLoop(ctx context.Context) error {
	t := time.NewTicker(e.cfg.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if e.isHalted() {
			continue
		}
		e.heldMu.Lock()
		held := make([]*heldRun, 0, len(e.held))
		for _, h := range e.held {
			held = append(held, h)
		}
		e.heldMu.Unlock()
		for _, h := range held {
			err := e.store.RenewLease(ctx, h.lease, e.cfg.leaseTTL)
			switch {
			case errors.Is(err, ErrLeaseLost):
				e.heldMu.Lock()
				still := e.held[h.lease.Run] == h
				e.heldMu.Unlock()
				if still {
					// (Or the run just finished, which removes its lease:
					// then cancelling is harmless.)
					e.log.Warn("workflow: lease lost; stopping run", "run", h.lease.Run)
					h.cancel()
				}
			case err != nil && ctx.Err() == nil:
				return fmt.Errorf("renew lease: %w", err)
			}
		}
	}
}

func (e *Engine) isHalted() bool {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	return e.halted
}

// runState is one run being executed.
type runState struct {
	e     *Engine
	lease Lease
	wf    Workflow
	run   Run
	steps map[string]any // id → {"output": …}
}

// execute runs a leased run from its current step to its end or to a park.
func (e *Engine) execute(ctx context.Context, l Lease) error {
	run, err := e.store.Run(ctx, l.Community, l.Run)
	if err != nil {
		return err
	}
	st := &runState{e: e, lease: l, run: run, steps: map[string]any{}}
	wf, err := e.store.Workflow(ctx, l.Community, run.Workflow)
	if errors.Is(err, ErrNotFound) {
		return st.finish(ctx, RunCancelled, CodeWorkflowGone, "the workflow no longer exists", "")
	}
	if err != nil {
		return err
	}
	st.wf = wf
	if l.Token > e.cfg.maxAttempts {
		return st.finish(ctx, RunFailed, "too_many_attempts", fmt.Sprintf("claimed %d times without finishing", l.Token-1), "")
	}
	if run.DefinitionHash != ([32]byte{}) && run.DefinitionHash != wf.Hash {
		// Step indexes and outputs belong to the definition the run was
		// triggered under; never continue against other steps.
		return st.finish(ctx, RunCancelled, CodeDefinitionChanged, "the workflow was redefined after this run was triggered", "")
	}
	if !wf.Enabled && run.Status == RunPending {
		return st.finish(ctx, RunCancelled, CodeWorkflowGone, "the workflow is disabled", "")
	}
	// The owner's rights are re-checked before every run and every
	// resumption (after a delay, an approval, a takeover), and before
	// every step below: a workflow acts only with its owner's rights as
	// they are at that moment (OwnerRights).
	if err := e.ownerMay(ctx, l.Community, wf.Channel, wf.Owner, RightRun); err != nil {
		var se *StepError
		if errors.As(err, &se) {
			e.log.Warn("workflow: run stopped: its owner may not run it", "community", l.Community, "workflow", wf.ID, "run", run.ID, "reason", se.Msg)
			return st.finish(ctx, RunFailed, se.Code, se.Msg, "")
		}
		return err
	}
	for _, t := range run.Trace {
		if t.Status == StepCompleted {
			st.steps[t.StepID] = map[string]any{"output": orEmpty(t.Output)}
		}
	}
	if run.Status == RunWaitingApproval {
		st.run.Status = RunRunning // saved with the step's progress
	}
	if run.Status == RunPending {
		st.status(ctx, nostr.KindRunTriggered, "triggered", "", nil)
		st.run.Status = RunRunning
		if err := st.save(ctx, time.Time{}); err != nil {
			return err
		}
		e.cfg.observer.RunStarted(l.Community, wf.ID)
	}
	def := wf.Definition
	for i := st.run.CurrentStep; i < len(def.Steps); i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		step := &def.Steps[i]
		started := e.now()
		trace := StepTrace{StepID: step.ID, StartedAt: started}
		if dep := st.skippedDependency(step); dep != "" {
			trace.Status, trace.ErrorCode = StepSkipped, CodeDependencySkipped
			trace.Error = fmt.Sprintf("depends on %s, which did not complete", dep)
			if err := st.advance(ctx, i, trace); err != nil {
				return err
			}
			continue
		}
		vars := scope(st.run.Trigger, st.steps)
		if step.If != "" {
			ok, err := e.condition(ctx, step.If, vars)
			if err != nil {
				trace.Status, trace.ErrorCode, trace.Error, trace.FinishedAt = StepFailed, CodeConditionError, err.Error(), e.now()
				return st.failStep(ctx, i, trace)
			}
			if !ok {
				trace.Status, trace.FinishedAt = StepSkipped, e.now()
				if err := st.advance(ctx, i, trace); err != nil {
					return err
				}
				continue
			}
		}
		if err := e.ownerMay(ctx, l.Community, wf.Channel, wf.Owner, st.stepRight(step)); err != nil {
			var se *StepError
			if !errors.As(err, &se) {
				return err // undecided: the run is retried
			}
			e.log.Warn("workflow: step stopped: its owner may not take it", "community", l.Community, "workflow", wf.ID, "run", run.ID, "step", step.ID, "reason", se.Msg)
			trace.Status, trace.ErrorCode, trace.Error, trace.FinishedAt = StepFailed, se.Code, se.Msg, e.now()
			return st.failStep(ctx, i, trace)
		}
		st.status(ctx, nostr.KindStepStarted, "step_started", step.ID, nil)
		out, err := st.runStep(ctx, step, vars)
		var (
			park   *errParked
			cancel *errCancelled
		)
		switch {
		case errors.As(err, &park):
			st.run.CurrentStep = i
			if park.status != "" {
				st.run.Status = park.status
			}
			if err := st.save(ctx, park.until); err != nil {
				return err
			}
			if d := park.until.Sub(e.now()); d > 0 {
				time.AfterFunc(d, e.poke)
			}
			return nil
		case errors.Is(err, ErrLeaseLost):
			return err
		case errors.As(err, &cancel):
			trace.Status, trace.FinishedAt, trace.ErrorCode, trace.Error = StepFailed, e.now(), cancel.code, cancel.msg
			st.run.Trace = append(st.run.Trace, trace)
			st.run.CurrentStep = i
			st.stepDone(trace)
			return st.finish(ctx, RunCancelled, cancel.code, cancel.msg, "")
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			trace.Status, trace.FinishedAt = StepFailed, e.now()
			trace.ErrorCode, trace.Error = CodeStepFailed, err.Error()
			var se *StepError
			if errors.As(err, &se) {
				trace.ErrorCode, trace.Error = se.Code, se.Msg
			}
			return st.failStep(ctx, i, trace)
		}
		trace.Status, trace.Output, trace.FinishedAt = StepCompleted, jsonValues(out), e.now()
		st.steps[step.ID] = map[string]any{"output": orEmpty(trace.Output)}
		if i == len(def.Steps)-1 {
			// The last step's trace is written with the completion (one
			// write less per run; a crash before it re-runs the step,
			// whose effects are recorded).
			st.run.Trace = append(st.run.Trace, trace)
			st.run.CurrentStep = i + 1
			st.stepDone(trace)
			if err := st.finish(ctx, RunCompleted, "", "", step.ID); err != nil {
				return err
			}
			return nil
		}
		if err := st.advance(ctx, i, trace); err != nil {
			return err
		}
		st.status(ctx, nostr.KindStepCompleted, "step_completed", step.ID, nil)
	}
	return st.finish(ctx, RunCompleted, "", "", "")
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func (e *Engine) condition(ctx context.Context, src string, vars map[string]any) (bool, error) {
	prg, err := e.conds.get(src)
	if err != nil {
		return false, err
	}
	return evalCondition(ctx, prg, vars)
}

// skippedDependency returns a dependency of step that did not complete.
func (st *runState) skippedDependency(step *Step) string {
	for _, d := range step.DependsOn {
		if _, ok := st.steps[d]; !ok {
			return d
		}
	}
	return ""
}

// stepRight is the right step's action needs (RightRun for an action
// this engine does not have: runStep fails it).
func (st *runState) stepRight(step *Step) Right {
	if a, ok := st.e.reg.Lookup(step.Action); ok {
		return neededRight(a)
	}
	return RightRun
}

// runStep runs one action under the step's timeout, containing panics.
func (st *runState) runStep(ctx context.Context, step *Step, vars map[string]any) (out map[string]any, err error) {
	a, ok := st.e.reg.Lookup(step.Action)
	if !ok {
		return nil, Fail(CodeInvalidDefinition, "action %q is not available on this relay", step.Action)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Duration(step.Timeout())*time.Second)
	defer cancel()
	x := &StepContext{Community: st.lease.Community, Workflow: &st.wf, Run: &st.run, Step: step, e: st.e, lease: st.lease, vars: vars}
	defer func() {
		if p := recover(); p != nil {
			st.e.log.Error("workflow: action panicked", "action", step.Action, "panic", p, "stack", string(debug.Stack()))
			out, err = nil, Fail("action_panicked", "the action failed unexpectedly")
		}
	}()
	out, err = a.Run(sctx, x)
	if err != nil && errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, Fail(CodeStepTimeout, "step did not finish within %d seconds", step.Timeout())
	}
	return out, err
}

func (st *runState) save(ctx context.Context, resume time.Time) error {
	return st.e.store.UpdateRun(ctx, st.lease, RunUpdate{
		Status: st.run.Status, CurrentStep: st.run.CurrentStep, Trace: st.run.Trace,
		ErrorCode: st.run.ErrorCode, Error: st.run.Error, ResumeAt: resume,
	})
}

// advance records step i's trace and moves to step i+1.
func (st *runState) advance(ctx context.Context, i int, t StepTrace) error {
	st.run.Trace = append(st.run.Trace, t)
	st.run.CurrentStep = i + 1
	if err := st.save(ctx, time.Time{}); err != nil {
		return err
	}
	st.stepDone(t)
	return nil
}

// stepDone reports a finished step to the observer.
func (st *runState) stepDone(t StepTrace) {
	var d time.Duration
	if !t.StartedAt.IsZero() && t.FinishedAt.After(t.StartedAt) {
		d = t.FinishedAt.Sub(t.StartedAt)
	}
	st.e.cfg.observer.StepFinished(st.lease.Community, st.run.Workflow, t.StepID, t.Status, d)
}

func (st *runState) failStep(ctx context.Context, i int, t StepTrace) error {
	st.run.Trace = append(st.run.Trace, t)
	st.run.CurrentStep = i
	st.stepDone(t)
	st.status(ctx, nostr.KindStepFailed, "step_failed", t.StepID, map[string]any{"error_code": t.ErrorCode, "error": t.Error})
	return st.finish(ctx, RunFailed, t.ErrorCode, t.Error, "")
}

// finish ends the run and publishes its final status event (after the
// step-completed event of completedStep, when one is named).
//
// The final save is not cancelled with the run's context: saving removes
// the lease, and a heartbeat that renews in that instant finds the lease
// gone and cancels the run — while the save it raced may already have
// committed. A cancelled save would then report failure for a finished run
// and its status events would never be published. The lease token fences
// the save against an execution that really lost its run.
func (st *runState) finish(ctx context.Context, status RunStatus, code, msg string, completedStep string) error {
	st.run.Status, st.run.ErrorCode, st.run.Error = status, code, msg
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := st.save(sctx, time.Time{}); err != nil {
		return err
	}
	o := RunOutcome{Workflow: st.run.Workflow, Run: st.run.ID, Status: status, ErrorCode: code, Error: msg}
	if n := len(st.run.Trace); status != RunCompleted && n > 0 && st.run.Trace[n-1].Status == StepFailed {
		o.Step = st.run.Trace[n-1].StepID
	}
	st.e.cfg.observer.RunFinished(st.lease.Community, o)
	if completedStep != "" {
		st.status(ctx, nostr.KindStepCompleted, "step_completed", completedStep, nil)
	}
	kind, name := nostr.KindRunCompleted, "completed"
	switch status {
	case RunFailed:
		kind, name = nostr.KindRunFailed, "failed"
	case RunCancelled:
		kind, name = nostr.KindRunCancelled, "cancelled"
	}
	var extra map[string]any
	if code != "" {
		extra = map[string]any{"error_code": code, "error": msg}
	}
	st.status(ctx, kind, name, "", extra)
	return nil
}

// status publishes a relay-signed status event into the workflow's channel.
// A failure is logged: status events are informational.
func (st *runState) status(ctx context.Context, kind int, status, stepID string, extra map[string]any) {
	if st.wf.Channel.IsZero() {
		return
	}
	body := map[string]any{"workflow_id": st.wf.ID.String(), "run_id": st.run.ID.String(), "status": status}
	if stepID != "" {
		body["step_id"] = stepID
	}
	for k, v := range extra {
		body[k] = v
	}
	content, _ := json.Marshal(body)
	ev := &nostr.Event{
		CreatedAt: st.e.now().Unix(),
		Kind:      kind,
		Tags: nostr.Tags{
			{"h", st.wf.Channel.String()},
			{ProvenanceTag, st.wf.ID.String(), st.run.ID.String()},
		},
		Content: string(content),
	}
	// The state it reports is already stored: publish it even if the run's
	// context ends now (a heartbeat finding the finished run's lease gone,
	// shutdown), within a bound.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := st.e.publish(pctx, st.lease.Community, ev); err != nil {
		st.e.log.Warn("workflow: status event not published", "kind", kind, "run", st.run.ID, "err", err)
	}
}

// publish signs ev with the community's relay key and publishes it.
func (e *Engine) publish(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	if err := e.pub.Sign(ctx, c, ev); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	return e.emit(ctx, c, ev)
}

// emit publishes a signed event (unless the engine was halted by a test
// simulating a crash).
func (e *Engine) emit(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	if e.isHalted() {
		return errors.New("workflow: engine halted")
	}
	return e.pub.Publish(ctx, c, ev)
}
