package ratelimit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Memory is an in-process sliding-window Limiter for a single relay process.
// It is exact: it keeps the time of every admitted action inside the window.
// Keys idle for longer than their window are swept periodically, so memory is
// bounded by the active keys.
type Memory struct {
	tiers Tiers
	now   func() time.Time

	mu      sync.Mutex
	windows map[Key]*window
	ops     int
}

type window struct {
	times []time.Time // admitted actions, oldest first
	span  time.Duration
}

const sweepEvery = 4096

// MemoryOption configures a Memory limiter.
type MemoryOption func(*Memory) error

// WithClock replaces time.Now (for tests).
func WithClock(now func() time.Time) MemoryOption {
	return func(m *Memory) error {
		if now == nil {
			return errors.New("ratelimit: nil clock")
		}
		m.now = now
		return nil
	}
}

// NewMemory returns an in-process limiter applying tiers.
func NewMemory(tiers Tiers, opts ...MemoryOption) (*Memory, error) {
	if err := tiers.Validate(); err != nil {
		return nil, err
	}
	m := &Memory{tiers: tiers, now: time.Now, windows: make(map[Key]*window)}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("ratelimit: nil option")
		}
		if err := o(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Allow admits and records the action when fewer than the rule's limit were
// admitted in the window ending now.
func (m *Memory) Allow(_ context.Context, k Key) (Decision, error) {
	if err := k.Validate(); err != nil {
		return Decision{}, err
	}
	r, err := m.tiers.Rule(k)
	if err != nil {
		return Decision{}, err
	}
	id := k
	id.Tier = "" // the tier selects the rule, it is not part of the identity
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops++
	if m.ops >= sweepEvery {
		m.ops = 0
		m.sweep(now)
	}
	w := m.windows[id]
	if w == nil {
		w = &window{}
		m.windows[id] = w
	}
	w.span = r.Window
	cut := 0
	for cut < len(w.times) && !w.times[cut].After(now.Add(-r.Window)) {
		cut++
	}
	if cut > 0 {
		w.times = append(w.times[:0], w.times[cut:]...)
	}
	if len(w.times) >= r.Limit {
		retry := w.times[len(w.times)-r.Limit].Add(r.Window).Sub(now)
		return Decision{Limit: r.Limit, RetryAfter: max(retry, time.Millisecond)}, nil
	}
	w.times = append(w.times, now)
	return Decision{Allowed: true, Limit: r.Limit, Remaining: r.Limit - len(w.times)}, nil
}

// sweep drops windows whose newest action is older than their span.
func (m *Memory) sweep(now time.Time) {
	for k, w := range m.windows {
		if len(w.times) == 0 || !w.times[len(w.times)-1].After(now.Add(-w.span)) {
			delete(m.windows, k)
		}
	}
}
