package buzz

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
)

// noPanic is the onPanic of a function that must not panic.
func noPanic(t *testing.T) func(any) {
	return func(p any) { t.Errorf("unexpected panic: %v", p) }
}

// TestWorkersRecoverAPanic: a function that panics has its deferred calls
// run, then its onPanic gets the value, on the worker; the worker stays and
// runs the next function.
func TestWorkersRecoverAPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorkers(1)
		defer w.close()
		var order []string
		got := make(chan any, 1)
		w.do(func() {
			defer func() { order = append(order, "deferred") }()
			panic("boom")
		}, func(p any) {
			order = append(order, "onPanic")
			got <- p
		})
		eq(t, "onPanic's value", <-got, any("boom"))
		synctest.Wait()
		eq(t, "order", fmt.Sprint(order), "[deferred onPanic]")
		eq(t, "idle workers after the panic", w.idle.Load(), 1)
		ran := make(chan struct{})
		w.do(func() { close(ran) }, noPanic(t))
		<-ran
		synctest.Wait()
		eq(t, "idle workers after the next function", w.idle.Load(), 1)
	})
}

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
		w.do(func() { defer wg.Done(); close(a); <-b }, noPanic(t))
		w.do(func() { defer wg.Done(); <-a; close(b) }, noPanic(t))
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
			w.do(func() { defer wg.Done(); <-release }, noPanic(t))
		}
		close(release)
		wg.Wait()
		synctest.Wait()
		eq(t, "idle workers after five functions", w.idle.Load(), 2)
		// A later function runs on an idle worker: a new goroutine would
		// leave both idle.
		hold := make(chan struct{})
		w.do(func() { <-hold }, noPanic(t))
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
		w.do(func() { close(ran) }, noPanic(t))
		<-ran
	})
}
