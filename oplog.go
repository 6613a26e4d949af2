package buzz

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// DefaultLogSummaryInterval is how often a relay logs its summary line
// unless WithLogSummary says otherwise.
const DefaultLogSummaryInterval = time.Minute

// refusalLogInterval is the least time between two "connection refused"
// lines of one reason; the refusals in between are counted and reported
// with the next line of that reason.
const refusalLogInterval = time.Minute

// WithLogSummary sets how often the relay logs one INFO line summing up
// what it did since the previous one: open connections, EVENTs received,
// live events delivered, refusals (EVENTs answered OK false and connections
// refused) and workflow runs finished (and how many failed). Default
// DefaultLogSummaryInterval; 0 turns the line off; otherwise at least one
// second.
func WithLogSummary(every time.Duration) Option {
	return func(c *config) error {
		if every != 0 && every < time.Second {
			return errors.New("buzz: WithLogSummary: 0 (off) or at least one second")
		}
		c.logSummary = every
		c.logSummarySet = true
		return nil
	}
}

// opLog is what the relay tells its operator through the log: the periodic
// summary and the rate-limited "connection refused" lines. It counts
// through the Metrics calls the relay already makes (summaryMetrics) and
// forwards them.
type opLog struct {
	log *slog.Logger
	now func() time.Time

	conns                          atomic.Int64
	in, out, refused               atomic.Uint64
	runs, runsFailed, connsRefused atomic.Uint64

	mu      sync.Mutex
	reasons map[string]*reasonLine
	last    summaryCounts // at the previous summary (under mu)
}

// reasonLine is the log state of one refusal reason.
type reasonLine struct {
	logged     time.Time // when its last line was written
	suppressed int       // refusals since then without a line
}

type summaryCounts struct{ in, out, refused, runs, runsFailed uint64 }

func newOpLog(log *slog.Logger, now func() time.Time) *opLog {
	return &opLog{log: log, now: now, reasons: map[string]*reasonLine{}}
}

// connRefused logs a refused connection at INFO, at most one line per
// reason per refusalLogInterval: the refusals of a reason in between are
// counted and the next line of that reason says how many were suppressed.
// attrs go on the line (never a host: unmapped hosts are named at DEBUG
// only, so the INFO log cannot be used to fill itself with arbitrary text).
func (o *opLog) connRefused(ctx context.Context, reason string, attrs ...any) {
	o.connsRefused.Add(1)
	now := o.now()
	o.mu.Lock()
	st := o.reasons[reason]
	if st == nil {
		st = &reasonLine{}
		o.reasons[reason] = st
	}
	if !st.logged.IsZero() && now.Sub(st.logged) < refusalLogInterval {
		st.suppressed++
		o.mu.Unlock()
		return
	}
	suppressed := st.suppressed
	st.logged, st.suppressed = now, 0
	o.mu.Unlock()
	args := append([]any{"reason", reason}, attrs...)
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	o.log.InfoContext(ctx, "buzz: connection refused", args...)
}

// runFinished counts a finished workflow run for the summary.
func (o *opLog) runFinished(failed bool) {
	o.runs.Add(1)
	if failed {
		o.runsFailed.Add(1)
	}
}

// summary writes the summary line: the open connections, and what
// happened since the previous line.
func (o *opLog) summary() {
	cur := summaryCounts{o.in.Load(), o.out.Load(), o.refused.Load() + o.connsRefused.Load(), o.runs.Load(), o.runsFailed.Load()}
	o.mu.Lock()
	prev := o.last
	o.last = cur
	o.mu.Unlock()
	o.log.Info("buzz: summary", "connections", o.conns.Load(), "events_in", cur.in-prev.in, "events_out", cur.out-prev.out,
		"refusals", cur.refused-prev.refused, "workflow_runs", cur.runs-prev.runs, "workflow_runs_failed", cur.runsFailed-prev.runsFailed)
}

// run writes the summary every interval until ctx ends, then closes done.
func (o *opLog) run(ctx context.Context, every time.Duration, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			o.summary()
		}
	}
}

// summaryMetrics counts for the summary and forwards to the relay's
// Metrics.
type summaryMetrics struct {
	next Metrics
	o    *opLog
}

func (m summaryMetrics) ConnOpened(tc tenant.TenantContext) { m.o.conns.Add(1); m.next.ConnOpened(tc) }
func (m summaryMetrics) ConnClosed(tc tenant.TenantContext) { m.o.conns.Add(-1); m.next.ConnClosed(tc) }
func (m summaryMetrics) EventIngested(tc tenant.TenantContext, ok, stored bool, msg string) {
	m.o.in.Add(1)
	if !ok {
		m.o.refused.Add(1)
	}
	m.next.EventIngested(tc, ok, stored, msg)
}
func (m summaryMetrics) Req(tc tenant.TenantContext) { m.next.Req(tc) }
func (m summaryMetrics) LiveDelivered(tc tenant.TenantContext) {
	m.o.out.Add(1)
	m.next.LiveDelivered(tc)
}
func (m summaryMetrics) SlowReaderDisconnected(tc tenant.TenantContext) {
	m.next.SlowReaderDisconnected(tc)
}
func (m summaryMetrics) StoreLatency(op string, d time.Duration) { m.next.StoreLatency(op, d) }

// The workflow and webhook counters (Host.Metrics): a finished run is
// counted for the summary; each is passed on when the relay's Metrics
// implements it.

func (m summaryMetrics) WorkflowRunStarted() {
	if n, ok := m.next.(interface{ WorkflowRunStarted() }); ok {
		n.WorkflowRunStarted()
	}
}

func (m summaryMetrics) WorkflowRunFinished(status string) {
	m.o.runFinished(status == string(workflow.RunFailed))
	if n, ok := m.next.(interface{ WorkflowRunFinished(string) }); ok {
		n.WorkflowRunFinished(status)
	}
}

func (m summaryMetrics) WorkflowStepFinished(status string, d time.Duration) {
	if n, ok := m.next.(interface {
		WorkflowStepFinished(string, time.Duration)
	}); ok {
		n.WorkflowStepFinished(status, d)
	}
}

func (m summaryMetrics) WebhookDelivered(direction string, status int) {
	if n, ok := m.next.(interface{ WebhookDelivered(string, int) }); ok {
		n.WebhookDelivered(direction, status)
	}
}
