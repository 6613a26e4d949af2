package embedded

import (
	"context"
	"errors"
	"testing"
	"time"
)

// blockWriter occupies the single writer goroutine until release is closed,
// so requests submitted meanwhile stay queued.
func blockWriter(t *testing.T, s *Store) (release func(), finished <-chan error) {
	t.Helper()
	started := make(chan struct{})
	gate := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.submit(context.Background(), func(w *writer) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	return func() { close(gate) }, done
}

// A request whose context ends while it is still queued is abandoned: submit
// returns the context's error and the closure never runs, even after the
// writer frees up. (A closure that ran late raced with its caller's reads:
// the DeleteExpired data race.)
func TestSubmitAbandonedRequestNeverRuns(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	release, finished := blockWriter(t, s)
	ran := false
	sctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- s.submit(sctx, func(w *writer) error { ran = true; return nil })
	}()
	time.Sleep(20 * time.Millisecond) // let it queue (not required for correctness)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("submit = %v, want context.Canceled", err)
	}
	release()
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
	// A later write is processed after the abandoned one would have been.
	if err := s.submit(ctx, func(w *writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Fatal("the abandoned closure ran after submit returned")
	}
}

// A request the writer has already taken is waited for: submit returns only
// after the closure has finished, so what the closure wrote is safe to read.
func TestSubmitWaitsForTakenRequest(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	sctx, cancel := context.WithCancel(ctx)
	running := make(chan struct{})
	var n int64
	errc := make(chan error, 1)
	go func() {
		errc <- s.submit(sctx, func(w *writer) error {
			close(running)
			time.Sleep(50 * time.Millisecond)
			n = 42
			return nil
		})
	}()
	<-running
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("submit = %v, want the committed result (nil)", err)
	}
	if n != 42 {
		t.Fatalf("closure result not visible after submit returned: n = %d", n)
	}
}
