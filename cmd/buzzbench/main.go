// Command buzzbench measures any Nostr relay over WebSocket only: it never
// touches the relay's storage, so buzzd and any peer relay can be measured in
// the same run on the same machine.
//
// It publishes a deterministic, pre-signed corpus (the signing happens before
// any clock starts and is cached on disk), checks every answer against what
// it published, and reports medians with min and max over runs, for one relay
// or two side by side.
//
// Usage:
//
//	buzzbench [flags] [scenario,...]
//
// Scenarios: ingest, ingest-pipelined, req, count, visible, fanout, idle,
// mixed, slowreader, abuse (noisy neighbours: each attack while an
// innocent client measures), or "all"; and crosspod, which "all" leaves
// out: the fan-out with its subscribers on the -sub-url relays (other pods
// of the same deployment) and its publisher on -url. See -h for the flags.
//
// It imports nostr only of buzz, and must not import the relay: it measures
// any Nostr relay from outside, over WebSocket.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// scenarioNames is every scenario in the order "all" runs them. The main
// corpus must be ingested before req/count/mixed/slowreader; they load it
// (untimed) when no ingest ran first.
var scenarioNames = []string{"ingest", "ingest-pipelined", "req", "count", "visible", "fanout", "mixed", "idle", "slowreader", "abuse"}

var defaultScenarios = "ingest,req,count,visible,fanout"

// optInScenarios are scenarios "all" does not run: they need flags of
// their own.
var optInScenarios = []string{"crosspod"}

// authLabelSuffix ends the label of a relay measured with -auth-per-author.
const authLabelSuffix = "+auth"

// config holds every flag.
type config struct {
	A *target `json:"a"`
	B *target `json:"b,omitempty"`
	// SubURLs are the relays crosspod's subscribers connect to, in turn:
	// other pods of A's deployment.
	SubURLs   []string `json:"sub_urls,omitempty"`
	Scenarios []string `json:"scenarios"`
	Seed      uint64   `json:"seed"`
	Events    int      `json:"events"`
	Conns     int      `json:"conns"`
	Window    int      `json:"window"`
	Reqs      int      `json:"reqs"`
	Counts    int      `json:"counts"`
	// BeforeReads is a shell command run once the corpus is loaded,
	// before the first req or count scenario after each start of the
	// relay (an ANALYZE of its database, say).
	BeforeReads   string        `json:"before_reads,omitempty"`
	Visible       int           `json:"visible"`
	Subs          int           `json:"subs"`
	Publishes     int           `json:"publishes"`
	Idle          int           `json:"idle"`
	MixedOps      int           `json:"mixed_ops"`
	WriteFrac     float64       `json:"write_frac"`
	SlowPublishes int           `json:"slow_publishes"`
	Runs          int           `json:"runs"`
	Timeout       time.Duration `json:"scenario_timeout"`
	// AuthPerAuthor: ingest uses one connection per corpus author, each
	// authenticated (NIP-42) as that author on connect and publishing only
	// that author's events; every other connection must authenticate too.
	// Relay labels get authLabelSuffix.
	AuthPerAuthor bool   `json:"auth_per_author,omitempty"`
	CacheDir      string `json:"-"`
	JSON          bool   `json:"-"`
	JSONOut       string `json:"-"`
	// Merge holds the report files of -merge; nothing is measured then.
	Merge []string `json:"-"`
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("buzzbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &config{A: &target{Label: "A"}}
	var bURL, bStart, bName, aName, scen string
	var bPID int
	cacheDefault := ""
	if d, err := os.UserCacheDir(); err == nil {
		cacheDefault = filepath.Join(d, "buzzbench")
	}
	fs.StringVar(&cfg.A.URL, "url", "ws://localhost:3000", "WebSocket URL of the relay under test")
	fs.StringVar(&cfg.A.Start, "start", "", "shell command that starts the relay under test (restarted for each run, stopped at the end)")
	fs.IntVar(&cfg.A.PID, "pid", 0, "pid of the relay, to read its memory from /proc (implied by -start)")
	fs.Func("sub-url", "WebSocket URL of another pod of the relay under test, for crosspod's subscribers (repeatable or comma-separated; the subscribers are spread over them in turn, the publisher stays on -url)", func(v string) error {
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				cfg.SubURLs = append(cfg.SubURLs, u)
			}
		}
		return nil
	})
	fs.StringVar(&bURL, "b", "", "WebSocket URL of a second relay to measure in the same run")
	fs.StringVar(&bStart, "b-start", "", "shell command that starts the second relay")
	fs.IntVar(&bPID, "b-pid", 0, "pid of the second relay")
	fs.StringVar(&aName, "name", "", "label of the relay under test in the report (default: its host)")
	fs.StringVar(&bName, "b-name", "", "label of the second relay (default: its host)")
	fs.StringVar(&scen, "scenario", defaultScenarios, "comma-separated scenarios, or \"all\": "+strings.Join(scenarioNames, ",")+"; and "+strings.Join(optInScenarios, ",")+", which \"all\" leaves out")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "corpus seed")
	fs.IntVar(&cfg.Events, "events", 20000, "main corpus size (events)")
	fs.IntVar(&cfg.Conns, "conns", 16, "connections for ingest, concurrent REQs and mixed")
	fs.IntVar(&cfg.Window, "window", 16, "events in flight per connection for ingest-pipelined")
	fs.IntVar(&cfg.Reqs, "reqs", 2100, "REQs per mode (sequential, concurrent)")
	fs.StringVar(&cfg.BeforeReads, "before-reads", "", "shell command run once the corpus is loaded, before the first req or count after each start of the relay (e.g. psql URL -c ANALYZE); the run fails if it does")
	fs.IntVar(&cfg.Counts, "counts", 600, "COUNT requests of the count scenario, as many of each of its 3 shapes (at least 3)")
	fs.IntVar(&cfg.Visible, "visible", 200, "events for the visible scenario")
	fs.IntVar(&cfg.Subs, "subs", 200, "subscribers for fanout and crosspod")
	fs.IntVar(&cfg.Publishes, "publishes", 200, "events published during fanout and crosspod")
	fs.IntVar(&cfg.Idle, "idle", 1000, "idle connections to hold")
	fs.IntVar(&cfg.MixedOps, "mixed-ops", 4000, "operations in the mixed scenario")
	fs.Float64Var(&cfg.WriteFrac, "write-frac", 0.2, "fraction of mixed operations that are writes")
	fs.IntVar(&cfg.SlowPublishes, "slow-publishes", 500, "events published while the slow reader does not read")
	fs.IntVar(&cfg.Runs, "runs", 1, "repetitions; the table shows median [min–max]")
	fs.BoolVar(&cfg.AuthPerAuthor, "auth-per-author", false, "ingest over one connection per corpus author, each authenticated (NIP-42) as that author on connect and publishing only its own events; REQ/COUNT connections authenticate too (a relay that sends no challenge fails); labels get the suffix \""+authLabelSuffix+"\"")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Minute, "upper bound on each scenario")
	fs.StringVar(&cfg.CacheDir, "cache", cacheDefault, "directory of the signed-corpus cache (\"\" disables it)")
	fs.BoolVar(&cfg.JSON, "json", false, "print JSON instead of a table")
	fs.StringVar(&cfg.JSONOut, "json-out", "", "also write the JSON report to this file")
	merge := fs.Bool("merge", false, "measure nothing: print one table of the headline figures of the JSON reports given as arguments (-json-out files), a column per relay label, medians over all their runs")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: buzzbench [flags] [scenario,...]\n       buzzbench -merge report.json...\n\nscenarios: %s, all (default %s); %s (not in all)\n\n", strings.Join(scenarioNames, ", "), defaultScenarios, strings.Join(optInScenarios, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *merge {
		if fs.NArg() == 0 {
			return nil, errors.New("-merge needs JSON report files as arguments")
		}
		cfg.Merge = fs.Args()
		return cfg, nil
	}
	if fs.NArg() > 1 {
		return nil, errors.New("at most one positional argument (the scenario list)")
	}
	if fs.NArg() == 1 {
		scen = fs.Arg(0)
	}
	if scen == "all" {
		cfg.Scenarios = slices.Clone(scenarioNames)
	} else {
		for _, s := range strings.Split(scen, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(scenarioNames, s) && !slices.Contains(optInScenarios, s) {
				return nil, fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(append(slices.Clone(scenarioNames), optInScenarios...), ", "))
			}
			cfg.Scenarios = append(cfg.Scenarios, s)
		}
	}
	if bURL != "" || bStart != "" {
		if bURL == "" {
			return nil, errors.New("-b-start needs -b URL")
		}
		cfg.B = &target{Label: "B", URL: bURL, Start: bStart, PID: bPID}
	}
	for _, t := range []*target{cfg.A, cfg.B} {
		if t == nil {
			continue
		}
		u, err := url.Parse(t.URL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, fmt.Errorf("relay URL %q must be ws:// or wss://", t.URL)
		}
		t.Label = u.Host
	}
	for _, s := range cfg.SubURLs {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, fmt.Errorf("-sub-url %q must be ws:// or wss://", s)
		}
	}
	if slices.Contains(cfg.Scenarios, "crosspod") {
		switch {
		case len(cfg.SubURLs) == 0:
			return nil, errors.New("crosspod needs -sub-url: the other pods its subscribers connect to")
		case cfg.B != nil:
			return nil, errors.New("crosspod measures one deployment: -sub-url belongs to -url, so no -b")
		}
	}
	if aName != "" {
		cfg.A.Label = aName
	}
	if bName != "" && cfg.B != nil {
		cfg.B.Label = bName
	}
	if cfg.B != nil && cfg.B.Label == cfg.A.Label {
		cfg.A.Label, cfg.B.Label = "A:"+cfg.A.Label, "B:"+cfg.B.Label
	}
	if cfg.AuthPerAuthor {
		// -merge makes a column per label: authenticated figures must not
		// share a column with anonymous ones.
		for _, t := range []*target{cfg.A, cfg.B} {
			if t != nil && !strings.HasSuffix(t.Label, authLabelSuffix) {
				t.Label += authLabelSuffix
			}
		}
	}
	switch {
	case cfg.Events < 100 || cfg.Events > 10_000_000:
		return nil, errors.New("-events must be in 100..10000000")
	case cfg.Conns < 1 || cfg.Conns > 10000:
		return nil, errors.New("-conns must be in 1..10000")
	case cfg.Window < 1 || cfg.Window > 10000:
		return nil, errors.New("-window must be in 1..10000")
	case cfg.Runs < 1 || cfg.Runs > 100:
		return nil, errors.New("-runs must be in 1..100")
	case cfg.Counts < len(countShapes):
		return nil, fmt.Errorf("-counts must be at least %d (one COUNT of each shape)", len(countShapes))
	case cfg.Reqs < 0 || cfg.Visible < 0 || cfg.Publishes < 0 || cfg.MixedOps < 0 || cfg.SlowPublishes < 0:
		return nil, errors.New("counts must not be negative")
	case cfg.Subs < 1 || cfg.Idle < 1:
		return nil, errors.New("-subs and -idle must be positive")
	case cfg.WriteFrac < 0 || cfg.WriteFrac > 1:
		return nil, errors.New("-write-frac must be in [0,1]")
	case cfg.Timeout <= 0:
		return nil, errors.New("-timeout must be positive")
	}
	return cfg, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "buzzbench:", err)
		}
		os.Exit(2)
	}
}

// run is the whole command; main only wires signals and the exit code.
func run(ctx context.Context, args []string, stdout, stderr *os.File) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.Merge != nil {
		return mergeReports(stdout, cfg.Merge)
	}
	info := stdout
	if cfg.JSON {
		info = stderr
	}
	rep := &report{Machine: machine(), Config: cfg, Started: time.Now()}
	targets := []*targetOut{{target: cfg.A, Relay: cfg.A}}
	if cfg.B != nil {
		targets = append(targets, &targetOut{target: cfg.B, Relay: cfg.B})
	}
	rep.Targets = targets
	logDir, err := os.MkdirTemp("", "buzzbench-")
	if err != nil {
		return err
	}
	corpora := map[uint64]*corpus{}
	getCorpus := func(seed uint64) (*corpus, error) {
		if c, ok := corpora[seed]; ok {
			return c, nil
		}
		t0 := time.Now()
		c, cached, err := loadCorpus(ctx, cfg.CacheDir, seed, cfg.Events)
		if err != nil {
			return nil, err
		}
		how := fmt.Sprintf("signed in %.1fs", time.Since(t0).Seconds())
		if cached {
			how = fmt.Sprintf("loaded from cache in %.1fs", time.Since(t0).Seconds())
		}
		fmt.Fprintf(info, "corpus seed=%d events=%d extras=%d authors=%d fingerprint=%s (%s)\n",
			seed, len(c.Events), len(c.Extras), len(c.Authors), c.Fingerprint, how)
		corpora[seed] = c
		return c, nil
	}
	c0, err := getCorpus(cfg.Seed)
	if err != nil {
		return err
	}
	rep.Corpus = corpusInfo{cfg.Seed, len(c0.Events), len(c0.Extras), len(c0.Authors), c0.Fingerprint}
	prog := newProgress(stdout, "")
	if cfg.JSON {
		prog.enabled = false
	}
	for runIdx := 0; runIdx < cfg.Runs; runIdx++ {
		for _, t := range targets {
			// A relay that is not restarted keeps earlier runs' events, so
			// each later run publishes a corpus of its own.
			seed := cfg.Seed
			if t.Start == "" {
				seed += uint64(runIdx)
			}
			c, err := getCorpus(seed)
			if err != nil {
				return err
			}
			perShape := max(1, min(64, cfg.Reqs/len(reqShapes)))
			e := &env{cfg: cfg, c: c, run: runIdx, target: t.target, progress: prog,
				queries: c.planQueries(runIdx, perShape), counts: c.planCounts(runIdx, cfg.Counts/len(countShapes))}
			prog.prefix = fmt.Sprintf("[%s run %d/%d]", t.Label, runIdx+1, cfg.Runs)
			results, err := runScenarios(ctx, e, logDir)
			if err != nil {
				return err
			}
			t.Runs = append(t.Runs, results)
			if !cfg.JSON {
				fmt.Fprintf(info, "%s run %d/%d done\n", t.Label, runIdx+1, cfg.Runs)
			}
		}
	}
	for _, t := range targets {
		t.Summary = summarizeRuns(t.Runs)
	}
	rep.Finished = time.Now()
	rep.Machine.LoadAfter = loadAvg()
	if cfg.JSONOut != "" {
		f, err := os.Create(cfg.JSONOut)
		if err != nil {
			return err
		}
		werr := writeJSON(f, rep)
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("write %s: %w", cfg.JSONOut, err)
		}
	}
	if cfg.JSON {
		return writeJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "\nmachine: %d CPUs, %s, %s; load average before %s, after %s\ncorpus fingerprint %s\n\n",
		rep.Machine.CPUs, rep.Machine.CPUModel, rep.Machine.GoVersion, rep.Machine.LoadBefore, rep.Machine.LoadAfter, rep.Corpus.Fingerprint)
	writeTable(stdout, rep)
	return nil
}

// runScenarios runs the configured scenarios against one relay for one
// run, starting (and finally stopping) the relay if it has a start command.
func runScenarios(ctx context.Context, e *env, logDir string) ([]result, error) {
	t := e.target
	readsPrepared := false // BeforeReads ran since the relay's last start
	restart := func() error {
		readsPrepared = false
		if t.proc != nil {
			t.proc.stop()
			t.proc = nil
		}
		if t.Start == "" {
			return nil
		}
		// The start command starts the whole deployment: every pod the
		// scenarios dial must accept connections.
		urls := []string{t.URL}
		if t == e.cfg.A {
			urls = append(urls, e.cfg.SubURLs...)
		}
		p, err := startRelay(ctx, t.Start, urls, logDir)
		if err != nil {
			return err
		}
		t.proc = p
		e.loaded, e.extrasNext = false, 0
		return nil
	}
	if err := restart(); err != nil {
		return nil, err
	}
	defer func() {
		if t.proc != nil {
			t.proc.stop()
			t.proc = nil
		}
	}()
	var out []result
	for _, name := range e.cfg.Scenarios {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		// Each ingest measures an empty relay when it can be restarted.
		if (name == "ingest" || name == "ingest-pipelined") && e.loaded && t.Start != "" {
			if err := restart(); err != nil {
				return out, err
			}
		}
		if e.cfg.BeforeReads != "" && !readsPrepared && (name == "req" || name == "count") {
			if err := ensureLoaded(ctx, e); err != nil {
				return out, fmt.Errorf("%s: load before -before-reads: %w", t.Label, err)
			}
			if err := runShell(ctx, e.cfg.BeforeReads); err != nil {
				return out, fmt.Errorf("%s: -before-reads: %w", t.Label, err)
			}
			readsPrepared = true
		}
		sctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
		sched0, schedOK := t.sched()
		var r result
		switch name {
		case "ingest":
			r = runIngest(sctx, e, 1)
		case "ingest-pipelined":
			r = runIngest(sctx, e, e.cfg.Window)
		case "req":
			r = runReq(sctx, e)
		case "count":
			r = runCount(sctx, e)
		case "visible":
			r = runVisible(sctx, e)
		case "fanout":
			r = runFanout(sctx, e)
		case "crosspod":
			r = runCrosspod(sctx, e)
		case "mixed":
			r = runMixed(sctx, e)
		case "idle":
			r = runIdle(sctx, e)
		case "abuse":
			r = runAbuse(sctx, e)
		case "slowreader":
			r = runSlowReader(sctx, e)
		}
		// The high-water mark since the relay's last start: the largest
		// value over a run's scenarios is the run's peak.
		if hwm, ok := t.peakRSS(); ok {
			r.add("peak_rss", "MiB", float64(hwm)/(1<<20), "lower")
		}
		// The relay's CPU time and its wait for a CPU during the
		// scenario: a wait far above the CPU time marks a busy machine.
		if sched1, ok := t.sched(); ok && schedOK {
			d := sched1.sub(sched0)
			r.add("relay_cpu", "s", d.CPU.Seconds(), "lower")
			r.add("relay_runq_wait", "s", d.Wait.Seconds(), "lower")
		}
		if sctx.Err() == context.DeadlineExceeded {
			r.note("stopped by -timeout %s", e.cfg.Timeout)
			r.check("timed_out", 1)
		}
		cancel()
		out = append(out, r)
	}
	return out, nil
}

// runShell runs command with sh -c and returns its failure with what it
// printed.
func runShell(ctx context.Context, command string) error {
	out, err := exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%q: %w: %s", command, err, bytes.TrimSpace(out))
	}
	return nil
}

func machine() machineInfo {
	m := machineInfo{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, LoadBefore: loadAvg()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadAvg returns the 1, 5 and 15 minute load averages, or "".
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
