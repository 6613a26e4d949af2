package transfer_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
// community, imports it into the embedded store (LSM events) and into
// PostgreSQL, and exports each back, logging events/s and MiB/s. See
// docs/benchmarks.md.
func TestMeasureTransfer(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BUZZ_MEASURE_TRANSFER"))
	if n <= 0 {
		t.Skip("set BUZZ_MEASURE_TRANSFER=100000 to measure")
	}
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "seed.jsonl")
	writeSeed(t, path, n)
	fi, _ := os.Stat(path)
	t.Logf("seed: %d events, %.1f MiB", n, float64(fi.Size())/(1<<20))

	emb := openSQLite(t)
	pg, err := postgres.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	type both interface {
		transfer.Source
		transfer.Destination
	}
	for _, b := range []struct {
		name string
		st   both
	}{{"embedded (lsm)", emb}, {"postgres", pg}} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		workers, _ := strconv.Atoi(os.Getenv("BUZZ_MEASURE_WORKERS")) // 0: the default
		st, err := transfer.Import(ctx, bufio.NewReaderSize(f, 1<<20), b.st, transfer.ImportOptions{Workers: workers})
		f.Close()
		if err != nil || st.New != int64(n) {
			t.Fatalf("%s: import: %+v %v", b.name, st, err)
		}
		s := st.Elapsed.Seconds()
		t.Logf("%s: import %d events in %.1fs: %.0f events/s, %.1f MiB/s", b.name, n, s, float64(n)/s, float64(st.Bytes)/(1<<20)/s)
		start := time.Now()
		ex, err := transfer.Export(ctx, io.Discard, b.st, transfer.ExportOptions{})
		if err != nil || ex.Events != int64(n) {
			t.Fatalf("%s: export: %+v %v", b.name, ex, err)
		}
		s = time.Since(start).Seconds()
		t.Logf("%s: export %d events in %.1fs: %.0f events/s, %.1f MiB/s", b.name, n, s, float64(n)/s, float64(ex.Bytes)/(1<<20)/s)
	}
}

// writeSeed writes an export of n signed notes by 50 authors in one
// community.
func writeSeed(t *testing.T, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	authors := storetest.NewAuthors(t, 50)
	c := tenant.NewCommunityID()
	fmt.Fprintf(w, "{\"buzz_export\":1}\n{\"type\":\"community\",\"host\":\"seed.example\",\"id\":%q,\"created_at\":1700000000,\"access\":\"open\",\"profile\":{\"name\":\"\",\"description\":\"\",\"icon\":\"\",\"contact\":\"\"},\"aliases\":[]}\n", c.String())
	var buf []byte
	for i := range n {
		a := authors[i%len(authors)]
		ev := a.Event(t, nostr.KindNote, int64(1_700_000_000+i), fmt.Sprintf("note %d: a short post of a realistic size, more or less, with a #tag", i),
			nostr.Tag{"t", "tag" + strconv.Itoa(i%50)}, nostr.Tag{"p", authors[(i+1)%len(authors)].PubKey})
		buf = append(append(append(buf[:0], `{"type":"event","host":"seed.example","event":`...), ev.AppendJSON(nil)...), "}\n"...)
		w.Write(buf)
	}
	fmt.Fprintf(w, "{\"type\":\"end\",\"communities\":1,\"events\":%d,\"records\":%d}\n", n, n+1)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}
