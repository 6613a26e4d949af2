package main

import (
	"math"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i))
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {90, 90}, {99, 99}, {100, 100}, {0.5, 1}, {0, 1}, {99.5, 100}} {
		if got := percentile(s, tc.p); got != tc.want {
			t.Errorf("p%v of 1..100 = %v, want %v", tc.p, got, tc.want)
		}
	}
	small := []time.Duration{10, 20, 30, 40}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{25, 10}, {26, 20}, {50, 20}, {51, 30}, {75, 30}, {99, 40}} {
		if got := percentile(small, tc.p); got != tc.want {
			t.Errorf("p%v of %v = %v, want %v", tc.p, small, got, tc.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v, want 0", got)
	}
}

func TestSummarizeSortsAndReports(t *testing.T) {
	s := summarize([]time.Duration{5 * time.Millisecond, time.Millisecond, 3 * time.Millisecond})
	if s.N != 3 || s.P50 != 3*time.Millisecond || s.P99 != 5*time.Millisecond || s.Max != 5*time.Millisecond {
		t.Fatalf("summary = %+v", s)
	}
	if z := summarize(nil); z.N != 0 || z.Max != 0 {
		t.Fatalf("empty summary = %+v", z)
	}
}

func TestSpreadOf(t *testing.T) {
	if s := spreadOf([]float64{3, 1, 2}); s != (spread{1, 2, 3}) {
		t.Errorf("odd: %+v", s)
	}
	in := []float64{4, 1, 3, 2}
	if s := spreadOf(in); s != (spread{1, 2.5, 4}) {
		t.Errorf("even: %+v", s)
	}
	if in[0] != 4 {
		t.Error("spreadOf modified its input")
	}
	if s := spreadOf(nil); !math.IsNaN(s.Median) {
		t.Errorf("empty: %+v", s)
	}
}

func TestSummarizeRunsMinMedianMax(t *testing.T) {
	mk := func(v float64) []result {
		return []result{{Scenario: "ingest", Metrics: []metric{{Name: "events_per_s", Unit: "ev/s", Value: v, Better: "higher"}}}}
	}
	rows := summarizeRuns([][]result{mk(10), mk(30), mk(20)})
	if len(rows) != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	r := rows[0]
	if r.Min != 10 || r.Median != 20 || r.Max != 30 || len(r.Runs) != 3 {
		t.Fatalf("row = %+v", r)
	}
}

func TestParseVmRSSAndStat(t *testing.T) {
	status := []byte("Name:\tbuzzd\nVmPeak:\t  9000 kB\nVmRSS:\t   12345 kB\nThreads:\t7\n")
	v, ok := parseVmRSS(status)
	if !ok || v != 12345*1024 {
		t.Fatalf("parseVmRSS = %d, %v", v, ok)
	}
	if _, ok := parseVmRSS([]byte("Name:\tx\n")); ok {
		t.Fatal("parseVmRSS found VmRSS in a status without one")
	}
	g, err := statPgrp([]byte("4242 (my (odd) cmd) S 1 4240 4240 0 -1"))
	if err != nil || g != 4240 {
		t.Fatalf("statPgrp = %d, %v", g, err)
	}
	if _, err := statPgrp([]byte("garbage")); err == nil {
		t.Fatal("statPgrp accepted garbage")
	}
}

func TestEventIDFastPath(t *testing.T) {
	id := "aa00000000000000000000000000000000000000000000000000000000000001"
	// Content that mimics the key must not fool the scan: quotes inside
	// JSON strings are escaped.
	obj := `{"content":"x\"id\":\"bb\\","id":"` + id + `","pubkey":"p"}`
	if got := eventID([]byte(obj)); got != id {
		t.Fatalf("eventID = %q, want %q", got, id)
	}
	if got := eventID([]byte(`{"id":"short"}`)); got != "" {
		t.Fatalf("eventID of a short id = %q", got)
	}
}
