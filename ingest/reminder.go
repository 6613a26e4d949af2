package ingest

import (
	"context"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// NIP-ER reminders (kind 30300).
//
// The relay never decrypts a reminder; it checks its public tags, as Buzz
// does, in this order: each "not_before" (at most one, well formed:
// MsgMalformedNotBefore), then exactly one non-empty "d" tag, then — when
// not_before is present — the horizon (Config.MaxNotBeforeDelta from Now)
// and an "expiration", when present, strictly after not_before. A future
// not_before is never refused for being in the future. Tags with fewer
// than two elements are not looked at.
//
// A stored reminder whose not_before is still ahead is scheduled
// (Config.Reminders): the relay tells its author's subscriptions when it
// falls due. Only its author ever reads it (package channel, the private
// kinds).

// Refusals of a reminder, in Buzz's words.
const (
	MsgMalformedNotBefore   = "invalid: malformed not_before"
	MsgReminderMissingD     = "invalid: missing d tag"
	MsgReminderDuplicateD   = "invalid: duplicate d tag"
	MsgReminderEmptyD       = "invalid: empty d tag"
	MsgNotBeforeTooFar      = "invalid: not_before too far in future"
	MsgExpirationNotBefore  = "invalid: expiration before not_before"
	defaultMaxNotBeforeSpan = 365 * 24 * time.Hour
)

// validateReminder applies the reminder rules to ev (kind 30300) at now
// with horizon maxDelta; "" when it is admissible.
func validateReminder(ev *nostr.Event, now time.Time, maxDelta time.Duration) string {
	var (
		notBefore int64
		hasNB     bool
		dCount    int
		dEmpty    bool
	)
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "not_before":
			if hasNB {
				return MsgMalformedNotBefore
			}
			v, ok := nostr.ParseNotBefore(t[1])
			if !ok {
				return MsgMalformedNotBefore
			}
			notBefore, hasNB = v, true
		case "d":
			dCount++
			dEmpty = dEmpty || t[1] == ""
		}
	}
	switch {
	case dCount == 0:
		return MsgReminderMissingD
	case dCount > 1:
		return MsgReminderDuplicateD
	case dEmpty:
		return MsgReminderEmptyD
	}
	if !hasNB {
		return ""
	}
	if notBefore > now.Add(maxDelta).Unix() {
		return MsgNotBeforeTooFar
	}
	if exp, ok := ev.Expiration(); ok && exp <= notBefore {
		return MsgExpirationNotBefore
	}
	return ""
}

// scheduleReminder records a stored reminder whose not_before is after now
// for due-time delivery. The event is stored and acknowledged either way:
// a failure costs only the due signal (the author still reads the
// reminder), so it is logged, not reported.
func (p *Pipeline) scheduleReminder(ctx context.Context, c tenant.CommunityID, ev *nostr.Event, now time.Time) {
	if p.cfg.Reminders == nil || ev.Kind != nostr.KindReminder {
		return
	}
	nb, ok := ev.NotBefore()
	if !ok || nb <= now.Unix() {
		return
	}
	err := p.cfg.Reminders.ScheduleReminder(ctx, store.DueReminder{Community: c, ID: ev.ID, PubKey: ev.PubKey, NotBefore: nb})
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: schedule reminder",
			"community", c.String(), "event", ev.ID, "err", err)
	}
}
