package transfer_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/transfer"
)

// TestMeasureTransfer measures export and import throughput on both
// backends when BUZZ_MEASURE_TRANSFER holds an event count (it is skipped
// otherwise): it writes an export of that many signed notes in one
// community, imports it into a fresh embedded store (LSM events) and a
// fresh PostgreSQL database, and exports each back to a file, logging
// events/s, MiB/s, the process's CPU time and its peak resident memory
// during the import (docs/benchmarks.md, "Export and import"). Further
// settings:
//
//	BUZZ_MEASURE_TRANSFER_CORPUS=FILE   keep the export in FILE (written if absent, reused if present)
//	BUZZ_MEASURE_TRANSFER_BACKEND=embedded|postgres   one backend only
//	BUZZ_MEASURE_TRANSFER_RUNS=3        runs per backend, each on a fresh store
//	BUZZ_MEASURE_TRANSFER_ONE_BY_ONE=1  also import event by event (the path of a destination without RestoreEvents), to compare
func TestMeasureTransfer(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BUZZ_MEASURE_TRANSFER"))
	if n <= 0 {
		t.Skip("set BUZZ_MEASURE_TRANSFER=100000 to measure")
	}
	ctx := context.Background()
	dir := t.TempDir()
	path := os.Getenv("BUZZ_MEASURE_TRANSFER_CORPUS")
	if path == "" {
		path = filepath.Join(dir, "seed.jsonl")
	}
	if _, err := os.Stat(path); err != nil {
		start := time.Now()
		writeSeed(t, path, n)
		t.Logf("seed written in %s", time.Since(start).Round(time.Second))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed: %s, %d events, %.1f MiB", path, n, float64(fi.Size())/(1<<20))
	runs, _ := strconv.Atoi(os.Getenv("BUZZ_MEASURE_TRANSFER_RUNS"))
	runs = max(runs, 1)

	type both interface {
		transfer.Source
		transfer.Destination
	}
	backends := []struct {
		name string
		open func(t *testing.T) both
	}{
		{"embedded (lsm)", func(t *testing.T) both { return openSQLite(t) }},
		{"postgres", func(t *testing.T) both {
			pg, err := postgres.Open(ctx, pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pg.Close() })
			return pg
		}},
	}
	paths := []string{"batched"}
	if os.Getenv("BUZZ_MEASURE_TRANSFER_ONE_BY_ONE") != "" {
		paths = append(paths, "one by one")
	}
	for _, b := range backends {
		if only := os.Getenv("BUZZ_MEASURE_TRANSFER_BACKEND"); only != "" && !strings.HasPrefix(b.name, only) {
			continue
		}
		for _, how := range paths {
			for run := 1; run <= runs; run++ {
				t.Run(fmt.Sprintf("%s/%s/%d", b.name, how, run), func(t *testing.T) {
					st := b.open(t)
					var dst transfer.Destination = st
					if how == "one by one" {
						dst = struct{ transfer.Destination }{st} // hides RestoreEvents
					}
					f, err := os.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					resetPeakRSS(t)
					cpu0 := cpuTime()
					is, err := transfer.Import(ctx, bufio.NewReaderSize(f, 1<<20), dst, transfer.ImportOptions{})
					if err != nil || is.New != int64(n) {
						t.Fatalf("import: %+v %v", is, err)
					}
					cpu, rss := cpuTime()-cpu0, peakRSS(t)
					s := is.Elapsed.Seconds()
					fmt.Printf("transfer %s, %s, run %d: import %d events, %.1f MiB in %.1f s: %.0f events/s, %.2f MiB/s; CPU of this process %.1f s (%.0f µs/event); peak RSS %.0f MiB\n",
						b.name, how, run, n, float64(is.Bytes)/(1<<20), s, float64(n)/s, float64(is.Bytes)/(1<<20)/s, cpu.Seconds(), float64(cpu.Microseconds())/float64(n), float64(rss)/(1<<20))
					if how != "batched" {
						return
					}
					out, err := os.Create(filepath.Join(t.TempDir(), "export.jsonl"))
					if err != nil {
						t.Fatal(err)
					}
					defer out.Close()
					start := time.Now()
					w := bufio.NewWriterSize(out, 1<<20)
					ex, err := transfer.Export(ctx, w, st, transfer.ExportOptions{})
					if err == nil {
						err = w.Flush()
					}
					if err == nil {
						err = out.Sync()
					}
					if err != nil || ex.Events != int64(n) {
						t.Fatalf("export: %+v %v", ex, err)
					}
					s = time.Since(start).Seconds()
					fmt.Printf("transfer %s, run %d: export %d events, %.1f MiB in %.1f s: %.0f events/s, %.1f MiB/s\n",
						b.name, run, n, float64(ex.Bytes)/(1<<20), s, float64(n)/s, float64(ex.Bytes)/(1<<20)/s)
				})
			}
		}
	}
}

// resetPeakRSS resets the process's peak resident set size (VmHWM), so
// peakRSS reports the peak since.
func resetPeakRSS(t *testing.T) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("peak RSS not reset (%v): it covers the whole test", err)
	}
}

// peakRSS returns VmHWM in bytes (0 where /proc is absent).
func peakRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if kb, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(kb)), " kB"), 10, 64)
			return v << 10
		}
	}
	return 0
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeSeed writes an export of n signed notes by 50 authors in one
// community.
func writeSeed(t *testing.T, path string, n int) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	authors := storetest.NewAuthors(t, 50)
	c := tenant.NewCommunityID()
	fmt.Fprintf(w, "{\"buzz_export\":1}\n{\"type\":\"community\",\"host\":\"seed.example\",\"id\":%q,\"created_at\":1700000000,\"access\":\"open\",\"profile\":{\"name\":\"\",\"description\":\"\",\"icon\":\"\",\"contact\":\"\"},\"aliases\":[]}\n", c.String())
	// Signed a chunk at a time on every core, written in order.
	const chunk = 4096
	evs := make([]*nostr.Event, chunk)
	var buf []byte
	for from := 0; from < n; from += chunk {
		m := min(chunk, n-from)
		var wg sync.WaitGroup
		for g := range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for j := g; j < m; j += runtime.GOMAXPROCS(0) {
					i := from + j
					a := authors[i%len(authors)]
					evs[j] = a.Event(t, nostr.KindNote, int64(1_700_000_000+i), fmt.Sprintf("note %d: a short post of a realistic size, more or less, with a #tag", i),
						nostr.Tag{"t", "tag" + strconv.Itoa(i%50)}, nostr.Tag{"p", authors[(i+1)%len(authors)].PubKey})
				}
			})
		}
		wg.Wait()
		for _, ev := range evs[:m] {
			buf = append(append(append(buf[:0], `{"type":"event","host":"seed.example","event":`...), ev.AppendJSON(nil)...), "}\n"...)
			w.Write(buf)
		}
	}
	fmt.Fprintf(w, "{\"type\":\"end\",\"communities\":1,\"events\":%d,\"records\":%d}\n", n, n+1)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
