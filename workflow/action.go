package workflow

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// Action is a step kind. An embedder adds its own with WithAction.
type Action interface {
	// Name is the step's "action" value.
	Name() string
	// Validate checks a step's action fields when a definition is parsed
	// (d is the whole definition, for rules that depend on the trigger).
	// Errors should be *FieldError naming the field (e.g. via Fields'
	// accessors); Parse prefixes the step's path.
	Validate(f Fields, d *Definition) error
	// Run performs the step and returns its output (JSON values), which
	// later steps read as steps.ID.output.FIELD. An error ends the run as
	// failed; a *StepError sets the trace's error code. Run may be called
	// again for the same step after a takeover: external effects must go
	// through StepContext.Once.
	Run(ctx context.Context, x *StepContext) (map[string]any, error)
}

// Registry maps action names to actions. A nil *Registry has none.
type Registry struct {
	m map[string]Action
}

// NewRegistry returns a registry holding actions (names must be unique).
func NewRegistry(actions ...Action) (*Registry, error) {
	r := &Registry{m: make(map[string]Action, len(actions))}
	for _, a := range actions {
		if err := r.add(a); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Registry) add(a Action) error {
	if a == nil || a.Name() == "" {
		return errors.New("workflow: action without a name")
	}
	if _, dup := r.m[a.Name()]; dup {
		return fmt.Errorf("workflow: action %q registered twice", a.Name())
	}
	r.m[a.Name()] = a
	return nil
}

// Lookup implements ActionLookup.
func (r *Registry) Lookup(name string) (Action, bool) {
	if r == nil {
		return nil, false
	}
	a, ok := r.m[name]
	return a, ok
}

// Names lists the registered action names, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// StepError is a step failure with a trace error code.
type StepError struct {
	Code string // e.g. step_timeout, effect_uncertain, not_permitted
	Msg  string
}

func (e *StepError) Error() string { return e.Code + ": " + e.Msg }

// Fail returns a *StepError.
func Fail(code, format string, args ...any) error {
	return &StepError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Error codes the engine writes into traces.
const (
	CodeStepTimeout       = "step_timeout"
	CodeStepFailed        = "step_failed"
	CodeConditionError    = "condition_error"
	CodeEffectUncertain   = "effect_uncertain"
	CodeOwnerUnauthorized = "owner_unauthorized"
	CodeWorkflowGone      = "workflow_unavailable"
	CodeDependencySkipped = "dependency_skipped"
	CodeInvalidDefinition = "invalid_definition"
	CodeDefinitionChanged = "definition_changed"
)

// errParked carries a delay's resume time out of Action.Run (status,
// when set, is the run's status while parked).
type errParked struct {
	until  time.Time
	status RunStatus
}

// errCancelled ends the run as cancelled from inside a step.
type errCancelled struct{ code, msg string }

func (e *errCancelled) Error() string { return "workflow: run cancelled: " + e.code + ": " + e.msg }

func (e *errParked) Error() string {
	return "workflow: run parked until " + e.until.Format(time.RFC3339)
}

// StepContext is what an action sees of the run it is part of.
type StepContext struct {
	Community tenant.CommunityID
	Workflow  *Workflow
	Run       *Run
	Step      *Step

	e     *Engine
	lease Lease
	vars  map[string]any
}

// Vars returns the template variables (trigger, steps); do not modify.
func (x *StepContext) Vars() map[string]any { return x.vars }

// Expand expands a template against the run's variables (see Expand).
func (x *StepContext) Expand(tmpl string) string { return Expand(tmpl, x.vars) }

// String returns action field name with its templates expanded ("" when
// absent).
func (x *StepContext) String(name string) (string, error) {
	s, err := x.Step.Fields.String(name, false)
	if err != nil {
		return "", err
	}
	return x.Expand(s), nil
}

// Once performs an external effect at most once per run: key (unique
// within the step) names it, intent is recorded before do runs and the
// result after. If an earlier attempt (before a takeover) finished the
// effect, do is not called and the recorded result is returned. If it
// began but did not finish, do is called with the recorded intent when
// replaySafe (doing it twice is harmless, e.g. publishing the same signed
// event), and otherwise Once fails with CodeEffectUncertain.
func (x *StepContext) Once(ctx context.Context, key string, intent []byte, replaySafe bool,
	do func(ctx context.Context, intent []byte) ([]byte, error)) ([]byte, error) {
	full := x.Step.ID + ":" + key
	rec, created, err := x.e.store.BeginEffect(ctx, x.lease, full, intent)
	if err != nil {
		return nil, err
	}
	if rec.Done {
		return rec.Result, nil
	}
	if !created && !replaySafe {
		return nil, Fail(CodeEffectUncertain, "an earlier attempt began this effect and may have completed it; not repeating it")
	}
	res, err := do(ctx, rec.Intent)
	if err != nil {
		return nil, err
	}
	if err := x.e.store.FinishEffect(ctx, x.lease, full, res); err != nil {
		return nil, err
	}
	return res, nil
}

// IdempotencyKey returns a key unique to this run and step, for effects
// whose receivers deduplicate (webhooks).
func (x *StepContext) IdempotencyKey() string {
	return x.Run.ID.String() + ":" + x.Step.ID
}

// ParkUntil returns the error an action returns to park the run until t
// (a durable delay): the run's lease is released and whichever worker
// claims it after t runs this step again.
func (x *StepContext) ParkUntil(t time.Time) error { return &errParked{until: t} }

// WaitForApproval is ParkUntil for a run waiting for a human decision:
// the run's status is waiting_approval while parked, and a decision
// (ApprovalStore.DecideApproval) makes it claimable before t.
func (x *StepContext) WaitForApproval(t time.Time) error {
	return &errParked{until: t, status: RunWaitingApproval}
}

// Cancel returns the error an action returns to end the run as cancelled
// with an error code (e.g. CodeApprovalDenied).
func (x *StepContext) Cancel(code, format string, args ...any) error {
	return &errCancelled{code: code, msg: fmt.Sprintf(format, args...)}
}

// Now is the engine's clock.
func (x *StepContext) Now() time.Time { return x.e.now() }
