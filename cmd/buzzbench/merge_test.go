package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMergeReports folds three one-run reports of two relays and a verify
// ceiling into one table, and checks each kind of cell.
func TestMergeReports(t *testing.T) {
	dir := t.TempDir()
	cfg := &config{Conns: 16, Window: 64, Subs: 200}
	run := func(ingest, okP99, ids, rss, mismatches float64) []result {
		req := result{Scenario: "req"}
		for _, s := range reqShapes {
			v := 1.0
			if s == "ids" {
				v = ids
			}
			req.add("seq_"+s+"_p50", "ms", v, "lower")
		}
		req.check("seq_mismatches", int(mismatches))
		ing := result{Scenario: "ingest"}
		ing.add("events_per_s", "ev/s", ingest, "higher")
		ing.add("ok_p99", "ms", okP99, "lower")
		ing.add("accepted", "events", 4, "")
		ing.add("relay_cpu", "s", okP99/1000, "lower")
		ing.add("peak_rss", "MiB", rss/2, "lower")
		req.add("seq_ids_p99", "ms", 2*ids, "lower")
		req.add("peak_rss", "MiB", rss, "lower")
		cnt := result{Scenario: "count"}
		cnt.add("count_p50", "ms", ids/4, "lower")
		cnt.add("count_p99", "ms", ids/2, "lower")
		return []result{ing, req, cnt}
	}
	write := func(name string, rep report) string {
		t.Helper()
		data, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tgt := func(label string, runs ...[]result) *targetOut {
		return &targetOut{Relay: &target{Label: label}, Runs: runs}
	}
	m := machineInfo{CPUs: 2, CPUModel: "Test CPU", OS: "linux/amd64", LoadBefore: "0.50 0.4 0.3"}
	files := []string{
		write("a.json", report{Machine: m, Config: cfg, Corpus: corpusInfo{Fingerprint: "f1"},
			Targets: []*targetOut{tgt("buzzd", run(1000, 5, 16, 100, 0)), tgt("peer", run(500, 9, 1, 300, 2))}}),
		write("b.json", report{Machine: m, Config: cfg, Corpus: corpusInfo{Fingerprint: "f1"},
			Targets: []*targetOut{tgt("buzzd", run(3000, 7, 16, 120, 0)), tgt("peer", run(700, 9, 1, 200, 1))}}),
		write("c.json", report{Machine: m, Config: cfg, Corpus: corpusInfo{Fingerprint: "f1"},
			Targets: []*targetOut{tgt("buzzd", run(2000, 6, 16, 110, 0))}}),
		write("ceiling.json", report{Config: &config{}, Targets: []*targetOut{
			tgt("buzzd", []result{{Scenario: ceilingScenario, Metrics: []metric{{Name: "events_per_s", Value: 8000}}}})}}),
	}
	var out bytes.Buffer
	if err := mergeReports(&out, files); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| figure | unit | buzzd (3 runs) | peer (2 runs) |",
		"| ingest, 16 connections, 1 event in flight each | ev/s | 2000 | 600 |",
		"| verify ceiling, one core (BenchmarkVerifyCeiling, batches of 64) | ev/s | 8000 | - |",
		"| closed-loop ingest ÷ verify ceiling | % | 25 | - |",
		"| relay CPU per event, ingest, 1 event in flight | µs | 1500 | 2250 |",
		"| ingest OK latency p99, 1 in flight | ms | 6 | 9 |",
		"| REQ p99, ids (sequential, right after ingest) | ms | 32 | 2 |",
		"| COUNT p50 | ms | 4 | 0.25 |",
		"| COUNT p99 | ms | 8 | 0.5 |",
		"| REQ p50, ids (sequential) | ms | 16 | 1 |",
		// the seventh root of 16 is 2^(4/7)
		"| REQ p50, geometric mean of the 7 shapes | ms | 1.49 | 1 |",
		"| peak RSS over ingest+req+count | MiB | 110 | 250 |",
		"| failed correctness checks, all runs | count | 0 | 3 |",
		"corpus fingerprint f1",
		"2 CPUs, Test CPU",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("merged table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fan-out") {
		t.Errorf("a row for a figure no report holds:\n%s", got)
	}
	// Rows keep their fixed order: ingest before the ceiling before REQs.
	if i, j := strings.Index(got, "| ingest, 16"), strings.Index(got, "| REQ p50, ids"); i < 0 || j < i {
		t.Errorf("rows out of order:\n%s", got)
	}
	for _, bad := range [][]string{nil, {filepath.Join(dir, "nosuch.json")}, {write("x.json", report{})}} {
		if err := mergeReports(io.Discard, bad); err == nil {
			t.Errorf("mergeReports(%v) accepted", bad)
		}
	}
	if _, err := parseFlags([]string{"-merge"}, io.Discard); err == nil {
		t.Error("-merge without files accepted")
	}
	c, err := parseFlags([]string{"-merge", "a.json", "b.json"}, io.Discard)
	if err != nil || len(c.Merge) != 2 {
		t.Fatalf("parseFlags(-merge a b) = %+v, %v", c, err)
	}
}

// TestMergeCrosspod: a three-pod column that ran only fanout and crosspod
// counts its runs and gets the cross-pod rows, after the fan-out row, and a
// peak RSS row of its own.
func TestMergeCrosspod(t *testing.T) {
	dir := t.TempDir()
	cfg := &config{Subs: 200, SubURLs: []string{"ws://127.0.0.1:2", "ws://127.0.0.1:3"}}
	run := func(p50, p99 float64) []result {
		fan := result{Scenario: "fanout"}
		fan.add("deliver_p99", "ms", 2*p99, "lower")
		fan.add("peak_rss", "MiB", 300, "lower")
		cross := result{Scenario: "crosspod"}
		cross.add("deliver_p50", "ms", p50, "lower")
		cross.add("deliver_p99", "ms", p99, "lower")
		cross.check("missing", 1)
		cross.add("peak_rss", "MiB", 310, "lower")
		cross.add("relay_cpu", "s", 2, "lower")
		cross.add("relay_runq_wait", "s", 2*p50, "lower")
		return []result{fan, cross}
	}
	rep := report{Config: cfg, Targets: []*targetOut{{Relay: &target{Label: "buzzd-3pods"}, Runs: [][]result{run(1, 4), run(2, 6), run(3, 5)}}}}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "r.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := mergeReports(&out, []string{p}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| figure | unit | buzzd-3pods (3 runs) |",
		"| fan-out to 200 subscribers, delivery p99 | ms | 10 |",
		"| cross-pod fan-out to 200 subscribers on 2 other pods, delivery p50 | ms | 2 |",
		"| cross-pod fan-out to 200 subscribers on 2 other pods, delivery p99 | ms | 5 |",
		"| cross-pod fan-out: the pods' wait for a CPU ÷ their CPU time | ratio | 2 |",
		"| peak RSS over fanout+crosspod | MiB | 310 |",
		"| failed correctness checks, all runs | count | 3 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("merged table lacks %q:\n%s", want, got)
		}
	}
	if i, j, k := strings.Index(got, "| fan-out to 200"), strings.Index(got, "| cross-pod fan-out to 200 subscribers on 2 other pods, delivery p50"), strings.Index(got, "| cross-pod fan-out to 200 subscribers on 2 other pods, delivery p99"); i < 0 || j < i || k < j {
		t.Errorf("rows out of order:\n%s", got)
	}
}

func TestParseStatusKBHighWaterMark(t *testing.T) {
	status := []byte("Name:\tbuzzd\nVmHWM:\t   20000 kB\nVmRSS:\t   12345 kB\n")
	if v, ok := parseStatusKB(status, "VmHWM:"); !ok || v != 20000*1024 {
		t.Fatalf("VmHWM = %d, %v", v, ok)
	}
	if v, ok := pidStatus(os.Getpid(), "VmHWM:"); !ok || v <= 0 {
		t.Fatalf("own VmHWM = %d, %v", v, ok)
	}
}

func TestSchedTimes(t *testing.T) {
	st, ok := parseSchedstat([]byte("2500000 7000000 42\n"))
	if !ok || st.CPU != 2500*time.Microsecond || st.Wait != 7*time.Millisecond {
		t.Fatalf("parseSchedstat = %+v, %v", st, ok)
	}
	if _, ok := parseSchedstat([]byte("x 1 2")); ok {
		t.Fatal("malformed schedstat accepted")
	}
	if d := (schedTimes{5, 9}).sub(schedTimes{2, 4}); d != (schedTimes{3, 5}) {
		t.Fatalf("sub = %+v", d)
	}
	// The test binary's own threads, where the kernel keeps schedstat.
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no /proc/<pid>/schedstat here")
	}
	before, ok := pidSched(os.Getpid())
	if !ok {
		t.Fatal("pidSched(self) found nothing")
	}
	for i := 0; i < 1e6; i++ { // burn some CPU
		_ = strings.Repeat("x", i%7)
	}
	after, _ := pidSched(os.Getpid())
	if d := after.sub(before); d.CPU <= 0 {
		t.Fatalf("CPU time did not grow: %+v → %+v", before, after)
	}
}
