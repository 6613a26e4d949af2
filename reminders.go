package buzz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store"
)

// NIP-ER reminders (kind 30300): due-time delivery.
//
// A reminder is admitted by package ingest (its public tags, the horizon
// Limits.MaxNotBeforeDelta) and read only by its author (package channel,
// the private kinds). When one is stored with a not_before still ahead,
// ingest schedules it in the store (store.ReminderStore, a table indexed by
// due time). The reminder sweeper of every relay sharing the store claims
// the reminders that fell due — a claim holds each for one relay at a time
// — and publishes each through the broker, like a live event, to the
// author's open subscriptions on every pod: the due signal of NIP-ER's
// push mode ("limitation.due_delivery_mode": "push"). The signal is the
// stored event itself, sent again; it is sent only while the reminder is
// still its address's latest version (a replacement, a deletion or
// expiry cancels it), and once: a claim is finished when published, and
// only a relay that ended before publishing leaves it to be claimed again
// after its lease.

// reminderLease is how long a claimed reminder is held by the relay that
// claimed it before another may claim it again.
const reminderLease = 30 * time.Second

// reminderStore returns the store's ReminderStore, nil when it keeps none.
func reminderStore(s store.EventStore) store.ReminderStore {
	rs, _ := s.(store.ReminderStore)
	return rs
}

// sweepReminders delivers due reminders every ReminderSweepInterval until
// ctx ends.
func (r *Relay) sweepReminders(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(r.cfg.limits.ReminderSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := r.DeliverDueReminders(ctx); err != nil && ctx.Err() == nil {
				r.log.ErrorContext(ctx, "buzz: reminder sweep", "err", err)
			}
		}
	}
}

// DeliverDueReminders sends, once, every reminder due at the relay's clock
// (WithClock) that no relay sharing the store has delivered, to its
// author's open subscriptions on every pod (through the broker), and
// returns how many it sent. The reminder sweeper calls it every
// Limits.ReminderSweepInterval; a caller may call it at any time. It does
// nothing when the store keeps no reminders.
func (r *Relay) DeliverDueReminders(ctx context.Context) (int, error) {
	rs := reminderStore(r.cfg.store)
	if rs == nil {
		return 0, nil
	}
	sent := 0
	for {
		due, err := rs.ClaimDueReminders(ctx, r.cfg.now(), reminderLease, store.MaxReminderClaim)
		if err != nil {
			return sent, err
		}
		var errs []error
		for _, d := range due {
			ok, err := r.deliverReminder(ctx, rs, d)
			if err != nil {
				errs = append(errs, err)
			} else if ok {
				sent++
			}
		}
		if err := errors.Join(errs...); err != nil || len(due) < store.MaxReminderClaim {
			return sent, err
		}
	}
}

// deliverReminder publishes one claimed reminder when it is still its
// address's latest stored version, then finishes the claim. A publish
// failure leaves the claim to be retried after its lease.
func (r *Relay) deliverReminder(ctx context.Context, rs store.ReminderStore, d store.DueReminder) (bool, error) {
	ev, raw, err := r.currentReminder(ctx, d)
	if err != nil {
		return false, err
	}
	if ev != nil {
		msg := pubsub.Message{Community: d.Community, Event: ev, Raw: raw}
		if err := r.cfg.broker.Publish(ctx, msg); err != nil {
			return false, fmt.Errorf("publish reminder %s: %w", d.ID, err)
		}
	}
	if err := rs.FinishReminder(ctx, d.Community, d.ID); err != nil {
		return ev != nil, err
	}
	return ev != nil, nil
}

// currentReminder returns the stored reminder d names, nil when it is gone
// or no longer the latest version of its address (replaced, deleted,
// expired).
func (r *Relay) currentReminder(ctx context.Context, d store.DueReminder) (*nostr.Event, []byte, error) {
	one := func(f nostr.Filter) (*store.Record, error) {
		f.Limit, f.LimitSet = 1, true
		for rec, err := range r.cfg.store.Query(ctx, d.Community, f) {
			if err != nil {
				return nil, err
			}
			return &rec, nil
		}
		return nil, nil
	}
	rec, err := one(nostr.Filter{IDs: []string{d.ID}, Kinds: []int{nostr.KindReminder}, Authors: []string{d.PubKey}})
	if err != nil || rec == nil {
		return nil, nil, err
	}
	ev, err := nostr.ParseEvent(rec.Raw)
	if err != nil {
		return nil, nil, fmt.Errorf("reminder %s: %w", d.ID, err)
	}
	dTag := ev.Tags.Find("d").Value()
	head, err := one(nostr.Filter{Kinds: []int{nostr.KindReminder}, Authors: []string{d.PubKey}, Tags: map[string][]string{"d": {dTag}}})
	if err != nil || head == nil || head.ID != d.ID {
		return nil, nil, err
	}
	return ev, rec.Raw, nil
}
