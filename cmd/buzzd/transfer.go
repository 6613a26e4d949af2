package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/transfer"
)

// exportUsage is buzzd export's help.
const exportUsage = `usage: buzzd export [-host H | -all] [-since T] [-until T] [-with-relay-key] [-o FILE] [flags]

Writes the communities of the configured store (DATABASE_URL, else
BUZZ_DATA_DIR; every buzzd setting and flag applies) as a buzz export:
JSON lines, a header, each community's state records and audit chain,
its events, and an end record (docs/operator.md, "Moving data").

  -host H    one community, by any of its hosts (repeatable)
  -all       every community (the default)
  -since T   only events created at or after T (unix seconds or RFC 3339)
  -until T   only events created at or before T
  -with-relay-key
             also write the deployment's relay master key (a secret:
             keep the file as private as the key), for moving the
             deployment to another store that must sign with it
  -o FILE    write to FILE (through FILE.tmp, renamed when complete)
             instead of stdout

The embedded store is opened by one process at a time: stop buzzd first.
`

// importUsage is buzzd import's help.
const importUsage = `usage: buzzd import [-f FILE] [-keep-going] [flags]

Reads a buzz export (from FILE, else stdin) into the configured store
(DATABASE_URL, else BUZZ_DATA_DIR; every buzzd setting and flag applies).
Every event's id and signature is verified; what the store already holds
is kept, so importing the same export twice adds nothing the second time.
An export made with -with-relay-key stores its relay key when the store
holds none; a store holding another key refuses the line and keeps its own.
A refused line stops the import ("buzzd import: line N: …"; the lines
before it stay imported) unless -keep-going, which counts and reports it
and goes on. Prints a summary; a progress line when stderr is a terminal.
`

// transferFlags takes the export/import flags out of args (values in
// vals, booleans in bools), leaving the store flags.
func transferFlags(cmd string, args []string, valued, boolean []string) (vals map[string][]string, bools map[string]bool, rest []string, err error) {
	vals, bools = map[string][]string{}, map[string]bool{}
	has := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return nil, nil, nil, usageError{err: fmt.Errorf("%s: unexpected argument %q", cmd, a), help: "buzzd " + cmd + " help"}
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case has(valued, name):
			if !hasVal {
				if i+1 >= len(args) {
					return nil, nil, nil, usageError{err: fmt.Errorf("%s: -%s needs a value", cmd, name), help: "buzzd " + cmd + " help"}
				}
				i++
				val = args[i]
			}
			vals[name] = append(vals[name], val)
		case has(boolean, name):
			if hasVal && val != "true" {
				return nil, nil, nil, usageError{err: fmt.Errorf("%s: -%s takes no value", cmd, name), help: "buzzd " + cmd + " help"}
			}
			bools[name] = true
		default:
			rest = append(rest, a)
		}
	}
	return vals, bools, rest, nil
}

// parseTime reads T: unix seconds or RFC 3339.
func parseTime(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return n, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, errors.New("want unix seconds or an RFC 3339 time (2006-01-02T15:04:05Z)")
	}
	return t.Unix(), nil
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "help" || a == "-h" || a == "-help" || a == "--help" {
			return true
		}
	}
	return false
}

// runExport is "buzzd export".
func runExport(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (err error) {
	if wantsHelp(args) {
		fmt.Fprint(stdout, exportUsage)
		return nil
	}
	vals, bools, rest, err := transferFlags("export", args, []string{"host", "since", "until", "o"}, []string{"all", "with-relay-key"})
	if err != nil {
		return err
	}
	if bools["all"] && len(vals["host"]) > 0 {
		return usageError{err: errors.New("export: give -host H or -all, not both"), help: "buzzd export help"}
	}
	opts := transfer.ExportOptions{Hosts: vals["host"]}
	for _, b := range []struct {
		name string
		dst  *int64
	}{{"since", &opts.Since}, {"until", &opts.Until}} {
		v := vals[b.name]
		if len(v) == 0 {
			continue
		}
		if *b.dst, err = parseTime(v[len(v)-1]); err != nil {
			return usageError{err: fmt.Errorf("export: -%s: %w", b.name, err), help: "buzzd export help"}
		}
	}
	if opts.Since != 0 && opts.Until != 0 && opts.Since > opts.Until {
		return usageError{err: errors.New("export: -since is after -until"), help: "buzzd export help"}
	}
	cfg, err := parseConfig("export", rest, lookupEnv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := openBackend(ctx, cfg, newLogger(cfg, io.Discard), true)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer st.Close()
	src, ok := st.(transfer.Source)
	if !ok {
		return errors.New("export: the store cannot be exported")
	}
	if bools["with-relay-key"] {
		// The key buzzd would sign with: the stored one (generated and
		// stored if the store holds none yet, as at buzzd's first start).
		sk, err := deploymentRelayKey(ctx, cfg, st, newLogger(cfg, io.Discard))
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		opts.RelayKey = &sk
	}
	out := stdout
	var file *os.File
	if o := vals["o"]; len(o) > 0 {
		path := o[len(o)-1]
		file, err = os.OpenFile(path+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer func() {
			if file != nil {
				file.Close()
				os.Remove(file.Name())
			}
		}()
		out = file
	}
	start := time.Now()
	stats, err := transfer.Export(ctx, out, src, opts)
	if errors.Is(err, transfer.ErrUnknownHost) {
		return fmt.Errorf("export: %w", err)
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if file != nil {
		if err := file.Sync(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := file.Close(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		tmp := file.Name()
		file = nil
		if err := os.Rename(tmp, strings.TrimSuffix(tmp, ".tmp")); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("export: %w", err)
		}
	}
	el := time.Since(start)
	fmt.Fprintf(stderr, "buzzd export: %d communities, %d events, %d state records, %s in %s (%s)\n",
		stats.Communities, stats.Events, sumExcept(stats.Records, transfer.TypeEvent), mib(stats.Bytes), el.Round(time.Millisecond), rates(stats.Events, stats.Bytes, el))
	return nil
}

// runImport is "buzzd import".
func runImport(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	if wantsHelp(args) {
		fmt.Fprint(stdout, importUsage)
		return nil
	}
	vals, bools, rest, err := transferFlags("import", args, []string{"f"}, []string{"keep-going"})
	if err != nil {
		return err
	}
	cfg, err := parseConfig("import", rest, lookupEnv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	in := stdin
	if f := vals["f"]; len(f) > 0 && f[len(f)-1] != "-" {
		file, err := os.Open(f[len(f)-1])
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer file.Close()
		in = file
	}
	st, err := openBackend(ctx, cfg, newLogger(cfg, io.Discard), true)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer st.Close()
	dst, ok := st.(transfer.Destination)
	if !ok {
		return errors.New("import: the store cannot be imported into")
	}
	tty := isTerminal(stderr)
	opts := transfer.ImportOptions{KeepGoing: bools["keep-going"], OnRefused: func(e *transfer.LineError) {
		if tty {
			fmt.Fprint(stderr, "\r\033[K")
		}
		fmt.Fprintf(stderr, "buzzd import: refused %v\n", e)
	}}
	start := time.Now()
	if tty {
		opts.Progress = func(s transfer.ImportStats) {
			el := time.Since(start)
			fmt.Fprintf(stderr, "\r\033[Kimporting: line %d, %d events (%d new), %s, %s", s.Lines, s.Events, s.New, mib(s.Bytes), rates(s.Events, s.Bytes, el))
		}
	}
	stats, ierr := transfer.Import(ctx, in, dst, opts)
	if tty {
		fmt.Fprint(stderr, "\r\033[K")
	}
	printImportSummary(stdout, stats)
	if ierr != nil {
		var le *transfer.LineError
		if errors.As(ierr, &le) {
			return fmt.Errorf("import: %w", le)
		}
		return fmt.Errorf("import: %w", ierr)
	}
	return nil
}

// printImportSummary writes what an import did.
func printImportSummary(w io.Writer, s transfer.ImportStats) {
	fmt.Fprintf(w, "events: %d read, %d new, %d duplicate, %d obsolete, %d refused\n", s.Events, s.New, s.Duplicate, s.Obsolete, s.Refused)
	for _, typ := range []string{transfer.TypeRelayKey, transfer.TypeCommunity, transfer.TypeMember, transfer.TypeChannel, transfer.TypeChannelMember,
		transfer.TypeName, transfer.TypeRestriction, transfer.TypeReport, transfer.TypeModerationAction, transfer.TypeWorkflow,
		transfer.TypeWorkflowRun, transfer.TypeApproval, transfer.TypeScheduleFire, transfer.TypeAudit} {
		if s.Read[typ] > 0 {
			fmt.Fprintf(w, "%s: %d read, %d new\n", typ, s.Read[typ], s.Added[typ])
		}
	}
	fmt.Fprintf(w, "%d lines, %s in %s (%s)\n", s.Lines, mib(s.Bytes), s.Elapsed.Round(time.Millisecond), rates(s.Events, s.Bytes, s.Elapsed))
}

func sumExcept(c transfer.Counts, skip string) int64 {
	var n int64
	for k, v := range c {
		if k != skip {
			n += v
		}
	}
	return n
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func rates(events, bytes int64, el time.Duration) string {
	s := el.Seconds()
	if s <= 0 {
		return "- events/s"
	}
	return fmt.Sprintf("%.0f events/s, %.1f MiB/s", float64(events)/s, float64(bytes)/(1<<20)/s)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
