package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// RunAuditBenchmarks measures what auditing costs ingest: the audited
// writes — NIP-09 deletion requests and channel joins — saved by 16
// concurrent writers, with auditing on (open(b, true)) and off
// (open(b, false): the backend's audit entries are discarded, which the
// run checks), reporting events/s; plain kind 1 events (never
// audited) give the reference. Each sub-benchmark writes b.N events into
// a fresh backend.
//
//	go test ./store/postgres -run '^$' -bench BenchmarkAuditCost -benchtime 4000x
func RunAuditBenchmarks(b *testing.B, open func(b *testing.B, audit bool) AuditBackend) {
	const writers = 16
	kinds := []struct {
		name  string
		setup func(b *testing.B, st AuditBackend, c tenant.CommunityID, n int) func(i int) error
	}{
		{"plain", func(b *testing.B, st AuditBackend, c tenant.CommunityID, n int) func(int) error {
			evs := signedEvents(b, n, func(a Author, i int) *nostr.Event { return a.Event(b, 1, 1_700_000_000+int64(i), fmt.Sprint(i)) })
			return func(i int) error { return st.Save(context.Background(), c, evs[i]) }
		}},
		{"deletion", func(b *testing.B, st AuditBackend, c tenant.CommunityID, n int) func(int) error {
			evs := signedEvents(b, n, func(a Author, i int) *nostr.Event {
				return a.Event(b, nostr.KindDeletion, 1_700_000_000+int64(i), "", nostr.Tag{"e", fmt.Sprintf("%064x", i)})
			})
			return func(i int) error { return st.Save(context.Background(), c, evs[i]) }
		}},
		{"channel_join", func(b *testing.B, st AuditBackend, c tenant.CommunityID, n int) func(int) error {
			owner := NewAuthor(b)
			chans := make([]channel.ID, writers)
			for i := range chans {
				chans[i] = CreateChannel(b, st, c, owner, "bench", channel.VisibilityOpen)
			}
			type join struct {
				cmd channel.Command
				ev  *nostr.Event
			}
			joins := make([]join, n)
			authors := NewAuthors(b, 64)
			for i := range joins {
				a := authors[i%len(authors)]
				cmd, ev := a.Command(b, channel.Command{Kind: nostr.KindJoinRequest, Channel: chans[i%writers]},
					nostr.Tag{"nonce", fmt.Sprint(i)})
				joins[i] = join{cmd, ev}
			}
			return func(i int) error {
				_, err := st.ApplyChannelCommand(context.Background(), c, joins[i].cmd, joins[i].ev)
				return err
			}
		}},
	}
	for _, k := range kinds {
		for _, audited := range []bool{true, false} {
			if k.name == "plain" && !audited {
				continue // plain events are never audited
			}
			name := fmt.Sprintf("%s/audit=%v", k.name, audited)
			if k.name == "plain" {
				name = "plain" // never audited: the reference
			}
			b.Run(name, func(b *testing.B) {
				st := open(b, audited)
				c := Community(b, st, "bench.example")
				do := k.setup(b, st, c, b.N)
				var next atomic.Int64
				var failed atomic.Value
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := int(next.Add(1)) - 1
							if i >= b.N {
								return
							}
							if err := do(i); err != nil {
								failed.CompareAndSwap(nil, err)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				if err, _ := failed.Load().(error); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
				if audited && k.name != "plain" {
					if err := st.SyncAudit(context.Background()); err != nil {
						b.Fatal(err)
					}
					rep, err := store.VerifyAudit(context.Background(), st, c)
					if err != nil || rep.BrokenSeq != 0 || rep.Entries < int64(b.N) {
						b.Fatalf("chain after the run: %+v %v (want at least %d entries)", rep, err, b.N)
					}
				}
				if !audited {
					// Off must mean off: the backend's way of discarding
					// audit entries left the chain empty.
					if err := st.SyncAudit(context.Background()); err != nil {
						b.Fatal(err)
					}
					if es, err := st.AuditEntries(context.Background(), c, 0, 1); err != nil || len(es) != 0 {
						b.Fatalf("audit=false left %d entries in the chain (%v)", len(es), err)
					}
				}
			})
		}
	}
}

// signedEvents signs n events with build, spread over 64 authors, on four
// goroutines (signing is not what is measured).
func signedEvents(b *testing.B, n int, build func(a Author, i int) *nostr.Event) []*nostr.Event {
	authors := NewAuthors(b, 64)
	evs := make([]*nostr.Event, n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				evs[i] = build(authors[i%len(authors)], i)
			}
		}()
	}
	wg.Wait()
	return evs
}
