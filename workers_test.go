package buzz

import (
	"sync"
	"testing"
	"time"
)

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWorkersRunConcurrently(t *testing.T) {
	w := newWorkers(1)
	defer w.close()
	// Each function waits for the other: they finish only if do runs them
	// at the same time, and do never waits for one.
	a, b := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	w.do(func() { defer wg.Done(); close(a); <-b })
	w.do(func() { defer wg.Done(); <-a; close(b) })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("functions given to do did not run concurrently")
	}
}

func TestWorkersKeepAtMostMaxIdleAndReuseThem(t *testing.T) {
	w := newWorkers(2)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		w.do(func() { defer wg.Done(); <-release })
	}
	close(release)
	wg.Wait()
	eventually(t, "two idle workers", func() bool { return w.idle.Load() == 2 })
	// A later function runs on an idle worker (once one is parked waiting:
	// until then do starts a goroutine, which ends after the function as
	// two are idle already).
	reused := false
	for try := 0; try < 100 && !reused; try++ {
		hold := make(chan struct{})
		w.do(func() { <-hold })
		for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if w.idle.Load() == 1 {
				reused = true
				break
			}
		}
		close(hold)
		eventually(t, "two idle workers again", func() bool { return w.idle.Load() == 2 })
	}
	if !reused {
		t.Fatal("no function given to do ran on an idle worker")
	}
	w.close()
	eventually(t, "idle workers to end after close", func() bool { return w.idle.Load() == 0 })
	// A function given after close still runs.
	ran := make(chan struct{})
	w.do(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a function given after close did not run")
	}
}
