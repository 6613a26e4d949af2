package workflow

import (
	"context"
	"errors"
	"sync"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Feed is an in-process EventSource: the relay (or an embedder) calls
// Publish after an event is stored, the engine subscribes. A full buffer
// makes Publish wait (backpressure) rather than drop a trigger; an event
// whose delivery failed is delivered again to the next Subscribe.
type Feed struct {
	ch   chan feedItem
	mu   sync.Mutex // one subscriber at a time; guards head
	head *feedItem  // an event whose delivery failed
}

type feedItem struct {
	c  tenant.CommunityID
	ev *nostr.Event
}

// NewFeed returns a feed buffering up to buffer events (at least 1).
func NewFeed(buffer int) *Feed {
	return &Feed{ch: make(chan feedItem, max(buffer, 1))}
}

// Publish queues a stored event for the engine, waiting while the buffer
// is full until ctx ends.
func (f *Feed) Publish(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	select {
	case f.ch <- feedItem{c, ev}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Subscribe implements EventSource.
func (f *Feed) Subscribe(ctx context.Context, deliver func(context.Context, tenant.CommunityID, *nostr.Event) error) error {
	if !f.mu.TryLock() {
		return errors.New("workflow: feed already has a subscriber")
	}
	defer f.mu.Unlock()
	for {
		if f.head == nil {
			select {
			case it := <-f.ch:
				f.head = &it
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := deliver(ctx, f.head.c, f.head.ev); err != nil {
			return err
		}
		f.head = nil
	}
}
