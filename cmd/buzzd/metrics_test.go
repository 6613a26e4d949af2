package main

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsConfig: BUZZ_USAGE_METRICS_PER_COMMUNITY accepts all, off
// and top:K and defaults to all; any other value is a warning and all.
func TestMetricsConfig(t *testing.T) {
	for v, want := range map[string]string{"": "all", "all": "all", "off": "off", "top:3": "top:3"} {
		cfg, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_USAGE_METRICS_PER_COMMUNITY": v, "BUZZ_METRICS_ADDR": "127.0.0.1:9102"}), io.Discard)
		if err != nil || cfg.Metrics.PerCommunity.String() != want || cfg.Metrics.Addr != "127.0.0.1:9102" || len(cfg.Warnings) != 0 {
			t.Errorf("%q: %v %v %q", v, cfg.Metrics, err, cfg.Warnings)
		}
	}
	for _, v := range []string{"top", "top:0", "some", "ALL", "top:k"} {
		cfg, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_USAGE_METRICS_PER_COMMUNITY": v}), io.Discard)
		if err != nil || cfg.Metrics.PerCommunity.String() != "all" || len(cfg.Warnings) != 1 ||
			!strings.Contains(cfg.Warnings[0], "BUZZ_USAGE_METRICS_PER_COMMUNITY") || !strings.Contains(cfg.Warnings[0], "using all") {
			t.Errorf("%q: %v %v %q, want all with a warning naming the variable", v, cfg.Metrics, err, cfg.Warnings)
		}
	}
	if _, err := parseConfig("serve", []string{"-metrics-addr", "nonsense"}, envMap(nil), io.Discard); err == nil {
		t.Error("a malformed metrics address was accepted")
	}
}

// TestE2EMetrics runs buzzd with BUZZ_METRICS_ADDR: the metrics listener
// serves the exposition (parsed with the client library's parser) with the
// fleet totals and the top:1 community series, while the public listener
// serves no metrics on any host.
func TestE2EMetrics(t *testing.T) {
	mport := freePort(t)
	p := startBuzzd(t, freePort(t), e2eSettings("BUZZ_DATA_DIR", t.TempDir(),
		"BUZZ_METRICS_ADDR", "127.0.0.1:"+strconv.Itoa(mport), "BUZZ_USAGE_METRICS_PER_COMMUNITY", "top:1"))
	sk, _ := newKey(t)
	c := connect(t, p.url)
	if err := c.publish(signed(t, sk, 1, time.Now().Unix(), "counted", gonostr.Tags{})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.query(gonostr.Filter{Kinds: []int{1}}); err != nil {
		t.Fatal(err)
	}

	get := func(url string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var body []byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st int
		st, body = get("http://127.0.0.1:" + strconv.Itoa(mport) + "/metrics")
		if st != http.StatusOK {
			t.Fatalf("metrics listener: %d", st)
		}
		if bytes.Contains(body, []byte("buzz_events_stored_total 1")) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, name := range []string{"buzz_connections", "buzz_events_received_total", "buzz_events_stored_total",
		"buzz_reqs_total", "buzz_store_duration_seconds", "buzz_community_events_received_total", "buzz_build_info", "go_goroutines"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if f := fams["buzz_events_stored_total"]; f == nil || f.GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Errorf("stored: %v", f)
	}
	if f := fams["buzz_community_events_received_total"]; f == nil || len(f.GetMetric()) != 2 { // the community and other
		t.Errorf("top:1 series: %v", f)
	} else {
		hosts := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				hosts[l.GetName()+"="+l.GetValue()] = true
			}
		}
		if !hosts["host=localhost:"+strconv.Itoa(p.port)] || !hosts["host=_other"] {
			t.Errorf("top:1 series are not labelled by host: %v", hosts)
		}
	}
	// HTTP requests by route pattern and status: the WebSocket upgrade,
	// and the NIP-11 document fetched below on the next scrape.
	if f := fams["buzz_http_requests_total"]; f == nil {
		t.Error("no buzz_http_requests_total")
	} else {
		series := map[string]bool{}
		for _, m := range f.GetMetric() {
			var route, code string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "route":
					route = l.GetValue()
				case "code":
					code = l.GetValue()
				}
			}
			series[route+" "+code] = true
		}
		if !series["(websocket) 101"] {
			t.Errorf("no upgrade counted: %v", series)
		}
	}
	if st, _ := get("http://127.0.0.1:" + strconv.Itoa(p.port) + "/healthz"); st != http.StatusOK {
		t.Fatalf("healthz %d", st)
	}
	_, body = get("http://127.0.0.1:" + strconv.Itoa(mport) + "/metrics")
	if !bytes.Contains(body, []byte(`buzz_http_requests_total{code="200",route="GET /healthz"} 1`)) {
		t.Errorf("healthz request not counted by its pattern:\n%s", grepLines(body, "buzz_http_requests_total"))
	}
	// Never on the public listener.
	if st, b := get("http://127.0.0.1:" + strconv.Itoa(p.port) + "/metrics"); st == http.StatusOK || bytes.Contains(b, []byte("buzz_events_received_total")) {
		t.Fatalf("public listener served metrics: %d %s", st, b)
	}
}

// grepLines returns the lines of b containing s.
func grepLines(b []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestE2EGCPercent runs buzzd without GOGC in its environment, where it
// sets the collector's target to defaultGCPercent, and with GOGC=100, which
// it leaves alone; the Go collector's go_gc_gogc_percent reports the target
// in force.
func TestE2EGCPercent(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want float64
	}{
		{nil, defaultGCPercent},
		{[]string{"GOGC", "100"}, 100},
	} {
		mport := freePort(t)
		settings := e2eSettings(append([]string{"BUZZ_DATA_DIR", t.TempDir(), "BUZZ_METRICS_ADDR", "127.0.0.1:" + strconv.Itoa(mport)}, tc.env...)...)
		startBuzzd(t, freePort(t), settings)
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(mport) + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		f := fams["go_gc_gogc_percent"]
		if f == nil || len(f.GetMetric()) != 1 {
			t.Fatalf("GOGC %v: go_gc_gogc_percent = %v", tc.env, f)
		}
		if got := f.GetMetric()[0].GetGauge().GetValue(); got != tc.want {
			t.Errorf("GOGC %v: go_gc_gogc_percent = %v, want %v", tc.env, got, tc.want)
		}
	}
}
