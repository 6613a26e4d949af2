package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// DueSchedules implements workflow.ScheduleStore: an index range scan of
// workflow_schedules.
func (s *Store) DueSchedules(ctx context.Context, now time.Time, max int) ([]workflow.DueSchedule, error) {
	if max <= 0 {
		return nil, nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT c.id, w.workflow, w.next_fire_at, w.since
FROM workflow_schedules w JOIN communities c ON c.seq = w.community
WHERE w.next_fire_at <= ? ORDER BY w.next_fire_at LIMIT ?`, now.UnixMilli(), max)
	if err != nil {
		return nil, internal("due schedules", err)
	}
	defer rows.Close()
	var out []workflow.DueSchedule
	for rows.Next() {
		var (
			c, wf       []byte
			next, since int64
		)
		if err := rows.Scan(&c, &wf, &next, &since); err != nil {
			return nil, internal("due schedules", err)
		}
		if len(c) != 16 || len(wf) != 16 {
			return nil, internal("due schedules", fmt.Errorf("bad id lengths %d, %d", len(c), len(wf)))
		}
		out = append(out, workflow.DueSchedule{
			Community: tenant.FromUUID([16]byte(c)), Workflow: workflow.ID(wf),
			NextFire: time.UnixMilli(next).UTC(), Since: time.UnixMilli(since).UTC(),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, internal("due schedules", err)
	}
	return out, nil
}

// FireSchedule implements workflow.ScheduleStore. The single writer
// serialises the compare-and-swap on the schedule row; the primary key of
// scheduled_workflow_fires is the claim itself.
func (s *Store) FireSchedule(ctx context.Context, c tenant.CommunityID, f workflow.ScheduleFire) (workflow.Run, bool, bool, error) {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return workflow.Run{}, false, false, err
	}
	tctx, err := json.Marshal(f.Trigger)
	if err != nil {
		return workflow.Run{}, false, false, fmt.Errorf("sqlite: fire schedule: %w", err)
	}
	trig, _ := nostr.DecodeHex32(workflow.ScheduleEventID(f.Workflow, f.Slot))
	var (
		run             workflow.Run
		advanced, fired bool
	)
	err = s.submit(ctx, func(w *writer) error {
		advanced, fired = false, false
		var next int64
		err := w.conn.QueryRowContext(w.ctx, `SELECT next_fire_at FROM workflow_schedules WHERE community = ? AND workflow = ?`,
			cseq, f.Workflow[:]).Scan(&next)
		if errors.Is(err, sql.ErrNoRows) || err == nil && next != f.Seen.UnixMilli() {
			return nil
		}
		if err != nil {
			return internal("fire schedule", err)
		}
		var defHash []byte
		claim := !f.Slot.IsZero()
		if claim {
			var n int
			if err := w.conn.QueryRowContext(w.ctx, `SELECT count(*) FROM scheduled_workflow_fires
WHERE community = ? AND workflow = ? AND scheduled_for = ?`, cseq, f.Workflow[:], f.Slot.UnixMilli()).Scan(&n); err != nil {
				return internal("fire schedule", err)
			}
			err := w.conn.QueryRowContext(w.ctx, `SELECT hash FROM workflows WHERE community = ? AND id = ?`, cseq, f.Workflow[:]).Scan(&defHash)
			if errors.Is(err, sql.ErrNoRows) {
				claim = false
			} else if err != nil {
				return internal("fire schedule", err)
			}
			var ran int
			if err := w.conn.QueryRowContext(w.ctx, `SELECT count(*) FROM workflow_runs WHERE community = ? AND workflow = ? AND trigger_event_id = ?`,
				cseq, f.Workflow[:], trig).Scan(&ran); err != nil {
				return internal("fire schedule", err)
			}
			// A pruned slot's run exists: it never fires again.
			claim = claim && n == 0 && ran == 0
		}
		if f.Next.IsZero() {
			_, err = w.conn.ExecContext(w.ctx, `DELETE FROM workflow_schedules WHERE community = ? AND workflow = ?`, cseq, f.Workflow[:])
		} else {
			_, err = w.conn.ExecContext(w.ctx, `UPDATE workflow_schedules SET next_fire_at = ? WHERE community = ? AND workflow = ?`,
				f.Next.UnixMilli(), cseq, f.Workflow[:])
		}
		if err != nil {
			return internal("fire schedule", err)
		}
		advanced = true
		if !claim {
			return nil
		}
		now := time.Now().UnixMilli()
		id := workflow.NewID()
		if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO scheduled_workflow_fires (community, workflow, scheduled_for, claimed_at, run)
VALUES (?, ?, ?, ?, ?)`, cseq, f.Workflow[:], f.Slot.UnixMilli(), now, id[:]); err != nil {
			return internal("fire schedule", err)
		}
		if run, err = scanSQLRun(c, w.conn.QueryRowContext(w.ctx, `INSERT INTO workflow_runs (community, id, workflow, status, trigger_event_id,
    trigger_context, created_at, definition_hash) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?) RETURNING `+sqlRunCols,
			cseq, id[:], f.Workflow[:], trig, string(tctx), now, defHash)); err != nil {
			return internal("fire schedule", err)
		}
		if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO workflow_run_queue (community, run, available_at) VALUES (?, ?, ?)`,
			cseq, id[:], now); err != nil {
			return internal("fire schedule", err)
		}
		if _, err := w.conn.ExecContext(w.ctx, `DELETE FROM scheduled_workflow_fires WHERE community = ? AND workflow = ? AND scheduled_for < ?`,
			cseq, f.Workflow[:], f.Slot.UnixMilli()); err != nil {
			return internal("fire schedule", err)
		}
		fired = true
		return nil
	})
	if err != nil {
		return workflow.Run{}, false, false, err
	}
	return run, advanced, fired, nil
}

// ScheduledFires implements workflow.ScheduleStore.
func (s *Store) ScheduledFires(ctx context.Context, c tenant.CommunityID, wf workflow.ID) ([]workflow.ScheduledFire, error) {
	cseq, err := s.wfSeq(ctx, c)
	if errors.Is(err, workflow.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT scheduled_for, run FROM scheduled_workflow_fires
WHERE community = ? AND workflow = ? ORDER BY scheduled_for`, cseq, wf[:])
	if err != nil {
		return nil, internal("scheduled fires", err)
	}
	defer rows.Close()
	var out []workflow.ScheduledFire
	for rows.Next() {
		var (
			slot int64
			run  []byte
		)
		if err := rows.Scan(&slot, &run); err != nil {
			return nil, internal("scheduled fires", err)
		}
		f := workflow.ScheduledFire{Slot: time.UnixMilli(slot).UTC()}
		copy(f.Run[:], run)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("scheduled fires", err)
	}
	return out, nil
}
