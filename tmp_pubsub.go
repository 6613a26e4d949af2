package buzz

// TEMPORARY: stands in for pubsub.Index and pubsub.NewLocal until the pubsub
// package provides them. To be deleted.

import (
	"context"
	"sync"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/tenant"
)

type tmpSubscription struct {
	Owner   any
	ID      string
	Filters []nostr.Filter
}

type tmpKey struct {
	owner any
	id    string
}

type tmpIndex struct {
	mu   sync.RWMutex
	subs map[tenant.CommunityID]map[tmpKey]tmpSubscription
}

func tmpNewIndex() *tmpIndex {
	return &tmpIndex{subs: make(map[tenant.CommunityID]map[tmpKey]tmpSubscription)}
}

func (x *tmpIndex) Add(c tenant.CommunityID, s tmpSubscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.subs[c]
	if m == nil {
		m = make(map[tmpKey]tmpSubscription)
		x.subs[c] = m
	}
	m[tmpKey{s.Owner, s.ID}] = s
}

func (x *tmpIndex) Remove(c tenant.CommunityID, owner any, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.subs[c], tmpKey{owner, id})
}

func (x *tmpIndex) RemoveOwner(c tenant.CommunityID, owner any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k := range x.subs[c] {
		if k.owner == owner {
			delete(x.subs[c], k)
		}
	}
}

func (x *tmpIndex) Match(c tenant.CommunityID, ev *nostr.Event, fn func(tmpSubscription)) {
	x.mu.RLock()
	var out []tmpSubscription
	for _, s := range x.subs[c] {
		for i := range s.Filters {
			if s.Filters[i].Matches(ev) {
				out = append(out, s)
				break
			}
		}
	}
	x.mu.RUnlock()
	for _, s := range out {
		fn(s)
	}
}

type tmpLocal struct {
	mu  sync.RWMutex
	fns map[int]func(pubsub.Message)
	n   int
}

func tmpNewLocal() pubsub.Broker { return &tmpLocal{fns: make(map[int]func(pubsub.Message))} }

func (b *tmpLocal) Publish(_ context.Context, m pubsub.Message) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, fn := range b.fns {
		fn(m)
	}
	return nil
}

func (b *tmpLocal) Listen(fn func(pubsub.Message)) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	id := b.n
	b.fns[id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.fns, id)
	}
}

func (b *tmpLocal) Retain(pubsub.Topic)  {}
func (b *tmpLocal) Release(pubsub.Topic) {}
func (b *tmpLocal) Close() error         { return nil }
