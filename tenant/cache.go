package tenant

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Defaults of a CachingDirectory.
const (
	DefaultCacheTTL         = 10 * time.Second
	DefaultNegativeCacheTTL = time.Second
	DefaultCacheEntries     = 10_000
	DefaultLookupTimeout    = 5 * time.Second
)

// CachingDirectory is a Directory that remembers the answers of another one
// for a short time, so that resolving the Host of every connection and request
// does not cost a storage round trip.
//
// Promises:
//   - a mapped host is remembered for the positive TTL (default 10 s): a
//     removed or re-pointed host is seen within that time without Invalidate;
//   - an unmapped host is remembered for the negative TTL (default 1 s, 0
//     disables it), so a newly provisioned community becomes reachable within
//     that time on every process even if nobody calls Invalidate; it still
//     absorbs a flood of requests for one unknown host;
//   - a lookup error is never remembered: the next call asks again;
//   - concurrent lookups of the same host that miss share one backend call;
//   - at most MaxEntries hosts are held; when full, an expired entry (or
//     else an arbitrary one, negatives first) is evicted;
//   - Invalidate(host) takes effect at once: no lookup that started before it
//     can store its (possibly stale) answer afterwards.
//
// It is a map guarded by a mutex rather than ristretto: the working set is the
// number of communities (small), ristretto's asynchronous, lossy Set would make
// "Invalidate takes effect at once" and the TTL tests fuzzy, and it cannot use
// an injected clock. It is safe for concurrent use.
type CachingDirectory struct {
	next          Directory
	ttl           time.Duration
	negTTL        time.Duration
	maxEntries    int
	lookupTimeout time.Duration
	now           func() time.Time

	flight singleflight.Group

	mu      sync.Mutex
	entries map[string]cacheEntry
	gen     uint64 // bumped by Invalidate; a lookup stores only if unchanged
}

type cacheEntry struct {
	id      CommunityID // zero = unmapped
	expires time.Time
}

type cacheConfig struct {
	ttl, negTTL   time.Duration
	maxEntries    int
	lookupTimeout time.Duration
	now           func() time.Time
}

// CacheOption configures NewCachingDirectory.
type CacheOption func(*cacheConfig) error

// WithCacheTTL sets how long a mapped host is remembered; d must be in
// (0, 1h].
func WithCacheTTL(d time.Duration) CacheOption {
	return func(c *cacheConfig) error {
		if d <= 0 || d > time.Hour {
			return fmt.Errorf("tenant: cache TTL %v out of range (0, 1h]", d)
		}
		c.ttl = d
		return nil
	}
}

// WithNegativeCacheTTL sets how long an unmapped host is remembered; 0
// disables negative caching. d must be in [0, 1m] and not exceed the positive
// TTL.
func WithNegativeCacheTTL(d time.Duration) CacheOption {
	return func(c *cacheConfig) error {
		if d < 0 || d > time.Minute {
			return fmt.Errorf("tenant: negative cache TTL %v out of range [0, 1m]", d)
		}
		c.negTTL = d
		return nil
	}
}

// WithCacheEntries bounds the number of hosts held; n must be at least 1.
func WithCacheEntries(n int) CacheOption {
	return func(c *cacheConfig) error {
		if n < 1 {
			return fmt.Errorf("tenant: cache entries %d must be at least 1", n)
		}
		c.maxEntries = n
		return nil
	}
}

// WithLookupTimeout bounds one backend lookup. The lookup runs detached from
// the cancellation of the caller that started it (other callers may be
// waiting for the same answer) but under this timeout; d must be positive.
func WithLookupTimeout(d time.Duration) CacheOption {
	return func(c *cacheConfig) error {
		if d <= 0 {
			return fmt.Errorf("tenant: lookup timeout %v must be positive", d)
		}
		c.lookupTimeout = d
		return nil
	}
}

// WithCacheClock replaces time.Now, for tests; now must not be nil.
func WithCacheClock(now func() time.Time) CacheOption {
	return func(c *cacheConfig) error {
		if now == nil {
			return errors.New("tenant: cache clock must not be nil")
		}
		c.now = now
		return nil
	}
}

// NewCachingDirectory returns a CachingDirectory in front of next.
func NewCachingDirectory(next Directory, opts ...CacheOption) (*CachingDirectory, error) {
	if next == nil {
		return nil, errors.New("tenant: caching directory needs a backing directory")
	}
	cfg := cacheConfig{
		ttl:           DefaultCacheTTL,
		negTTL:        DefaultNegativeCacheTTL,
		maxEntries:    DefaultCacheEntries,
		lookupTimeout: DefaultLookupTimeout,
		now:           time.Now,
	}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("tenant: nil CacheOption")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.negTTL > cfg.ttl {
		return nil, fmt.Errorf("tenant: negative cache TTL %v exceeds positive TTL %v", cfg.negTTL, cfg.ttl)
	}
	return &CachingDirectory{
		next:          next,
		ttl:           cfg.ttl,
		negTTL:        cfg.negTTL,
		maxEntries:    cfg.maxEntries,
		lookupTimeout: cfg.lookupTimeout,
		now:           cfg.now,
		entries:       make(map[string]cacheEntry),
	}, nil
}

// LookupHost implements Directory. An unmapped host yields an error wrapping
// ErrUnmappedHost, whether it came from the backend or from the cache.
func (d *CachingDirectory) LookupHost(ctx context.Context, normalizedHost string) (CommunityID, error) {
	d.mu.Lock()
	e, ok := d.entries[normalizedHost]
	if ok && d.now().Before(e.expires) {
		d.mu.Unlock()
		if e.id.IsZero() {
			return CommunityID{}, ErrUnmappedHost
		}
		return e.id, nil
	}
	if ok {
		delete(d.entries, normalizedHost)
	}
	d.mu.Unlock()

	ch := d.flight.DoChan(normalizedHost, func() (any, error) {
		return d.fetch(ctx, normalizedHost)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return CommunityID{}, r.Err
		}
		return r.Val.(CommunityID), nil
	case <-ctx.Done():
		return CommunityID{}, ctx.Err()
	}
}

// fetch asks the backend and records the answer unless it is an error or an
// Invalidate happened meanwhile.
func (d *CachingDirectory) fetch(ctx context.Context, host string) (CommunityID, error) {
	d.mu.Lock()
	gen := d.gen
	d.mu.Unlock()

	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.lookupTimeout)
	defer cancel()
	id, err := d.next.LookupHost(lctx, host)
	unmapped := err == nil && id.IsZero() || errors.Is(err, ErrUnmappedHost)
	if err != nil && !unmapped {
		return CommunityID{}, err
	}
	if unmapped {
		id = CommunityID{}
		err = ErrUnmappedHost
	}
	ttl := d.ttl
	if unmapped {
		ttl = d.negTTL
	}
	if ttl > 0 {
		d.mu.Lock()
		if d.gen == gen {
			d.store(host, cacheEntry{id: id, expires: d.now().Add(ttl)})
		}
		d.mu.Unlock()
	}
	return id, err
}

// store inserts e, evicting one entry first if the cache is full. d.mu held.
func (d *CachingDirectory) store(host string, e cacheEntry) {
	if _, ok := d.entries[host]; !ok && len(d.entries) >= d.maxEntries {
		d.evictOne()
	}
	d.entries[host] = e
}

// evictOne removes an expired entry if one is among the first few the map
// yields, else a negative one, else the first. d.mu held.
func (d *CachingDirectory) evictOne() {
	const probe = 8
	now := d.now()
	victim, found, neg := "", false, false
	n := 0
	for h, e := range d.entries {
		if !now.Before(e.expires) {
			victim, found = h, true
			break
		}
		if !found || (!neg && e.id.IsZero()) {
			victim, found, neg = h, true, e.id.IsZero()
		}
		if n++; n >= probe {
			break
		}
	}
	if found {
		delete(d.entries, victim)
	}
}

// Invalidate forgets what is known about host (normalized with NormalizeHost
// first; a host that does not normalize is forgotten verbatim). Call it after
// creating, archiving or re-pointing a community. Lookups already in flight
// cannot store their answers; the next LookupHost asks the backend.
func (d *CachingDirectory) Invalidate(host string) {
	if n, err := NormalizeHost(host); err == nil {
		host = n
	}
	d.mu.Lock()
	d.gen++
	delete(d.entries, host)
	d.mu.Unlock()
	d.flight.Forget(host)
}

// Len returns the number of hosts currently held, expired or not.
func (d *CachingDirectory) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}
