package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

// The abuse scenario reproduces, one row at a time, what an abusive or
// buggy client did to a relay, while an innocent client on
// its own connections measures what it still gets:
//
//   - innocent_req: REQ {"kinds":[1],"limit":10} every 200 ms (latency to EOSE);
//   - innocent_live: publish → live delivery of one event every 200 ms to
//     a subscription on the live topic.
//
// Each row records both before the attack (its own baseline) and during
// it, with the relay's RSS before and at the end of the attack. The goal
// is innocent p99 < 1 s and live delivery < 50 ms throughout.

// abuseWindow is how long each attack (and each baseline) lasts.
const abuseWindow = 6 * time.Second

// abuseRow is one attack: it runs until ctx ends, from its own
// connections; notes records what the relay answered.
type abuseRow struct {
	name   string
	attack func(ctx context.Context, e *env, notes *abuseNotes)
}

// abuseNotes counts the relay's answers to the attacker.
type abuseNotes struct {
	mu      sync.Mutex
	answers map[string]int // first words of CLOSED/NOTICE messages and refusals
}

func (n *abuseNotes) add(what string) {
	if i := strings.IndexAny(what, "(0123456789"); i > 0 {
		what = strings.TrimSpace(what[:i]) // drop limits and counts: group like answers
	}
	if len(what) > 60 {
		what = what[:60]
	}
	n.mu.Lock()
	n.answers[what]++
	n.mu.Unlock()
}

func (n *abuseNotes) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var parts []string
	for k, v := range n.answers {
		parts = append(parts, fmt.Sprintf("%q×%d", k, v))
	}
	return strings.Join(parts, ", ")
}

func abuseRows(e *env) []abuseRow {
	topics := make([]string, 40)
	for i := range topics {
		topics[i] = e.c.Topics[i%len(e.c.Topics)]
	}
	pubs := make([]string, 200)
	for i := range pubs {
		pubs[i] = e.c.Authors[i%len(e.c.Authors)].Pub
	}
	ids := make([]string, 0, 1000)
	for i := 0; i < len(e.c.Events) && len(ids) < cap(ids); i++ {
		ids = append(ids, e.c.Events[i].Ev.ID)
	}
	heavy := []nostr.Filter{
		{Tags: map[string][]string{"t": topics}},
		{Tags: map[string][]string{"p": pubs}},
		{Tags: map[string][]string{"t": {topics[0]}, "z": {"y"}}},
		{IDs: ids},
	}
	kinds := func(n int) []int {
		k := make([]int, n)
		for i := range k {
			k[i] = i % (nostr.MaxKind + 1)
		}
		return k
	}
	return []abuseRow{
		{"count-flood", func(ctx context.Context, e *env, n *abuseNotes) {
			// 4 connections × 4 heavy COUNTs, sockets closed after 0.5 s, again and again.
			parallel(ctx, 4, func(ctx context.Context, i int) {
				for ctx.Err() == nil {
					c, err := dial(ctx, e.target.URL, dialOptions{})
					if err != nil {
						n.add("dial: " + err.Error())
						sleepCtx(ctx, 200*time.Millisecond)
						continue
					}
					for j := range 4 {
						f := heavy[j%2]
						_ = c.write(func(b []byte) []byte { return nostr.AppendCount(b, fmt.Sprint("c", j), f) })
					}
					sleepCtx(ctx, 500*time.Millisecond)
					c.Close()
				}
			})
		}},
		{"heavy-req", func(ctx context.Context, e *env, n *abuseNotes) {
			// The heavy REQ shapes, one connection each, repeated as each ends.
			parallel(ctx, len(heavy), func(ctx context.Context, i int) {
				c, err := dial(ctx, e.target.URL, dialOptions{})
				if err != nil {
					n.add("dial: " + err.Error())
					return
				}
				defer c.Close()
				for ctx.Err() == nil {
					r, err := c.query(ctx, []nostr.Filter{heavy[i]})
					switch {
					case err != nil:
						return
					case r.Closed != "":
						n.add(r.Closed)
					default:
						n.add("answered")
					}
				}
			})
		}},
		{"never-read", func(ctx context.Context, e *env, n *abuseNotes) {
			// 6 connections each asking 4 × 10 filters at limit 1000, never reading.
			conns := make([]*conn, 0, 6)
			for range 6 {
				c, err := dial(ctx, e.target.URL, dialOptions{noRead: true, rcvBuf: 4096})
				if err != nil {
					n.add("dial: " + err.Error())
					continue
				}
				conns = append(conns, c)
				for j := range 4 {
					fs := make([]nostr.Filter, 10)
					for k := range fs {
						fs[k] = nostr.Filter{Kinds: []int{1}, Authors: []string{pubs[(j*10+k)%len(pubs)]}, Limit: 1000, LimitSet: true}
						if k%2 == 1 {
							fs[k] = nostr.Filter{Kinds: []int{1}, Limit: 1000, LimitSet: true}
						}
					}
					_ = c.write(func(b []byte) []byte { return nostr.AppendReq(b, fmt.Sprint("s", j), fs...) })
				}
			}
			<-ctx.Done()
			closeAll(conns)
		}},
		{"big-subs", func(ctx context.Context, e *env, n *abuseNotes) {
			// 4 connections each opening 250 subscriptions of a 100,001-value
			// kinds filter; refused (the frame alone exceeds the limit and
			// closes the connection), they reconnect and open as many as
			// the relay admits at the advertised value limit.
			parallel(ctx, 4, func(ctx context.Context, i int) {
				size := 100_001
				var c *conn
				defer func() {
					if c != nil {
						c.Close()
					}
				}()
				for j := 0; j < 250 && ctx.Err() == nil; j++ {
					if c == nil {
						var err error
						if c, err = dial(ctx, e.target.URL, dialOptions{}); err != nil {
							n.add("dial: " + err.Error())
							return
						}
					}
					f := nostr.Filter{Kinds: kinds(size), Limit: 0, LimitSet: true}
					r, err := c.subscribeWait(ctx, fmt.Sprint("keep", j), f)
					switch {
					case err != nil:
						n.add("connection closed: " + err.Error())
						c.Close()
						c, size = nil, min(size, 1000)
					case r != "":
						n.add(r)
						size = min(size, 1000)
					default:
						n.add("open")
					}
				}
				<-ctx.Done()
			})
		}},
		{"conn-flood", func(ctx context.Context, e *env, n *abuseNotes) {
			// 2,000 idle connections, then 200 looping REQ/CLOSE.
			var idle []*conn
			var mu sync.Mutex
			parallel(ctx, 32, func(ctx context.Context, i int) {
				for j := i; j < 2000 && ctx.Err() == nil; j += 32 {
					c, err := dial(ctx, e.target.URL, dialOptions{})
					if err != nil {
						n.add("dial refused: " + err.Error())
						continue
					}
					mu.Lock()
					idle = append(idle, c)
					mu.Unlock()
				}
			})
			defer func() { closeAll(idle) }()
			parallel(ctx, 200, func(ctx context.Context, i int) {
				c, err := dial(ctx, e.target.URL, dialOptions{})
				if err != nil {
					n.add("dial refused: " + err.Error())
					return
				}
				defer c.Close()
				for ctx.Err() == nil {
					r, err := c.query(ctx, []nostr.Filter{{Kinds: []int{1}, Limit: 20, LimitSet: true}})
					if err != nil {
						return
					}
					if r.Closed != "" {
						n.add(r.Closed)
						sleepCtx(ctx, 100*time.Millisecond)
					}
				}
			})
		}},
		{"many-filters", func(ctx context.Context, e *env, n *abuseNotes) {
			// One REQ of 174,000 {} filters, again and again.
			msg := []byte(`["REQ","x"` + strings.Repeat(`,{}`, 174_000) + `]`)
			c, err := dial(ctx, e.target.URL, dialOptions{})
			if err != nil {
				n.add("dial: " + err.Error())
				return
			}
			defer c.Close()
			for ctx.Err() == nil {
				if err := c.write(func(b []byte) []byte { return append(b, msg...) }); err != nil {
					n.add("write: " + err.Error())
					return
				}
				sleepCtx(ctx, 20*time.Millisecond)
			}
		}},
	}
}

// subscribeWait opens subscription id with filter f and waits for its EOSE
// (it stays open: no CLOSE), returning the CLOSED message if refused.
func (c *conn) subscribeWait(ctx context.Context, id string, f nostr.Filter) (closed string, err error) {
	ch := make(chan string, 1)
	done := false // read goroutine only
	h := &subHandler{
		eose: func(time.Time) {
			if !done {
				done = true
				ch <- ""
			}
		},
		closed: func(msg string, _ time.Time) {
			if !done {
				done = true
				ch <- msg
			}
		},
	}
	if err := c.subscribe(id, []nostr.Filter{f}, false, h); err != nil {
		return "", err
	}
	select {
	case msg := <-ch:
		return msg, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-c.done:
		return "", errConnClosed
	}
}

// parallel runs fn(i) for i in [0, n) on n goroutines and waits.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(ctx, i)
		}()
	}
	wg.Wait()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// innocent measures the innocent client for d: REQ latencies and live
// delivery latencies.
func innocent(ctx context.Context, e *env, d time.Duration) (reqs, live []time.Duration, errs int) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	rc, err := dial(ctx, e.target.URL, dialOptions{})
	if err != nil {
		return nil, nil, 1
	}
	defer rc.Close()
	sub, err := dial(ctx, e.target.URL, dialOptions{})
	if err != nil {
		return nil, nil, 1
	}
	defer sub.Close()
	pub, err := dial(ctx, e.target.URL, dialOptions{authKey: e.connKey(0)})
	if err != nil {
		return nil, nil, 1
	}
	defer pub.Close()

	var mu sync.Mutex
	sent := map[string]time.Time{}
	var lives []time.Duration
	ready := make(chan struct{})
	var once sync.Once
	h := &subHandler{
		event: func(id string, at time.Time) {
			mu.Lock()
			if t0, ok := sent[id]; ok {
				lives = append(lives, at.Sub(t0))
				delete(sent, id)
			}
			mu.Unlock()
		},
		eose:   func(time.Time) { once.Do(func() { close(ready) }) },
		closed: func(string, time.Time) { once.Do(func() { close(ready) }) },
	}
	filter := nostr.Filter{Kinds: []int{1}, Tags: map[string][]string{"t": {e.c.LiveTopic}}, Limit: 0, LimitSet: true}
	if err := sub.subscribe("live", []nostr.Filter{filter}, false, h); err != nil {
		return nil, nil, 1
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, nil, 1
	}
	var wg sync.WaitGroup
	var nerr atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		// Publishing stops a second before the window ends, so every
		// event has that second to arrive.
		for _, ev := range e.takeExtras(int((d - time.Second) / (200 * time.Millisecond))) {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			sent[ev.Ev.ID] = time.Now()
			mu.Unlock()
			if err := pub.sendEvent(ev.Ev.ID, ev.Raw, func(okResult) {}); err != nil {
				nerr.Add(1)
				return
			}
		}
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		r, err := rc.query(ctx, []nostr.Filter{{Kinds: []int{1}, Limit: 10, LimitSet: true}})
		if err != nil {
			if ctx.Err() == nil {
				nerr.Add(1)
			}
			break
		}
		if r.Closed != "" {
			nerr.Add(1)
		}
		reqs = append(reqs, r.Latency)
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	wg.Wait()
	for wait := time.Now().Add(time.Second); time.Now().Before(wait); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(sent)
		mu.Unlock()
		if n == 0 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// An event not delivered a second after the window counts as the window.
	for range sent {
		lives = append(lives, d)
	}
	return reqs, lives, int(nerr.Load())
}

// runAbuse runs every row: a baseline, then the attack with the innocent
// measuring, then a pause for the relay to recover.
func runAbuse(ctx context.Context, e *env) result {
	res := result{Scenario: "abuse"}
	if err := ensureLoaded(ctx, e); err != nil {
		res.note("load: %v", err)
		res.check("errors", 1)
		return res
	}
	for _, row := range abuseRows(e) {
		reqs, lives, errs := innocent(ctx, e, abuseWindow)
		res.lat(row.name+"/before_req", summarize(reqs))
		res.lat(row.name+"/before_live", summarize(lives))
		if rss, ok := e.target.rss(); ok {
			res.add(row.name+"/rss_before", "MB", float64(rss)/(1<<20), "lower")
		}
		notes := &abuseNotes{answers: map[string]int{}}
		actx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			row.attack(actx, e, notes)
		}()
		time.Sleep(time.Second) // let the attack build up
		load := loadAvg()
		reqs, lives, errs2 := innocent(ctx, e, abuseWindow)
		var peak int64
		if rss, ok := e.target.rss(); ok {
			peak = rss
		}
		cancel()
		<-done
		res.lat(row.name+"/during_req", summarize(reqs))
		res.lat(row.name+"/during_live", summarize(lives))
		if peak > 0 {
			res.add(row.name+"/rss_during", "MB", float64(peak)/(1<<20), "lower")
		}
		res.check(row.name+"/innocent_errors", errs+errs2)
		res.note("%s: load average %s; relay answered the attacker: %s", row.name, load, notes)
		time.Sleep(2 * time.Second) // the relay settles before the next row
	}
	return res
}
