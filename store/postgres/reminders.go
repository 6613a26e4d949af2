package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.ReminderStore = (*Store)(nil)

// ScheduleReminder implements store.ReminderStore. reminders_due is a
// registered global table (ids, authors and times only).
func (s *Store) ScheduleReminder(ctx context.Context, r store.DueReminder) error {
	if r.Community.IsZero() {
		return fmt.Errorf("postgres: schedule reminder: no community")
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO reminders_due (community_id, id, pubkey, not_before)
VALUES ($1, $2, $3, $4) ON CONFLICT (community_id, id) DO NOTHING`,
		r.Community.UUID(), r.ID, r.PubKey, r.NotBefore)
	if err != nil {
		return fmt.Errorf("postgres: schedule reminder: %w", err)
	}
	return nil
}

// ClaimDueReminders implements store.ReminderStore: an index range scan
// of the due rows, locked with SKIP LOCKED so pods claiming at once take
// different rows, each held until its lease ends.
func (s *Store) ClaimDueReminders(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.DueReminder, error) {
	at := now.Unix()
	rows, err := s.pool.Query(ctx, `UPDATE reminders_due r SET lease_until = $2
FROM (SELECT community_id, id FROM reminders_due
      WHERE not_before <= $1 AND lease_until <= $1
      ORDER BY not_before LIMIT $3 FOR UPDATE SKIP LOCKED) d
WHERE r.community_id = d.community_id AND r.id = d.id
RETURNING r.community_id, r.id, r.pubkey, r.not_before`,
		at, at+int64(max(lease/time.Second, 1)), store.ReminderClaim(limit))
	if err != nil {
		return nil, fmt.Errorf("postgres: claim due reminders: %w", err)
	}
	var (
		out []store.DueReminder
		c   [16]byte
		r   store.DueReminder
	)
	_, err = pgx.ForEachRow(rows, []any{&c, &r.ID, &r.PubKey, &r.NotBefore}, func() error {
		r.Community = tenant.FromUUID(c)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claim due reminders: %w", err)
	}
	store.SortDue(out)
	return out, nil
}

// FinishReminder implements store.ReminderStore.
func (s *Store) FinishReminder(ctx context.Context, c tenant.CommunityID, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM reminders_due WHERE community_id = $1 AND id = $2`, c.UUID(), id); err != nil {
		return fmt.Errorf("postgres: finish reminder: %w", err)
	}
	return nil
}
