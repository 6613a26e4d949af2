package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

// metric is one measured value of a scenario run.
type metric struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// Better is "higher", "lower", or "zero" for a correctness check whose
	// every non-zero value is a failure.
	Better string `json:"better"`
}

// result is the outcome of one scenario run against one relay.
type result struct {
	Scenario string   `json:"scenario"`
	Metrics  []metric `json:"metrics"`
	Notes    []string `json:"notes,omitempty"`
}

func (r *result) add(name, unit string, v float64, better string) {
	r.Metrics = append(r.Metrics, metric{name, unit, v, better})
}

func (r *result) check(name string, v int) { r.add(name, "count", float64(v), "zero") }

func (r *result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// lat adds p50/p90/p99/max of s in milliseconds.
func (r *result) lat(prefix string, s latencySummary) {
	if s.N == 0 {
		return
	}
	r.add(prefix+"_p50", "ms", ms(s.P50), "lower")
	r.add(prefix+"_p90", "ms", ms(s.P90), "lower")
	r.add(prefix+"_p99", "ms", ms(s.P99), "lower")
	r.add(prefix+"_max", "ms", ms(s.Max), "lower")
}

// env is what the scenarios of one run against one relay share.
type env struct {
	cfg      *config
	c        *corpus
	run      int // 0-based run index
	target   *target
	progress *progress
	queries  map[string][]plannedQuery
	counts   []plannedCount

	loaded     bool // the main corpus is in the relay
	extrasNext int  // next unused event of c.Extras
}

// takeExtras hands out n live events not yet published in this relay
// session (fewer if the pool runs out).
func (e *env) takeExtras(n int) []corpusEvent {
	lo := e.extrasNext
	hi := min(lo+n, len(e.c.Extras))
	e.extrasNext = hi
	return e.c.Extras[lo:hi]
}

// connKey is the identity connection i authenticates as when challenged.
func (e *env) connKey(i int) *nostr.SecretKey {
	sk := e.c.Authors[i%len(e.c.Authors)].SK
	return &sk
}

// dialOpts are the options of connection i: it authenticates as
// connKey(i) when challenged, and under -auth-per-author it must.
func (e *env) dialOpts(i int) dialOptions {
	return dialOptions{authKey: e.connKey(i), requireAuth: e.cfg.AuthPerAuthor}
}

func (e *env) dial(ctx context.Context, i int) (*conn, error) {
	return dial(ctx, e.target.URL, e.dialOpts(i))
}

// ingestConns opens the connections that publish the main corpus and says
// which events each publishes. By default there are n connections taking
// events from one shared queue (queues is nil). Under -auth-per-author
// there is one connection per corpus author, authenticated as that author,
// and queues[k] holds the indexes (in publish order) of the events of
// author k, so that every event goes out on its author's connection.
func (e *env) ingestConns(ctx context.Context, n int) (conns []*conn, queues [][]int, err error) {
	if !e.cfg.AuthPerAuthor {
		conns, err = e.dialMany(ctx, n, nil)
		return conns, nil, err
	}
	queues, err = authorQueues(e.c.Events, e.c.Authors)
	if err != nil {
		return nil, nil, err
	}
	// Connection k's default options (dialOpts) authenticate it as author
	// k, and require it.
	conns, err = e.dialMany(ctx, len(e.c.Authors), nil)
	return conns, queues, err
}

// authorQueues returns, for each author, the indexes into evs of that
// author's events in their order in evs. It fails if an event's author is
// not among authors.
func authorQueues(evs []corpusEvent, authors []author) ([][]int, error) {
	byPub := make(map[string]int, len(authors))
	for k, a := range authors {
		byPub[a.Pub] = k
	}
	queues := make([][]int, len(authors))
	for i := range evs {
		k, ok := byPub[evs[i].Ev.PubKey]
		if !ok {
			return nil, fmt.Errorf("event %s: author %s is not a corpus author", evs[i].Ev.ID, evs[i].Ev.PubKey)
		}
		queues[k] = append(queues[k], i)
	}
	return queues, nil
}

// dialMany opens n connections to the relay under test with bounded
// parallelism.
func (e *env) dialMany(ctx context.Context, n int, opts func(i int) dialOptions) ([]*conn, error) {
	return e.dialManyAt(ctx, n, func(int) string { return e.target.URL }, opts)
}

// dialManyAt is dialMany with connection i opened to urlOf(i).
func (e *env) dialManyAt(ctx context.Context, n int, urlOf func(i int) string, opts func(i int) dialOptions) ([]*conn, error) {
	conns := make([]*conn, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			o := e.dialOpts(i)
			if opts != nil {
				o = opts(i)
			}
			conns[i], errs[i] = dial(ctx, urlOf(i), o)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("connection %d of %d: %w", i+1, n, err)
		}
	}
	return conns, nil
}

func closeAll(conns []*conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// outcomes tallies OK answers by kind; safe for concurrent use.
type outcomes struct {
	mu       sync.Mutex
	accepted int
	dup      int
	refused  map[string]int // by prefix, e.g. "invalid:"
}

func (o *outcomes) record(r okResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case r.OK && strings.HasPrefix(r.Msg, "duplicate:"):
		o.dup++
	case r.OK:
		o.accepted++
	default:
		if o.refused == nil {
			o.refused = map[string]int{}
		}
		p := r.Msg
		if i := strings.IndexByte(p, ':'); i >= 0 {
			p = p[:i+1]
		} else {
			p = "(no prefix)"
		}
		o.refused[p]++
	}
}

func (o *outcomes) refusedTotal() int {
	n := 0
	for _, v := range o.refused {
		n += v
	}
	return n
}

// report adds accepted/duplicate/refused counts; refusals are checks.
func (o *outcomes) report(r *result, prefix string) {
	r.add(prefix+"accepted", "events", float64(o.accepted), "higher")
	r.add(prefix+"duplicates", "events", float64(o.dup), "")
	r.check(prefix+"ok_false", o.refusedTotal())
	keys := make([]string, 0, len(o.refused))
	for k := range o.refused {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.note("%sOK false %q: %d", prefix, k, o.refused[k])
	}
}

// publishAll publishes evs over conns with at most window events in flight
// per connection. With queues nil the connections take events from one
// shared queue; otherwise conns[k] publishes exactly the events
// queues[k] indexes, in that order. It returns the send→OK latencies and
// the wall time from the first send to the last OK.
func publishAll(ctx context.Context, conns []*conn, queues [][]int, evs []corpusEvent, window int, key func(string) (nostr.SecretKey, bool), o *outcomes, done *atomic.Int64) ([]time.Duration, time.Duration, int) {
	var next atomic.Int64
	nexts := make([]int, len(conns)) // per-connection cursor into queues[k]
	// take returns the next event index for connection k.
	take := func(k int) (int, bool) {
		if queues == nil {
			i := int(next.Add(1) - 1)
			return i, i < len(evs)
		}
		if nexts[k] >= len(queues[k]) {
			return 0, false
		}
		nexts[k]++
		return queues[k][nexts[k]-1], true
	}
	var retryMu sync.Mutex
	retry := make([][]int, len(conns))
	var mu sync.Mutex // guards lats: callbacks run on read goroutines
	lats := make([][]time.Duration, len(conns))
	var timeouts atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for k, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots := make(chan struct{}, window)
			var inflight sync.WaitGroup
			for {
				i, ok := take(k)
				if !ok || ctx.Err() != nil {
					break
				}
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
				}
				if ctx.Err() != nil {
					timeouts.Add(1)
					break
				}
				ev := &evs[i]
				sent := time.Now()
				inflight.Add(1)
				err := c.sendEvent(ev.Ev.ID, ev.Raw, func(r okResult) {
					if r.At.IsZero() { // connection ended
						timeouts.Add(1)
					} else if mayNeedAuth(r) && key != nil {
						retryMu.Lock()
						retry[k] = append(retry[k], i)
						retryMu.Unlock()
					} else {
						mu.Lock()
						lats[k] = append(lats[k], r.At.Sub(sent))
						mu.Unlock()
						o.record(r)
					}
					done.Add(1)
					<-slots
					inflight.Done()
				})
				if err != nil {
					inflight.Done()
					<-slots
					timeouts.Add(1)
					break
				}
			}
			waitGroupCtx(ctx, &inflight)
			// Refusals that authenticating as the author may cure are
			// retried one at a time, inside the measured time.
			retryMu.Lock()
			again := retry[k]
			retryMu.Unlock()
			for _, i := range again {
				ev := &evs[i]
				r, sent, err := c.publish(ctx, ev.Ev.ID, ev.Raw, key, ev.Ev.PubKey)
				if err != nil {
					timeouts.Add(1)
					continue
				}
				mu.Lock()
				lats[k] = append(lats[k], r.At.Sub(sent))
				mu.Unlock()
				o.record(r)
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	mu.Lock()
	for k := range lats {
		all = append(all, lats[k]...)
	}
	mu.Unlock()
	missing := len(evs) - len(all)
	return all, elapsed, max(missing, int(timeouts.Load()))
}

// mayNeedAuth reports a refusal that authenticating may cure.
func mayNeedAuth(r okResult) bool {
	return !r.OK && (strings.HasPrefix(r.Msg, "auth-required:") || strings.HasPrefix(r.Msg, "restricted:"))
}

// waitGroupCtx waits for wg or ctx.
func waitGroupCtx(ctx context.Context, wg *sync.WaitGroup) {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// runIngest publishes the whole main corpus over cfg.Conns connections.
func runIngest(ctx context.Context, e *env, window int) result {
	name := "ingest"
	if window > 1 {
		name = "ingest-pipelined"
	}
	res := result{Scenario: name}
	conns, queues, err := e.ingestConns(ctx, e.cfg.Conns)
	if err != nil {
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	defer closeAll(conns)
	var o outcomes
	var done atomic.Int64
	stop := e.progress.track(name, &done, len(e.c.Events))
	lats, elapsed, missing := publishAll(ctx, conns, queues, e.c.Events, window, e.ingestKey(), &o, &done)
	stop()
	e.loaded = true
	res.add("events_per_s", "ev/s", float64(len(lats))/elapsed.Seconds(), "higher")
	res.add("elapsed", "s", elapsed.Seconds(), "lower")
	res.lat("ok", summarize(lats))
	o.report(&res, "")
	res.check("no_ok", missing)
	res.note("%d events, %d connections, window %d", len(e.c.Events), len(conns), window)
	if queues != nil {
		res.note("one connection per author, each authenticated (NIP-42) as its author on connect")
	}
	return res
}

// ingestKey is the key lookup publishAll may authenticate with when a
// refusal asks for it. Under -auth-per-author it is nil: every connection
// is its author's already, and authenticating further identities would
// hide an event sent on the wrong connection.
func (e *env) ingestKey() func(string) (nostr.SecretKey, bool) {
	if e.cfg.AuthPerAuthor {
		return nil
	}
	return e.c.keyFor
}

// ensureLoaded publishes the main corpus, untimed, if this relay session
// has not received it yet.
func ensureLoaded(ctx context.Context, e *env) error {
	if e.loaded {
		return nil
	}
	conns, queues, err := e.ingestConns(ctx, min(e.cfg.Conns, 8))
	if err != nil {
		return err
	}
	defer closeAll(conns)
	var o outcomes
	var done atomic.Int64
	stop := e.progress.track("load corpus", &done, len(e.c.Events))
	_, _, missing := publishAll(ctx, conns, queues, e.c.Events, 32, e.ingestKey(), &o, &done)
	stop()
	if n := o.refusedTotal() + missing; n > 0 {
		return fmt.Errorf("loading the corpus: %d events refused or unanswered (%v)", n, o.refused)
	}
	e.loaded = true
	return nil
}

// reqChecker compares REQ answers with the plan; safe for concurrent use.
type reqChecker struct {
	mu         sync.Mutex
	lat        map[string][]time.Duration
	mismatches map[string]int
	closed     map[string]int
	examples   []string
}

func newReqChecker() *reqChecker {
	return &reqChecker{lat: map[string][]time.Duration{}, mismatches: map[string]int{}, closed: map[string]int{}}
}

func (rc *reqChecker) record(q *plannedQuery, r reqResult) {
	ok := true
	if r.Closed == "" {
		if q.Exact {
			got := slices.Clone(r.IDs)
			slices.Sort(got)
			ok = slices.Equal(got, q.Want)
		} else {
			ok = len(r.IDs) == q.WantCount
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.lat[q.Shape] = append(rc.lat[q.Shape], r.Latency)
	if r.Closed != "" {
		rc.closed[q.Shape]++
		if len(rc.examples) < 5 {
			rc.examples = append(rc.examples, fmt.Sprintf("%s: CLOSED %q", q.Shape, r.Closed))
		}
	} else if !ok {
		rc.mismatches[q.Shape]++
		if len(rc.examples) < 5 {
			rc.examples = append(rc.examples, fmt.Sprintf("%s: got %d events, want %d", q.Shape, len(r.IDs), q.WantCount))
		}
	}
}

func (rc *reqChecker) report(res *result, prefix string) {
	var all []time.Duration
	for _, shape := range reqShapes {
		l := rc.lat[shape]
		if len(l) == 0 {
			continue
		}
		all = append(all, l...)
		s := summarize(l)
		res.add(prefix+shape+"_p50", "ms", ms(s.P50), "lower")
		res.add(prefix+shape+"_p99", "ms", ms(s.P99), "lower")
	}
	res.lat(prefix+"all", summarize(all))
	mm, cl := 0, 0
	for _, v := range rc.mismatches {
		mm += v
	}
	for _, v := range rc.closed {
		cl += v
	}
	res.check(prefix+"mismatches", mm)
	res.check(prefix+"closed", cl)
	for _, ex := range rc.examples {
		res.note("%s%s", prefix, ex)
	}
}

// queryAt returns the i-th query of the rotation over shapes.
func (e *env) queryAt(i int) *plannedQuery {
	shape := reqShapes[i%len(reqShapes)]
	qs := e.queries[shape]
	return &qs[(i/len(reqShapes))%len(qs)]
}

// reqConns is how many connections the concurrent REQs spread over:
// cfg.Conns, or under -auth-per-author one per corpus author (connection i
// authenticates as author i), as the ingest had.
func (e *env) reqConns() int {
	if e.cfg.AuthPerAuthor {
		return len(e.c.Authors)
	}
	return e.cfg.Conns
}

// runReq runs cfg.Reqs REQs sequentially on one connection, then cfg.Reqs
// spread over cfg.Conns connections.
func runReq(ctx context.Context, e *env) result {
	res := result{Scenario: "req"}
	if err := ensureLoaded(ctx, e); err != nil {
		res.note("%v", err)
		res.check("errors", 1)
		return res
	}
	for _, mode := range []struct {
		prefix string
		conns  int
	}{{"seq_", 1}, {"conc_", e.reqConns()}} {
		conns, err := e.dialMany(ctx, mode.conns, nil)
		if err != nil {
			res.note("dial: %v", err)
			res.check("errors", 1)
			return res
		}
		rc := newReqChecker()
		var next, done, errs atomic.Int64
		stop := e.progress.track("req "+strings.TrimSuffix(mode.prefix, "_"), &done, e.cfg.Reqs)
		start := time.Now()
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= e.cfg.Reqs || ctx.Err() != nil {
						return
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
		closeAll(conns)
		res.add(mode.prefix+"reqs_per_s", "req/s", float64(done.Load())/elapsed.Seconds(), "higher")
		rc.report(&res, mode.prefix)
		res.check(mode.prefix+"errors", int(errs.Load()))
	}
	res.note("%d REQs per mode, shapes %s; concurrent over %d connections", e.cfg.Reqs, strings.Join(reqShapes, ","), e.reqConns())
	return res
}

// runCount runs the planned COUNTs sequentially on one connection.
func runCount(ctx context.Context, e *env) result {
	res := result{Scenario: "count"}
	if err := ensureLoaded(ctx, e); err != nil {
		res.note("%v", err)
		res.check("errors", 1)
		return res
	}
	c, err := e.dial(ctx, 0)
	if err != nil {
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	defer c.Close()
	var lats []time.Duration
	mismatches, closed := 0, 0
	start := time.Now()
	for _, pc := range e.counts {
		if ctx.Err() != nil {
			break
		}
		n, lat, cl, err := c.count(ctx, pc.Filters)
		if err != nil {
			res.note("count: %v", err)
			res.check("errors", 1)
			return res
		}
		if cl != "" {
			closed++
			if closed == 1 {
				res.note("CLOSED %q (%s)", cl, pc.Shape)
			}
			continue
		}
		lats = append(lats, lat)
		if int(n) != pc.Want {
			mismatches++
			if mismatches <= 3 {
				res.note("%s: count %d, want %d", pc.Shape, n, pc.Want)
			}
		}
	}
	elapsed := time.Since(start)
	res.add("counts_per_s", "count/s", float64(len(lats))/elapsed.Seconds(), "higher")
	res.lat("count", summarize(lats))
	res.check("mismatches", mismatches)
	res.check("closed", closed)
	return res
}

// runVisible measures the time from OK to the event being returned by a REQ
// on another connection.
func runVisible(ctx context.Context, e *env) result {
	res := result{Scenario: "visible"}
	evs := e.takeExtras(e.cfg.Visible)
	pub, err := e.dial(ctx, 0)
	if err != nil {
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	defer pub.Close()
	q, err := e.dial(ctx, 1)
	if err != nil {
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	defer q.Close()
	var o outcomes
	var vis []time.Duration
	immediate, never, errs := 0, 0, 0
	var done atomic.Int64
	stop := e.progress.track("visible", &done, len(evs))
	for i := range evs {
		ev := &evs[i]
		r, _, err := pub.publish(ctx, ev.Ev.ID, ev.Raw, e.c.keyFor, ev.Ev.PubKey)
		if err != nil {
			errs++
			break
		}
		o.record(r)
		if !r.OK {
			continue
		}
		found := false
		deadline := r.At.Add(5 * time.Second)
		for attempt := 0; time.Now().Before(deadline) && ctx.Err() == nil; attempt++ {
			qr, err := q.query(ctx, []nostr.Filter{{IDs: []string{ev.Ev.ID}}})
			if err != nil {
				errs++
				break
			}
			if len(qr.IDs) == 1 {
				vis = append(vis, time.Since(r.At))
				found = true
				if attempt == 0 {
					immediate++
				}
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !found {
			never++
		}
		done.Add(1)
	}
	stop()
	res.lat("visible", summarize(vis))
	res.add("immediate", "%", 100*float64(immediate)/float64(max(1, len(vis))), "higher")
	res.check("not_visible_5s", never)
	res.check("errors", errs)
	o.report(&res, "")
	return res
}

// runFanout subscribes cfg.Subs connections to the live topic and
// publishes cfg.Publishes events one at a time, each after the previous one
// reached every subscriber (or 2 s passed).
func runFanout(ctx context.Context, e *env) result {
	return runFanoutAt(ctx, e, "fanout", func(int) string { return e.target.URL }, nil)
}

// runCrosspod is the fan-out of one deployment of several pods: the
// publisher on the relay under test (-url), subscriber i on
// cfg.SubURLs[i mod len], so every delivery crosses from the publisher's
// pod to another one (over the deployment's broker). The pods are one
// relay: a subscriber reaches its pod at the -sub-url address but names
// -url's host (Host header, AUTH relay tag), as behind a load balancer. Its figures are
// fanout's: delivery latency from the publisher's send to the EVENT's
// arrival at each subscriber, and every delivery missing after 2 s.
func runCrosspod(ctx context.Context, e *env) result {
	subs := e.cfg.SubURLs
	res := runFanoutAt(ctx, e, "crosspod", func(i int) string { return subs[i%len(subs)] },
		func(i int) dialOptions { return dialOptions{authKey: e.connKey(i), relayURL: e.target.URL} })
	res.note("publisher on %s; subscribers spread over %s", e.target.URL, strings.Join(subs, ", "))
	return res
}

// runFanoutAt is the fan-out scenario named name with subscriber i
// connected to subURL(i) and the publisher to the relay under test.
func runFanoutAt(ctx context.Context, e *env, name string, subURL func(i int) string, opts func(i int) dialOptions) result {
	res := result{Scenario: name}
	evs := e.takeExtras(e.cfg.Publishes)
	m := e.cfg.Subs
	if len(evs) == 0 {
		res.note("no live events left in the pool")
		res.check("errors", 1)
		return res
	}
	index := make(map[string]int, len(evs))
	for i := range evs {
		index[evs[i].Ev.ID] = i
	}
	recv := make([][]time.Time, m) // recv[s][i]: when subscriber s got event i
	dups := make([]int, m)
	got := make([]atomic.Int32, len(evs))
	all := make([]chan struct{}, len(evs))
	for i := range all {
		all[i] = make(chan struct{})
	}
	subs, err := e.dialManyAt(ctx, m, subURL, opts)
	if err != nil {
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	defer closeAll(subs)
	// Each subscriber reports its EOSE or CLOSED here; the handlers run on
	// the connections' read goroutines and must never block them (a
	// connection that ends reports CLOSED once more, after this function
	// may have stopped reading), so the sends do not wait.
	type subAnswer struct {
		s   int
		msg string // "" for EOSE
	}
	eose := make(chan subAnswer, 2*m)
	answer := func(a subAnswer) {
		select {
		case eose <- a:
		default:
		}
	}
	filter := nostr.Filter{Kinds: []int{1}, Tags: map[string][]string{"t": {e.c.LiveTopic}}, Limit: 0, LimitSet: true}
	handlers := make([]*subHandler, m)
	for s, c := range subs {
		recv[s] = make([]time.Time, len(evs))
		live := false // read goroutine only
		handlers[s] = &subHandler{
			event: func(id string, at time.Time) {
				i, ok := index[id]
				if !ok || !live {
					return
				}
				if !recv[s][i].IsZero() {
					dups[s]++
					return
				}
				recv[s][i] = at
				if int(got[i].Add(1)) == m {
					close(all[i])
				}
			},
			eose:   func(time.Time) { live = true; answer(subAnswer{s, ""}) },
			closed: func(msg string, _ time.Time) { answer(subAnswer{s, "CLOSED " + msg}) },
		}
		if err := c.subscribe("fan", []nostr.Filter{filter}, false, handlers[s]); err != nil {
			res.note("subscribe: %v", err)
			res.check("errors", 1)
			return res
		}
	}
	retried := make([]bool, m)
	for pending := m; pending > 0; {
		select {
		case a := <-eose:
			switch {
			case a.msg == "":
				pending--
			case strings.HasPrefix(a.msg, "CLOSED auth-required:") && !retried[a.s]:
				// The REQ overtook the answer to the relay's challenge (or
				// the challenge came late): authenticate, then ask again.
				retried[a.s] = true
				if err := subs[a.s].authenticate(ctx, *e.connKey(a.s)); err != nil {
					res.note("AUTH after %s: %v", a.msg, err)
					res.check("errors", 1)
					return res
				}
				if err := subs[a.s].subscribe("fan", []nostr.Filter{filter}, false, handlers[a.s]); err != nil {
					res.note("subscribe: %v", err)
					res.check("errors", 1)
					return res
				}
			default:
				res.note("subscription refused: %s", a.msg)
				res.check("errors", 1)
				return res
			}
		case <-time.After(10 * time.Second):
			res.note("no EOSE within 10s")
			res.check("errors", 1)
			return res
		case <-ctx.Done():
			res.check("errors", 1)
			return res
		}
	}
	pub, err := e.dial(ctx, 0)
	if err != nil {
		res.note("dial: %v", err)
		res.check("errors", 1)
		return res
	}
	var o outcomes
	sent := make([]time.Time, len(evs))
	var okLat, lastLat []time.Duration
	var done atomic.Int64
	stop := e.progress.track(name, &done, len(evs))
	for i := range evs {
		ev := &evs[i]
		r, t0, err := pub.publish(ctx, ev.Ev.ID, ev.Raw, e.c.keyFor, ev.Ev.PubKey)
		if err != nil {
			break
		}
		sent[i] = t0
		o.record(r)
		okLat = append(okLat, r.At.Sub(t0))
		select {
		case <-all[i]:
		case <-time.After(2 * time.Second): // counted as missing below
		case <-ctx.Done():
		}
		done.Add(1)
	}
	stop()
	// Stragglers and duplicates get a short grace period, then the
	// subscribers' connections are closed so their handlers stop.
	time.Sleep(200 * time.Millisecond)
	pub.Close()
	closeAll(subs)
	var lat []time.Duration
	missing, dup := 0, 0
	for s := range subs {
		dup += dups[s]
		for i := range evs {
			switch {
			case sent[i].IsZero():
			case recv[s][i].IsZero():
				missing++
			default:
				lat = append(lat, recv[s][i].Sub(sent[i]))
			}
		}
		for i := range evs {
			if !sent[i].IsZero() {
				continue
			}
			if !recv[s][i].IsZero() {
				dup++ // delivered without being published by us: cannot happen
			}
		}
	}
	for i := range evs {
		if sent[i].IsZero() {
			continue
		}
		var last time.Time
		for s := range subs {
			if recv[s][i].After(last) {
				last = recv[s][i]
			}
		}
		if !last.IsZero() {
			lastLat = append(lastLat, last.Sub(sent[i]))
		}
	}
	res.lat("deliver", summarize(lat))
	ls := summarize(lastLat)
	res.add("all_delivered_p50", "ms", ms(ls.P50), "lower")
	res.add("all_delivered_p99", "ms", ms(ls.P99), "lower")
	res.lat("ok", summarize(okLat))
	res.check("missing", missing)
	res.check("duplicates", dup)
	o.report(&res, "")
	res.note("%d subscribers, %d events published one at a time", m, len(evs))
	return res
}
