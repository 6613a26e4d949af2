package buzz

import (
	"sync"
	"testing"
	"testing/synctest"
)

// The workers' tests run in synctest bubbles: synctest.Wait returns once
// every worker has parked or exited, so what each test observes is the
// state the workers settle in, with no polling.

func TestWorkersRunConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorkers(1)
		defer w.close()
		// Each function waits for the other: they finish only if do runs
		// them at the same time, and do never waits for one. Otherwise the
		// bubble deadlocks and synctest fails the test.
		a, b := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		w.do(func() { defer wg.Done(); close(a); <-b })
		w.do(func() { defer wg.Done(); <-a; close(b) })
		wg.Wait()
	})
}

func TestWorkersKeepAtMostMaxIdleAndReuseThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorkers(2)
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			w.do(func() { defer wg.Done(); <-release })
		}
		close(release)
		wg.Wait()
		synctest.Wait()
		eq(t, "idle workers after five functions", w.idle.Load(), 2)
		// A later function runs on an idle worker: a new goroutine would
		// leave both idle.
		hold := make(chan struct{})
		w.do(func() { <-hold })
		synctest.Wait()
		eq(t, "idle workers while one runs a function", w.idle.Load(), 1)
		close(hold)
		synctest.Wait()
		eq(t, "idle workers once it returned", w.idle.Load(), 2)
		w.close()
		synctest.Wait()
		eq(t, "idle workers after close", w.idle.Load(), 0)
		// A function given after close still runs.
		ran := make(chan struct{})
		w.do(func() { close(ran) })
		<-ran
	})
}
