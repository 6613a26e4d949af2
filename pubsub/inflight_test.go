package pubsub

import (
	"context"
	"testing"
	"testing/synctest"
)

// TestInflight runs in a synctest bubble: synctest.Wait returns once the
// waiter is blocked, so "not woken yet" is observed, not waited out.
func TestInflight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := NewInflight()
		if err := f.WaitBegun(context.Background()); err != nil {
			t.Fatal(err)
		}
		a, b := f.Begin(), f.Begin()
		done := make(chan struct{})
		go func() {
			_ = f.WaitBegun(context.Background())
			close(done)
		}()
		synctest.Wait() // the waiter is registered and blocked
		c := f.Begin()  // begun after the waiter: not waited for
		f.End(b)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("woke while a was active")
		default:
		}
		f.End(a)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("not woken after a and b ended")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := f.WaitBegun(ctx); err == nil {
			t.Fatal("waitBegun ignored its context while c is active")
		}
		f.End(c)
		if err := f.WaitBegun(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
