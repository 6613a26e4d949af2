package workflow

import (
	"errors"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// RunObserver learns how runs go, for metrics and logs (WithRunObserver).
// The engine calls it from its workers, after the state it reports is
// stored: an implementation must be safe for concurrent use and must not
// block.
type RunObserver interface {
	// RunStarted: a pending run began executing.
	RunStarted(c tenant.CommunityID, workflow ID)
	// StepFinished: a step ended completed, failed or skipped; d is from
	// its start to its end (0 for a step skipped before it started).
	StepFinished(c tenant.CommunityID, workflow ID, step string, status StepStatus, d time.Duration)
	// RunFinished: a run reached a terminal status.
	RunFinished(c tenant.CommunityID, o RunOutcome)
}

// RunOutcome is how a run ended.
type RunOutcome struct {
	Workflow ID
	Run      ID
	Status   RunStatus // completed, failed or cancelled
	// Step is the step that failed or was cancelled ("" when the run
	// ended before or between steps, or completed).
	Step string
	// ErrorCode and Error say why a run failed or was cancelled.
	ErrorCode, Error string
}

// WithRunObserver makes the engine report run starts, step ends and run
// outcomes to o.
func WithRunObserver(o RunObserver) Option {
	return func(c *config) error {
		if o == nil {
			return errors.New("workflow: nil RunObserver")
		}
		c.observer = o
		return nil
	}
}

// noObserver is the RunObserver of an engine without WithRunObserver.
type noObserver struct{}

func (noObserver) RunStarted(tenant.CommunityID, ID)                                      {}
func (noObserver) StepFinished(tenant.CommunityID, ID, string, StepStatus, time.Duration) {}
func (noObserver) RunFinished(tenant.CommunityID, RunOutcome)                             {}
