package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/buzzrelay/buzz/internal/observetest"
	"github.com/buzzrelay/buzz/metrics"
)

// TestInstrumentHTTP: requests are counted by the pattern that matched
// (never the path) and status code, and timed by pattern.
func TestInstrumentHTTP(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, req *http.Request) {
		if req.PathValue("id") == "gone" {
			http.Error(w, "gone", http.StatusGone)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := httptest.NewServer(r.InstrumentHTTP(mux))
	defer srv.Close()
	for _, p := range []string{"/items/1", "/items/2", "/items/gone", "/nowhere"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	fams := observetest.Scrape(t, reg)
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"route", "GET /items/{id}", "code", "200"}, 2},
		{[]string{"route", "GET /items/{id}", "code", "410"}, 1},
		{[]string{"route", metrics.RouteOther, "code", "404"}, 1},
	} {
		if got := observetest.Sample(t, fams, "buzz_http_requests_total", c.labels...); got != c.want {
			t.Errorf("requests%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if n := len(fams["buzz_http_requests_total"].GetMetric()); n != 3 {
		t.Errorf("%d request series, want 3", n)
	}
	if got := observetest.Sample(t, fams, "buzz_http_request_duration_seconds", "route", "GET /items/{id}"); got != 3 {
		t.Errorf("timed %v requests, want 3", got)
	}
}
