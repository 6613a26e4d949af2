package embedded

import (
	"context"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.ReminderStore = (*Store)(nil)

// ScheduleReminder implements store.ReminderStore.
func (s *Store) ScheduleReminder(ctx context.Context, r store.DueReminder) error {
	if r.Community.IsZero() {
		return errors.New("sqlite: schedule reminder: no community")
	}
	u := r.Community.UUID()
	err := s.insertOnce(ctx, "schedule reminder", `INSERT INTO reminders_due (community, id, pubkey, not_before)
VALUES (?, ?, ?, ?) ON CONFLICT (community, id) DO NOTHING`, u[:], r.ID, r.PubKey, r.NotBefore)
	if errors.Is(err, store.ErrDuplicate) {
		return nil
	}
	return err
}

// ClaimDueReminders implements store.ReminderStore: an index range scan
// of the due rows on the single writer, which serialises claims.
func (s *Store) ClaimDueReminders(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.DueReminder, error) {
	at := now.Unix()
	until := at + int64(max(lease/time.Second, 1))
	var out []store.DueReminder
	err := s.submit(ctx, func(w *writer) error {
		out = out[:0]
		rows, err := w.conn.QueryContext(w.ctx, `UPDATE reminders_due SET lease_until = ?
WHERE (community, id) IN (SELECT community, id FROM reminders_due
                          WHERE not_before <= ? AND lease_until <= ?
                          ORDER BY not_before LIMIT ?)
RETURNING community, id, pubkey, not_before`, until, at, at, store.ReminderClaim(limit))
		if err != nil {
			return internal("claim due reminders", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r   store.DueReminder
				cid []byte
			)
			if err := rows.Scan(&cid, &r.ID, &r.PubKey, &r.NotBefore); err != nil {
				return internal("claim due reminders", err)
			}
			if r.Community, err = communityFromBytes(cid); err != nil {
				return err
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return internal("claim due reminders", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	store.SortDue(out)
	return out, nil
}

// FinishReminder implements store.ReminderStore.
func (s *Store) FinishReminder(ctx context.Context, c tenant.CommunityID, id string) error {
	u := c.UUID()
	return s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, `DELETE FROM reminders_due WHERE community = ? AND id = ?`, u[:], id); err != nil {
			return internal("finish reminder", err)
		}
		return nil
	})
}
