package buzz

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/buzzrelay/buzz/internal/observetest"
	"github.com/buzzrelay/buzz/metrics"
	"github.com/buzzrelay/buzz/nostr"
)

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
	fams := observetest.Scrape(t, reg)
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
		if got := observetest.Sample(t, fams, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if n := observetest.Sample(t, fams, "buzz_store_duration_seconds", "op", "save"); n != 2 {
		t.Errorf("save latency samples %v, want 2", n)
	}
	if n := observetest.Sample(t, fams, "buzz_store_duration_seconds", "op", "query"); n < 1 {
		t.Errorf("query latency samples %v", n)
	}
	_ = sub.WS.Close()
	waitFor(t, "connection close counted", func() bool {
		return observetest.Sample(t, observetest.Scrape(t, reg), "buzz_connections") == 1
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
	fams := observetest.Scrape(t, reg)
	if got := observetest.Sample(t, fams, "buzz_events_refused_total", "reason", "rate-limited"); got != float64(refused) {
		t.Fatalf("refused rate-limited = %v, client saw %d", got, refused)
	}
	if got := observetest.Sample(t, fams, "buzz_events_received_total"); got != 4 {
		t.Fatalf("received = %v, want 4", got)
	}
}
