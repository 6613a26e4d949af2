package pubsub

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by Publish on a closed Broker.
var ErrClosed = errors.New("pubsub: broker closed")

// Local is a Broker for a single process.
//
// Publish delivers synchronously: it calls every registered listener in the
// publisher's goroutine and returns when all have returned. That is safe
// because the Broker contract requires listeners not to block (the relay's
// listener only matches the event against the Index and enqueues it on each
// connection's bounded outbound queue, dropping slow readers), and it gives
// the publisher backpressure-free, allocation-free fan-out with no extra
// goroutine or queue to size. A listener that panics is recovered and logged;
// the other listeners still receive the message.
//
// Every message goes to every listener whatever the retained topics: in one
// process the publisher is always an interested party. Retain and Release
// only count (see Retained), so the relay can use Local and a distributed
// broker the same way.
//
// Close stops delivery: Publish after Close returns ErrClosed and delivers
// nothing; a Publish already running when Close is called may finish
// delivering. Local is safe for concurrent use.
type Local struct {
	log *slog.Logger

	listeners atomic.Pointer[[]*listener] // copy-on-write, read by Publish
	closed    atomic.Bool

	mu       sync.Mutex // serializes listener changes and guards retained
	retained map[Topic]int
}

type listener struct {
	fn      func(Message)
	stopped atomic.Bool
}

type localConfig struct {
	log *slog.Logger
}

// LocalOption configures NewLocal.
type LocalOption func(*localConfig) error

// WithLocalLogger sets the logger that reports recovered listener panics;
// the default is slog.Default(). l must not be nil.
func WithLocalLogger(l *slog.Logger) LocalOption {
	return func(c *localConfig) error {
		if l == nil {
			return errors.New("pubsub: nil logger")
		}
		c.log = l
		return nil
	}
}

// NewLocal returns an in-process Broker.
func NewLocal(opts ...LocalOption) (*Local, error) {
	cfg := localConfig{log: slog.Default()}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("pubsub: nil LocalOption")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	b := &Local{log: cfg.log, retained: make(map[Topic]int)}
	b.listeners.Store(&[]*listener{})
	return b, nil
}

// Publish delivers msg to every listener before returning. It fails only if
// the broker is closed or ctx is already done.
func (b *Local) Publish(ctx context.Context, msg Message) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, l := range *b.listeners.Load() {
		if b.closed.Load() {
			return ErrClosed
		}
		if !l.stopped.Load() {
			b.deliver(l, msg)
		}
	}
	return nil
}

func (b *Local) deliver(l *listener, msg Message) {
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("pubsub: listener panicked", "panic", r)
		}
	}()
	l.fn(msg)
}

// Listen registers fn for every message published from now on. The returned
// stop unregisters it; after stop returns fn is not called again by a Publish
// that starts later (one already running may still call it). stop is
// idempotent. On a closed broker Listen registers nothing. A nil fn is
// ignored.
func (b *Local) Listen(fn func(Message)) (stop func()) {
	if fn == nil || b.closed.Load() {
		return func() {}
	}
	l := &listener{fn: fn}
	b.mu.Lock()
	old := *b.listeners.Load()
	next := make([]*listener, len(old), len(old)+1)
	copy(next, old)
	next = append(next, l)
	b.listeners.Store(&next)
	b.mu.Unlock()

	var once sync.Once
	return func() {
		once.Do(func() {
			l.stopped.Store(true)
			b.mu.Lock()
			defer b.mu.Unlock()
			old := *b.listeners.Load()
			next := make([]*listener, 0, len(old))
			for _, x := range old {
				if x != l {
					next = append(next, x)
				}
			}
			b.listeners.Store(&next)
		})
	}
}

// Retain counts one more interest in t.
func (b *Local) Retain(t Topic) {
	b.mu.Lock()
	b.retained[t]++
	b.mu.Unlock()
}

// Release counts one less interest in t; releasing a topic that is not
// retained does nothing.
func (b *Local) Release(t Topic) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch n := b.retained[t]; {
	case n > 1:
		b.retained[t] = n - 1
	case n == 1:
		delete(b.retained, t)
	}
}

// Retained returns how many times t is currently retained.
func (b *Local) Retained(t Topic) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.retained[t]
}

// Close stops delivery and unregisters every listener. It is idempotent and
// always returns nil.
func (b *Local) Close() error {
	b.closed.Store(true)
	b.mu.Lock()
	b.listeners.Store(&[]*listener{})
	b.mu.Unlock()
	return nil
}

var _ Broker = (*Local)(nil)
