package pubsub

import (
	"context"
	"testing"
	"time"
)

func TestInflight(t *testing.T) {
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
	for registered := false; !registered; {
		f.mu.Lock()
		registered = len(f.waiters) == 1
		f.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	c := f.Begin() // begun after the waiter: not waited for
	f.End(b)
	select {
	case <-done:
		t.Fatal("woke while a was active")
	case <-time.After(20 * time.Millisecond):
	}
	f.End(a)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
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
}
