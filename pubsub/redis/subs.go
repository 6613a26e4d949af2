package redis

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/tenant"
)

// Retain counts one more local interest in t (and in its community's control
// topic). The first Retain of a topic subscribes to it and, while Redis is
// healthy, waits up to the subscribe wait (WithSubscribeWait) for Redis to
// confirm, so that a subscriber registered after Retain returns misses no
// message published afterwards on another pod.
func (b *Broker) Retain(t pubsub.Topic) {
	if t.Community.IsZero() || b.closed.Load() {
		return
	}
	b.mu.Lock()
	st := b.retainLocked(b.topicChannel(t), t.Community, false)
	b.retainLocked(b.controlChannel(t.Community), t.Community, true)
	b.mu.Unlock()
	b.awaitSubscribed(st)
}

// Release undoes one Retain of t. When the count reaches zero the topic is
// unsubscribed after the unsubscribe delay, unless retained again meanwhile.
func (b *Broker) Release(t pubsub.Topic) {
	if t.Community.IsZero() || b.closed.Load() {
		return
	}
	b.mu.Lock()
	if b.releaseLocked(b.topicChannel(t)) {
		b.releaseLocked(b.controlChannel(t.Community))
	}
	b.mu.Unlock()
}

// RetainCommunity keeps c's control topic subscribed (for example while a
// connection bound to c is open without subscriptions). It waits for the
// subscription like Retain.
func (b *Broker) RetainCommunity(c tenant.CommunityID) {
	if c.IsZero() || b.closed.Load() {
		return
	}
	b.mu.Lock()
	st := b.retainLocked(b.controlChannel(c), c, true)
	b.mu.Unlock()
	b.awaitSubscribed(st)
}

// ReleaseCommunity undoes one RetainCommunity.
func (b *Broker) ReleaseCommunity(c tenant.CommunityID) {
	if c.IsZero() || b.closed.Load() {
		return
	}
	b.mu.Lock()
	b.releaseLocked(b.controlChannel(c))
	b.mu.Unlock()
}

func (b *Broker) retainLocked(name string, c tenant.CommunityID, isControl bool) *chanState {
	st := b.chans[name]
	if st == nil {
		st = &chanState{name: name, community: c, communityText: c.String(), control: isControl}
		b.chans[name] = st
		b.signal()
	}
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
	st.refs++
	return st
}

// releaseLocked drops one reference to name; it reports false (and logs)
// when name was not retained.
func (b *Broker) releaseLocked(name string) bool {
	st := b.chans[name]
	if st == nil || st.refs == 0 {
		b.log.Warn("release of a topic that is not retained", "channel", name)
		return false
	}
	st.refs--
	if st.refs > 0 {
		return true
	}
	if b.cfg.unsubscribeDelay == 0 {
		delete(b.chans, name)
		b.signal()
		return true
	}
	st.timer = b.cfg.afterFunc(b.cfg.unsubscribeDelay, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if st.refs == 0 && b.chans[name] == st {
			delete(b.chans, name)
			b.signal()
		}
	})
	return true
}

func (b *Broker) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// awaitSubscribed waits, bounded, until st is confirmed by Redis. It does not
// wait while the broker is unhealthy.
func (b *Broker) awaitSubscribed(st *chanState) {
	if b.cfg.subscribeWait == 0 || !b.healthy.Load() {
		return
	}
	b.mu.Lock()
	if st.subscribed {
		b.mu.Unlock()
		return
	}
	if st.waiters == nil {
		st.waiters = make(chan struct{})
	}
	w := st.waiters
	b.mu.Unlock()
	t := time.NewTimer(b.cfg.subscribeWait)
	defer t.Stop()
	select {
	case <-w:
	case <-t.C:
		b.log.Warn("subscription not confirmed in time", "channel", st.name)
	}
}

// Subscribed reports whether t is currently subscribed in Redis (confirmed).
func (b *Broker) Subscribed(t pubsub.Topic) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	st := b.chans[b.topicChannel(t)]
	return st != nil && st.subscribed
}

// run owns the subscription connection: it (re)connects with backoff,
// subscribes every desired channel and keeps Redis in step with the desired
// set until the broker closes.
func (b *Broker) run(ctx context.Context) {
	defer close(b.done)
	backoff := b.cfg.reconnectMin
	first := true
	for ctx.Err() == nil {
		connected, err := b.session(ctx)
		b.setDisconnected()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			b.lastErr.Store(&err)
		}
		if connected {
			backoff = b.cfg.reconnectMin
			b.log.Warn("redis subscription connection lost; reconnecting", "err", err)
		} else if first {
			b.log.Warn("redis unreachable; retrying", "err", err, "backoff", backoff)
		}
		first = false
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if !connected {
			backoff = min(backoff*2, b.cfg.reconnectMax)
		}
	}
}

// setDisconnected marks the broker unhealthy and every channel unsubscribed,
// releasing Retain callers that wait.
func (b *Broker) setDisconnected() {
	b.healthy.Store(false)
	b.mu.Lock()
	for _, st := range b.chans {
		st.subscribed = false
		if st.waiters != nil {
			close(st.waiters)
			st.waiters = nil
		}
	}
	b.mu.Unlock()
}

// session runs one subscription connection until it fails or ctx ends.
// connected reports whether it got as far as being healthy.
func (b *Broker) session(ctx context.Context) (connected bool, err error) {
	dc, release := b.client.Dedicate()
	defer release()
	lost := dc.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: b.onMessage})
	defer dc.SetPubSubHooks(rueidis.PubSubHooks{})
	if err := dc.Do(ctx, dc.B().Ping().Build()).Error(); err != nil {
		return false, err
	}
	if err := b.warmUp(ctx); err != nil {
		return false, err
	}
	active := make(map[string]struct{})
	for {
		if err := b.reconcile(ctx, dc, active); err != nil {
			return connected, err
		}
		if !connected {
			connected = true
			b.healthy.Store(true)
			b.lastErr.Store(nil)
			select {
			case <-b.ready:
			default:
				close(b.ready)
			}
			if len(active) > 0 {
				b.log.Info("redis subscriptions restored", "channels", len(active))
			}
		}
		select {
		case <-ctx.Done():
			return connected, ctx.Err()
		case err, ok := <-lost:
			if !ok || err == nil {
				err = errors.New("subscription connection closed")
			}
			return connected, err
		case <-b.wake:
		}
	}
}

// reconcile brings the connection's subscriptions (active) in line with the
// desired channels.
func (b *Broker) reconcile(ctx context.Context, dc rueidis.DedicatedClient, active map[string]struct{}) error {
	var subs, unsubs []string
	b.mu.Lock()
	for name, st := range b.chans {
		if _, ok := active[name]; !ok {
			subs = append(subs, name)
		} else if !st.subscribed {
			b.confirmLocked(st) // re-retained while still subscribed
		}
	}
	for name := range active {
		if _, ok := b.chans[name]; !ok {
			unsubs = append(unsubs, name)
		}
	}
	b.mu.Unlock()
	for len(subs) > 0 {
		n := min(len(subs), defaultSubscribeBatchSize)
		batch := subs[:n]
		subs = subs[n:]
		if err := dc.Do(ctx, dc.B().Subscribe().Channel(batch...).Build()).Error(); err != nil {
			return err
		}
		b.mu.Lock()
		for _, name := range batch {
			active[name] = struct{}{}
			if st := b.chans[name]; st != nil {
				b.confirmLocked(st)
			}
		}
		b.mu.Unlock()
	}
	for len(unsubs) > 0 {
		n := min(len(unsubs), defaultSubscribeBatchSize)
		batch := unsubs[:n]
		unsubs = unsubs[n:]
		if err := dc.Do(ctx, dc.B().Unsubscribe().Channel(batch...).Build()).Error(); err != nil {
			return err
		}
		for _, name := range batch {
			delete(active, name)
		}
	}
	return nil
}

// confirmLocked marks st subscribed and releases its waiters.
func (b *Broker) confirmLocked(st *chanState) {
	st.subscribed = true
	if st.waiters != nil {
		close(st.waiters)
		st.waiters = nil
	}
}

// warmUp makes sure the shared client's pipelined connections work again
// before the broker reports healthy: after an outage the first command on a
// connection broken meanwhile may fail once while rueidis replaces it.
func (b *Broker) warmUp(ctx context.Context) error {
	var err error
	for range 4 {
		if err = b.client.Do(ctx, b.client.B().Ping().Build()).Error(); err == nil {
			return nil
		}
	}
	return err
}
