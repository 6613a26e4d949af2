// Package ttlcache is the one small cache Buzz's lookups share: a bounded
// ristretto cache (admission by frequency, eviction by cost) whose entries
// expire by an injected clock, with deletions that win over lookups racing
// them.
//
// It must not import anything of Buzz: it is a building block of channel
// (channels, roles, community policies) and of the relay's per-community
// signing keys.
package ttlcache

import (
	"errors"
	"sync"
	"time"

	"github.com/dgraph-io/ristretto/v2"
)

// Config configures a Cache.
type Config struct {
	// MaxEntries bounds the entries held (each costs 1); default 100,000.
	// The admission sketches are sized for it at New, about 44 bytes per
	// entry whether used or not (4.4 MB at the default), and count as live
	// heap, which the collector paces itself by: a cache of few keys (one
	// per community, say), or of short-lived entries, should say so.
	MaxEntries int64
	// TTL is how long an entry is served after it was stored, by Now; 0:
	// entries never expire (they are still evicted when the cache is full).
	TTL time.Duration
	// Now is the clock entries expire by (default time.Now).
	Now func() time.Time
}

// Cache maps keys to values for at most Config.TTL. Set is asynchronous
// and may be dropped (ristretto's admission policy): a Get right after a
// Set may miss, never return a value other than one stored for the key.
// Del takes effect at once: no Load that began before it stores its
// (possibly stale) answer afterwards. It is safe for concurrent use, Close
// included; Close releases its goroutines.
type Cache[K ristretto.Key, V any] struct {
	r   *ristretto.Cache[K, entry[V]]
	ttl time.Duration
	now func() time.Time

	// mu orders Load's check-and-store against Del's bump-and-delete, and
	// every use against Close (ristretto must not be used while closing).
	mu     sync.RWMutex
	gen    uint64 // bumped by every Del
	closed bool
}

type entry[V any] struct {
	v   V
	exp time.Time // zero: never
}

// New returns an empty cache.
func New[K ristretto.Key, V any](cfg Config) (*Cache[K, V], error) {
	if cfg.MaxEntries < 0 || cfg.TTL < 0 {
		return nil, errors.New("ttlcache: MaxEntries and TTL must not be negative")
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 100_000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r, err := ristretto.NewCache(&ristretto.Config[K, entry[V]]{
		NumCounters:        10 * cfg.MaxEntries,
		MaxCost:            cfg.MaxEntries,
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, err
	}
	return &Cache[K, V]{r: r, ttl: cfg.TTL, now: cfg.Now}, nil
}

// Get returns the value stored for k, unless it expired.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.RLock()
	var e entry[V]
	ok := !c.closed
	if ok {
		e, ok = c.r.Get(k)
	}
	c.mu.RUnlock()
	if !ok || !e.exp.IsZero() && !c.now().Before(e.exp) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Set stores v for k.
func (c *Cache[K, V]) Set(k K, v V) {
	c.mu.RLock()
	c.set(k, v)
	c.mu.RUnlock()
}

func (c *Cache[K, V]) set(k K, v V) {
	if c.closed {
		return
	}
	e := entry[V]{v: v}
	if c.ttl > 0 {
		e.exp = c.now().Add(c.ttl)
	}
	// ristretto's own TTL (wall clock) only reclaims the memory of expired
	// entries; expiry as callers see it is Get's check by c.now.
	c.r.SetWithTTL(k, e, 1, c.ttl)
}

// Load returns the value for k, calling fetch on a miss and storing what it
// returns, unless fetch fails or a Del ran meanwhile (then the
// answer is returned but not kept).
func (c *Cache[K, V]) Load(k K, fetch func() (V, error)) (V, error) {
	if v, ok := c.Get(k); ok {
		return v, nil
	}
	c.mu.RLock()
	gen := c.gen
	c.mu.RUnlock()
	v, err := fetch()
	if err != nil {
		return v, err
	}
	c.mu.RLock()
	if c.gen == gen {
		c.set(k, v)
	}
	c.mu.RUnlock()
	return v, nil
}

// Del drops k's entry.
func (c *Cache[K, V]) Del(k K) {
	c.mu.Lock()
	c.gen++
	if !c.closed {
		c.r.Del(k)
	}
	c.mu.Unlock()
}

// Wait blocks until every Set so far was applied (or dropped); tests use it
// to read their own writes.
func (c *Cache[K, V]) Wait() {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.closed {
		c.r.Wait()
	}
}

// Close stops the cache's goroutines and drops every entry. A closed cache
// may still be used: it holds nothing (Get misses, Set does nothing).
func (c *Cache[K, V]) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.r.Close()
	}
}
