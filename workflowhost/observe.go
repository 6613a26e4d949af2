package workflowhost

import (
	"context"
	"net/http"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// The relay's Metrics (buzz.Host.Metrics) count workflow runs and webhook
// deliveries with these methods; *metrics.Recorder implements them.
type (
	// workflowMetrics counts runs: status is a workflow.RunStatus or
	// workflow.StepStatus.
	workflowMetrics interface {
		WorkflowRunStarted()
		WorkflowRunFinished(status string)
		WorkflowStepFinished(status string, d time.Duration)
	}
	// webhookMetrics counts webhook deliveries: direction "in" for a POST
	// to a workflow's hook URL, answered with status; "out" for a
	// call_webhook request, with the response's status (0: no response).
	webhookMetrics interface {
		WebhookDelivered(direction string, status int)
	}
)

// RunStarted implements workflow.RunObserver: it is counted by the
// relay's Metrics (WorkflowMetrics).
func (h *engineSide) RunStarted(tenant.CommunityID, workflow.ID) {
	if m := h.workflow; m != nil {
		m.WorkflowRunStarted()
	}
}

// StepFinished implements workflow.RunObserver: it is counted and timed
// by the relay's Metrics (WorkflowMetrics).
func (h *engineSide) StepFinished(_ tenant.CommunityID, _ workflow.ID, _ string, status workflow.StepStatus, d time.Duration) {
	if m := h.workflow; m != nil {
		m.WorkflowStepFinished(string(status), d)
	}
}

// RunFinished implements workflow.RunObserver: the run is counted by the
// relay's Metrics (and so in its summary line), and a failed run is logged
// at INFO with its workflow, run, community host, failing step and error.
func (h *engineSide) RunFinished(c tenant.CommunityID, o workflow.RunOutcome) {
	if m := h.workflow; m != nil {
		m.WorkflowRunFinished(string(o.Status))
	}
	if o.Status != workflow.RunFailed {
		return
	}
	h.h.Logger().Info("buzz: workflow run failed", "workflow", o.Workflow.String(), "run", o.Run.String(),
		"host", h.communityLabel(c), "step", o.Step, "error_code", o.ErrorCode, "error", o.Error)
}

// communityLabel names a community in a log line: its host when the store
// says, else its id.
func (h *engineSide) communityLabel(c tenant.CommunityID) string {
	reg, ok := h.h.Store().(interface {
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

// countedCaller reports every call_webhook request to the relay's Metrics
// (direction "out").
type countedCaller struct {
	next workflow.WebhookCaller
	f    *Feature // its metrics are set by Mount, after the engine exists
}

func (c countedCaller) Call(ctx context.Context, req workflow.WebhookRequest) (workflow.WebhookResponse, error) {
	resp, err := c.next.Call(ctx, req)
	if m := c.f.webhooks; m != nil {
		status := resp.Status
		if err != nil {
			status = 0
		}
		m.WebhookDelivered("out", status)
	}
	return resp, err
}

// countWebhookIn wraps a hook URL handler so its answers are counted
// (WebhookMetrics, direction "in").
func (f *Feature) countWebhookIn(next func(http.ResponseWriter, *http.Request, tenant.TenantContext)) func(http.ResponseWriter, *http.Request, tenant.TenantContext) {
	m := f.webhooks
	if m == nil {
		return next
	}
	return func(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
		sw := &statusOnly{ResponseWriter: w}
		next(sw, req, tc)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		m.WebhookDelivered("in", sw.code)
	}
}

// statusOnly remembers the status a handler wrote.
type statusOnly struct {
	http.ResponseWriter
	code int
}

func (w *statusOnly) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusOnly) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusOnly) Unwrap() http.ResponseWriter { return w.ResponseWriter }
