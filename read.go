package buzz

import (
	"context"
	"errors"
	"fmt"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Every store read the relay makes for a client goes through this file:
// it waits its turn in the relay's fair queue (queryGate), runs under
// Limits.QueryTimeout and the caller's context (a subscription's, a
// COUNT's), and never holds a store connection while a client is slow to
// read — a REQ's stored events are read a bounded page at a time, the
// page's rows closed before any of it is sent.

// Page bounds of one read of a replay: at most pageRecords events and,
// beyond the first event, pageBytes of them.
const (
	pageRecords = 250
	pageBytes   = 1 << 20
)

// replayPresize is the most events a replay's buffers (its page, its
// frames, the ids it sent) are first sized for; a replay returning more
// grows them.
const replayPresize = 128

// getPage returns an empty page for up to want records, reused from the
// relay's pageBufs when it has one.
func (r *Relay) getPage(want int) []store.Record {
	if p, ok := r.pageBufs.Get().(*[]store.Record); ok {
		return (*p)[:0]
	}
	return make([]store.Record, 0, min(want, replayPresize))
}

// putPage empties page and keeps it for another read.
func (r *Relay) putPage(page []store.Record) {
	if cap(page) > pageRecords {
		return
	}
	clear(page[:cap(page)]) // no event held past its read
	page = page[:0]
	r.pageBufs.Put(&page)
}

// errQueryTimeout is a read that ran past Limits.QueryTimeout.
var errQueryTimeout = errors.New("buzz: query took too long")

// ReadCapacity may be implemented by the store given to WithStore
// (store/embedded and store/postgres do): ReadConcurrency is how many reads
// it serves at once, and sizes the relay's fair read queue when
// Limits.RelayQueryConcurrency is zero. Without it (or when it returns 0)
// the queue has 16 slots.
type ReadCapacity interface {
	ReadConcurrency() int
}

// CountBatcher may be implemented by the store given to WithStore
// (store/embedded and store/postgres do): CountEach answers what CountScoped
// would for each of sets, in order, in one round trip to the database. A
// COUNT that may match gift wraps counts up to three sets (see
// channel.CountGiftWrapped); without it they are counted one after another.
type CountBatcher interface {
	CountEach(ctx context.Context, c tenant.CommunityID, sets [][]nostr.Filter, scope channel.Scope) ([]int64, error)
}

// defaultReadSlots is the relay's read concurrency for a store that does
// not report one.
const defaultReadSlots = 16

// newReadGate sizes the relay's fair read queue from l and the store.
func newReadGate(l Limits, st store.EventStore) *queryGate {
	slots := l.RelayQueryConcurrency
	if slots == 0 {
		slots = defaultReadSlots
		if rc, ok := st.(ReadCapacity); ok && rc.ReadConcurrency() > 0 {
			slots = rc.ReadConcurrency()
		}
	}
	share := l.CommunityQueryShare
	if share == 0 {
		share = max(1, slots*3/4)
	}
	return newQueryGate(slots, share)
}

// bounded runs read as one store read of community c for owner (the
// connection, or any comparable value identifying the client): in turn
// through the read queue, under the query deadline. A read that ran past
// the deadline returns errQueryTimeout; one whose ctx ended, ctx's error.
func (r *Relay) bounded(ctx context.Context, c tenant.CommunityID, owner any, read func(ctx context.Context) error) error {
	if err := r.reads.acquire(ctx, c, owner); err != nil {
		return err
	}
	defer r.reads.release(c)
	rctx, cancel := context.WithTimeout(ctx, r.cfg.limits.QueryTimeout)
	defer cancel()
	err := read(rctx)
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", errQueryTimeout, err)
	}
	if err == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// countBounded counts each of sets (filters OR-ed, as one COUNT) as one
// bounded read.
func (r *Relay) countBounded(ctx context.Context, c tenant.CommunityID, owner any, sets [][]nostr.Filter, scope channel.Scope) ([]int64, error) {
	var ns []int64
	err := r.bounded(ctx, c, owner, func(ctx context.Context) error {
		var err error
		ns, err = r.countScoped(ctx, c, sets, scope)
		return err
	})
	return ns, err
}

// queryPaged reads the stored events of f (whose Limit is set) under
// scope, newest first, and hands them to send a page at a time, each page
// read by one bounded read whose rows are closed before send is called.
// A page continues from the created_at of the last event passed: the store
// orders the events of one second by id, so those of that second already
// passed come first again and are skipped. send returns false to stop.
// Every event is passed at most once.
func (r *Relay) queryPaged(ctx context.Context, c tenant.CommunityID, owner any, f nostr.Filter, scope channel.Scope, send func([]store.Record) bool) error {
	remaining := f.Limit
	var seen map[string]struct{} // ids passed, once a second page is read
	page := r.getPage(min(remaining, pageRecords))
	defer func() { r.putPage(page) }()
	var (
		cursor int64 // created_at of the last event passed
		ties   int   // events passed whose created_at is cursor
	)
	for first := true; remaining > 0; first = false {
		pf := f
		if !first {
			pf.Until = &cursor
		}
		want := min(remaining, pageRecords)
		pf.Limit = want + ties
		more := false
		err := r.bounded(ctx, c, owner, func(ctx context.Context) error {
			page, more = page[:0], false
			bytes := 0
			for rec, err := range r.queryScoped(ctx, c, pf, scope) {
				if err != nil {
					return err
				}
				if _, dup := seen[rec.ID]; dup {
					continue
				}
				page = append(page, rec)
				bytes += len(rec.Raw)
				if len(page) == want || bytes >= pageBytes {
					more = true
					return nil // stops the iteration: the rows are closed
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		remaining -= len(page)
		// Only a later page can return an event again: the last page's
		// ids (of most replays, the only page) need not be remembered.
		last := !more || remaining <= 0
		for _, rec := range page {
			if !last {
				if seen == nil {
					seen = make(map[string]struct{})
				}
				seen[rec.ID] = struct{}{}
			}
			if rec.CreatedAt != cursor {
				cursor, ties = rec.CreatedAt, 0
			}
			ties++
		}
		if len(page) > 0 && !send(page) {
			return nil
		}
		if !more {
			return nil // the store has no more
		}
	}
	return nil
}
