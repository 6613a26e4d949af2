package nostr

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// maxBatch bounds the signatures verified together; past a few dozen the
// shared doublings are a small part of the cost and a failed batch costs
// its callers more.
const maxBatch = 64

// sigItem is one signature of a batch, its key lifted.
type sigItem struct {
	key *liftedKey
	msg [32]byte
	sig [64]byte
}

// VerifyBatch checks each event as Verify does and returns its result at
// the same index: nil, ErrIDMismatch or ErrBadSignature. The signatures
// are checked together with BIP-340 batch verification (in the pure-Go
// build; the libsecp256k1 build checks them one by one), which for a few
// or more signatures costs less per signature than Verify; a batch that
// fails is checked signature by signature, so each event gets its own
// answer.
func (v *Verifier) VerifyBatch(events []*Event) []error {
	errs := make([]error, len(events))
	scratch := v.batches.getScratch()
	for start := 0; start < len(events); start += maxBatch {
		end := min(start+maxBatch, len(events))
		v.verifyEvents(events[start:end], errs[start:end], scratch)
	}
	v.batches.putScratch(scratch)
	return errs
}

// batchScratch is a batch's working memory. It is pooled per Verifier
// (batcher.scratch), not kept with a call: there are as many calls as
// events in flight, but only as many batches at once as leaders.
type batchScratch struct {
	items []sigItem
	index []int // items[k] belongs to events[index[k]]
	sig   sigScratch
	// VerifyConcurrent's leader: the calls it answers, their events and
	// results.
	waiting []*verifyCall
	batch   []*Event
	errs    []error
}

// getScratch returns a batch's working memory from the pool.
func (b *batcher) getScratch() *batchScratch {
	if s, ok := b.scratch.Get().(*batchScratch); ok {
		return s
	}
	return new(batchScratch)
}

// putScratch returns s to the pool, dropping its references to events,
// keys and calls.
func (b *batcher) putScratch(s *batchScratch) {
	clear(s.items[:cap(s.items)])
	clear(s.waiting[:cap(s.waiting)])
	clear(s.batch[:cap(s.batch)])
	b.scratch.Put(s)
}

// verifyEvents sets errs[i] to the result of Verify(events[i]).
func (v *Verifier) verifyEvents(events []*Event, errs []error, s *batchScratch) {
	s.items, s.index = s.items[:0], s.index[:0]
	for i, e := range events {
		it, err := v.sigItemOf(e)
		if errs[i] = err; err != nil {
			continue
		}
		s.items = append(s.items, it)
		s.index = append(s.index, i)
	}
	if len(s.items) == 0 {
		return
	}
	if len(s.items) > 1 && !v.batches.failing.Load() && v.verifySigs(s.items, &s.sig) {
		return
	}
	// One signature, or at least one bad signature in the batch (or in a
	// recent one): check them one by one. Until a batch checked this way
	// turns out clean, later batches are checked this way too, so a
	// sender of bad signatures cannot make every batch cost twice.
	clean := true
	for k := range s.items {
		it := &s.items[k]
		if !v.verifySig(it.key, &it.msg, &it.sig) {
			errs[s.index[k]] = ErrBadSignature
			clean = false
		}
	}
	v.batches.failing.Store(!clean)
}

// VerifyConcurrent checks e as Verify does, sharing the work with the
// calls that run at the same time (a relay's connections): the calls that
// arrive while GOMAXPROCS batches are being checked wait and are checked
// together, as VerifyBatch does, by the next call to lead a batch. A call
// that leads yields the processor once before it starts, so that calls
// ready to run can join it. Without concurrent calls it costs Verify plus
// that yield. In the libsecp256k1 build, which has no batch
// verification, it is Verify.
func (v *Verifier) VerifyConcurrent(e *Event) error {
	if !batchVerification {
		return v.Verify(e)
	}
	b := &v.batches
	c := b.calls.Get().(*verifyCall)
	c.event, c.err = e, nil
	b.mu.Lock()
	lead := b.leaders < runtime.GOMAXPROCS(0)
	if lead {
		b.leaders++
	} else {
		b.queue = append(b.queue, c)
	}
	b.mu.Unlock()
	if lead || <-c.done {
		v.lead(c)
	}
	err := c.err
	c.event = nil
	b.calls.Put(c)
	return err
}

// batcher coalesces VerifyConcurrent calls into batches.
type batcher struct {
	mu      sync.Mutex
	queue   []*verifyCall // waiting, oldest first
	leaders int           // calls checking a batch now
	calls   sync.Pool     // of *verifyCall
	scratch sync.Pool     // of *batchScratch
	failing atomic.Bool   // the last batch checked one by one had a bad signature
}

// verifyCall is one VerifyConcurrent call.
type verifyCall struct {
	event *Event
	err   error
	// done receives false when another call has checked this one, true
	// when this call is to lead the next batch.
	done chan bool
}

// shift returns the queue without its first k calls, in the same array,
// the vacated slots cleared. b.mu must be held.
func (b *batcher) shift(k int) []*verifyCall {
	n := copy(b.queue, b.queue[k:])
	clear(b.queue[n:])
	return b.queue[:n]
}

func newVerifyCall() any { return &verifyCall{done: make(chan bool, 1)} }

// lead checks self and the calls queued behind it (up to maxBatch in all)
// as one batch, answers them, and hands the lead to the oldest call still
// queued, if any.
func (v *Verifier) lead(self *verifyCall) {
	b := &v.batches
	runtime.Gosched()
	sc := b.getScratch()
	b.mu.Lock()
	k := min(len(b.queue), maxBatch-1)
	sc.waiting = append(sc.waiting[:0], b.queue[:k]...)
	b.queue = b.shift(k)
	b.mu.Unlock()

	sc.batch = append(sc.batch[:0], self.event)
	for _, c := range sc.waiting {
		sc.batch = append(sc.batch, c.event)
	}
	sc.errs = slices.Grow(sc.errs[:0], len(sc.batch))[:len(sc.batch)]
	v.verifyEvents(sc.batch, sc.errs, sc)
	self.err = sc.errs[0]
	for i, c := range sc.waiting {
		c.err = sc.errs[i+1]
		c.done <- false
	}
	b.putScratch(sc)

	b.mu.Lock()
	if len(b.queue) == 0 {
		b.leaders--
		b.mu.Unlock()
		return
	}
	next := b.queue[0]
	b.queue = b.shift(1)
	b.mu.Unlock()
	next.done <- true
}
