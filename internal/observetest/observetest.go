// Package observetest reads what a test observes of a relay besides its
// protocol: its metrics, as its /metrics endpoint serves them, and its log.
// It builds on no package of this module, so any test may use it.
package observetest

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape returns reg's metric families as its /metrics endpoint serves
// them.
func Scrape(t testing.TB, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body.String())
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("parse the exposition: %v\n%s", err, rec.Body.String())
	}
	return fams
}

// Sample returns the value of family name's first series whose labels
// include all of want (name, value pairs): a counter's or gauge's value, a
// histogram's sample count. It fails the test when there is none.
func Sample(t testing.TB, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
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

// LogCapture is a slog.Handler keeping every record.
type LogCapture struct {
	mu   sync.Mutex
	recs []slog.Record
}

// Enabled reports true: every level is kept.
func (h *LogCapture) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps r.
func (h *LogCapture) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// WithAttrs returns h: the attributes of derived loggers are not kept.
func (h *LogCapture) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup returns h.
func (h *LogCapture) WithGroup(string) slog.Handler { return h }

// Lines returns the records with message msg, each as its attributes (and
// "level").
func (h *LogCapture) Lines(msg string) []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range h.recs {
		if r.Message != msg {
			continue
		}
		m := map[string]string{"level": r.Level.String()}
		r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
		out = append(out, m)
	}
	return out
}
