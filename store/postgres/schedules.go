package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// DueSchedules implements workflow.ScheduleStore: an index range scan of
// workflow_schedules (a global table of ids and times).
func (s *Store) DueSchedules(ctx context.Context, now time.Time, max int) ([]workflow.DueSchedule, error) {
	if max <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT community_id, workflow_id, next_fire_at, since FROM workflow_schedules
WHERE next_fire_at <= $1 ORDER BY next_fire_at LIMIT $2`, now, max)
	if err != nil {
		return nil, fmt.Errorf("postgres: due schedules: %w", err)
	}
	var (
		out         []workflow.DueSchedule
		c, wf       [16]byte
		next, since time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&c, &wf, &next, &since}, func() error {
		out = append(out, workflow.DueSchedule{Community: tenant.FromUUID(c), Workflow: workflow.ID(wf), NextFire: next, Since: since})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: due schedules: %w", err)
	}
	return out, nil
}

// FireSchedule implements workflow.ScheduleStore. The compare-and-swap on
// the schedule row serialises pods deciding on the same schedule; the
// primary key of scheduled_workflow_fires is the claim itself.
func (s *Store) FireSchedule(ctx context.Context, c tenant.CommunityID, f workflow.ScheduleFire) (workflow.Run, bool, bool, error) {
	if c.IsZero() {
		return workflow.Run{}, false, false, workflow.ErrNotFound
	}
	var (
		run             workflow.Run
		advanced, fired bool
	)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		advanced, fired = false, false
		var tag interface{ RowsAffected() int64 }
		var err error
		if f.Next.IsZero() {
			tag, err = tx.Exec(ctx, `DELETE FROM workflow_schedules WHERE community_id = $1 AND workflow_id = $2 AND next_fire_at = $3`,
				c.UUID(), [16]byte(f.Workflow), f.Seen)
		} else {
			tag, err = tx.Exec(ctx, `UPDATE workflow_schedules SET next_fire_at = $4 WHERE community_id = $1 AND workflow_id = $2 AND next_fire_at = $3`,
				c.UUID(), [16]byte(f.Workflow), f.Seen, f.Next)
		}
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		advanced = true
		if f.Slot.IsZero() {
			return nil
		}
		trig, _ := nostr.DecodeHex32(workflow.ScheduleEventID(f.Workflow, f.Slot))
		var ran bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workflow_runs WHERE community_id = $1 AND workflow_id = $2 AND trigger_event_id = $3)`,
			c.UUID(), [16]byte(f.Workflow), trig).Scan(&ran); err != nil || ran {
			return err // a pruned slot's run exists: it never fires again
		}
		t, err := tx.Exec(ctx, `INSERT INTO scheduled_workflow_fires (community_id, workflow_id, scheduled_for)
VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, c.UUID(), [16]byte(f.Workflow), f.Slot)
		if err != nil {
			return err
		}
		if t.RowsAffected() == 0 {
			return nil // claimed before
		}
		tctx, err := json.Marshal(f.Trigger)
		if err != nil {
			return err
		}
		id := workflow.NewID()
		run, err = scanPGRun(c, tx.QueryRow(ctx, `INSERT INTO workflow_runs (community_id, id, workflow_id, status, trigger_event_id, trigger_context, definition_hash)
SELECT $1, $2, $3, 'pending', $4, $5, w.definition_hash FROM workflows w WHERE w.community_id = $1 AND w.id = $3
RETURNING `+pgRunCols, c.UUID(), [16]byte(id), [16]byte(f.Workflow), trig, tctx))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO workflow_run_queue (community_id, run_id) VALUES ($1, $2)`, c.UUID(), [16]byte(id)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE scheduled_workflow_fires SET workflow_run_id = $4
WHERE community_id = $1 AND workflow_id = $2 AND scheduled_for = $3`, c.UUID(), [16]byte(f.Workflow), f.Slot, [16]byte(id)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM scheduled_workflow_fires WHERE community_id = $1 AND workflow_id = $2 AND scheduled_for < $3`,
			c.UUID(), [16]byte(f.Workflow), f.Slot); err != nil {
			return err
		}
		fired = true
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return workflow.Run{}, false, false, workflow.ErrNotFound
	}
	if err != nil {
		return workflow.Run{}, false, false, pgWorkflowErr("fire schedule", err)
	}
	return run, advanced, fired, nil
}

// ScheduledFires implements workflow.ScheduleStore.
func (s *Store) ScheduledFires(ctx context.Context, c tenant.CommunityID, wf workflow.ID) ([]workflow.ScheduledFire, error) {
	if c.IsZero() {
		return nil, nil
	}
	var out []workflow.ScheduledFire
	err := s.readInCommunity(ctx, c, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `SELECT scheduled_for, workflow_run_id FROM scheduled_workflow_fires
WHERE community_id = $1 AND workflow_id = $2 ORDER BY scheduled_for`, c.UUID(), [16]byte(wf))
		if err != nil {
			return err
		}
		var (
			slot time.Time
			run  *[16]byte
		)
		_, err = pgx.ForEachRow(rows, []any{&slot, &run}, func() error {
			f := workflow.ScheduledFire{Slot: slot.UTC()}
			if run != nil {
				f.Run = workflow.ID(*run)
			}
			out = append(out, f)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, pgWorkflowErr("scheduled fires", err)
	}
	return out, nil
}
