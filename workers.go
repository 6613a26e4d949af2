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
// caller and with every other; a panic in it is recovered by the worker and
// handed to the function's own onPanic (what serving it on a goroutine of
// its own would have done: close its connection, end its stream), and the
// worker carries on. workers is safe for concurrent use.
type workers struct {
	jobs    chan job // unbuffered: a send succeeds only into an idle worker
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
	return &workers{jobs: make(chan job), stop: make(chan struct{}), maxIdle: int32(max(1, maxIdle))}
}

// job is a function given to do, with what to do if it panics.
type job struct {
	f       func()
	onPanic func(p any)
}

// do runs f on an idle worker, or on a new goroutine when none is idle. It
// never waits for f. If f panics, onPanic gets the panic's value once f's
// deferred calls have run, on the same goroutine.
func (w *workers) do(f func(), onPanic func(p any)) {
	j := job{f: f, onPanic: onPanic}
	select {
	case w.jobs <- j:
	default:
		go w.work(j)
	}
}

func (w *workers) work(j job) {
	for {
		j.run()
		j = job{} // not kept alive while idle
		if w.idle.Add(1) > w.maxIdle {
			w.idle.Add(-1)
			return
		}
		select {
		case j = <-w.jobs:
			w.idle.Add(-1)
		case <-w.stop:
			w.idle.Add(-1)
			return
		}
	}
}

// run calls f, recovering a panic into onPanic.
func (j job) run() {
	defer func() {
		if p := recover(); p != nil {
			j.onPanic(p)
		}
	}()
	j.f()
}

// close ends the idle workers. A function given to do afterwards still
// runs; its goroutine then exits.
func (w *workers) close() {
	close(w.stop)
}
