package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/buzzrelay/buzz/internal/observetest"
	"github.com/buzzrelay/buzz/metrics"
	"github.com/buzzrelay/buzz/tenant"
)

// byCommunity returns family name's values keyed by the community label.
func byCommunity(t *testing.T, fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		var label string
		for _, l := range m.GetLabel() {
			if l.GetName() == "host" {
				label = l.GetValue()
			}
		}
		if _, dup := out[label]; dup {
			t.Fatalf("%s: community %q twice", name, label)
		}
		switch {
		case m.GetCounter() != nil:
			out[label] = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			out[label] = m.GetGauge().GetValue()
		}
	}
	return out
}

var perCommunity = []string{
	"buzz_community_connections", "buzz_community_events_received_total", "buzz_community_events_stored_total",
	"buzz_community_events_refused_total", "buzz_community_reqs_total", "buzz_community_live_deliveries_total",
}

// traffic sends n events to each community (n[i] to cs[i]), one refused
// per community, and opens one connection per community.
func traffic(r *metrics.Recorder, cs []tenant.TenantContext, n []int) {
	for i, c := range cs {
		r.ConnOpened(c)
		for j := range n[i] {
			r.EventIngested(c, j > 0, j > 0, "rate-limited: slow down")
		}
		r.Req(c)
		r.LiveDelivered(c)
	}
}

// dir is a tenant.Directory of fixed hosts.
type dir map[string]tenant.CommunityID

func (d dir) LookupHost(_ context.Context, host string) (tenant.CommunityID, error) {
	if id, ok := d[host]; ok {
		return id, nil
	}
	return tenant.CommunityID{}, tenant.ErrUnmappedHost
}

// bind returns the tenant context of host in d.
func bind(t testing.TB, d dir, host string) tenant.TenantContext {
	t.Helper()
	tc, err := tenant.Bind(context.Background(), d, host)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// communities returns n communities, c0.example, c1.example, ….
func communities(t testing.TB, n int) []tenant.TenantContext {
	d := dir{}
	cs := make([]tenant.TenantContext, n)
	for i := range cs {
		h := fmt.Sprintf("c%d.example", i)
		d[h] = tenant.NewCommunityID()
		cs[i] = bind(t, d, h)
	}
	return cs
}

// TestScrapeModes checks the exported series for all, off and top:2 with
// four communities of different activity.
func TestScrapeModes(t *testing.T) {
	cs := communities(t, 4)
	n := []int{5, 9, 1, 3} // busiest: cs[1], then cs[0]
	total := 18.0
	top2, _ := metrics.ModeTop(2)
	for _, tc := range []struct {
		mode metrics.Mode
		want map[string]float64 // events received by community label
	}{
		{metrics.ModeAll, map[string]float64{cs[0].Host(): 5, cs[1].Host(): 9, cs[2].Host(): 1, cs[3].Host(): 3}},
		{metrics.ModeOff, map[string]float64{}},
		{top2, map[string]float64{cs[1].Host(): 9, cs[0].Host(): 5, metrics.OtherCommunity: 4}},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			r, err := metrics.New(reg, metrics.WithPerCommunity(tc.mode))
			if err != nil {
				t.Fatal(err)
			}
			traffic(r, cs, n)
			r.StoreLatency(metrics.OpSave, 3*time.Millisecond)
			r.StoreLatency(metrics.OpQuery, time.Millisecond)
			r.SlowReaderDisconnected(cs[0])
			fams := observetest.Scrape(t, reg)

			// Fleet totals in every mode.
			for name, want := range map[string]float64{
				"buzz_connections":                   4,
				"buzz_events_received_total":         total,
				"buzz_events_stored_total":           total - 4,
				"buzz_reqs_total":                    4,
				"buzz_live_deliveries_total":         4,
				"buzz_slow_reader_disconnects_total": 1,
			} {
				if got := observetest.Sample(t, fams, name); got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
			if got := observetest.Sample(t, fams, "buzz_events_refused_total", "reason", "rate-limited"); got != 4 {
				t.Errorf("refused rate-limited = %v", got)
			}
			if got := observetest.Sample(t, fams, "buzz_events_refused_total", "reason", "invalid"); got != 0 {
				t.Errorf("refused invalid = %v", got)
			}
			if got := observetest.Sample(t, fams, "buzz_store_duration_seconds", "op", "save"); got != 1 {
				t.Errorf("save latency samples = %v", got)
			}

			got := byCommunity(t, fams, "buzz_community_events_received_total")
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("received by community %v, want %v", got, tc.want)
			}
			for _, name := range perCommunity {
				if s := byCommunity(t, fams, name); len(s) != len(tc.want) {
					t.Errorf("%s: %d series, want %d", name, len(s), len(tc.want))
				}
			}
			if tc.mode != metrics.ModeOff {
				conns, sum := byCommunity(t, fams, "buzz_community_connections"), 0.0
				for _, v := range conns {
					sum += v
				}
				if sum != 4 {
					t.Errorf("community connections sum to %v, want 4", sum)
				}
			}
		})
	}
}

// TestTopKCardinalityAndRerank: with top:2 every per-community metric has
// at most three series however many communities there are; re-ranking
// follows recent activity, and every exported counter — "other" included
// — stays monotonic as communities move in and out of the top set.
func TestTopKCardinalityAndRerank(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	reg := prometheus.NewRegistry()
	top2, _ := metrics.ModeTop(2)
	r, err := metrics.New(reg, metrics.WithPerCommunity(top2), metrics.WithRerankInterval(time.Minute), metrics.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	cs := communities(t, 50)
	for i, c := range cs {
		for range i + 1 { // cs[49] busiest, then cs[48]
			r.EventIngested(c, true, true, "")
		}
	}
	fams := observetest.Scrape(t, reg)
	for _, name := range perCommunity {
		if s := byCommunity(t, fams, name); len(s) != 3 {
			t.Fatalf("%s: %d series, want 3", name, len(s))
		}
	}
	got := byCommunity(t, fams, "buzz_community_events_received_total")
	if got[cs[49].Host()] != 50 || got[cs[48].Host()] != 49 || got[metrics.OtherCommunity] != 48*49/2 {
		t.Fatalf("first ranking: %v", got)
	}
	prevOther := got[metrics.OtherCommunity]

	// cs[0] and cs[1] become the busiest; before the interval passes the
	// ranking stays.
	for range 100 {
		r.EventIngested(cs[0], true, true, "")
		r.EventIngested(cs[1], true, true, "")
	}
	got = byCommunity(t, observetest.Scrape(t, reg), "buzz_community_events_received_total")
	if _, ok := got[cs[0].Host()]; ok || got[metrics.OtherCommunity] != prevOther+200 {
		t.Fatalf("re-ranked before the interval: %v", got)
	}
	prevOther = got[metrics.OtherCommunity]
	now = now.Add(time.Minute)
	got = byCommunity(t, observetest.Scrape(t, reg), "buzz_community_events_received_total")
	if got[cs[0].Host()] != 101 || got[cs[1].Host()] != 102 || len(got) != 3 {
		t.Fatalf("after re-ranking: %v", got)
	}
	if got[metrics.OtherCommunity] < prevOther {
		t.Fatalf("other went down: %v -> %v", prevOther, got[metrics.OtherCommunity])
	}
	// The series never undercount: they sum to at least the fleet total.
	sum := 0.0
	for _, v := range got {
		sum += v
	}
	if fleet := float64(50*51/2 + 200); sum < fleet {
		t.Fatalf("community series sum to %v, fleet received %v", sum, fleet)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]string{"all": "all", "off": "off", "top:1": "top:1", "top:1000": "top:1000"} {
		m, err := metrics.ParseMode(in)
		if err != nil || m.String() != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, m, err)
		}
	}
	for _, bad := range []string{"", "ALL", "none", "top", "top:", "top:0", "top:-1", "top:1001", "top:02", "top:2x", " all", "top: 2"} {
		if _, err := metrics.ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q) accepted", bad)
		}
	}
}

func TestNewValidation(t *testing.T) {
	if _, err := metrics.New(nil); err == nil {
		t.Error("nil registerer accepted")
	}
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.WithRerankInterval(time.Millisecond)); err == nil {
		t.Error("1ms re-rank interval accepted")
	}
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(reg); err == nil {
		t.Error("a second Recorder on one registry accepted")
	}
}

func TestRedisUp(t *testing.T) {
	var down bool
	reg := prometheus.NewRegistry()
	_, err := metrics.New(reg, metrics.WithRedisPing(func(context.Context) error {
		if down {
			return errors.New("down")
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if v := observetest.Sample(t, observetest.Scrape(t, reg), "buzz_redis_up"); v != 1 {
		t.Errorf("up = %v", v)
	}
	down = true
	if v := observetest.Sample(t, observetest.Scrape(t, reg), "buzz_redis_up"); v != 0 {
		t.Errorf("down = %v", v)
	}
}

// BenchmarkHotPath measures the per-event calls; they must not allocate.
func BenchmarkHotPath(b *testing.B) {
	top2, _ := metrics.ModeTop(2)
	for _, mode := range []metrics.Mode{metrics.ModeOff, metrics.ModeAll, top2} {
		b.Run(mode.String(), func(b *testing.B) {
			r, err := metrics.New(prometheus.NewRegistry(), metrics.WithPerCommunity(mode))
			if err != nil {
				b.Fatal(err)
			}
			cs := communities(b, 64)
			for _, c := range cs {
				r.EventIngested(c, true, true, "") // first sight allocates once
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c := cs[i&63]
				r.EventIngested(c, i&7 != 0, i&7 != 0, "rate-limited: slow down")
				r.LiveDelivered(c)
				r.StoreLatency(metrics.OpSave, time.Millisecond)
			}
		})
	}
}

// TestHotPathAllocations pins the benchmark's promise in the test suite.
func TestHotPathAllocations(t *testing.T) {
	r, err := metrics.New(prometheus.NewRegistry(), metrics.WithPerCommunity(metrics.ModeAll))
	if err != nil {
		t.Fatal(err)
	}
	c := communities(t, 1)[0]
	r.EventIngested(c, true, true, "")
	allocs := testing.AllocsPerRun(1000, func() {
		r.ConnOpened(c)
		r.EventIngested(c, false, false, "invalid: bad")
		r.Req(c)
		r.LiveDelivered(c)
		r.StoreLatency(metrics.OpQuery, time.Millisecond)
		r.ConnClosed(c)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per event", allocs)
	}
}

// TestConcurrentScrape records from several goroutines while scraping (run
// with -race), and checks nothing is lost.
func TestConcurrentScrape(t *testing.T) {
	top2, _ := metrics.ModeTop(2)
	reg := prometheus.NewRegistry()
	r, err := metrics.New(reg, metrics.WithPerCommunity(top2), metrics.WithRerankInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cs := communities(t, 5)
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 500 {
				r.EventIngested(cs[(w+i)%len(cs)], true, true, "")
			}
		}()
	}
	for range 20 {
		observetest.Scrape(t, reg)
	}
	for range 4 {
		<-done
	}
	if v := observetest.Sample(t, observetest.Scrape(t, reg), "buzz_events_received_total"); v != 2000 {
		t.Fatalf("received %v, want 2000", v)
	}
}

// FuzzParseMode: ParseMode accepts exactly the spellings String writes
// back, and never panics.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"all", "off", "top:2", "top:1000", "top:0", "top:", "top:-1", "top:+1", "top:1e3", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := metrics.ParseMode(s)
		if err != nil {
			return
		}
		if m.String() != s {
			t.Fatalf("ParseMode(%q).String() = %q", s, m.String())
		}
	})
}

// TestNamingConventions scrapes every series a Recorder exports and checks
// the Prometheus naming rules: counters end in _total exactly once, gauges
// and histograms never do, histograms of durations end in _seconds.
func TestNamingConventions(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := metrics.New(reg, metrics.WithPerCommunity(metrics.ModeAll), metrics.WithRedisPing(func(context.Context) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	traffic(r, communities(t, 2), []int{2, 3})
	r.StoreLatency(metrics.OpSave, time.Millisecond)
	fams := observetest.Scrape(t, reg)
	if len(fams) < 15 {
		t.Fatalf("only %d families", len(fams))
	}
	for name, f := range fams {
		total := strings.HasSuffix(name, "_total")
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			if !total || strings.Count(name, "_total") != 1 {
				t.Errorf("counter %s: want one _total suffix", name)
			}
		case dto.MetricType_HISTOGRAM:
			if !strings.HasSuffix(name, "_seconds") {
				t.Errorf("histogram %s: no unit", name)
			}
		default:
			if strings.Contains(name, "_total") {
				t.Errorf("%v %s is named as a counter", f.GetType(), name)
			}
		}
	}
}

// TestBuildInfo: buzz_build_info is 1 and names the Go version.
func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	f := observetest.Scrape(t, reg)["buzz_build_info"]
	if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("buzz_build_info: %v", f)
	}
	labels := map[string]string{}
	for _, l := range f.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["goversion"] != runtime.Version() || labels["version"] == "" || labels["revision"] == "" {
		t.Fatalf("labels %v", labels)
	}
}

// TestHostLabels: per-community series are labelled with the community's
// host; WithHostOf relabels a community whose host changed at the next
// refresh, and two communities that end up under one host stay two series.
func TestHostLabels(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	hosts := map[tenant.CommunityID]string{}
	reg := prometheus.NewRegistry()
	r, err := metrics.New(reg, metrics.WithPerCommunity(metrics.ModeAll), metrics.WithClock(func() time.Time { return now }),
		metrics.WithHostOf(func(_ context.Context, c tenant.CommunityID) (string, error) {
			if h, ok := hosts[c]; ok {
				return h, nil
			}
			return "", errors.New("unknown")
		}))
	if err != nil {
		t.Fatal(err)
	}
	cs := communities(t, 2)
	r.EventIngested(cs[0], true, true, "")
	r.EventIngested(cs[1], true, true, "")
	r.EventIngested(cs[1], true, true, "")
	got := byCommunity(t, observetest.Scrape(t, reg), "buzz_community_events_received_total")
	if fmt.Sprint(got) != fmt.Sprint(map[string]float64{"c0.example": 1, "c1.example": 2}) {
		t.Fatalf("first labels %v", got)
	}

	// c0 moves to new.example: relabelled once the interval has passed.
	hosts[cs[0].Community()] = "new.example"
	if got := byCommunity(t, observetest.Scrape(t, reg), "buzz_community_events_received_total"); got["c0.example"] != 1 {
		t.Fatalf("relabelled before the interval: %v", got)
	}
	now = now.Add(time.Minute)
	got = byCommunity(t, observetest.Scrape(t, reg), "buzz_community_events_received_total")
	if fmt.Sprint(got) != fmt.Sprint(map[string]float64{"new.example": 1, "c1.example": 2}) {
		t.Fatalf("after the host change %v", got)
	}

	// c1 takes new.example too (c0's lookup is stale): two series still.
	hosts[cs[1].Community()] = "new.example"
	now = now.Add(time.Minute)
	got = byCommunity(t, observetest.Scrape(t, reg), "buzz_community_events_received_total")
	if len(got) != 2 {
		t.Fatalf("two communities under one host: %v", got)
	}
	for l := range got {
		if !strings.HasPrefix(l, "new.example ") {
			t.Errorf("label %q does not name the host", l)
		}
	}
}

// TestWorkflowSeries: runs started, finished by outcome and step
// durations by status, scraped; an unknown status counts as other.
func TestWorkflowSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	r.WorkflowRunStarted()
	r.WorkflowRunStarted()
	r.WorkflowRunFinished("completed")
	r.WorkflowRunFinished("failed")
	r.WorkflowRunFinished("weird")
	r.WorkflowStepFinished("completed", 20*time.Millisecond)
	r.WorkflowStepFinished("failed", time.Second)
	r.WorkflowStepFinished("skipped", 0)
	fams := observetest.Scrape(t, reg)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"buzz_workflow_runs_started_total", nil, 2},
		{"buzz_workflow_runs_finished_total", []string{"outcome", "completed"}, 1},
		{"buzz_workflow_runs_finished_total", []string{"outcome", "failed"}, 1},
		{"buzz_workflow_runs_finished_total", []string{"outcome", "cancelled"}, 0},
		{"buzz_workflow_runs_finished_total", []string{"outcome", "other"}, 1},
		{"buzz_workflow_step_duration_seconds", []string{"status", "completed"}, 1},
		{"buzz_workflow_step_duration_seconds", []string{"status", "failed"}, 1},
		{"buzz_workflow_step_duration_seconds", []string{"status", "skipped"}, 1},
	} {
		if got := observetest.Sample(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestWebhookSeries: deliveries in and out by status class.
func TestWebhookSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	r.WebhookDelivered(metrics.WebhookIn, 202)
	r.WebhookDelivered(metrics.WebhookIn, 404)
	r.WebhookDelivered(metrics.WebhookOut, 200)
	r.WebhookDelivered(metrics.WebhookOut, 503)
	r.WebhookDelivered(metrics.WebhookOut, 0)
	r.WebhookDelivered("sideways", 200)
	fams := observetest.Scrape(t, reg)
	for _, c := range []struct {
		dir, status string
		want        float64
	}{
		{"in", "2xx", 1}, {"in", "4xx", 1}, {"in", "5xx", 0},
		{"out", "2xx", 1}, {"out", "5xx", 1}, {"out", "error", 1},
	} {
		if got := observetest.Sample(t, fams, "buzz_webhook_deliveries_total", "direction", c.dir, "status", c.status); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.dir, c.status, got, c.want)
		}
	}
	if n := len(fams["buzz_webhook_deliveries_total"].GetMetric()); n != 10 {
		t.Errorf("%d series, want 10", n)
	}
}
