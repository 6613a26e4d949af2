package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// startRelay serves an in-process buzz relay on store/embedded over a real
// loopback HTTP server and returns its ws:// URL.
func startTestRelay(t testing.TB, opts ...buzz.Option) string {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("embedded.Open: %v", err)
	}
	var (
		mu sync.Mutex
		h  http.Handler
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hh := h
		mu.Unlock()
		hh.ServeHTTP(w, r)
	}))
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
		t.Fatalf("EnsureCommunity: %v", err)
	}
	all := append([]buzz.Option{buzz.WithStore(st), buzz.WithChannels(), buzz.WithDirectory(st),
		buzz.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	relay, err := buzz.New(all...)
	if err != nil {
		t.Fatalf("buzz.New: %v", err)
	}
	mu.Lock()
	h = relay
	mu.Unlock()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = relay.Shutdown(ctx)
		srv.Close()
		_ = st.Close()
	})
	return url
}

// testCorpus is signed once per test binary.
var testCorpus = sync.OnceValues(func() (*corpus, error) {
	c, _, err := loadCorpus(context.Background(), "", 42, 200)
	return c, err
})

func metricsOf(t *testing.T, r result) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for _, x := range r.Metrics {
		m[x.Name] = x.Value
		if x.Better == "zero" && x.Value != 0 {
			t.Errorf("%s: check %s = %v (notes: %v)", r.Scenario, x.Name, x.Value, r.Notes)
		}
	}
	return m
}

func TestScenariosAgainstInProcessRelay(t *testing.T) {
	for _, policy := range []struct {
		name string
		auth buzz.AuthPolicy
	}{{"auth-optional", buzz.AuthOptional}, {"auth-required", buzz.AuthRequired}} {
		t.Run(policy.name, func(t *testing.T) {
			url := startTestRelay(t, buzz.WithAuth(policy.auth))
			c, err := testCorpus()
			if err != nil {
				t.Fatal(err)
			}
			cfg := &config{Conns: 4, Window: 8, Reqs: 42, Visible: 10, Subs: 8, Publishes: 10,
				Idle: 20, MixedOps: 60, WriteFrac: 0.2, SlowPublishes: 20}
			e := &env{cfg: cfg, c: c, target: &target{URL: url}, queries: c.planQueries(0, 10), counts: c.planCounts(0, 3)}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			ing := metricsOf(t, runIngest(ctx, e, 1))
			if ing["accepted"] != float64(len(c.Events)) || ing["events_per_s"] <= 0 || ing["ok_p50"] <= 0 {
				t.Errorf("ingest: %v", ing)
			}
			req := metricsOf(t, runReq(ctx, e))
			if req["seq_reqs_per_s"] <= 0 || req["conc_reqs_per_s"] <= 0 {
				t.Errorf("req: %v", req)
			}
			metricsOf(t, runCount(ctx, e))
			fan := metricsOf(t, runFanout(ctx, e))
			if fan["accepted"] != 10 || fan["deliver_p50"] <= 0 || fan["deliver_p99"] < fan["deliver_p50"] {
				t.Errorf("fanout: %v", fan)
			}
			vis := metricsOf(t, runVisible(ctx, e))
			if vis["accepted"] != 10 {
				t.Errorf("visible: %v", vis)
			}
			mixed := metricsOf(t, runMixed(ctx, e))
			if mixed["accepted"] != 12 || mixed["ops_per_s"] <= 0 {
				t.Errorf("mixed: %v", mixed)
			}
		})
	}
}

// TestIngestDetectsRefusals: a second ingest of the same corpus into the
// same relay is all duplicates, which the report must show.
func TestIngestDetectsDuplicates(t *testing.T) {
	url := startTestRelay(t)
	c, err := testCorpus()
	if err != nil {
		t.Fatal(err)
	}
	small := *c
	small.Events = c.Events[:100]
	cfg := &config{Conns: 2, Window: 4}
	e := &env{cfg: cfg, c: &small, target: &target{URL: url}}
	ctx := context.Background()
	runIngest(ctx, e, 4)
	r := runIngest(ctx, e, 4)
	m := map[string]float64{}
	for _, x := range r.Metrics {
		m[x.Name] = x.Value
	}
	if m["duplicates"] != float64(len(small.Events)) || m["accepted"] != 0 {
		t.Fatalf("second ingest: %v", m)
	}
}

// TestRunJSONEndToEnd runs the command itself (flags, corpus cache, JSON)
// against two in-process relays side by side.
func TestRunJSONEndToEnd(t *testing.T) {
	a, b := startTestRelay(t), startTestRelay(t)
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := os.Create(filepath.Join(dir, "err.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// Seed the cache with the shared test corpus; only seed 43 is signed.
	c, err := testCorpus()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.writeCache(filepath.Join(dir, "cache")); err != nil {
		t.Fatal(err)
	}
	args := []string{"-url", a, "-b", b, "-seed", "42", "-events", "200", "-conns", "3", "-reqs", "21",
		"-subs", "5", "-publishes", "5", "-cache", filepath.Join(dir, "cache"), "-json", "-runs", "2", "ingest,req,fanout"}
	if err := run(context.Background(), args, out, errOut); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, data)
	}
	if len(rep.Targets) != 2 || len(rep.Corpus.Fingerprint) != 64 {
		t.Fatalf("report: %+v", rep)
	}
	for _, tg := range rep.Targets {
		if len(tg.Runs) != 2 {
			t.Fatalf("%s: %d runs, want 2", tg.URL, len(tg.Runs))
		}
		for _, row := range tg.Summary {
			if row.Better == "zero" && row.Max != 0 {
				t.Errorf("%s: %s %s failed: %+v", tg.URL, row.Scenario, row.Metric, row)
			}
			if len(row.Runs) == 2 && (row.Min > row.Median || row.Median > row.Max) {
				t.Errorf("%s %s: min/median/max out of order: %+v", row.Scenario, row.Metric, row)
			}
		}
	}
	// Runs against relays that are not restarted use one corpus per run;
	// both were signed before measuring and printed with a fingerprint.
	info, _ := os.ReadFile(errOut.Name())
	if n := strings.Count(string(info), "fingerprint="); n != 2 {
		t.Fatalf("want 2 corpus lines (seed and seed+1), got %d:\n%s", n, info)
	}
}

func TestParseFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"-url", "http://x"}, {"-events", "5"}, {"-conns", "0"}, {"-runs", "0"}, {"nosuch"},
		{"-b-start", "x"}, {"-write-frac", "2"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	cfg, err := parseFlags([]string{"-url", "ws://localhost:1", "-b", "ws://localhost:2", "all"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Scenarios) != len(scenarioNames) || cfg.B == nil || cfg.A.Label == cfg.B.Label {
		t.Fatalf("cfg = %+v", cfg)
	}
}
