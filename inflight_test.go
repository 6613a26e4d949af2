package buzz

import (
	"context"
	"testing"
	"time"
)

func TestInflight(t *testing.T) {
	f := newInflight()
	if err := f.waitBegun(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, b := f.begin(), f.begin()
	done := make(chan struct{})
	go func() {
		_ = f.waitBegun(context.Background())
		close(done)
	}()
	for registered := false; !registered; {
		f.mu.Lock()
		registered = len(f.waiters) == 1
		f.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	c := f.begin() // begun after the waiter: not waited for
	f.end(b)
	select {
	case <-done:
		t.Fatal("woke while a was active")
	case <-time.After(20 * time.Millisecond):
	}
	f.end(a)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken after a and b ended")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.waitBegun(ctx); err == nil {
		t.Fatal("waitBegun ignored its context while c is active")
	}
	f.end(c)
	if err := f.waitBegun(context.Background()); err != nil {
		t.Fatal(err)
	}
}
