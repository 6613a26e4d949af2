package buzz

import "sync/atomic"

// workers runs the relay's store reads (a REQ's replay, a COUNT) and its
// event ingestion on goroutines kept between uses. A fresh goroutine starts
// with a small stack, and a store read through SQLite (store/embedded runs
// modernc.org/sqlite, whose calls nest deeply) or an event's verification
// and save grows it several times, copying it each time: a fixed cost of
// every REQ and every EVENT that a goroutine kept from the last one does not
// pay again (2.4 % of the relay's CPU in a closed-loop ingest when each
// EVENT had a goroutine of its own). At most maxIdle goroutines wait for
// work; beyond that a goroutine that finished exits. A function given to do
// runs exactly as it would on its own goroutine: concurrently with the
// caller and with every other. workers is safe for concurrent use.
type workers struct {
	jobs    chan func() // unbuffered: a send succeeds only into an idle worker
	stop    chan struct{}
	idle    atomic.Int32
	maxIdle int32
}

// idleIngesters is how many goroutines that ingested an EVENT wait for the
// next one: as many as a few dozen connections with an event in flight each
// keep busy. A waiting goroutine keeps the stack an ingest grew it to until
// the collector shrinks it (halving it at each cycle while it waits).
const idleIngesters = 64

func newWorkers(maxIdle int) *workers {
	return &workers{jobs: make(chan func()), stop: make(chan struct{}), maxIdle: int32(max(1, maxIdle))}
}

// do runs f on an idle worker, or on a new goroutine when none is idle. It
// never waits for f.
func (w *workers) do(f func()) {
	select {
	case w.jobs <- f:
	default:
		go w.work(f)
	}
}

func (w *workers) work(f func()) {
	for {
		f()
		f = nil // not kept alive while idle
		if w.idle.Add(1) > w.maxIdle {
			w.idle.Add(-1)
			return
		}
		select {
		case f = <-w.jobs:
			w.idle.Add(-1)
		case <-w.stop:
			w.idle.Add(-1)
			return
		}
	}
}

// close ends the idle workers. A function given to do afterwards still
// runs; its goroutine then exits.
func (w *workers) close() {
	close(w.stop)
}
