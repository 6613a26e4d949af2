package tenant

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/buzzrelay/buzz/internal/fakeclock"
)

// countingDirectory is a mutable in-memory directory that counts lookups and
// can hold them at a gate.
type countingDirectory struct {
	mu      sync.Mutex
	hosts   map[string]CommunityID
	err     error
	calls   atomic.Int64
	gate    chan struct{} // when non-nil, each lookup waits for a receive
	entered chan struct{}
}

func (d *countingDirectory) LookupHost(ctx context.Context, host string) (CommunityID, error) {
	d.calls.Add(1)
	if d.entered != nil {
		d.entered <- struct{}{}
	}
	if d.gate != nil {
		select {
		case <-d.gate:
		case <-ctx.Done():
			return CommunityID{}, ctx.Err()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return CommunityID{}, d.err
	}
	id, ok := d.hosts[host]
	if !ok {
		return CommunityID{}, ErrUnmappedHost
	}
	return id, nil
}

func (d *countingDirectory) set(host string, id CommunityID, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id.IsZero() {
		delete(d.hosts, host)
	} else {
		d.hosts[host] = id
	}
	d.err = err
}

func newTestCache(t *testing.T, next Directory, opts ...CacheOption) (*CachingDirectory, *fakeclock.Clock) {
	t.Helper()
	clk := fakeclock.New(time.Unix(1_700_000_000, 0))
	c, err := NewCachingDirectory(next, append([]CacheOption{WithCacheClock(clk.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

func TestCachingDirectoryOptions(t *testing.T) {
	next := &countingDirectory{hosts: map[string]CommunityID{}}
	bad := [][]CacheOption{
		{WithCacheTTL(0)},
		{WithCacheTTL(-time.Second)},
		{WithCacheTTL(2 * time.Hour)},
		{WithNegativeCacheTTL(-1)},
		{WithNegativeCacheTTL(2 * time.Minute)},
		{WithCacheTTL(time.Second), WithNegativeCacheTTL(2 * time.Second)},
		{WithCacheEntries(0)},
		{WithLookupTimeout(0)},
		{WithCacheClock(nil)},
		{nil},
	}
	for i, opts := range bad {
		if c, err := NewCachingDirectory(next, opts...); err == nil || c != nil {
			t.Errorf("case %d: accepted invalid options", i)
		}
	}
	if _, err := NewCachingDirectory(nil); err == nil {
		t.Error("accepted a nil backing directory")
	}
	if _, err := NewCachingDirectory(next, WithNegativeCacheTTL(0), WithCacheTTL(time.Minute), WithCacheEntries(1)); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

func TestCachingDirectoryTTL(t *testing.T) {
	a, b := NewCommunityID(), NewCommunityID()
	next := &countingDirectory{hosts: map[string]CommunityID{"a.example": a}}
	c, clk := newTestCache(t, next) // defaults: 10 s positive, 1 s negative
	ctx := context.Background()

	for range 3 {
		if id, err := c.LookupHost(ctx, "a.example"); err != nil || id != a {
			t.Fatalf("lookup: %v %v", id, err)
		}
	}
	if n := next.calls.Load(); n != 1 {
		t.Fatalf("backend calls = %d, want 1", n)
	}
	// Re-pointed in the backend: still the cached answer before the TTL ...
	next.set("a.example", b, nil)
	clk.Advance(DefaultCacheTTL - time.Millisecond)
	if id, _ := c.LookupHost(ctx, "a.example"); id != a {
		t.Fatalf("entry expired early")
	}
	// ... and the new one after it.
	clk.Advance(time.Millisecond)
	if id, _ := c.LookupHost(ctx, "a.example"); id != b {
		t.Fatalf("entry not expired at TTL")
	}
	if n := next.calls.Load(); n != 2 {
		t.Fatalf("backend calls = %d, want 2", n)
	}

	// Negative answers: cached briefly, then a newly created community shows up.
	calls := next.calls.Load()
	for range 3 {
		if _, err := c.LookupHost(ctx, "new.example"); !errors.Is(err, ErrUnmappedHost) {
			t.Fatalf("unmapped: %v", err)
		}
	}
	if n := next.calls.Load() - calls; n != 1 {
		t.Fatalf("negative lookups reached the backend %d times, want 1", n)
	}
	next.set("new.example", a, nil)
	clk.Advance(DefaultNegativeCacheTTL)
	if id, err := c.LookupHost(ctx, "new.example"); err != nil || id != a {
		t.Fatalf("new community not reachable after negative TTL: %v %v", id, err)
	}
}

func TestCachingDirectoryNegativeDisabled(t *testing.T) {
	next := &countingDirectory{hosts: map[string]CommunityID{}}
	c, _ := newTestCache(t, next, WithNegativeCacheTTL(0))
	for range 3 {
		if _, err := c.LookupHost(context.Background(), "x.example"); !errors.Is(err, ErrUnmappedHost) {
			t.Fatal(err)
		}
	}
	if n := next.calls.Load(); n != 3 {
		t.Fatalf("backend calls = %d, want 3 (negative caching disabled)", n)
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0", c.Len())
	}
}

func TestCachingDirectoryErrorsNotCached(t *testing.T) {
	a := NewCommunityID()
	boom := errors.New("database unavailable")
	next := &countingDirectory{hosts: map[string]CommunityID{"a.example": a}, err: boom}
	c, _ := newTestCache(t, next)
	ctx := context.Background()
	for range 2 {
		if _, err := c.LookupHost(ctx, "a.example"); !errors.Is(err, boom) {
			t.Fatalf("want backend error, got %v", err)
		}
	}
	if n := next.calls.Load(); n != 2 {
		t.Fatalf("errors were cached: backend calls = %d, want 2", n)
	}
	next.set("a.example", a, nil)
	if id, err := c.LookupHost(ctx, "a.example"); err != nil || id != a {
		t.Fatalf("after recovery: %v %v", id, err)
	}
}

func TestCachingDirectoryInvalidate(t *testing.T) {
	a := NewCommunityID()
	next := &countingDirectory{hosts: map[string]CommunityID{}}
	c, _ := newTestCache(t, next, WithNegativeCacheTTL(5*time.Second))
	ctx := context.Background()
	if _, err := c.LookupHost(ctx, "new.example"); !errors.Is(err, ErrUnmappedHost) {
		t.Fatal(err)
	}
	next.set("new.example", a, nil)
	c.Invalidate("New.Example.:443") // normalized before removal
	if id, err := c.LookupHost(ctx, "new.example"); err != nil || id != a {
		t.Fatalf("after Invalidate: %v %v", id, err)
	}
}

// A lookup in flight when Invalidate is called must not store its stale answer.
func TestCachingDirectoryInvalidateDuringLookup(t *testing.T) {
	a := NewCommunityID()
	next := &countingDirectory{
		hosts:   map[string]CommunityID{},
		gate:    make(chan struct{}),
		entered: make(chan struct{}, 1),
	}
	c, _ := newTestCache(t, next, WithNegativeCacheTTL(5*time.Second))
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := c.LookupHost(ctx, "new.example")
		done <- err
	}()
	<-next.entered // the lookup is inside the backend, about to answer "unmapped"
	c.Invalidate("new.example")
	next.gate <- struct{}{}
	if err := <-done; !errors.Is(err, ErrUnmappedHost) {
		t.Fatalf("held lookup: %v", err)
	}
	// Provisioned meanwhile; the held lookup's answer must not have been kept.
	next.set("new.example", a, nil)
	next.gate = nil // no lookup is running now
	id, err := c.LookupHost(ctx, "new.example")
	if err != nil || id != a {
		t.Fatalf("stale negative answer was cached across Invalidate: %v %v", id, err)
	}
	if n := next.calls.Load(); n != 2 {
		t.Fatalf("backend calls = %d, want 2", n)
	}
}

// TestCachingDirectorySingleflight runs in a synctest bubble: once one
// backend call is held, synctest.Wait returns only when every other lookup
// is blocked, joined to that call, so all n share it.
func TestCachingDirectorySingleflight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := NewCommunityID()
		next := &countingDirectory{
			hosts:   map[string]CommunityID{"a.example": a},
			gate:    make(chan struct{}),
			entered: make(chan struct{}, 64),
		}
		c, _ := newTestCache(t, next)
		const n = 50
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				id, err := c.LookupHost(context.Background(), "a.example")
				if err == nil && id != a {
					err = errors.New("wrong id")
				}
				errs <- err
			})
		}
		<-next.entered // one backend call is in progress
		synctest.Wait()
		close(next.gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := next.calls.Load(); got != 1 {
			t.Fatalf("backend calls = %d, want 1", got)
		}
	})
}

// A waiter whose context ends returns at once, without cancelling the shared
// lookup for the others.
func TestCachingDirectoryCallerCancel(t *testing.T) {
	a := NewCommunityID()
	next := &countingDirectory{
		hosts:   map[string]CommunityID{"a.example": a},
		gate:    make(chan struct{}),
		entered: make(chan struct{}, 4),
	}
	c, _ := newTestCache(t, next)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.LookupHost(ctx, "a.example")
		first <- err
	}()
	<-next.entered
	second := make(chan error, 1)
	go func() {
		id, err := c.LookupHost(context.Background(), "a.example")
		if err == nil && id != a {
			err = errors.New("wrong id")
		}
		second <- err
	}()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(next.gate)
	if err := <-second; err != nil {
		t.Fatalf("other caller: %v", err)
	}
}

func TestCachingDirectoryBounded(t *testing.T) {
	next := &countingDirectory{hosts: map[string]CommunityID{}}
	hosts := []string{"a.example", "b.example", "c.example", "d.example", "e.example"}
	for _, h := range hosts {
		next.hosts[h] = NewCommunityID()
	}
	c, clk := newTestCache(t, next, WithCacheEntries(3))
	ctx := context.Background()
	for i, h := range hosts {
		if _, err := c.LookupHost(ctx, h); err != nil {
			t.Fatal(err)
		}
		if c.Len() > 3 {
			t.Fatalf("after %d inserts Len = %d > 3", i+1, c.Len())
		}
		clk.Advance(time.Millisecond)
	}
	// Answers stay correct whatever was evicted.
	for _, h := range hosts {
		if id, err := c.LookupHost(ctx, h); err != nil || id != next.hosts[h] {
			t.Fatalf("%s: %v %v", h, id, err)
		}
	}
}

func TestCachingDirectoryWithBind(t *testing.T) {
	a := NewCommunityID()
	next := &countingDirectory{hosts: map[string]CommunityID{"a.example": a}}
	c, _ := newTestCache(t, next)
	tc, err := Bind(context.Background(), c, "A.Example:443")
	if err != nil || tc.Community() != a {
		t.Fatalf("Bind via cache: %v %v", tc.Community(), err)
	}
	_, err = Bind(context.Background(), c, "b.example")
	if !errors.Is(err, ErrUnmappedHost) || err.Error() != ErrUnmappedHost.Error() {
		t.Fatalf("unmapped via cache: %v", err)
	}
}
