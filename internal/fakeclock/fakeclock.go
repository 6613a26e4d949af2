// Package fakeclock is a clock for tests that moves only when the test
// moves it, for code that takes its time from an injected func() time.Time.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a settable time. Its methods are safe for concurrent use, so
// the code under test may read it from other goroutines while the test
// advances it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a Clock showing t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time; pass the method value (c.Now) where code
// takes a func() time.Time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d (backward when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}
