package buzz

import (
	"context"
	"net/http"
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

// WebhookMetrics is what a Metrics also implements to count webhook
// deliveries (*metrics.Recorder does): direction "in" for a POST to a
// workflow's hook URL, answered with status; "out" for a call_webhook
// request, with the response's status (0: no response).
type WebhookMetrics interface {
	WebhookDelivered(direction string, status int)
}

// webhookMetrics returns the relay's Metrics as WebhookMetrics, or nil.
func (r *Relay) webhookMetrics() WebhookMetrics {
	m := r.cfg.metrics
	if s, ok := m.(summaryMetrics); ok {
		m = s.next
	}
	wm, _ := m.(WebhookMetrics)
	return wm
}

// CountedWebhooks returns caller reporting every call_webhook request to
// the relay's Metrics (WebhookMetrics, direction "out"); build the engine
// with workflow.WithWebhookCaller(host.CountedWebhooks(caller)).
func (h *WorkflowHost) CountedWebhooks(caller workflow.WebhookCaller) workflow.WebhookCaller {
	return countedCaller{next: caller, r: h.r}
}

type countedCaller struct {
	next workflow.WebhookCaller
	r    *Relay
}

func (c countedCaller) Call(ctx context.Context, req workflow.WebhookRequest) (workflow.WebhookResponse, error) {
	resp, err := c.next.Call(ctx, req)
	if m := c.r.webhookMetrics(); m != nil {
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
func (r *Relay) countWebhookIn(next func(http.ResponseWriter, *http.Request, tenant.TenantContext)) func(http.ResponseWriter, *http.Request, tenant.TenantContext) {
	m := r.webhookMetrics()
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
