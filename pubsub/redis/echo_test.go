package redis

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/fakeclock"
)

func newTestMarks(size int, ttl time.Duration) (*echoMarks, *fakeclock.Clock) {
	clk := fakeclock.New(time.Unix(1_700_000_000, 0))
	return newEchoMarks(size, ttl, clk.Now), clk
}

func TestEchoMarksTakeOnce(t *testing.T) {
	e, _ := newTestMarks(8, time.Minute)
	e.mark("a")
	if !e.has("a") {
		t.Fatal("a mark is not there right after it was made")
	}
	if !e.take("a") {
		t.Fatal("the echo of a marked message was not recognised")
	}
	if e.take("a") {
		t.Fatal("a mark was taken twice: a second copy would be dropped")
	}
	if e.take("b") {
		t.Fatal("a message never marked was taken for an echo")
	}
}

func TestEchoMarksExpire(t *testing.T) {
	e, clk := newTestMarks(8, time.Minute)
	e.mark("a")
	clk.Advance(30 * time.Second)
	e.mark("b")
	clk.Advance(30 * time.Second) // a's mark ends now; b's lives 30 s more
	if e.has("a") || e.take("a") {
		t.Fatal("a mark outlived its TTL")
	}
	if !e.has("b") {
		t.Fatal("a mark ended before its TTL")
	}
	e.mark("c") // making a mark drops the expired ones
	if n := e.len(); n != 2 {
		t.Fatalf("%d marks held after a expired, want 2 (b, c)", n)
	}
	clk.Advance(time.Hour)
	e.mark("d")
	if n := e.len(); n != 1 {
		t.Fatalf("%d marks held an hour later, want 1 (d)", n)
	}
}

func TestEchoMarksBoundEvictsOldest(t *testing.T) {
	e, clk := newTestMarks(3, time.Minute)
	for _, k := range []string{"a", "b", "c", "d"} {
		e.mark(k)
		clk.Advance(time.Second)
	}
	if n := e.len(); n != 3 {
		t.Fatalf("%d marks held, want the bound 3", n)
	}
	if e.has("a") {
		t.Fatal("the oldest mark survived a new one past the bound")
	}
	for _, k := range []string{"b", "c", "d"} {
		if !e.has(k) {
			t.Fatalf("mark %s was evicted instead of the oldest", k)
		}
	}
	// A taken mark leaves room: the next mark evicts nothing.
	e.take("c")
	e.mark("e")
	for _, k := range []string{"b", "d", "e"} {
		if !e.has(k) {
			t.Fatalf("mark %s gone although a taken mark had left room", k)
		}
	}
}

func TestEchoMarksRemarkRenews(t *testing.T) {
	e, clk := newTestMarks(3, time.Minute)
	e.mark("a")
	clk.Advance(50 * time.Second)
	e.mark("a") // published again: its mark lasts a full TTL from now
	e.mark("b")
	clk.Advance(20 * time.Second)
	e.mark("c") // drops what expired by now: a's first mark, not its renewal
	if !e.has("a") {
		t.Fatal("a renewed mark expired with its first TTL")
	}
	e.mark("d") // bound 3: evicts the oldest live mark, a (renewed before b)
	if e.has("a") || !e.has("b") || !e.has("c") || !e.has("d") {
		t.Fatalf("after the bound: a %v b %v c %v d %v, want false true true true",
			e.has("a"), e.has("b"), e.has("c"), e.has("d"))
	}
}

// Marks taken by their echo (the common case) leave entries behind in the
// queue; those must not grow it past a small multiple of the bound.
func TestEchoMarksQueueStaysBounded(t *testing.T) {
	const size = 100
	e, _ := newTestMarks(size, time.Hour)
	for i := range 100_000 {
		k := fmt.Sprint(i)
		e.mark(k)
		if !e.take(k) {
			t.Fatalf("mark %d not taken", i)
		}
	}
	e.mu.Lock()
	pending := len(e.queue) - e.head
	e.mu.Unlock()
	if pending > 2*size+64 {
		t.Fatalf("%d queue entries held for 0 live marks (bound %d)", pending, size)
	}
	// Live marks survive the compactions in between (size-1 of them, so
	// that each transient mark stays within the bound).
	for i := range size - 1 {
		e.mark(fmt.Sprint("live", i))
		for j := range 5 * size {
			e.mark(fmt.Sprint("gone", i, "/", j))
			e.take(fmt.Sprint("gone", i, "/", j))
		}
	}
	for i := range size - 1 {
		if !e.has(fmt.Sprint("live", i)) {
			t.Fatalf("live mark %d lost in a compaction", i)
		}
	}
}

func TestEchoMarksConcurrent(t *testing.T) {
	e, clk := newTestMarks(64, time.Second)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2_000 {
				k := fmt.Sprint(w, "/", i)
				e.mark(k)
				if i%3 == 0 {
					e.take(k)
				}
				if i%500 == 0 {
					clk.Advance(300 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	if n := e.len(); n > 64 {
		t.Fatalf("%d marks held, bound 64", n)
	}
}

// has reports whether key has a live mark, without taking it.
func (e *echoMarks) has(key string) bool {
	t := e.now().UnixNano()
	e.mu.Lock()
	exp, ok := e.live[key]
	e.mu.Unlock()
	return ok && exp > t
}

// len is the number of marks held (live or expired but not yet dropped).
func (e *echoMarks) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.live)
}
