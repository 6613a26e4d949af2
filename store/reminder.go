package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// DueReminder is one scheduled NIP-ER reminder (kind 30300): the stored
// event ID of PubKey in Community falls due at NotBefore (Unix seconds).
type DueReminder struct {
	Community tenant.CommunityID
	ID        string // event id, 64 lowercase hex
	PubKey    string // the reminder's author, 64 lowercase hex
	NotBefore int64
}

// MaxReminderClaim is the most reminders one ClaimDueReminders returns.
const MaxReminderClaim = 500

// ReminderStore schedules the due-time delivery of reminders. It holds ids,
// authors and times only — the events stay in the event store, read under
// the author-only rule — in one table across communities indexed by due
// time, so finding the due ones does not scan events. Every process
// sharing the store may claim: a claimed reminder is handed to one
// process at a time. Both backends implement it.
type ReminderStore interface {
	// ScheduleReminder records that r falls due at r.NotBefore. Scheduling
	// the same (community, id) again changes nothing.
	ScheduleReminder(ctx context.Context, r DueReminder) error
	// ClaimDueReminders claims up to limit (1..MaxReminderClaim) reminders
	// due at now (NotBefore <= now) that nobody holds, earliest first, and
	// holds each until now+lease: until then no ClaimDueReminders, in any
	// process, returns it again. A claim that is not finished (the process
	// ended) is claimed again after its lease.
	ClaimDueReminders(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]DueReminder, error)
	// FinishReminder forgets a reminder: it is never claimed again.
	FinishReminder(ctx context.Context, c tenant.CommunityID, id string) error
}

// SortDue orders claimed reminders earliest first (then by id), as
// ClaimDueReminders returns them.
func SortDue(rs []DueReminder) {
	slices.SortFunc(rs, func(a, b DueReminder) int {
		return cmp.Or(cmp.Compare(a.NotBefore, b.NotBefore), strings.Compare(a.ID, b.ID))
	})
}

// ReminderClaim bounds a requested claim size to 1..MaxReminderClaim.
func ReminderClaim(limit int) int {
	if limit <= 0 || limit > MaxReminderClaim {
		return MaxReminderClaim
	}
	return limit
}
