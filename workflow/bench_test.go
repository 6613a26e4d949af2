package workflow_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

func benchBackends(b *testing.B, fn func(b *testing.B, bk workflowtest.Backend)) {
	b.Run("sqlite", func(b *testing.B) {
		s, err := embedded.Open(context.Background(), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() }) // after the engine stops
		fn(b, s)
	})
	b.Run("postgres", func(b *testing.B) {
		s, err := postgres.Open(context.Background(), pgtest.NewDatabase(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() }) // after the engine stops
		fn(b, s)
	})
}

const benchWorkflow = `
name: Bench
trigger: {on: message_posted, filter: 'str_contains(trigger_text, "go")'}
steps:
  - {id: reply, action: send_message, text: "re {{trigger.text}}"}
`

// BenchmarkTriggerToFirstStatus measures, one trigger at a time, the time
// from handing a stored message to the engine to the run's first status
// event (46001) being published.
func BenchmarkTriggerToFirstStatus(b *testing.B) {
	benchBackends(b, func(b *testing.B, bk workflowtest.Backend) {
		ev := newEnv(b, bk, workflow.WithPollInterval(time.Second), workflow.WithLogger(slog.New(slog.DiscardHandler)))
		ev.define(benchWorkflow)
		first := make(chan struct{}, 1)
		ev.pub.mu.Lock()
		ev.pub.onPublish = func(e *nostr.Event) {
			if e.Kind == nostr.KindRunTriggered {
				first <- struct{}{}
			}
		}
		ev.pub.mu.Unlock()
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			ev.post(nostr.KindChatMessage, "go "+strconv.Itoa(i))
			<-first
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	})
}

// BenchmarkRunsPerSecond measures sustained throughput: b.N triggers
// handed over at once, timed until every run completed (one send_message
// step each, default concurrency).
func BenchmarkRunsPerSecond(b *testing.B) {
	benchBackends(b, func(b *testing.B, bk workflowtest.Backend) {
		ev := newEnv(b, bk, workflow.WithPollInterval(time.Second), workflow.WithLogger(slog.New(slog.DiscardHandler)))
		ev.define(benchWorkflow)
		var (
			mu   sync.Mutex
			done int
			all  = make(chan struct{})
		)
		ev.pub.mu.Lock()
		ev.pub.onPublish = func(e *nostr.Event) {
			if e.Kind != nostr.KindRunCompleted {
				return
			}
			var body map[string]any
			_ = json.Unmarshal([]byte(e.Content), &body)
			mu.Lock()
			done++
			if done == b.N {
				close(all)
			}
			mu.Unlock()
		}
		ev.pub.mu.Unlock()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			ev.post(nostr.KindChatMessage, "go "+strconv.Itoa(i))
		}
		<-all
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	})
}

// BenchmarkHandleEventFullChannel measures what a stored message costs
// the engine when its channel has the most workflows it may have
// (MaxWorkflowsPerChannel), all message-triggered, whose filters do not
// match it (the common case): the matching work ingest pays per message,
// from the warm workflow cache.
func BenchmarkHandleEventFullChannel(b *testing.B) {
	benchBackends(b, func(b *testing.B, bk workflowtest.Backend) {
		ev := newEnv(b, bk, workflow.WithLogger(slog.New(slog.DiscardHandler)), workflow.WithCacheTTL(time.Hour))
		for i := range workflow.MaxWorkflowsPerChannel {
			ev.define(`
name: W` + strconv.Itoa(i) + `
trigger: {on: message_posted, filter: 'starts_with(trigger_text, "/deploy-` + strconv.Itoa(i) + `")'}
steps: [{id: a, action: send_message, text: "deploying"}]
`)
		}
		msg := &nostr.Event{CreatedAt: time.Now().Unix(), Kind: nostr.KindChatMessage, Content: "an ordinary message",
			Tags: nostr.Tags{{"h", ev.ch.String()}}}
		if err := msg.Sign(ev.user); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := ev.e.HandleEvent(ctx, ev.c, msg); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := ev.e.HandleEvent(ctx, ev.c, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHandleEventWorstChannel measures matching the worst event
// against the worst channel: a maximum-size message, and the most
// workflows a channel may have, each with a maximum-size filter that scans
// the whole message on every call (bounded by MaxTriggerCost). Matching
// runs before the event's OK, so this is what it can delay the OK by.
func BenchmarkHandleEventWorstChannel(b *testing.B) {
	benchBackends(b, func(b *testing.B, bk workflowtest.Backend) {
		ev := newEnv(b, bk, workflow.WithLogger(slog.New(slog.DiscardHandler)), workflow.WithCacheTTL(time.Hour))
		worstChannel(b, ev)
		msg := ev.message(strings.Repeat("a", 256<<10))
		ctx := context.Background()
		if err := ev.e.HandleEvent(ctx, ev.c, msg); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := ev.e.HandleEvent(ctx, ev.c, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
