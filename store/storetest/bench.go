package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// RunBenchmarks measures a backend: single and concurrent inserts, and the
// query shapes a relay serves. open must return a fresh, empty backend.
//
// Events carry correct ids but placeholder signatures (stores never verify
// signatures), so set-up cost stays out of the figures.
func RunBenchmarks(b *testing.B, open func(b *testing.B) store.Backend) {
	b.Run("InsertSingle", func(b *testing.B) {
		s := open(b)
		c := Community(b, s, "bench.example")
		evs := benchEvents(b, b.N, 50)
		inArrivalOrder(evs)
		b.ReportAllocs()
		b.ResetTimer()
		cpu := processCPU()
		for i := 0; i < b.N; i++ {
			if err := s.Save(context.Background(), c, evs[i]); err != nil {
				b.Fatal(err)
			}
		}
		reportInsert(b, cpu)
	})
	for _, workers := range []int{16, 64} {
		b.Run(fmt.Sprintf("InsertConcurrent%d", workers), func(b *testing.B) {
			s := open(b)
			c := Community(b, s, "bench.example")
			evs := benchEvents(b, b.N, 500)
			inArrivalOrder(evs)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= len(evs) {
							return
						}
						if err := s.Save(context.Background(), c, evs[i]); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			reportInsert(b, cpu)
		})
	}

	b.Run("Query", func(b *testing.B) {
		s := open(b)
		c := Community(b, s, "bench.example")
		other := Community(b, s, "other.example")
		const n = 20_000
		evs := benchEvents(b, n, 200)
		saveParallel(b, s, c, evs)
		saveParallel(b, s, other, benchEvents(b, 2000, 200))
		r := rand.New(rand.NewPCG(1, 2))
		pick := func() *nostr.Event { return evs[r.IntN(len(evs))] }
		authorsOf := func(k int) []string {
			out := make([]string, k)
			for i := range out {
				out[i] = pick().PubKey
			}
			return out
		}
		shapes := []struct {
			name string
			mk   func() nostr.Filter
		}{
			{"ByID", func() nostr.Filter { return nostr.Filter{IDs: []string{pick().ID}} }},
			{"AuthorKindLimit20", func() nostr.Filter {
				return nostr.Filter{Authors: authorsOf(1), Kinds: []int{1}, Limit: 20, LimitSet: true}
			}},
			{"TenAuthorsLimit50", func() nostr.Filter {
				return nostr.Filter{Authors: authorsOf(10), Kinds: []int{1, 7}, Limit: 50, LimitSet: true}
			}},
			{"KindLimit50", func() nostr.Filter { return nostr.Filter{Kinds: []int{7}, Limit: 50, LimitSet: true} }},
			{"TagTLimit20", func() nostr.Filter {
				return nostr.Filter{Tags: map[string][]string{"t": {fmt.Sprint("topic", r.IntN(50))}}, Limit: 20, LimitSet: true}
			}},
			{"TagEThread", func() nostr.Filter {
				return nostr.Filter{Kinds: []int{1, 7}, Tags: map[string][]string{"e": {pick().Tags[0][1]}}, Limit: 100, LimitSet: true}
			}},
			{"TagPMentions", func() nostr.Filter {
				return nostr.Filter{Tags: map[string][]string{"p": authorsOf(1)}, Limit: 50, LimitSet: true}
			}},
			{"SinceUntilWindow", func() nostr.Filter {
				from := pick().CreatedAt
				return nostr.Filter{Since: Ptr(from), Until: Ptr(from + 600), Limit: 100, LimitSet: true}
			}},
			{"Latest100", func() nostr.Filter { return nostr.Filter{Limit: 100, LimitSet: true} }},
		}
		for _, sh := range shapes {
			b.Run(sh.name, func(b *testing.B) {
				filters := make([]nostr.Filter, 256)
				for i := range filters {
					filters[i] = sh.mk()
				}
				b.ReportAllocs()
				b.ResetTimer()
				rows := 0
				for i := 0; i < b.N; i++ {
					for _, err := range s.Query(context.Background(), c, filters[i%len(filters)]) {
						if err != nil {
							b.Fatal(err)
						}
						rows++
					}
				}
				b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
			})
		}
		b.Run("CountByAuthor", func(b *testing.B) {
			filters := make([][]nostr.Filter, 256)
			for i := range filters {
				filters[i] = []nostr.Filter{{Authors: authorsOf(1)}}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Count(context.Background(), c, filters[i%len(filters)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// benchEvents returns n unsigned regular events (kinds 1 and 7) from a pool
// of authors, with e, p and t tags, spread over a month.
func benchEvents(tb testing.TB, n, nAuthors int) []*nostr.Event {
	tb.Helper()
	authors := make([]Author, nAuthors)
	for i := range authors {
		authors[i] = NewAuthor(tb)
	}
	r := rand.New(rand.NewPCG(uint64(n), uint64(nAuthors)))
	out := make([]*nostr.Event, n)
	roots := make([]string, 0, 1024)
	for i := range out {
		a := authors[r.IntN(len(authors))]
		kind := 1
		if r.IntN(3) == 0 {
			kind = 7
		}
		root := fmt.Sprintf("%064x", r.Uint64())
		if len(roots) > 0 && r.IntN(2) == 0 {
			root = roots[r.IntN(len(roots))]
		}
		tags := []nostr.Tag{
			{"e", root},
			{"p", authors[r.IntN(len(authors))].PubKey},
			{"t", fmt.Sprint("topic", r.IntN(50))},
		}
		ev := a.Unsigned(kind, 1_700_000_000+int64(r.IntN(30*24*3600)), fmt.Sprintf("benchmark note %d with some text to make it a realistic size, more or less like a short post", i), tags...)
		out[i] = ev
		if len(roots) < cap(roots) {
			roots = append(roots, ev.ID)
		}
	}
	return out
}

// inArrivalOrder re-stamps evs with non-decreasing created_at (ten events
// per second), the order a relay receives live events in. Ids are
// recomputed.
func inArrivalOrder(evs []*nostr.Event) {
	for i, ev := range evs {
		ev.CreatedAt = 1_700_000_000 + int64(i/10)
		ev.ID = ev.ComputeID()
	}
}

func saveParallel(tb testing.TB, s store.EventStore, c tenant.CommunityID, evs []*nostr.Event) {
	tb.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(evs) {
					return
				}
				if err := s.Save(context.Background(), c, evs[i]); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		tb.Fatal(err)
	}
}

// processCPU returns the CPU time (user+system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportInsert reports throughput and CPU per event. CPU per event is the
// figure that survives a busy machine: events/s depends on what else runs.
func reportInsert(b *testing.B, cpuStart time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if cpu := processCPU() - cpuStart; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
	}
}
