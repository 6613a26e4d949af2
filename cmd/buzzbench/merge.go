package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// A merged table folds the JSON reports of several invocations (-json-out)
// into one table of headline figures: one column per relay label, in the
// order the labels first appear in the files, each cell the median over every
// run of that label in every file. Running one invocation per relay and run
// (-runs 1), in turn, alternates the relays run by run like -b does, for any
// number of relays.

// ceilingScenario is the scenario name of a report that holds no relay run
// but a measured verify ceiling (metric events_per_s): written by the
// side-by-side script from BenchmarkVerifyCeiling, it puts the ceiling and
// ingest's fraction of it in the same column as the build's relay figures.
const ceilingScenario = "verify-ceiling"

// figureRow identifies one row of the merged table. Rows sort by order,
// then param (a connection, window or subscriber count).
type figureRow struct {
	order int
	param int
	name  string
	unit  string
	// sum rows add the runs' values instead of taking their median.
	sum bool
}

// runFigures extracts the headline figures of one run (the results of one
// relay in one run) measured with cfg.
func runFigures(cfg *config, run []result) map[figureRow]float64 {
	out := map[figureRow]float64{}
	val := func(scenario, metric string) (float64, bool) {
		for _, r := range run {
			if r.Scenario != scenario {
				continue
			}
			for _, m := range r.Metrics {
				if m.Name == metric {
					return m.Value, true
				}
			}
		}
		return 0, false
	}
	put := func(row figureRow, scenario, metric string) {
		if v, ok := val(scenario, metric); ok {
			out[row] = v
		}
	}
	conns := fmt.Sprintf("%d connections", cfg.Conns)
	if cfg.AuthPerAuthor {
		// The connection count is the corpus's author count, which the
		// report's config does not hold; -auth-per-author rows are apart.
		conns = "one authenticated connection per author"
	}
	put(figureRow{order: 0, param: cfg.Conns, name: fmt.Sprintf("ingest, %s, 1 event in flight each", conns), unit: "ev/s"}, "ingest", "events_per_s")
	put(figureRow{order: 1, param: cfg.Window, name: fmt.Sprintf("ingest, %s, %d events in flight each", conns, cfg.Window), unit: "ev/s"}, "ingest-pipelined", "events_per_s")
	put(figureRow{order: 2, name: "verify ceiling, one core (BenchmarkVerifyCeiling, batches of 64)", unit: "ev/s"}, ceilingScenario, "events_per_s")
	// The relay's CPU per event acknowledged, from /proc (-start or -pid).
	cpuPerEvent := func(row figureRow, scenario string) {
		cpu, ok := val(scenario, "relay_cpu")
		n, ok2 := val(scenario, "accepted")
		if ok && ok2 && n > 0 {
			out[row] = cpu * 1e6 / n
		}
	}
	cpuPerEvent(figureRow{order: 3, name: "relay CPU per event, ingest, 1 event in flight", unit: "µs"}, "ingest")
	cpuPerEvent(figureRow{order: 3, param: cfg.Window, name: fmt.Sprintf("relay CPU per event, ingest, %d events in flight", cfg.Window), unit: "µs"}, "ingest-pipelined")
	put(figureRow{order: 4, name: "ingest OK latency p99, 1 in flight", unit: "ms"}, "ingest", "ok_p99")
	var logSum float64
	shapes := 0
	for i, shape := range reqShapes {
		if v, ok := val("req", "seq_"+shape+"_p50"); ok {
			out[figureRow{order: 10 + i, name: "REQ p50, " + shape + " (sequential)", unit: "ms"}] = v
			if v > 0 {
				logSum += math.Log(v)
				shapes++
			}
		}
	}
	if shapes == len(reqShapes) {
		out[figureRow{order: 10 + len(reqShapes), name: fmt.Sprintf("REQ p50, geometric mean of the %d shapes", shapes), unit: "ms"}] = math.Exp(logSum / float64(shapes))
	}
	// The tail of the first REQs by ids, right after the burst of writes:
	// whatever the relay still does in the background (indexing,
	// compaction, closing connections) shows here first.
	put(figureRow{order: 20, name: "REQ p99, ids (sequential, right after ingest)", unit: "ms"}, "req", "seq_ids_p99")
	if cfg.AuthPerAuthor {
		put(figureRow{order: 21, name: "REQ p99, ids (concurrent, one authenticated connection per author)", unit: "ms"}, "req", "conc_ids_p99")
	}
	put(figureRow{order: 22, name: "COUNT p50", unit: "ms"}, "count", "count_p50")
	put(figureRow{order: 23, name: "COUNT p99", unit: "ms"}, "count", "count_p99")
	put(figureRow{order: 30, param: cfg.Subs, name: fmt.Sprintf("fan-out to %d subscribers, delivery p99", cfg.Subs), unit: "ms"}, "fanout", "deliver_p99")
	cross := fmt.Sprintf("cross-pod fan-out to %d subscribers on %d other pods, delivery", cfg.Subs, len(cfg.SubURLs))
	put(figureRow{order: 31, param: cfg.Subs, name: cross + " p50", unit: "ms"}, "crosspod", "deliver_p50")
	put(figureRow{order: 31, param: cfg.Subs, name: cross + " p99", unit: "ms"}, "crosspod", "deliver_p99")
	// How much of the time the pods were runnable they waited for a CPU
	// instead: far above 1, the latency rows measure the machine's load.
	if cpu, ok := val("crosspod", "relay_cpu"); ok && cpu > 0 {
		if wait, ok := val("crosspod", "relay_runq_wait"); ok {
			out[figureRow{order: 32, param: cfg.Subs, name: "cross-pod fan-out: the pods' wait for a CPU ÷ their CPU time", unit: "ratio"}] = wait / cpu
		}
	}
	peak, seen := 0.0, false
	failed := 0.0
	for _, r := range run {
		for _, m := range r.Metrics {
			switch {
			case m.Name == "peak_rss":
				peak, seen = max(peak, m.Value), true
			case m.Better == "zero":
				failed += m.Value
			}
		}
	}
	if seen {
		// The peak depends on what ran: one row per scenario list.
		var scen []string
		for _, r := range run {
			scen = append(scen, r.Scenario)
		}
		param := 0
		if slices.Contains(scen, "fanout") || slices.Contains(scen, "crosspod") {
			param = cfg.Subs
		}
		name := "peak RSS over " + strings.Join(scen, "+")
		if len(scen) == 1 && scen[0] == "fanout" {
			name = fmt.Sprintf("peak RSS over fan-out to %d subscribers", cfg.Subs)
		}
		if len(scen) == 1 && scen[0] == "crosspod" {
			name = fmt.Sprintf("peak RSS over cross-pod fan-out to %d subscribers, all pods", cfg.Subs)
		}
		out[figureRow{order: 40, param: param, name: name, unit: "MiB"}] = peak
	}
	if len(run) > 0 && run[0].Scenario != ceilingScenario {
		out[figureRow{order: 50, name: "failed correctness checks, all runs", unit: "count", sum: true}] = failed
	}
	return out
}

// ingestRatioRow is the derived row: closed-loop ingest over the verify
// ceiling of the same column.
var ingestRatioRow = figureRow{order: 3, name: "closed-loop ingest ÷ verify ceiling", unit: "%"}

type mergedColumn struct {
	label string
	runs  int
	vals  map[figureRow][]float64
}

// mergeReports reads the reports in paths and writes the merged table to w.
func mergeReports(w io.Writer, paths []string) error {
	if len(paths) == 0 {
		return errors.New("-merge needs JSON report files as arguments")
	}
	var cols []*mergedColumn
	byLabel := map[string]*mergedColumn{}
	var machines, fingerprints, loads []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("-merge: %w", err)
		}
		var rep report
		if err := json.Unmarshal(data, &rep); err != nil {
			return fmt.Errorf("-merge: %s: %w", p, err)
		}
		if rep.Config == nil {
			return fmt.Errorf("-merge: %s: not a buzzbench report (no config)", p)
		}
		m := fmt.Sprintf("%d CPUs, %s, %s", rep.Machine.CPUs, rep.Machine.CPUModel, rep.Machine.OS)
		if rep.Machine.CPUs > 0 && !slices.Contains(machines, m) {
			machines = append(machines, m)
		}
		if f := rep.Corpus.Fingerprint; f != "" && !slices.Contains(fingerprints, f) {
			fingerprints = append(fingerprints, f)
		}
		if rep.Machine.LoadBefore != "" {
			loads = append(loads, strings.Fields(rep.Machine.LoadBefore)[0])
		}
		for _, t := range rep.Targets {
			if t.Relay == nil {
				return fmt.Errorf("-merge: %s: target without a relay", p)
			}
			c := byLabel[t.Relay.Label]
			if c == nil {
				c = &mergedColumn{label: t.Relay.Label, vals: map[figureRow][]float64{}}
				byLabel[c.label] = c
				cols = append(cols, c)
			}
			for _, run := range t.Runs {
				if slices.ContainsFunc(run, func(r result) bool { return r.Scenario == "ingest" || r.Scenario == "crosspod" }) {
					c.runs++
				}
				for row, v := range runFigures(rep.Config, run) {
					c.vals[row] = append(c.vals[row], v)
				}
			}
		}
	}
	if len(cols) == 0 {
		return errors.New("-merge: the reports hold no relay")
	}
	cell := func(c *mergedColumn, row figureRow) (float64, bool) {
		vs := c.vals[row]
		if len(vs) == 0 {
			return 0, false
		}
		if row.sum {
			s := 0.0
			for _, v := range vs {
				s += v
			}
			return s, true
		}
		return spreadOf(vs).Median, true
	}
	rowSet := map[figureRow]bool{}
	for _, c := range cols {
		for row := range c.vals {
			rowSet[row] = true
		}
		ingest, ok1 := -1.0, false
		ceiling, ok2 := -1.0, false
		for row := range c.vals {
			switch {
			case row.order == 0:
				ingest, ok1 = cell(c, row)
			case row.order == 2:
				ceiling, ok2 = cell(c, row)
			}
		}
		if ok1 && ok2 && ceiling > 0 {
			c.vals[ingestRatioRow] = []float64{100 * ingest / ceiling}
			rowSet[ingestRatioRow] = true
		}
	}
	rows := make([]figureRow, 0, len(rowSet))
	for row := range rowSet {
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b figureRow) int {
		return cmp.Or(cmp.Compare(a.order, b.order), cmp.Compare(a.param, b.param), strings.Compare(a.name, b.name))
	})

	fmt.Fprintf(w, "load tool: %s\n", strings.Join(machines, "; "))
	if len(loads) > 0 {
		lo, hi := loads[0], loads[0]
		for _, l := range loads {
			if cmpLoad(l, lo) < 0 {
				lo = l
			}
			if cmpLoad(l, hi) > 0 {
				hi = l
			}
		}
		fmt.Fprintf(w, "load average (1 min) before each invocation: %s–%s\n", lo, hi)
	}
	switch len(fingerprints) {
	case 0:
	case 1:
		fmt.Fprintf(w, "corpus fingerprint %s\n", fingerprints[0])
	default:
		fmt.Fprintf(w, "WARNING: the reports published different corpora: %s\n", strings.Join(fingerprints, ", "))
	}
	fmt.Fprintln(w)
	head := []string{"figure", "unit"}
	sep := []string{"---", "---"}
	for _, c := range cols {
		switch c.runs {
		case 0:
			head = append(head, c.label)
		case 1:
			head = append(head, c.label+" (1 run)")
		default:
			head = append(head, fmt.Sprintf("%s (%d runs)", c.label, c.runs))
		}
		sep = append(sep, "---")
	}
	fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(sep, " | "))
	for _, row := range rows {
		cells := []string{row.name, row.unit}
		for _, c := range cols {
			v, ok := cell(c, row)
			switch {
			case !ok:
				cells = append(cells, "-")
			case row == ingestRatioRow:
				cells = append(cells, fmt.Sprintf("%.0f", v))
			default:
				cells = append(cells, fmtVal(v))
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w, "\nCells are medians over the runs; failed checks are summed (a wrong REQ or COUNT answer, a missing OK or delivery).")
	return nil
}

// cmpLoad compares two load-average numbers given as text.
func cmpLoad(a, b string) int {
	var x, y float64
	_, _ = fmt.Sscan(a, &x)
	_, _ = fmt.Sscan(b, &y)
	return cmp.Compare(x, y)
}
