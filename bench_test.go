package buzz

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nostr"
)

// The benchmarks below measure the relay, not the client: events are signed
// (and their frames encoded) before the timer starts, once per process —
// a corpus is shared by every run of every benchmark, so with -benchtime Nx
// the signing shows in a CPU profile only once (under (*Event).Sign) — and
// the client only writes prepared frames and compares reply prefixes.

// benchEvent is one pre-signed kind-1 event with its client frame and the
// prefix of its OK true reply.
type benchEvent struct {
	ev    *nostr.Event
	frame []byte // ["EVENT",{...}]
	okPfx []byte // ["OK","<id>",true,
}

// benchCorpus is the process-wide cache of pre-signed events (test code:
// the package itself has no mutable globals).
var benchCorpus struct {
	mu     sync.Mutex
	keys   []nostr.SecretKey
	base   int64
	events []benchEvent
}

// presigned returns n distinct signed kind-1 events ("t"="bench", 16
// authors, created within the last hour), signing only the ones no earlier
// call created.
func presigned(b testing.TB, n int) []benchEvent {
	b.Helper()
	c := &benchCorpus
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		for range 16 {
			sk, err := nostr.GenerateSecretKey()
			if err != nil {
				b.Fatal(err)
			}
			c.keys = append(c.keys, sk)
		}
		c.base = now() - 3600
	}
	for i := len(c.events); i < n; i++ {
		ev := &nostr.Event{Kind: 1, CreatedAt: c.base + int64(i%3600),
			Content: fmt.Sprint("benchmark event ", i), Tags: nostr.Tags{{"t", "bench"}}}
		if err := ev.Sign(c.keys[i%len(c.keys)]); err != nil {
			b.Fatal(err)
		}
		c.events = append(c.events, benchEvent{
			ev:    ev,
			frame: nostr.AppendEventEnvelope(nil, ev.AppendJSON(nil)),
			okPfx: append(nostr.AppendOK(nil, ev.ID, true, "")[:len(`["OK","`)+64], `",true,`...),
		})
	}
	return c.events[:n]
}

// frameReader reads whole frames into one reused buffer.
type frameReader struct {
	ws  *websocket.Conn
	buf []byte
}

func (r *frameReader) next() ([]byte, error) {
	_, rd, err := r.ws.NextReader()
	if err != nil {
		return nil, err
	}
	r.buf = r.buf[:0]
	for {
		if len(r.buf) == cap(r.buf) {
			r.buf = append(r.buf, 0)[:len(r.buf)]
		}
		n, err := rd.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if err == io.EOF {
			return r.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// percentile returns the p-th percentile (0 < p ≤ 1) of ds, sorting it.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*p+0.5) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func reportLatency(b *testing.B, ds []time.Duration) {
	b.ReportMetric(float64(percentile(ds, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(ds, 0.99).Microseconds()), "p99-µs")
}

// benchIngest sends b.N pre-signed events over conns connections, each
// keeping up to window EVENTs unanswered (1: closed loop), and reports
// events/s and the EVENT→OK latency percentiles.
func benchIngest(b *testing.B, conns, window int) {
	tr := newTestRelay(b)
	evs := presigned(b, b.N)
	clients := make([]*rawClient, conns)
	for i := range clients {
		clients[i] = tr.dial(b)
	}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ingestOn(b, c, evs, lat, &next, window)
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
	reportLatency(b, lat)
}

// ingestOn publishes events taken from evs (by next) on c until none is
// left, with up to window unanswered, recording each one's latency.
func ingestOn(b *testing.B, c *rawClient, evs []benchEvent, lat []time.Duration, next *atomic.Int64, window int) {
	rd := &frameReader{ws: c.WS}
	_ = c.WS.SetReadDeadline(time.Time{})
	sent := make(map[string]int, window) // OK prefix → index, while unanswered
	outstanding := 0
	done := false
	for {
		for !done && outstanding < window {
			i := int(next.Add(1) - 1)
			if i >= len(evs) {
				done = true
				break
			}
			lat[i] = -time.Duration(time.Now().UnixNano())
			sent[string(evs[i].okPfx)] = i
			if err := c.WS.WriteMessage(websocket.TextMessage, evs[i].frame); err != nil {
				b.Error(err)
				return
			}
			outstanding++
		}
		if outstanding == 0 {
			return
		}
		m, err := rd.next()
		if err != nil {
			b.Error(err)
			return
		}
		if !bytes.HasPrefix(m, []byte(`["OK",`)) {
			b.Errorf("got %s, want OK", m)
			return
		}
		n := len(`["OK","`) + 64 + len(`",true,`)
		if len(m) < n {
			b.Errorf("refused: %s", m)
			return
		}
		i, ok := sent[string(m[:n])]
		if !ok {
			b.Errorf("unexpected or refused: %s", m)
			return
		}
		delete(sent, string(m[:n]))
		lat[i] += time.Duration(time.Now().UnixNano())
		outstanding--
	}
}

// BenchmarkIngest measures EVENT → OK over real WebSockets into store/embedded
// with 16 connections, each waiting for its OK before the next EVENT.
func BenchmarkIngest(b *testing.B) { benchIngest(b, 16, 1) }

// BenchmarkIngestPipelined is BenchmarkIngest with up to 8 EVENTs
// unanswered per connection (the default EventConcurrency).
func BenchmarkIngestPipelined(b *testing.B) { benchIngest(b, 16, 8) }

// BenchmarkReq measures one REQ → stored events → EOSE on one connection,
// one REQ at a time, over 1,000 stored events of 16 authors, and reports
// REQs/s, for three filter shapes: kind (limit 100), kind+tag (all events
// carry the tag; limit 100) and one author (limit 50).
func BenchmarkReq(b *testing.B) {
	evs := presigned(b, 1000)
	shapes := []struct {
		name string
		f    nostr.Filter
		want int
	}{
		{"kind", nostr.Filter{Kinds: []int{1}, Limit: 100, LimitSet: true}, 100},
		{"tag", nostr.Filter{Kinds: []int{1}, Tags: map[string][]string{"t": {"bench"}}, Limit: 100, LimitSet: true}, 100},
		{"author", nostr.Filter{Authors: []string{evs[0].ev.PubKey}, Limit: 50, LimitSet: true}, 50},
		// By id, no limit: what a client fetching the events it is missing sends.
		{"ids", nostr.Filter{IDs: []string{evs[3].ev.ID, evs[500].ev.ID, evs[997].ev.ID}}, 3},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) { benchReq(b, evs, sh.f, sh.want) })
	}
}

func benchReq(b *testing.B, evs []benchEvent, f nostr.Filter, want int) {
	// One connection sends two messages per REQ (the REQ, its CLOSE), more
	// than the default per-connection rate allows a client.
	tr := newTestRelay(b, WithLimits(Limits{MessageRate: 1 << 20, MessageBurst: 1 << 20}))
	c := tr.dial(b)
	for _, e := range evs {
		c.SendRaw(e.frame)
	}
	for range evs {
		m, err := c.NextRaw()
		if err != nil || !bytes.Contains(m, []byte(",true,")) {
			b.Fatalf("store: %s %v", m, err)
		}
	}
	reqs := make([][]byte, 8)
	eoses := make([][]byte, 8)
	closes := make([][]byte, 8)
	for i := range reqs {
		sub := fmt.Sprint("s", i)
		reqs[i] = nostr.AppendReq(nil, sub, f)
		eoses[i] = nostr.AppendEOSE(nil, sub)
		closes[i] = nostr.AppendClose(nil, sub)
	}
	rd := &frameReader{ws: c.WS}
	_ = c.WS.SetReadDeadline(time.Time{})
	evPfx := []byte(`["EVENT",`)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		k := i % len(reqs)
		c.SendRaw(reqs[k])
		got := 0
		for {
			m, err := rd.next()
			if err != nil {
				b.Fatal(err)
			}
			if bytes.HasPrefix(m, evPfx) {
				got++
				continue
			}
			if !bytes.Equal(m, eoses[k]) {
				b.Fatalf("got %s, want EOSE", m)
			}
			break
		}
		if got != want {
			b.Fatalf("got %d events, want %d", got, want)
		}
		c.SendRaw(closes[k])
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkFanout measures one published event reaching 200 subscribers
// (each on its own connection): from sending the EVENT until the last
// subscriber has read it. p50-µs/p99-µs are per publish.
func BenchmarkFanout(b *testing.B) {
	const subscribers = 200
	tr := newTestRelay(b)
	var wg sync.WaitGroup
	evPfx := []byte(`["EVENT","live",`)
	for range subscribers {
		c := tr.dial(b)
		c.Subscribe("live", nostr.Filter{Kinds: []int{1}})
		_ = c.WS.SetReadDeadline(time.Time{})
		go func() {
			rd := &frameReader{ws: c.WS}
			for {
				m, err := rd.next()
				if err != nil {
					return
				}
				if bytes.HasPrefix(m, evPfx) {
					wg.Done()
				}
			}
		}()
	}
	pub := tr.dial(b)
	evs := presigned(b, b.N)
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i, e := range evs {
		t0 := time.Now()
		wg.Add(subscribers)
		pub.SendRaw(e.frame)
		wg.Wait()
		lat[i] = time.Since(t0)
		if m, err := pub.NextRaw(); err != nil || !bytes.HasPrefix(m, e.okPfx) {
			b.Fatalf("publish: %s %v", m, err)
		}
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkIdleConn opens 1,000 connections that stay idle and reports the
// relay's memory per connection (heap and stacks in use, after GC), as
// "B/conn". The clients are bare TCP sockets that did the WebSocket
// handshake by hand and read the AUTH challenge: they hold no buffers or
// goroutines, so nearly all of the growth is the relay's. Each iteration
// measures 1,000 connections; run it with -benchtime 1x.
func BenchmarkIdleConn(b *testing.B) {
	const n = 1000
	tr := newTestRelay(b)
	u, err := url.Parse(tr.url)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		beforeHeap, beforeStack := inUse()
		socks := make([]net.Conn, 0, n)
		for range n {
			socks = append(socks, rawUpgrade(b, u.Host))
		}
		// Every connection is served once it has sent its challenge, but let
		// the writers park.
		time.Sleep(100 * time.Millisecond)
		afterHeap, afterStack := inUse()
		b.ReportMetric(float64(afterHeap+afterStack-beforeHeap-beforeStack)/n, "B/conn")
		b.ReportMetric(float64(afterHeap-beforeHeap)/n, "heap-B/conn")
		b.ReportMetric(float64(afterStack-beforeStack)/n, "stack-B/conn")
		if path := os.Getenv("BUZZ_IDLE_HEAPPROFILE"); path != "" {
			writeHeapProfile(b, path)
		}
		for _, s := range socks {
			_ = s.Close()
		}
		deadline := time.Now().Add(10 * time.Second)
		for tr.relay.connCount() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// inUse returns the heap and stack bytes in use after a full GC.
func inUse() (heap, stack int64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse), int64(ms.StackInuse)
}

// writeHeapProfile writes the live heap to path (for BenchmarkIdleConn
// with BUZZ_IDLE_HEAPPROFILE set, while the connections are open).
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// rawUpgrade performs a WebSocket handshake on a bare TCP connection and
// reads the relay's first frame (the AUTH challenge).
func rawUpgrade(b *testing.B, host string) net.Conn {
	s, err := net.Dial("tcp", host)
	if err != nil {
		b.Fatal(err)
	}
	req := "GET / HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(s, req); err != nil {
		b.Fatal(err)
	}
	br := bufio.NewReaderSize(s, 512)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		b.Fatalf("handshake: %v %v", resp, err)
	}
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(br, make([]byte, hdr[1]&0x7f)); err != nil {
		b.Fatal(err)
	}
	return s
}

// connCount returns the number of connections being served.
func (r *Relay) connCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}
