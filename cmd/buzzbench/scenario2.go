package main

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

const mib = 1 << 20

// runIdle holds cfg.Idle idle connections and reports the relay's memory
// growth per connection when its RSS can be read.
func runIdle(ctx context.Context, e *env) result {
	res := result{Scenario: "idle"}
	time.Sleep(time.Second) // let the relay settle after earlier scenarios
	before, haveRSS := e.target.rss()
	conns, err := e.dialMany(ctx, e.cfg.Idle, func(int) dialOptions { return dialOptions{} })
	if err != nil {
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	time.Sleep(2 * time.Second)
	after, _ := e.target.rss()
	alive := 0
	for _, c := range conns {
		select {
		case <-c.done:
		default:
			alive++
		}
	}
	closeAll(conns)
	res.add("held", "conns", float64(alive), "higher")
	res.check("dropped", len(conns)-alive)
	if haveRSS {
		res.add("rss_before", "MiB", float64(before)/mib, "lower")
		res.add("rss_held", "MiB", float64(after)/mib, "lower")
		res.add("per_conn", "KiB", float64(after-before)/1024/float64(len(conns)), "lower")
	} else {
		res.note("relay memory not measured: give -pid or -start")
	}
	return res
}

// runMixed runs cfg.MixedOps operations over cfg.Conns connections, a
// fraction cfg.WriteFrac of them EVENTs and the rest planned REQs.
func runMixed(ctx context.Context, e *env) result {
	res := result{Scenario: "mixed"}
	if err := ensureLoaded(ctx, e); err != nil {
		res.note("%v", err)
		res.check("errors", 1)
		return res
	}
	every := 0
	if e.cfg.WriteFrac > 0 {
		every = max(1, int(1/e.cfg.WriteFrac+0.5))
	}
	nWrites := 0
	if every > 0 {
		nWrites = (e.cfg.MixedOps + every - 1) / every
	}
	writes := e.takeExtras(nWrites)
	conns, err := e.dialMany(ctx, e.cfg.Conns, nil)
	if err != nil {
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	defer closeAll(conns)
	rc := newReqChecker()
	var o outcomes
	var mu sync.Mutex
	var wlat []time.Duration
	var next, nextW, done, errs atomic.Int64
	stop := e.progress.track("mixed", &done, e.cfg.MixedOps)
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= e.cfg.MixedOps || ctx.Err() != nil {
					return
				}
				if every > 0 && i%every == 0 {
					w := int(nextW.Add(1) - 1)
					if w < len(writes) {
						ev := &writes[w]
						r, t0, err := c.publish(ctx, ev.Ev.ID, ev.Raw, e.c.keyFor, ev.Ev.PubKey)
						if err != nil {
							errs.Add(1)
							return
						}
						o.record(r)
						mu.Lock()
						wlat = append(wlat, r.At.Sub(t0))
						mu.Unlock()
						done.Add(1)
						continue
					}
				}
				q := e.queryAt(i)
				r, err := c.query(ctx, q.Filters)
				if err != nil {
					errs.Add(1)
					return
				}
				rc.record(q, r)
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	res.add("ops_per_s", "op/s", float64(done.Load())/elapsed.Seconds(), "higher")
	res.lat("write", summarize(wlat))
	rc.report(&res, "read_")
	o.report(&res, "")
	res.check("errors", int(errs.Load()))
	res.note("%d operations, 1 in %d a write, over %d connections", e.cfg.MixedOps, every, len(conns))
	return res
}

// runSlowReader opens a connection that asks for a lot (stored events and a
// live subscription) and never reads, while another connection publishes.
// It samples the relay's RSS throughout and reports whether the relay cut
// the reader off.
func runSlowReader(ctx context.Context, e *env) result {
	res := result{Scenario: "slowreader"}
	if err := ensureLoaded(ctx, e); err != nil {
		res.note("%v", err)
		res.check("errors", 1)
		return res
	}
	evs := e.takeExtras(e.cfg.SlowPublishes)
	before, haveRSS := e.target.rss()
	slow, err := dial(ctx, e.target.URL, dialOptions{noRead: true, rcvBuf: 4096})
	if err != nil {
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	defer slow.Close()
	// Ask for every stored event, many times over, plus the live topic.
	for i := 0; i < 50; i++ {
		f := nostr.Filter{Kinds: []int{0, 1, 3, 6, 7, 30023}, Limit: 1000, LimitSet: true}
		if err := slow.write(func(b []byte) []byte { return nostr.AppendReq(b, slow.newSubID("s"), f) }); err != nil {
			break // the relay may already have cut us off
		}
	}
	_ = slow.write(func(b []byte) []byte {
		return nostr.AppendReq(b, "live", nostr.Filter{Kinds: []int{1}, Tags: map[string][]string{"t": {e.c.LiveTopic}}, Limit: 0, LimitSet: true})
	})
	var peak atomic.Int64
	peak.Store(before)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	if haveRSS {
		sampler.Add(1)
		go func() {
			defer sampler.Done()
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					if v, ok := e.target.rss(); ok && v > peak.Load() {
						peak.Store(v)
					}
				case <-sampleCtx.Done():
					return
				}
			}
		}()
	}
	pub, err := e.dial(ctx, 0)
	if err != nil {
		stopSampling()
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	var o outcomes
	var lats []time.Duration
	for i := range evs {
		ev := &evs[i]
		r, t0, err := pub.publish(ctx, ev.Ev.ID, ev.Raw, e.c.keyFor, ev.Ev.PubKey)
		if err != nil {
			break
		}
		o.record(r)
		lats = append(lats, r.At.Sub(t0))
	}
	pub.Close()
	time.Sleep(3 * time.Second) // give the relay time to notice the reader
	stopSampling()
	sampler.Wait()
	after, _ := e.target.rss()

	// Now read: a relay that cut the reader off ends the stream with a close
	// or EOF; one that did not keeps it open until our deadline.
	cutOff := false
	var frames int
	deadline := time.Now().Add(10 * time.Second)
	_ = slow.ws.SetReadDeadline(deadline)
	for time.Now().Before(deadline) {
		_, _, err := slow.ws.ReadMessage()
		if err != nil {
			var ne net.Error
			if !(errors.As(err, &ne) && ne.Timeout()) {
				cutOff = true
			}
			break
		}
		frames++
	}
	res.add("cut_off", "bool", b2f(cutOff), "higher")
	res.add("frames_read_after", "frames", float64(frames), "")
	res.lat("publisher_ok", summarize(lats))
	o.report(&res, "")
	if haveRSS {
		res.add("rss_before", "MiB", float64(before)/mib, "lower")
		res.add("rss_peak", "MiB", float64(peak.Load())/mib, "lower")
		res.add("rss_growth", "MiB", float64(peak.Load()-before)/mib, "lower")
		res.add("rss_after", "MiB", float64(after)/mib, "lower")
	} else {
		res.note("relay memory not measured: give -pid or -start")
	}
	if !cutOff {
		res.note("the relay kept the non-reading connection open")
	}
	return res
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
