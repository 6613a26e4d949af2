package buzz

import (
	"context"
	"sync"
)

// inflight tracks the EVENTs being ingested by this process, so that a
// subscription can tell when every event that might be in its stored-event
// query has also been published.
//
// Why: an event is saved, then published. A REQ registers its live
// subscription, queries the store, then switches to live delivery. An event
// whose Save committed before the query but whose Publish runs after the
// switch would be sent twice (by the query and live). So, after its query,
// a subscription waits until every ingest that began before the query ended
// has finished (published); only then does it drop the ids the query sent
// from its de-duplication set. An ingest that begins after the query ended
// commits after the query's snapshot, so it cannot be in the results.
//
// Tickets are consecutive, so the set of active ingests is a queue of
// "ended" flags whose front is the oldest active ticket: begin, end and the
// wake-ups are amortized O(1) whatever the number of ingests and waiters.
type inflight struct {
	mu      sync.Mutex
	base    uint64           // ticket of ended[0]; every ticket < base has ended
	ended   []bool           // ended[i]: ticket base+i has ended
	waiters []inflightWaiter // in increasing upTo order
}

type inflightWaiter struct {
	upTo uint64
	done chan struct{}
}

func newInflight() *inflight {
	return &inflight{base: 1}
}

// begin registers an ingest and returns its ticket for end.
func (f *inflight) begin() uint64 {
	f.mu.Lock()
	t := f.base + uint64(len(f.ended))
	f.ended = append(f.ended, false)
	f.mu.Unlock()
	return t
}

// end marks ticket t finished.
func (f *inflight) end(t uint64) {
	f.mu.Lock()
	f.ended[t-f.base] = true
	n := 0
	for n < len(f.ended) && f.ended[n] {
		n++
	}
	if n > 0 {
		f.ended = f.ended[n:]
		f.base += uint64(n)
		w := 0
		for w < len(f.waiters) && f.waiters[w].upTo < f.base {
			close(f.waiters[w].done)
			w++
		}
		f.waiters = f.waiters[w:]
	}
	f.mu.Unlock()
}

// waitBegun waits until every ingest begun so far has ended, or ctx ends.
func (f *inflight) waitBegun(ctx context.Context) error {
	f.mu.Lock()
	if len(f.ended) == 0 {
		f.mu.Unlock()
		return nil
	}
	w := inflightWaiter{upTo: f.base + uint64(len(f.ended)) - 1, done: make(chan struct{})}
	f.waiters = append(f.waiters, w)
	f.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
