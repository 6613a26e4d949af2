package buzz

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/metrics"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

// TestWorkflowRunFailedObserved: a failing run is logged at INFO with its
// workflow, run, community host, failing step and error, and counted in
// the Prometheus series scraped from the registry.
func TestWorkflowRunFailedObserved(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		h := &logCapture{}
		reg := prometheus.NewRegistry()
		rec, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		tr := workflowRelay(t, st, newHookServer(t), WithLogger(slog.New(h)), WithMetrics(rec))
		alice := newSigner(t)
		ac := tr.dial(t)
		ac.authAs(alice, tr.host)
		ch := ac.createChannel(alice, "ops", channel.VisibilityOpen)
		id := workflow.NewID()
		_, okm := ac.define(alice, id, ch, `name: Fails
trigger: {on: message_posted}
steps:
  - id: greet
    action: send_message
    text: hi
  - id: broken
    if: 'trigger_missing == 1'
    action: send_message
    text: never
`)
		okResponse(t, okm)
		ac.mustAccept(alice.event(nostr.KindChatMessage, now(), "go", chanTag(ch)))
		waitFor(t, "the failed run logged", func() bool { return len(h.lines("buzz: workflow run failed")) == 1 })
		l := h.lines("buzz: workflow run failed")[0]
		if l["level"] != "INFO" || l["workflow"] != id.String() || l["host"] != tr.host || l["step"] != "broken" ||
			l["error_code"] != workflow.CodeConditionError || l["error"] == "" || l["run"] == "" {
			t.Fatalf("line %v", l)
		}
		fams := scrapeRegistry(t, reg)
		for _, c := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"buzz_workflow_runs_started_total", nil, 1},
			{"buzz_workflow_runs_finished_total", []string{"outcome", "failed"}, 1},
			{"buzz_workflow_runs_finished_total", []string{"outcome", "completed"}, 0},
			{"buzz_workflow_step_duration_seconds", []string{"status", "completed"}, 1},
			{"buzz_workflow_step_duration_seconds", []string{"status", "failed"}, 1},
		} {
			if got := sample(t, fams, c.name, c.labels...); got != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
			}
		}
	})
}
