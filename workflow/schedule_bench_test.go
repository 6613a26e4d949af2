package workflow_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

// BenchmarkScheduleTick measures one scheduler tick (ScheduleTick) with n
// schedule workflows stored, none of them due: the steady state of every
// pod's once-a-second tick. A flat cost from n=100 to n=10000 is the
// point. The first tick, which finds all n due (right after they are
// defined) and advances each, is logged once as the per-schedule cost.
func BenchmarkScheduleTick(b *testing.B) {
	benchBackends(b, func(b *testing.B, bk workflowtest.Backend) {
		ctx := context.Background()
		c := workflowtest.Community(b, bk, "sched-bench.example")
		ch, owner := workflowtest.ChannelID(), workflowtest.Hex32()
		e, err := workflow.New(bk, nopSource{}, nopPub{}, workflow.WithAuthority(allMembers{}),
			workflow.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		stored := 0
		for _, n := range []int{100, 10000} {
			b.Run(fmt.Sprintf("schedules=%d", n), func(b *testing.B) {
				// Define up to n schedules (8 writers), hourly at a minute
				// spread over the hour.
				var wg sync.WaitGroup
				work := make(chan int)
				for range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range work {
							d := workflowtest.ScheduleDefinition(b, fmt.Sprintf("s%d", i), time.Hour)
							if _, err := bk.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: owner, Definition: d}); err != nil {
								b.Error(err)
							}
						}
					}()
				}
				for i := stored; i < n; i++ {
					work <- i
				}
				close(work)
				wg.Wait()
				stored = n
				now := time.Now().UTC()
				e.SetClock(func() time.Time { return now })
				start := time.Now()
				if fired, err := e.ScheduleTick(ctx); err != nil || fired != 0 {
					b.Fatalf("first tick: %d fired, %v", fired, err)
				}
				b.Logf("first tick (every new schedule due, advanced): %s", time.Since(start))
				b.ResetTimer()
				for range b.N {
					if fired, err := e.ScheduleTick(ctx); err != nil || fired != 0 {
						b.Fatalf("tick: %d fired, %v", fired, err)
					}
				}
			})
		}
	})
}
