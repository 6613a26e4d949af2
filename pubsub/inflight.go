package pubsub

import (
	"context"
	"sync"
)

// Inflight is the stored-to-live handoff of a frontend: it tracks the
// EVENTs being ingested by this process, so that a subscription can tell
// when every event that might be in its stored-event query has also been
// published. Every frontend of one process shares one Inflight: each write
// brackets its ingest (store and publish) with Begin and End, and each REQ,
// after its stored query, calls WaitBegun before it forgets the ids the
// query sent.
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
// "ended" flags whose front is the oldest active ticket: Begin, End and the
// wake-ups are amortized O(1) whatever the number of ingests and waiters.
type Inflight struct {
	mu      sync.Mutex
	base    uint64           // ticket of ended[0]; every ticket < base has ended
	ended   []bool           // ended[i]: ticket base+i has ended
	waiters []inflightWaiter // in increasing upTo order
}

type inflightWaiter struct {
	upTo uint64
	done chan struct{}
}

// NewInflight returns an Inflight with no ingest in flight. It is safe for
// concurrent use.
func NewInflight() *Inflight {
	return &Inflight{base: 1}
}

// Begin registers an ingest and returns its ticket for End.
func (f *Inflight) Begin() uint64 {
	f.mu.Lock()
	t := f.base + uint64(len(f.ended))
	f.ended = append(f.ended, false)
	f.mu.Unlock()
	return t
}

// End marks ticket t finished.
func (f *Inflight) End(t uint64) {
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

// WaitBegun waits until every ingest begun so far has ended, or ctx ends.
func (f *Inflight) WaitBegun(ctx context.Context) error {
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
