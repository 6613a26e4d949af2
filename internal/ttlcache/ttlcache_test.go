package ttlcache

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/fakeclock"
)

func newCache(t *testing.T, ttl time.Duration, clk *fakeclock.Clock) *Cache[string, int] {
	t.Helper()
	c, err := New[string, int](Config{TTL: ttl, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestTTLByInjectedClock(t *testing.T) {
	clk := fakeclock.New(time.Unix(1_000_000, 0))
	c := newCache(t, 2*time.Second, clk)
	c.Set("a", 1)
	c.Wait()
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get after Set = %v, %v", v, ok)
	}
	clk.Advance(1999 * time.Millisecond)
	if _, ok := c.Get("a"); !ok {
		t.Fatal("entry expired before its TTL")
	}
	clk.Advance(time.Millisecond)
	if _, ok := c.Get("a"); ok {
		t.Fatal("entry served at its TTL")
	}
}

func TestNoTTLNeverExpires(t *testing.T) {
	clk := fakeclock.New(time.Unix(1_000_000, 0))
	c := newCache(t, 0, clk)
	c.Set("k", 7)
	c.Wait()
	clk.Advance(1000 * time.Hour)
	if v, ok := c.Get("k"); !ok || v != 7 {
		t.Fatalf("Get = %v, %v", v, ok)
	}
}

func TestLoad(t *testing.T) {
	clk := fakeclock.New(time.Unix(1_000_000, 0))
	c := newCache(t, time.Minute, clk)
	calls := 0
	fetch := func() (int, error) { calls++; return 42, nil }
	for range 3 {
		v, err := c.Load("x", fetch)
		if err != nil || v != 42 {
			t.Fatalf("Load = %v, %v", v, err)
		}
		c.Wait()
	}
	if calls != 1 {
		t.Fatalf("fetch called %d times, want 1", calls)
	}
	boom := errors.New("boom")
	if _, err := c.Load("y", func() (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("Load error = %v", err)
	}
	c.Wait()
	if _, ok := c.Get("y"); ok {
		t.Fatal("a failed fetch was remembered")
	}
}

func TestDelWinsOverRacingLoad(t *testing.T) {
	clk := fakeclock.New(time.Unix(1_000_000, 0))
	c := newCache(t, time.Minute, clk)
	c.Set("k", 1)
	c.Wait()
	c.Del("k")
	if _, ok := c.Get("k"); ok {
		t.Fatal("Get after Del found the entry")
	}
	// A Load whose fetch read the old state before the Del must not store it.
	v, err := c.Load("k", func() (int, error) {
		c.Del("k") // the invalidation lands while the lookup is in flight
		return 1, nil
	})
	if err != nil || v != 1 {
		t.Fatalf("Load = %v, %v", v, err)
	}
	c.Wait()
	if _, ok := c.Get("k"); ok {
		t.Fatal("a Load racing a Del stored its stale answer")
	}
}

func TestConcurrentUse(t *testing.T) {
	clk := fakeclock.New(time.Unix(1_000_000, 0))
	c := newCache(t, time.Second, clk)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 500 {
				k := string(rune('a' + (i+j)%26))
				_, _ = c.Load(k, func() (int, error) { return j, nil })
				if j%7 == 0 {
					c.Del(k)
				}
				if j%50 == 0 {
					clk.Advance(100 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
}

func TestConfigValidated(t *testing.T) {
	if _, err := New[string, int](Config{TTL: -1}); err == nil {
		t.Fatal("negative TTL accepted")
	}
	if _, err := New[string, int](Config{MaxEntries: -1}); err == nil {
		t.Fatal("negative MaxEntries accepted")
	}
}

func TestUseAfterClose(t *testing.T) {
	clk := fakeclock.New(time.Unix(1_000_000, 0))
	c, err := New[string, int](Config{TTL: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	c.Set("a", 1)
	c.Wait()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 1000 {
			c.Set("a", i)
			c.Del("b")
			_, _ = c.Load("c", func() (int, error) { return i, nil })
		}
	})
	c.Close()
	wg.Wait()
	c.Close() // idempotent
	c.Wait()
	if _, ok := c.Get("a"); ok {
		t.Fatal("a closed cache returned an entry")
	}
}
