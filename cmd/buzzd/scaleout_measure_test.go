package main

// The scale-out measurement (docs/benchmarks.md, "Several pods"): publish→deliver
// latency with subscribers spread over several pods, next to one pod. It is
// a measurement, not a check of timings, and takes about a minute, so it
// runs only when asked:
//
//	BUZZ_SCALEOUT_MEASURE=1 go test ./cmd/buzzd -run TestScaleOutMeasure -v -timeout 20m
//
// Knobs: BUZZ_SCALEOUT_SUBS (500), BUZZ_SCALEOUT_RATE (events/s, 1000),
// BUZZ_SCALEOUT_SECONDS (5).

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	gonostr "github.com/nbd-wtf/go-nostr"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// redisInfo returns the fields of INFO section from the Redis at addr.
func redisInfo(t *testing.T, addr, section string) map[string]string {
	t.Helper()
	ws, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	fmt.Fprintf(ws, "INFO %s\r\n", section)
	rd := bufio.NewReader(ws)
	head, err := rd.ReadString('\n') // $<len>
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("INFO: %q %v", head, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(rd, buf); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(buf), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// cmdCalls reads "calls=N" from a commandstats value.
func cmdCalls(v string) int64 {
	for _, f := range strings.Split(v, ",") {
		if k, n, ok := strings.Cut(f, "="); ok && k == "calls" {
			x, _ := strconv.ParseInt(n, 10, 64)
			return x
		}
	}
	return 0
}

func vmRSSKiB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}

// measureResult is one scenario's figures.
type measureResult struct {
	name             string
	pods             int
	events           int
	deliveries       int64
	missing          int64
	p50, p90, p99    time.Duration
	max              time.Duration
	publishPerEvent  float64 // Redis PUBLISH calls per event
	deliveredPerEvt  float64 // Redis → pod messages per event (PUBLISH × subscribed pods)
	netOutBytesPerEv float64
	rssMiB           []float64
	deliveriesPerSec float64 // deliveries / (last receipt - first send)
}

// TestScaleOutMeasure prints the scale-out figures; see the file comment.
func TestScaleOutMeasure(t *testing.T) {
	if os.Getenv("BUZZ_SCALEOUT_MEASURE") == "" {
		t.Skip("set BUZZ_SCALEOUT_MEASURE=1 to run the scale-out measurement")
	}
	subs := envInt("BUZZ_SCALEOUT_SUBS", 500)
	rate := envInt("BUZZ_SCALEOUT_RATE", 1000)
	secs := envInt("BUZZ_SCALEOUT_SECONDS", 5)
	var results []measureResult
	for _, sc := range []struct {
		name  string
		pods  int
		redis bool
	}{
		{"3 pods, Redis", 3, true},
		{"1 pod, Redis", 1, true},
		{"1 pod, in-process", 1, false},
	} {
		results = append(results, measureFanout(t, sc.name, sc.pods, sc.redis, subs, rate, secs))
	}
	t.Logf("%d subscribers, %d events/s for %ds, kind 1, one community; latency from send to receipt by each subscriber", subs, rate, secs)
	t.Logf("| Setup | deliveries | missing | deliveries/s | p50 | p90 | p99 | max | Redis PUBLISH/event | Redis→pod msgs/event | Redis out bytes/event | pod VmRSS MiB |")
	for _, r := range results {
		rss := make([]string, len(r.rssMiB))
		for i, m := range r.rssMiB {
			rss[i] = fmt.Sprintf("%.0f", m)
		}
		t.Logf("| %s | %d | %d | %.0f | %s | %s | %s | %s | %.2f | %.2f | %.0f | %s |", r.name, r.deliveries, r.missing, r.deliveriesPerSec,
			fmtMs(r.p50), fmtMs(r.p90), fmtMs(r.p99), fmtMs(r.max), r.publishPerEvent, r.deliveredPerEvt, r.netOutBytesPerEv,
			strings.Join(rss, " / "))
	}
}

func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func measureFanout(t *testing.T, name string, pods int, withRedis bool, nSubs, rate, secs int) measureResult {
	t.Helper()
	rs := startRedisServer(t)
	redisURL := "redis://" + rs.addr()
	extra := map[string]string{"BUZZ_SEND_QUEUE": "4096"}
	if !withRedis {
		extra["REDIS_URL"] = ""
	}
	d := startDeployment(t, pods, freshDatabase(t), redisURL, extra)
	defer func() {
		for _, p := range d.pods {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		rs.kill()
	}()

	total := rate * secs
	nPub := 2 * pods
	// Sign everything first.
	evs := make([]gonostr.Event, total)
	index := make(map[string]int, total)
	{
		var wg sync.WaitGroup
		for w := range nPub {
			sk, _ := newKey(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				now := time.Now().Unix()
				for i := w; i < total; i += nPub {
					ev := gonostr.Event{Kind: 1, CreatedAt: gonostr.Timestamp(now), Content: "scale-out " + strconv.Itoa(i),
						Tags: gonostr.Tags{{"t", "measure"}}}
					if err := ev.Sign(sk); err != nil {
						panic(err)
					}
					evs[i] = ev
				}
			}()
		}
		wg.Wait()
		for i, ev := range evs {
			index[ev.ID] = i
		}
	}
	sent := make([]atomic.Int64, total) // unix ns

	// Subscribers, spread round-robin over the pods.
	type sub struct {
		lat  []time.Duration
		seen int
	}
	subsList := make([]*sub, nSubs)
	var (
		received atomic.Int64
		lastRecv atomic.Int64 // unix ns
		subWG    sync.WaitGroup
		conns    []*websocket.Conn
	)
	req, _ := (&gonostr.ReqEnvelope{SubscriptionID: "m", Filters: gonostr.Filters{{Kinds: []int{1}, Tags: gonostr.TagMap{"t": {"measure"}}}}}).MarshalJSON()
	for i := range nSubs {
		p := d.pods[i%pods]
		dl := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
		ws, _, err := dl.Dial("ws://127.0.0.1:"+strconv.Itoa(p.port), http.Header{"Host": {hostAlpha}})
		if err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
		conns = append(conns, ws)
		if err := ws.WriteMessage(websocket.TextMessage, req); err != nil {
			t.Fatal(err)
		}
		for { // AUTH challenge, then EOSE
			_, msg, err := ws.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			if bytes.HasPrefix(msg, []byte(`["EOSE"`)) {
				break
			}
		}
		s := &sub{lat: make([]time.Duration, 0, total)}
		subsList[i] = s
		subWG.Add(1)
		go func() {
			defer subWG.Done()
			key := []byte(`"id":"`)
			for {
				_, msg, err := ws.ReadMessage()
				now := time.Now().UnixNano()
				if err != nil {
					return
				}
				j := bytes.Index(msg, key)
				if j < 0 || len(msg) < j+len(key)+64 {
					continue
				}
				k, ok := index[string(msg[j+len(key):j+len(key)+64])]
				if !ok {
					continue
				}
				s.lat = append(s.lat, time.Duration(now-sent[k].Load()))
				s.seen++
				received.Add(1)
				for {
					old := lastRecv.Load()
					if now <= old || lastRecv.CompareAndSwap(old, now) {
						break
					}
				}
			}
		}()
	}

	before := redisInfo(t, rs.addr(), "all")

	// Publishers: two connections per pod, pipelined, paced to the rate.
	var pubWG sync.WaitGroup
	var oks atomic.Int64
	start := time.Now().Add(100 * time.Millisecond)
	interval := time.Duration(int64(time.Second) * int64(nPub) / int64(rate))
	for w := range nPub {
		p := d.pods[w%pods]
		dl := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
		ws, _, err := dl.Dial("ws://127.0.0.1:"+strconv.Itoa(p.port), http.Header{"Host": {hostAlpha}})
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, ws)
		mine := 0
		for i := w; i < total; i += nPub {
			mine++
		}
		pubWG.Add(2)
		go func() { // OK reader
			defer pubWG.Done()
			for got := 0; got < mine; {
				_, msg, err := ws.ReadMessage()
				if err != nil {
					t.Errorf("publisher %d: %v", w, err)
					return
				}
				if bytes.HasPrefix(msg, []byte(`["OK"`)) {
					if !bytes.Contains(msg, []byte(`,true,`)) {
						t.Errorf("publisher %d: %s", w, msg)
					}
					oks.Add(1)
					got++
				}
			}
		}()
		go func() {
			defer pubWG.Done()
			n := 0
			for i := w; i < total; i += nPub {
				time.Sleep(time.Until(start.Add(time.Duration(n) * interval)))
				n++
				frame, _ := (&gonostr.EventEnvelope{Event: evs[i]}).MarshalJSON()
				sent[i].Store(time.Now().UnixNano())
				if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
					t.Errorf("publisher %d: %v", w, err)
					return
				}
			}
		}()
	}
	pubWG.Wait()
	want := int64(total) * int64(nSubs)
	deadline := time.Now().Add(30 * time.Second)
	for received.Load() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	after := redisInfo(t, rs.addr(), "all")
	res := measureResult{name: name, pods: pods, events: total}
	for _, p := range d.pods {
		res.rssMiB = append(res.rssMiB, float64(vmRSSKiB(p.cmd.Process.Pid))/1024)
	}
	for _, c := range conns {
		c.Close()
	}
	subWG.Wait()

	var all []time.Duration
	for _, s := range subsList {
		all = append(all, s.lat...)
	}
	slices.Sort(all)
	res.deliveries = int64(len(all))
	res.missing = want - res.deliveries
	if n := len(all); n > 0 {
		res.p50, res.p90, res.p99, res.max = all[n/2], all[n*90/100], all[n*99/100], all[n-1]
	}
	pubCalls := cmdCalls(after["cmdstat_publish"]) - cmdCalls(before["cmdstat_publish"])
	res.publishPerEvent = float64(pubCalls) / float64(total)
	// Every PUBLISH of the community topic reaches each pod subscribed to it.
	if withRedis {
		res.deliveredPerEvt = res.publishPerEvent * float64(pods)
	}
	outB, _ := strconv.ParseInt(after["total_net_output_bytes"], 10, 64)
	outA, _ := strconv.ParseInt(before["total_net_output_bytes"], 10, 64)
	res.netOutBytesPerEv = float64(outB-outA) / float64(total)
	if span := time.Duration(lastRecv.Load() - start.UnixNano()); span > 0 {
		res.deliveriesPerSec = float64(res.deliveries) / span.Seconds()
	}
	if oks.Load() != int64(total) {
		t.Errorf("%s: %d of %d events acknowledged", name, oks.Load(), total)
	}
	t.Logf("%s: %d/%d deliveries, p50 %s p99 %s", name, res.deliveries, want, fmtMs(res.p50), fmtMs(res.p99))
	return res
}
