package buzz

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/buzzrelay/buzz/metrics"
	"github.com/buzzrelay/buzz/nostr"
)

func scrapeRegistry(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// sample returns the value of family name's series whose labels include
// all of want (name, value pairs).
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no %s", name)
	}
outer:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(want); i += 2 {
			ok := false
			for _, l := range m.GetLabel() {
				ok = ok || l.GetName() == want[i] && l.GetValue() == want[i+1]
			}
			if !ok {
				continue outer
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("%s%v: no series", name, want)
	return 0
}

// TestRelayMetrics: a relay reports connections, events (stored and
// refused), REQs, live deliveries and store latency to its Metrics.
func TestRelayMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec, err := metrics.New(reg, metrics.WithPerCommunity(metrics.ModeAll))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTestRelay(t, WithMetrics(rec))
	sub, pub := tr.dial(t), tr.dial(t)
	s := newSigner(t)
	sub.Subscribe("live", nostr.Filter{Kinds: []int{1}})
	pub.MustAccept(s.Event(1, now(), "one"))
	pub.MustAccept(s.Event(1, now(), "two"))
	bad := s.Event(1, now(), "x")
	// Change the signature's last byte for sure (appending "00" left it
	// valid whenever it already ended in 00, one run in 256).
	last := "00"
	if strings.HasSuffix(bad.Sig, last) {
		last = "01"
	}
	bad.Sig = bad.Sig[:len(bad.Sig)-2] + last
	if ok := pub.Publish(bad); ok.OK {
		t.Fatal("bad signature accepted")
	}
	for range 2 {
		if _, ok := sub.Next().(*nostr.EventMessage); !ok {
			t.Fatal("live event not delivered")
		}
	}
	c := tr.tc.Host()
	fams := scrapeRegistry(t, reg)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"buzz_connections", nil, 2},
		{"buzz_events_received_total", nil, 3},
		{"buzz_events_stored_total", nil, 2},
		{"buzz_events_refused_total", []string{"reason", "invalid"}, 1},
		{"buzz_reqs_total", nil, 1},
		{"buzz_live_deliveries_total", nil, 2},
		{"buzz_community_events_received_total", []string{"host", c}, 3},
		{"buzz_community_connections", []string{"host", c}, 2},
		{"buzz_community_live_deliveries_total", []string{"host", c}, 2},
	} {
		if got := sample(t, fams, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if n := sample(t, fams, "buzz_store_duration_seconds", "op", "save"); n != 2 {
		t.Errorf("save latency samples %v, want 2", n)
	}
	if n := sample(t, fams, "buzz_store_duration_seconds", "op", "query"); n < 1 {
		t.Errorf("query latency samples %v", n)
	}
	_ = sub.WS.Close()
	waitFor(t, "connection close counted", func() bool {
		return sample(t, scrapeRegistry(t, reg), "buzz_connections") == 1
	})
}

// TestRelayMetricsConnectionRate: EVENTs refused by the connection's
// message rate are counted as received and refused (rate-limited), exactly
// as many as the client saw refused.
func TestRelayMetricsConnectionRate(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTestRelay(t, WithMetrics(rec), WithLimits(Limits{MessageRate: 1, MessageBurst: 1}))
	c := tr.dial(t)
	s := newSigner(t)
	refused := 0
	for i := range 4 {
		ok := c.Publish(s.Event(1, now(), "burst"+string(rune('a'+i))))
		if !ok.OK && len(ok.Message) > 13 && ok.Message[:13] == "rate-limited:" {
			refused++
		}
	}
	if refused == 0 {
		t.Skip("the connection's rate never refused (the machine was very slow)")
	}
	fams := scrapeRegistry(t, reg)
	if got := sample(t, fams, "buzz_events_refused_total", "reason", "rate-limited"); got != float64(refused) {
		t.Fatalf("refused rate-limited = %v, client saw %d", got, refused)
	}
	if got := sample(t, fams, "buzz_events_received_total"); got != 4 {
		t.Fatalf("received = %v, want 4", got)
	}
}
