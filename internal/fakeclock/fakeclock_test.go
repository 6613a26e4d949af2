package fakeclock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/fakeclock"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := fakeclock.New(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now() = %v, want %v", c.Now(), start)
	}
	c.Advance(90 * time.Second)
	if want := start.Add(90 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after Advance: %v, want %v", c.Now(), want)
	}
	c.Set(start.Add(-time.Hour))
	if want := start.Add(-time.Hour); !c.Now().Equal(want) {
		t.Fatalf("after Set: %v, want %v", c.Now(), want)
	}
}

func TestClockConcurrent(t *testing.T) {
	c := fakeclock.New(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		}()
	}
	wg.Wait()
	if got, want := c.Now(), time.Unix(4, 0); !got.Equal(want) {
		t.Fatalf("after 4,000 advances of 1 ms: %v, want %v", got, want)
	}
}
