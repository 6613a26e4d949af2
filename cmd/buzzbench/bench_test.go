package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/gorilla/websocket"
)

// These benchmarks drive an in-process relay (store/embedded) over real
// loopback WebSockets with the scenarios of the command, so that
// `go test -bench Relay -cpuprofile` shows where the relay spends its time
// on ingest, REQ and fan-out (client and relay share the profile; focus on
// the relay's packages).

// benchCorpus is 4,000 events, or BUZZBENCH_EVENTS of them (signed once
// and kept in the command's corpus cache, e.g. 20000 for the size the
// command uses).
var benchCorpus = sync.OnceValues(func() (*corpus, error) {
	size, cache := 4000, ""
	if v := os.Getenv("BUZZBENCH_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("BUZZBENCH_EVENTS=%q: want a positive number", v)
		}
		size = n
		if d, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(d, "buzzbench")
		}
	}
	c, _, err := loadCorpus(context.Background(), cache, 99, size)
	return c, err
})

// BenchmarkRelayIngest publishes the corpus over 16 connections, one event
// in flight per connection, into a fresh relay per iteration.
func BenchmarkRelayIngest(b *testing.B) {
	c, err := benchCorpus()
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	var n int
	for b.Loop() {
		b.StopTimer()
		url := startTestRelay(b)
		e := &env{cfg: &config{Conns: 16}, c: c, target: &target{URL: url}}
		conns, err := e.dialMany(context.Background(), 16, nil)
		if err != nil {
			b.Fatal(err)
		}
		var o outcomes
		var done atomic.Int64
		b.StartTimer()
		lats, elapsed, missing := publishAll(context.Background(), conns, nil, c.Events, 1, c.keyFor, &o, &done)
		b.StopTimer()
		closeAll(conns)
		if missing > 0 || o.refusedTotal() > 0 {
			b.Fatalf("ingest: %d unanswered, refused %v", missing, o.refused)
		}
		total += elapsed
		n += len(lats)
		b.StartTimer()
	}
	b.ReportMetric(float64(n)/total.Seconds(), "events/s")
}

// BenchmarkRelayReq runs the planned REQ shapes sequentially on one
// connection against a relay holding the corpus.
func BenchmarkRelayReq(b *testing.B) {
	c, err := benchCorpus()
	if err != nil {
		b.Fatal(err)
	}
	url := startTestRelay(b)
	e := &env{cfg: &config{Conns: 16}, c: c, target: &target{URL: url}, queries: c.planQueries(0, 64)}
	ctx := context.Background()
	if err := ensureLoaded(ctx, e); err != nil {
		b.Fatal(err)
	}
	conn, err := e.dial(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	rc := newReqChecker()
	i := 0
	for b.Loop() {
		q := e.queryAt(i)
		r, err := conn.query(ctx, q.Filters)
		if err != nil {
			b.Fatal(err)
		}
		rc.record(q, r)
		i++
	}
	for shape, n := range rc.mismatches {
		b.Errorf("%s: %d wrong answers", shape, n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkRelayReqShapes is BenchmarkRelayReq one sub-benchmark per shape,
// with the message rate limit lifted (as the pinned runs lift buzzd's).
func BenchmarkRelayReqShapes(b *testing.B) {
	c, err := benchCorpus()
	if err != nil {
		b.Fatal(err)
	}
	url := startTestRelay(b, buzz.WithLimits(buzz.Limits{MessageRate: 1_000_000, MessageBurst: 1_000_000}))
	e := &env{cfg: &config{Conns: 16}, c: c, target: &target{URL: url}, queries: c.planQueries(0, 64)}
	ctx := context.Background()
	if err := ensureLoaded(ctx, e); err != nil {
		b.Fatal(err)
	}
	conn, err := e.dial(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for _, shape := range reqShapes {
		b.Run(shape, func(b *testing.B) {
			rc := newReqChecker()
			qs := e.queries[shape]
			i := 0
			for b.Loop() {
				q := &qs[i%len(qs)]
				r, err := conn.query(ctx, q.Filters)
				if err != nil {
					b.Fatal(err)
				}
				rc.record(q, r)
				i++
			}
			if n := rc.mismatches[shape] + rc.closed[shape]; n > 0 {
				b.Errorf("%d wrong answers or CLOSED (%v)", n, rc.examples)
			}
		})
	}
}

// BenchmarkRelayCount runs the planned COUNT shapes sequentially on one
// connection against a relay holding the corpus, one sub-benchmark per
// shape.
func BenchmarkRelayCount(b *testing.B) {
	c, err := benchCorpus()
	if err != nil {
		b.Fatal(err)
	}
	url := startTestRelay(b)
	e := &env{cfg: &config{Conns: 16}, c: c, target: &target{URL: url}, counts: c.planCounts(0, 64)}
	ctx := context.Background()
	if err := ensureLoaded(ctx, e); err != nil {
		b.Fatal(err)
	}
	conn, err := e.dial(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	byShape := map[string][]plannedCount{}
	var shapes []string
	for _, pc := range e.counts {
		if byShape[pc.Shape] == nil {
			shapes = append(shapes, pc.Shape)
		}
		byShape[pc.Shape] = append(byShape[pc.Shape], pc)
	}
	for _, shape := range shapes {
		b.Run(shape, func(b *testing.B) {
			pcs := byShape[shape]
			i := 0
			for b.Loop() {
				pc := pcs[i%len(pcs)]
				n, _, closed, err := conn.count(ctx, pc.Filters)
				if err != nil || closed != "" {
					b.Fatalf("count: %v %q", err, closed)
				}
				if int(n) != pc.Want {
					b.Errorf("count %d, want %d", n, pc.Want)
				}
				i++
			}
		})
	}
}

// BenchmarkRelayFanout publishes one event at a time to 200 subscribers
// and waits until every subscriber has it.
func BenchmarkRelayFanout(b *testing.B) {
	c, err := benchCorpus()
	if err != nil {
		b.Fatal(err)
	}
	url := startTestRelay(b)
	e := &env{cfg: &config{}, c: c, target: &target{URL: url}}
	ctx := context.Background()
	const m = 200
	subs, err := e.dialMany(ctx, m, func(int) dialOptions { return dialOptions{} })
	if err != nil {
		b.Fatal(err)
	}
	defer closeAll(subs)
	var got atomic.Int64
	eose := make(chan struct{}, m)
	f := nostr.Filter{Kinds: []int{1}, Tags: map[string][]string{"t": {c.LiveTopic}}, Limit: 0, LimitSet: true}
	for _, s := range subs {
		if err := s.subscribe("f", []nostr.Filter{f}, false, &subHandler{
			event: func(string, time.Time) { got.Add(1) },
			eose:  func(time.Time) { eose <- struct{}{} },
		}); err != nil {
			b.Fatal(err)
		}
	}
	for range subs {
		<-eose
	}
	pub, err := e.dial(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	i := 0
	for b.Loop() {
		if i >= len(c.Extras) {
			b.Fatal("live event pool exhausted; lower -benchtime")
		}
		ev := &c.Extras[i]
		i++
		want := int64(i) * m
		r, _, err := pub.publish(ctx, ev.Ev.ID, ev.Raw, c.keyFor, ev.Ev.PubKey)
		if err != nil || !r.OK {
			b.Fatalf("publish: %v %+v", err, r)
		}
		deadline := time.Now().Add(5 * time.Second)
		for got.Load() < want {
			if time.Now().After(deadline) {
				b.Fatalf("only %d of %d deliveries", got.Load(), want)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// BenchmarkRelayIdleConn opens 1000 idle connections to an in-process relay
// per iteration and reports the relay process's memory growth per
// connection (heap and goroutine stacks). The client side holds no read
// goroutine and 1 KiB buffers, so nearly all of the growth is the relay's.
// With BUZZBENCH_HEAPPROFILE=file it writes a heap profile while the
// connections are open.
func BenchmarkRelayIdleConn(b *testing.B) {
	const n = 1000
	url := startTestRelay(b)
	var heap, stack, gor float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		conns := make([]*websocket.Conn, 0, n)
		d := websocket.Dialer{ReadBufferSize: 1024, WriteBufferSize: 1024}
		for range n {
			ws, _, err := d.Dial(url, nil)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, ws)
		}
		time.Sleep(500 * time.Millisecond) // let the relay finish the handshakes
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap += float64(after.HeapInuse) - float64(before.HeapInuse)
		stack += float64(after.StackInuse) - float64(before.StackInuse)
		gor += float64(runtime.NumGoroutine() - g0)
		if path := os.Getenv("BUZZBENCH_HEAPPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
		for _, ws := range conns {
			ws.Close()
		}
	}
	total := float64(b.N) * n
	b.ReportMetric(heap/total, "heap-B/conn")
	b.ReportMetric(stack/total, "stack-B/conn")
	b.ReportMetric(gor/total, "goroutines/conn")
}
