package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// progress draws one live status line, only when out is a terminal.
type progress struct {
	out     io.Writer
	enabled bool
	prefix  string
}

func newProgress(out *os.File, prefix string) *progress {
	fi, err := out.Stat()
	return &progress{out: out, enabled: err == nil && fi.Mode()&os.ModeCharDevice != 0, prefix: prefix}
}

// track redraws "<prefix> <name> done/total rate/s" until the returned stop
// function is called, which erases the line.
func (p *progress) track(name string, done *atomic.Int64, total int) (stop func()) {
	if p == nil || !p.enabled {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				fmt.Fprint(p.out, "\r\033[K")
				return
			case <-t.C:
				n := done.Load()
				rate := float64(n) / time.Since(start).Seconds()
				fmt.Fprintf(p.out, "\r\033[K%s %s %d/%d %.0f/s", p.prefix, name, n, total, rate)
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// summaryRow is one metric of one scenario over the runs of one target.
type summaryRow struct {
	Scenario string    `json:"scenario"`
	Metric   string    `json:"metric"`
	Unit     string    `json:"unit"`
	Better   string    `json:"better,omitempty"`
	Min      float64   `json:"min"`
	Median   float64   `json:"median"`
	Max      float64   `json:"max"`
	Runs     []float64 `json:"runs"`
}

// summarizeRuns folds runs (each a list of scenario results) into one row
// per scenario and metric, in first-seen order.
func summarizeRuns(runs [][]result) []summaryRow {
	var rows []summaryRow
	idx := map[string]int{}
	for _, run := range runs {
		for _, r := range run {
			for _, m := range r.Metrics {
				key := r.Scenario + "\x00" + m.Name
				i, ok := idx[key]
				if !ok {
					i = len(rows)
					idx[key] = i
					rows = append(rows, summaryRow{Scenario: r.Scenario, Metric: m.Name, Unit: m.Unit, Better: m.Better})
				}
				rows[i].Runs = append(rows[i].Runs, m.Value)
			}
		}
	}
	for i := range rows {
		s := spreadOf(rows[i].Runs)
		rows[i].Min, rows[i].Median, rows[i].Max = s.Min, s.Median, s.Max
	}
	return rows
}

// report is everything one invocation measured.
type report struct {
	Machine  machineInfo  `json:"machine"`
	Config   *config      `json:"config"`
	Corpus   corpusInfo   `json:"corpus"`
	Targets  []*targetOut `json:"targets"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
}

type corpusInfo struct {
	Seed        uint64 `json:"seed"`
	Events      int    `json:"events"`
	Extras      int    `json:"extras"`
	Authors     int    `json:"authors"`
	Fingerprint string `json:"fingerprint"`
}

type targetOut struct {
	*target `json:"-"`
	Relay   *target      `json:"relay"`
	Runs    [][]result   `json:"runs"`
	Summary []summaryRow `json:"summary"`
	Notes   []string     `json:"notes,omitempty"`
}

type machineInfo struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	// LoadBefore and LoadAfter are /proc/loadavg at the start and end: on
	// a shared machine they say how much else was running.
	LoadBefore string `json:"load_before,omitempty"`
	LoadAfter  string `json:"load_after,omitempty"`
}

func fmtVal(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func fmtSpread(r summaryRow) string {
	if len(r.Runs) <= 1 {
		return fmtVal(r.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", fmtVal(r.Median), fmtVal(r.Min), fmtVal(r.Max))
}

// writeTable prints the medians (with min–max over runs) of every target
// side by side, and the ratio of the first to the second.
func writeTable(w io.Writer, rep *report) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	head := []string{"scenario", "metric", "unit"}
	for _, t := range rep.Targets {
		head = append(head, t.Label)
	}
	if len(rep.Targets) == 2 {
		head = append(head, rep.Targets[0].Label+"/"+rep.Targets[1].Label)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	// Rows in the first target's order, then any only the second has.
	type key struct{ s, m string }
	var order []key
	seen := map[key]bool{}
	rowsBy := make([]map[key]summaryRow, len(rep.Targets))
	for i, t := range rep.Targets {
		rowsBy[i] = map[key]summaryRow{}
		for _, r := range t.Summary {
			k := key{r.Scenario, r.Metric}
			rowsBy[i][k] = r
			if !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
	}
	for _, k := range order {
		var unit, better string
		cells := []string{k.s, k.m, ""}
		var vals []float64
		for i := range rep.Targets {
			r, ok := rowsBy[i][k]
			if !ok {
				cells = append(cells, "-")
				vals = append(vals, math.NaN())
				continue
			}
			unit, better = r.Unit, r.Better
			cell := fmtSpread(r)
			if better == "zero" && r.Max != 0 {
				cell += " !"
			}
			cells = append(cells, cell)
			vals = append(vals, r.Median)
		}
		cells[2] = unit
		if len(vals) == 2 {
			ratio := "-"
			if better != "zero" && vals[1] != 0 && !math.IsNaN(vals[0]) && !math.IsNaN(vals[1]) {
				ratio = fmt.Sprintf("%.2f", vals[0]/vals[1])
			}
			cells = append(cells, ratio)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	for _, t := range rep.Targets {
		notes := append([]string(nil), t.Notes...)
		seenNote := map[string]bool{}
		for _, run := range t.Runs {
			for _, r := range run {
				for _, n := range r.Notes {
					s := r.Scenario + ": " + n
					if !seenNote[s] {
						seenNote[s] = true
						notes = append(notes, s)
					}
				}
			}
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "\nnotes for %s (%s):\n", t.Label, t.URL)
			for _, n := range notes {
				fmt.Fprintf(w, "  %s\n", n)
			}
		}
	}
	fmt.Fprintln(w, "\n'!' marks a correctness check that failed in at least one run; ratios are medians first/second.")
}

func writeJSON(w io.Writer, rep *report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
