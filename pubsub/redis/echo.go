package redis

import (
	"sync"
	"time"
)

// echoMarks remembers the messages this broker published, so that Redis's
// echo of each (a publisher subscribed to its own channel receives what it
// published) is dropped instead of delivered a second time. A mark lasts
// ttl or until its echo takes it, whichever comes first; at most size
// marks are kept, the oldest giving way to a new one.
//
// Marks are made in time order and share one TTL, so the oldest mark is
// always the first to expire: a queue of (key, expiry) in marking order
// bounds both age and count in constant time per mark, without a
// background goroutine, and the memory it holds follows the marks made in
// the last ttl rather than being set aside ahead of use (an admission
// cache's frequency sketch for 2^17 marks is several megabytes, whose
// first touches, page by page, fell on the first messages a pod relayed).
//
// It is safe for concurrent use.
type echoMarks struct {
	ttl  time.Duration
	size int
	now  func() time.Time

	mu    sync.Mutex
	live  map[string]int64 // key → expiry (Unix ns) of its mark
	queue []echoMark       // every mark made, oldest first; taken ones stay until popped
	head  int              // queue[:head] are popped
}

type echoMark struct {
	key string
	exp int64
}

// newEchoMarks returns an empty set of marks with at most size (≥ 1) live
// marks, each lasting ttl on the clock now.
func newEchoMarks(size int, ttl time.Duration, now func() time.Time) *echoMarks {
	return &echoMarks{ttl: ttl, size: size, now: now, live: map[string]int64{}}
}

// mark records key, replacing any earlier mark of it.
func (e *echoMarks) mark(key string) {
	t := e.now().UnixNano()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire(t)
	if _, again := e.live[key]; !again && len(e.live) >= e.size {
		e.evictOldest()
	}
	exp := t + int64(e.ttl)
	e.live[key] = exp
	e.queue = append(e.queue, echoMark{key, exp})
	if pending := len(e.queue) - e.head; pending > 2*e.size+64 {
		e.compact() // mostly marks taken by their echo: drop them
	}
}

// take removes key's mark and reports whether it had one that had not
// expired: the message is this broker's own echo.
func (e *echoMarks) take(key string) bool {
	e.mu.Lock()
	exp, ok := e.live[key]
	if ok {
		delete(e.live, key)
	}
	e.mu.Unlock()
	// Most messages are other pods': no mark, and no need for the time.
	return ok && exp > e.now().UnixNano()
}

// expire drops the marks whose expiry is at or before t. Called with mu held.
func (e *echoMarks) expire(t int64) {
	for e.head < len(e.queue) && e.queue[e.head].exp <= t {
		e.pop()
	}
}

// evictOldest drops the oldest live mark. Called with mu held.
func (e *echoMarks) evictOldest() {
	for e.head < len(e.queue) {
		if e.pop() {
			return
		}
	}
}

// pop removes the queue's oldest entry, and its mark when the entry is the
// mark's current one (not taken, not replaced by a later mark of the same
// key); it reports whether a mark went. Called with mu held.
func (e *echoMarks) pop() bool {
	m := e.queue[e.head]
	e.queue[e.head] = echoMark{} // release the key
	e.head++
	if e.head == len(e.queue) {
		e.queue, e.head = e.queue[:0], 0
	} else if e.head >= 1024 && e.head > len(e.queue)/2 {
		e.queue, e.head = append(e.queue[:0], e.queue[e.head:]...), 0
	}
	if exp, ok := e.live[m.key]; ok && exp == m.exp {
		delete(e.live, m.key)
		return true
	}
	return false
}

// compact drops the queue's entries whose mark is gone, keeping the order.
// Called with mu held.
func (e *echoMarks) compact() {
	kept := e.queue[:0]
	for _, m := range e.queue[e.head:] {
		if exp, ok := e.live[m.key]; ok && exp == m.exp {
			kept = append(kept, m)
		}
	}
	clear(e.queue[len(kept):])
	e.queue, e.head = kept, 0
}
