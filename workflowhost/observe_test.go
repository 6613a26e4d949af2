package workflowhost

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/observetest"
	"github.com/buzzrelay/buzz/internal/relaytest"
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
		h := &observetest.LogCapture{}
		reg := prometheus.NewRegistry()
		rec, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		tr := workflowRelay(t, st, newHookServer(t), buzz.WithLogger(slog.New(h)), buzz.WithMetrics(rec))
		alice := newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
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
		ac.MustAccept(alice.Event(nostr.KindChatMessage, now(), "go", chanTag(ch)))
		relaytest.WaitFor(t, "the failed run logged", func() bool { return len(h.Lines("buzz: workflow run failed")) == 1 })
		l := h.Lines("buzz: workflow run failed")[0]
		if l["level"] != "INFO" || l["workflow"] != id.String() || l["host"] != tr.Host || l["step"] != "broken" ||
			l["error_code"] != workflow.CodeConditionError || l["error"] == "" || l["run"] == "" {
			t.Fatalf("line %v", l)
		}
		fams := observetest.Scrape(t, reg)
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
			if got := observetest.Sample(t, fams, c.name, c.labels...); got != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
			}
		}
	})
}

// TestWebhookDeliveriesCounted: POSTs to a hook URL are counted in by the
// status answered, and call_webhook requests out by the receiver's status,
// in the series scraped from the registry.
func TestWebhookDeliveriesCounted(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		reg := prometheus.NewRegistry()
		rec, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		hook := newHookServer(t)
		tr := workflowRelay(t, st, hook, buzz.WithMetrics(rec))
		alice := newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		ch := ac.createChannel(alice, "ops", channel.VisibilityOpen)
		id := workflow.NewID()
		_, okm := ac.define(alice, id, ch, "name: Relay\ntrigger: {on: webhook}\nsteps:\n  - id: call\n    action: call_webhook\n    url: http://hooks.example/in\n    body: {n: 1}\n")
		secret := webhookSecretOf(t, okm)
		if status, body := hookPost(t, tr.Srv.URL, tr.Host, id.String(), secret, "", []byte(`{}`)); status != http.StatusAccepted {
			t.Fatalf("delivery %d %s", status, body)
		}
		if status, _ := hookPost(t, tr.Srv.URL, tr.Host, id.String(), strings.Repeat("0", 64), "", []byte(`{}`)); status != http.StatusNotFound {
			t.Fatalf("wrong secret answered %d", status)
		}
		relaytest.WaitFor(t, "call_webhook counted", func() bool {
			return observetest.Sample(t, observetest.Scrape(t, reg), "buzz_webhook_deliveries_total", "direction", "out", "status", "2xx") == 1
		})
		fams := observetest.Scrape(t, reg)
		for _, c := range []struct {
			dir, status string
			want        float64
		}{{"in", "2xx", 1}, {"in", "4xx", 1}, {"out", "2xx", 1}, {"out", "error", 0}} {
			if got := observetest.Sample(t, fams, "buzz_webhook_deliveries_total", "direction", c.dir, "status", c.status); got != c.want {
				t.Errorf("%s %s = %v, want %v", c.dir, c.status, got, c.want)
			}
		}
		if n := len(hook.bodies()); n != 1 {
			t.Fatalf("receiver saw %d calls", n)
		}
	})
}
