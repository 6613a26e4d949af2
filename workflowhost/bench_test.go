package workflowhost

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/workflow"
)

// Workflow benchmarks over real WebSockets (docs/benchmarks.md, "Workflows"):
//
//	go test -run '^$' -bench BenchmarkWorkflowWS -benchtime 1x .
//
// Each reports custom metrics; the loop count is irrelevant (use 1x).

func benchBackends(b *testing.B, fn func(b *testing.B, st wfBackend)) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := embedded.Open(context.Background(), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		fn(b, st)
	})
	b.Run("postgres", func(b *testing.B) {
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		fn(b, st)
	})
}

// benchChannel opens a relay with workflows on st and a channel owned by
// the returned signer.
func benchChannel(b *testing.B, st wfBackend) (*testRelay, *signer, channel.ID) {
	tr := workflowRelay(b, st, newHookServer(b))
	owner := newSigner(b)
	c := tr.dial(b)
	ch := c.createChannel(owner, "bench", channel.VisibilityOpen)
	return tr, owner, ch
}

func define(b *testing.B, c *rawClient, s *signer, ch channel.ID, yaml string) {
	_, ok := c.define(s, workflow.NewID(), ch, yaml)
	if !ok.OK {
		b.Fatalf("define: %s", ok.Message)
	}
}

const benchEcho = `name: Bench
trigger: {on: message_posted, filter: 'starts_with(trigger_text, "go ")'}
steps:
  - id: reply
    action: send_message
    text: "ack {{trigger.text}}"
`

// BenchmarkWorkflowWSLatency: a message that triggers a workflow, sent
// over a WebSocket, until its 46001 (triggered) arrives on another
// connection; one at a time. Then runs/s: many triggering messages from
// 8 connections, until every run's 46005 (completed) has arrived.
func BenchmarkWorkflowWSLatency(b *testing.B) {
	benchBackends(b, func(b *testing.B, st wfBackend) {
		tr, owner, ch := benchChannel(b, st)
		oc := tr.dial(b)
		define(b, oc, owner, ch, benchEcho)
		watch := tr.dial(b)
		watch.Subscribe("st", nostr.Filter{Kinds: []int{nostr.KindRunTriggered, nostr.KindRunCompleted, nostr.KindRunFailed},
			Tags: map[string][]string{"h": {ch.String()}}, Limit: 0, LimitSet: true})
		poster := newSigner(b)
		pc := tr.dial(b)
		const n = 200
		lat := make([]time.Duration, 0, n)
		done := 0 // completions seen
		b.ResetTimer()
		for i := range n {
			ev := poster.Event(nostr.KindChatMessage, now(), fmt.Sprintf("go %d", i), chanTag(ch))
			start := time.Now()
			pc.SendEvent(ev)
			for {
				e := watch.NextLive("st")
				if e.Kind == nostr.KindRunCompleted {
					done++
				}
				if e.Kind == nostr.KindRunTriggered {
					lat = append(lat, time.Since(start))
					break
				}
			}
			pc.ExpectOK(ev.ID)
		}
		// Drain the completions of these runs.
		for done < n {
			if watch.NextLive("st").Kind == nostr.KindRunCompleted {
				done++
			}
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")

		// Sustained runs/s.
		const conns, per = 8, 100
		start := time.Now()
		var wg sync.WaitGroup
		for w := range conns {
			c := tr.dial(b)
			s := newSigner(b)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					ev := s.Event(nostr.KindChatMessage, now(), fmt.Sprintf("go %d/%d", w, i), chanTag(ch))
					c.SendEvent(ev)
					c.ExpectOK(ev.ID)
				}
			}()
		}
		done = 0
		failed := 0
		for done+failed < conns*per {
			// A long deadline: a run whose worker lost its lease under load
			// finishes on a takeover, up to a lease (30 s) later.
			_ = watch.WS.SetReadDeadline(time.Now().Add(90 * time.Second))
			_, raw, err := watch.WS.ReadMessage()
			if err != nil {
				b.Fatalf("after %d of %d runs: %v", done+failed, conns*per, err)
			}
			m, err := nostr.ParseRelayMessage(raw)
			if err != nil {
				b.Fatal(err)
			}
			em, ok := m.(*nostr.EventMessage)
			if !ok {
				b.Fatalf("got %s", raw)
			}
			switch e := em.Event; e.Kind {
			case nostr.KindRunCompleted:
				done++
			case nostr.KindRunFailed:
				failed++
				b.Logf("run failed: %s", e.Content)
			}
		}
		if failed > 0 {
			b.Errorf("%d runs failed", failed)
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.ReportMetric(float64(conns*per)/elapsed.Seconds(), "runs/s")
		b.Logf("%d runs in %v", conns*per, elapsed)
	})
}

// BenchmarkWorkflowWSIngest: kind 9 messages into one channel from 8
// connections (one EVENT in flight each), with no workflow and with 100
// enabled message_posted workflows in that channel whose filters do not
// match these messages (the cost of matching; a matching workflow adds a
// run per message).
func BenchmarkWorkflowWSIngest(b *testing.B) {
	for _, nwf := range []int{0, 100} {
		b.Run(fmt.Sprintf("workflows=%d", nwf), func(b *testing.B) {
			benchBackends(b, func(b *testing.B, st wfBackend) {
				tr, owner, ch := benchChannel(b, st)
				oc := tr.dial(b)
				for i := range nwf {
					define(b, oc, owner, ch, fmt.Sprintf("name: W%d\ntrigger: {on: message_posted, filter: 'str_contains(trigger_text, \"deploy-%d\")'}\nsteps:\n  - id: r\n    action: send_message\n    text: x\n", i, i))
				}
				const conns, per = 8, 500
				clients := make([]*rawClient, conns)
				signers := make([]*signer, conns)
				evs := make([][]*nostr.Event, conns)
				for w := range conns {
					clients[w], signers[w] = tr.dial(b), newSigner(b)
					for i := range per {
						evs[w] = append(evs[w], signers[w].Event(nostr.KindChatMessage, now(), fmt.Sprintf("hello %d %d", w, i), chanTag(ch)))
					}
				}
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for w := range conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for _, ev := range evs[w] {
							clients[w].SendEvent(ev)
							if ok := clients[w].ExpectOK(ev.ID); !ok.OK {
								b.Errorf("refused: %s", ok.Message)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(conns*per)/time.Since(start).Seconds(), "events/s")
			})
		})
	}
}
