package buzz

import (
	"context"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// WorkflowMetrics is what a Metrics also implements to count workflow
// runs (*metrics.Recorder does). status is a workflow.RunStatus or
// workflow.StepStatus. The relay reports through it when its engine was
// built with workflow.WithRunObserver(host) (see WorkflowHost).
type WorkflowMetrics interface {
	WorkflowRunStarted()
	WorkflowRunFinished(status string)
	WorkflowStepFinished(status string, d time.Duration)
}

var _ workflow.RunObserver = (*WorkflowHost)(nil)

// workflowMetrics returns the relay's Metrics as WorkflowMetrics, or nil.
func (r *Relay) workflowMetrics() WorkflowMetrics {
	m := r.cfg.metrics
	if s, ok := m.(summaryMetrics); ok {
		m = s.next
	}
	wm, _ := m.(WorkflowMetrics)
	return wm
}

// RunStarted implements workflow.RunObserver: it is counted by the
// relay's Metrics (WorkflowMetrics).
func (h *WorkflowHost) RunStarted(tenant.CommunityID, workflow.ID) {
	if m := h.r.workflowMetrics(); m != nil {
		m.WorkflowRunStarted()
	}
}

// StepFinished implements workflow.RunObserver: it is counted and timed
// by the relay's Metrics (WorkflowMetrics).
func (h *WorkflowHost) StepFinished(_ tenant.CommunityID, _ workflow.ID, _ string, status workflow.StepStatus, d time.Duration) {
	if m := h.r.workflowMetrics(); m != nil {
		m.WorkflowStepFinished(string(status), d)
	}
}

// RunFinished implements workflow.RunObserver: the run is counted by the
// relay's Metrics and its summary line, and a failed run is logged at INFO
// with its workflow, run, community host, failing step and error.
func (h *WorkflowHost) RunFinished(c tenant.CommunityID, o workflow.RunOutcome) {
	if m := h.r.workflowMetrics(); m != nil {
		m.WorkflowRunFinished(string(o.Status))
	}
	h.r.oplog.runFinished(o.Status == workflow.RunFailed)
	if o.Status != workflow.RunFailed {
		return
	}
	h.r.log.Info("buzz: workflow run failed", "workflow", o.Workflow.String(), "run", o.Run.String(),
		"host", h.r.communityLabel(c), "step", o.Step, "error_code", o.ErrorCode, "error", o.Error)
}

// communityLabel names a community in a log line: its host when the store
// says, else its id.
func (r *Relay) communityLabel(c tenant.CommunityID) string {
	reg, ok := r.cfg.store.(interface {
		CommunityByID(context.Context, tenant.CommunityID) (store.Community, error)
	})
	if ok {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if cm, err := reg.CommunityByID(ctx, c); err == nil && cm.Host != "" {
			return cm.Host
		}
	}
	return c.String()
}
