package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// startTestRelay serves an in-process buzz relay on store/embedded over a
// real loopback HTTP server and returns its ws:// URL.
func startTestRelay(t testing.TB, opts ...buzz.Option) string {
	t.Helper()
	return startTestPods(t, 1, nil, opts...)[0]
}

// startTestPods serves n in-process buzz relays over one store/embedded
// store, each on a loopback HTTP server of its own, and returns their ws://
// URLs. Every pod serves the community of the first URL's host. With
// broker set they share it, as pods of one deployment share Redis; with
// broker nil each has its own in-process broker (pods that cannot reach
// each other).
func startTestPods(t testing.TB, n int, broker pubsub.Broker, opts ...buzz.Option) []string {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("embedded.Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() }) // after every pod's cleanup below
	var urls []string
	for i := range n {
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
		urls = append(urls, "ws"+strings.TrimPrefix(srv.URL, "http"))
		if i == 0 {
			host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
				t.Fatalf("EnsureCommunity: %v", err)
			}
		}
		all := []buzz.Option{buzz.WithStore(st), buzz.WithChannels(), buzz.WithDirectory(st),
			buzz.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
		if broker != nil {
			all = append(all, buzz.WithBroker(broker))
		}
		relay, err := buzz.New(append(all, opts...)...)
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
		})
	}
	return urls
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
	hookLog := filepath.Join(dir, "before-reads.log")
	args := []string{"-url", a, "-b", b, "-seed", "42", "-events", "200", "-conns", "3", "-reqs", "21",
		"-counts", "9", "-before-reads", "echo reads >> " + hookLog, "-subs", "5", "-publishes", "5", "-cache", filepath.Join(dir, "cache"), "-json", "-runs", "2", "ingest,req,count,fanout"}
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
	// -before-reads ran once per relay and run, before its req.
	if hook, err := os.ReadFile(hookLog); err != nil || strings.Count(string(hook), "reads\n") != 4 {
		t.Errorf("-before-reads log = %q, %v; want 4 lines (2 relays, 2 runs)", hook, err)
	}
	// Runs against relays that are not restarted use one corpus per run;
	// both were signed before measuring and printed with a fingerprint.
	info, _ := os.ReadFile(errOut.Name())
	if n := strings.Count(string(info), "fingerprint="); n != 2 {
		t.Fatalf("want 2 corpus lines (seed and seed+1), got %d:\n%s", n, info)
	}
}

// TestBeforeReadsFailureStopsTheRun: a -before-reads command that fails
// ends the run with its error, before any REQ is measured.
func TestBeforeReadsFailureStopsTheRun(t *testing.T) {
	a := startTestRelay(t)
	dir := t.TempDir()
	c, err := testCorpus()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.writeCache(filepath.Join(dir, "cache")); err != nil {
		t.Fatal(err)
	}
	args := []string{"-url", a, "-seed", "42", "-events", "200", "-conns", "3", "-reqs", "21",
		"-before-reads", "echo no analyze; exit 3", "-cache", filepath.Join(dir, "cache"), "-json", "req"}
	sink, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	err = run(context.Background(), args, sink, sink)
	if err == nil || !strings.Contains(err.Error(), "-before-reads") || !strings.Contains(err.Error(), "no analyze") {
		t.Fatalf("run with a failing -before-reads = %v, want its error and output", err)
	}
}

// TestCrosspodAcrossPods runs crosspod against three in-process pods of one
// deployment (one store, one broker): the publisher on the first, the
// subscribers on the other two, which serve the first's host, every
// delivery crossing pods.
func TestCrosspodAcrossPods(t *testing.T) {
	for _, policy := range []struct {
		name string
		auth buzz.AuthPolicy
	}{{"auth-optional", buzz.AuthOptional}, {"auth-required", buzz.AuthRequired}} {
		t.Run(policy.name, func(t *testing.T) {
			broker, err := pubsub.NewLocal()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = broker.Close() })
			pods := startTestPods(t, 3, broker, buzz.WithAuth(policy.auth))
			c, err := testCorpus()
			if err != nil {
				t.Fatal(err)
			}
			cfg := &config{Subs: 8, Publishes: 10, SubURLs: pods[1:]}
			e := &env{cfg: cfg, c: c, target: &target{URL: pods[0]}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r := runCrosspod(ctx, e)
			if r.Scenario != "crosspod" {
				t.Errorf("scenario %q", r.Scenario)
			}
			m := metricsOf(t, r) // fails on any missing or duplicate delivery
			if m["accepted"] != 10 || m["deliver_p50"] <= 0 || m["deliver_p99"] < m["deliver_p50"] {
				t.Errorf("crosspod: %v", m)
			}
		})
	}
}

// TestCrosspodSubscribersAreOnOtherPods: pods that share the store but not
// the broker deliver nothing to each other, and crosspod reports every
// delivery missing, so its subscribers are not on the publisher's pod.
func TestCrosspodSubscribersAreOnOtherPods(t *testing.T) {
	pods := startTestPods(t, 2, nil)
	c, err := testCorpus()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config{Subs: 3, Publishes: 2, SubURLs: pods[1:]}
	e := &env{cfg: cfg, c: c, target: &target{URL: pods[0]}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := runCrosspod(ctx, e)
	var missing, accepted float64
	for _, x := range r.Metrics {
		switch x.Name {
		case "missing":
			missing = x.Value
		case "accepted":
			accepted = x.Value
		}
	}
	if accepted != 2 || missing != 2*3 {
		t.Fatalf("accepted %v, missing %v, want 2 and 6: %+v", accepted, missing, r)
	}
}

// TestFanoutReturnsWhenASubscriptionIsRefused: a relay that refuses one
// subscriber's REQ while the others are live ends the scenario with the
// refusal reported, and closing the live subscribers (each reporting its
// connection's end) does not hang it.
func TestFanoutReturnsWhenASubscriptionIsRefused(t *testing.T) {
	var reqs atomic.Int32
	url := startTestRelay(t, buzz.WithFilterPolicy(func(context.Context, tenant.TenantContext, nostr.Filter) error {
		if reqs.Add(1) == 3 {
			return errors.New("blocked: the third REQ")
		}
		return nil
	}))
	c, err := testCorpus()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cfg: &config{Subs: 20, Publishes: 2}, c: c, target: &target{URL: url}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := runFanout(ctx, e)
	refused := slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "the third REQ") })
	var errs float64
	for _, x := range r.Metrics {
		if x.Name == "errors" {
			errs = x.Value
		}
	}
	if !refused || errs != 1 || ctx.Err() != nil {
		t.Fatalf("notes %q, errors %v, ctx %v", r.Notes, errs, ctx.Err())
	}
}

// TestFanoutAuthenticatesRefusedSubscribers: subscribers whose REQ reaches
// an auth-required relay before they authenticated (here: they never
// answered the challenge on connect) authenticate and subscribe again, and
// every delivery is made.
func TestFanoutAuthenticatesRefusedSubscribers(t *testing.T) {
	url := startTestRelay(t, buzz.WithAuth(buzz.AuthRequired))
	c, err := testCorpus()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cfg: &config{Subs: 4, Publishes: 3}, c: c, target: &target{URL: url}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := runFanoutAt(ctx, e, "fanout", func(int) string { return url }, func(int) dialOptions { return dialOptions{} })
	m := metricsOf(t, r) // fails on errors, missing or duplicate deliveries
	if m["accepted"] != 3 {
		t.Fatalf("fanout: %v %q", m, r.Notes)
	}
}

func TestParseFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"-url", "http://x"}, {"-events", "5"}, {"-conns", "0"}, {"-runs", "0"}, {"nosuch"},
		{"-b-start", "x"}, {"-write-frac", "2"}, {"-counts", "2"},
		{"crosspod"}, {"-sub-url", "http://x", "crosspod"},
		{"-sub-url", "ws://localhost:2", "-b", "ws://localhost:3", "crosspod"},
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
	if slices.Contains(cfg.Scenarios, "crosspod") {
		t.Errorf("all includes crosspod, which needs -sub-url: %v", cfg.Scenarios)
	}
	cfg, err = parseFlags([]string{"-url", "ws://localhost:1", "-sub-url", "ws://localhost:2, ws://localhost:3", "-sub-url", "ws://localhost:4", "fanout,crosspod"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ws://localhost:2", "ws://localhost:3", "ws://localhost:4"}; !slices.Equal(cfg.SubURLs, want) || !slices.Equal(cfg.Scenarios, []string{"fanout", "crosspod"}) {
		t.Fatalf("sub URLs %q, scenarios %q", cfg.SubURLs, cfg.Scenarios)
	}
}
