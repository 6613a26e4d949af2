package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// The workflow side of package transfer's export and restore: workflows
// with their schedule position and webhook secret hash, runs with their
// effects, approvals and claimed schedule slots, each restored only when
// absent. Exported times are whole milliseconds (package transfer
// truncates them), the embedded store's precision.

var epoch = time.Unix(0, 0).UTC()

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// ExportWorkflows implements transfer.WorkflowSource: c's workflows by
// created_at then id.
func (s *Store) ExportWorkflows(ctx context.Context, c tenant.CommunityID, fn func(workflow.WorkflowState) error) error {
	return s.each(ctx, "export workflows", c, `SELECT w.id, w.name, w.owner_pubkey, w.channel_id, w.definition, w.definition_hash, w.event_id,
    w.enabled, w.created_at, w.updated_at, w.webhook_secret_hash, s.next_fire_at, s.since
FROM workflows w LEFT JOIN workflow_schedules s ON s.community_id = w.community_id AND s.workflow_id = w.id
WHERE w.community_id = $1 ORDER BY date_trunc('milliseconds', w.created_at), w.id`, func(r pgx.Row) error {
		var (
			secret      []byte
			next, since *time.Time
		)
		w, err := scanPGWorkflow(c, suffixRow{r, []any{&secret, &next, &since}})
		if err != nil {
			return err
		}
		w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
		st := workflow.WorkflowState{Workflow: w, WebhookSecretHash: secret}
		if next != nil {
			st.Schedule = &workflow.ScheduleState{NextFire: derefTime(next), Since: derefTime(since)}
			if st.Schedule.NextFire.Equal(epoch) {
				st.Schedule.NextFire = time.Time{}
			}
		}
		return fn(st)
	})
}

// ExportRuns implements transfer.WorkflowSource: c's runs by workflow,
// created_at and id, each with its effects by key.
func (s *Store) ExportRuns(ctx context.Context, c tenant.CommunityID, fn func(workflow.RunState) error) error {
	var cur *workflow.RunState
	err := s.each(ctx, "export runs", c, `SELECT r.id, r.workflow_id, r.status::text, r.trigger_event_id, r.trigger_context, r.current_step, r.execution_trace,
    r.error_code, r.error_message, r.resume_at, r.created_at, r.started_at, r.completed_at, r.definition_hash,
    e.key, e.intent, coalesce(e.done, false), e.result, e.created_at, e.finished_at
FROM workflow_runs r LEFT JOIN workflow_effects e ON e.community_id = r.community_id AND e.run_id = r.id
WHERE r.community_id = $1 ORDER BY r.workflow_id, date_trunc('milliseconds', r.created_at), r.id, e.key COLLATE "C"`, func(row pgx.Row) error {
		var (
			key               *string
			intent, result    []byte
			done              bool
			created, finished *time.Time
		)
		run, err := scanPGRun(c, suffixRow{row, []any{&key, &intent, &done, &result, &created, &finished}})
		if err != nil {
			return err
		}
		if cur != nil && cur.ID != run.ID {
			if err := fn(*cur); err != nil {
				return err
			}
			cur = nil
		}
		if cur == nil {
			for _, t := range []*time.Time{&run.CreatedAt, &run.StartedAt, &run.CompletedAt, &run.ResumeAt} {
				if !t.IsZero() {
					*t = t.UTC()
				}
			}
			cur = &workflow.RunState{Run: run}
		}
		if key != nil {
			cur.Effects = append(cur.Effects, workflow.EffectState{Key: *key, Intent: intent, Done: done, Result: result,
				CreatedAt: derefTime(created), FinishedAt: derefTime(finished)})
		}
		return nil
	})
	if err != nil || cur == nil {
		return err
	}
	return fn(*cur)
}

// ExportApprovals implements transfer.WorkflowSource: c's approvals by
// created_at then token hash.
func (s *Store) ExportApprovals(ctx context.Context, c tenant.CommunityID, fn func(workflow.Approval) error) error {
	return s.each(ctx, "export approvals", c, `SELECT `+pgApprovalCols+` FROM workflow_approvals WHERE community_id = $1
ORDER BY date_trunc('milliseconds', created_at), token`, func(r pgx.Row) error {
		a, err := scanPGApproval(c, r)
		if err != nil {
			return err
		}
		a.ExpiresAt, a.CreatedAt = a.ExpiresAt.UTC(), a.CreatedAt.UTC()
		if !a.DecidedAt.IsZero() {
			a.DecidedAt = a.DecidedAt.UTC()
		}
		return fn(a)
	})
}

// ExportScheduleFires implements transfer.WorkflowSource: c's claimed
// schedule slots by workflow then slot.
func (s *Store) ExportScheduleFires(ctx context.Context, c tenant.CommunityID, fn func(workflow.FireState) error) error {
	return s.each(ctx, "export schedule fires", c, `SELECT workflow_id, scheduled_for, claimed_at, workflow_run_id FROM scheduled_workflow_fires
WHERE community_id = $1 ORDER BY workflow_id, scheduled_for`, func(r pgx.Row) error {
		var (
			wf  [16]byte
			run *[16]byte
			f   workflow.FireState
		)
		if err := r.Scan(&wf, &f.Slot, &f.ClaimedAt, &run); err != nil {
			return err
		}
		f.Workflow, f.Slot, f.ClaimedAt = workflow.ID(wf), f.Slot.UTC(), f.ClaimedAt.UTC()
		if run != nil {
			f.Run = workflow.ID(*run)
		}
		return fn(f)
	})
}

// restoreTx runs fn in a transaction of c; fn reports whether it added
// anything.
func (s *Store) restoreTx(ctx context.Context, op string, c tenant.CommunityID, fn func(tx pgx.Tx) (bool, error)) (bool, error) {
	var added bool
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		var err error
		added, err = fn(tx)
		return err
	})
	if err != nil {
		return false, pgWorkflowErr(op, err)
	}
	return added, nil
}

// rowExists reports whether query finds a row.
func rowExists(ctx context.Context, tx pgx.Tx, query string, args ...any) error {
	var one int
	err := tx.QueryRow(ctx, query, args...).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return workflow.ErrNotFound
	}
	return err
}

// RestoreWorkflow implements transfer.WorkflowDestination: it inserts the
// workflow (the caps of PutWorkflow do not apply: the source kept them)
// with its schedule position and webhook secret hash, unless a workflow
// with its id exists in c.
func (s *Store) RestoreWorkflow(ctx context.Context, c tenant.CommunityID, st workflow.WorkflowState) (bool, error) {
	owner, err := hexBytes(st.Owner, 32)
	if err != nil || st.Definition == nil {
		return false, fmt.Errorf("postgres: restore workflow: invalid owner or no definition")
	}
	evID, err := hexOrNil(st.EventID)
	if err != nil {
		return false, fmt.Errorf("postgres: restore workflow: event id: %w", err)
	}
	var secret []byte
	if len(st.WebhookSecretHash) == 32 {
		secret = st.WebhookSecretHash
	}
	def := st.Definition.CanonicalJSON()
	return s.restoreTx(ctx, "restore workflow", c, func(tx pgx.Tx) (bool, error) {
		tag, err := tx.Exec(ctx, `INSERT INTO workflows (community_id, id, name, owner_pubkey, channel_id, definition, definition_hash, trigger_on,
    event_id, enabled, created_at, updated_at, webhook_secret_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (community_id, id) DO NOTHING`,
			c.UUID(), [16]byte(st.ID), st.Name, owner, [16]byte(st.Channel), def, st.Hash[:], string(st.Definition.Trigger.On), evID,
			st.Enabled, st.CreatedAt, st.UpdatedAt, secret)
		if err != nil || tag.RowsAffected() == 0 {
			return false, err
		}
		if st.Schedule != nil {
			next := st.Schedule.NextFire
			if next.IsZero() {
				next = epoch
			}
			if _, err := tx.Exec(ctx, `UPDATE workflow_schedules SET next_fire_at = $3, since = $4 WHERE community_id = $1 AND workflow_id = $2`,
				c.UUID(), [16]byte(st.ID), next, st.Schedule.Since); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// RestoreRun implements transfer.WorkflowDestination: it inserts the run
// and its effects unless the run (or a run of its workflow for its
// trigger event) exists; a run that is not terminal is queued, claimable
// from its resume time (at once when it has none). The workflow must
// exist (else workflow.ErrNotFound).
func (s *Store) RestoreRun(ctx context.Context, c tenant.CommunityID, r workflow.RunState) (bool, error) {
	trig, err := hexBytes(r.TriggerEventID, 32)
	if err != nil {
		return false, fmt.Errorf("postgres: restore run: trigger event id: %w", err)
	}
	tctx, err := json.Marshal(r.Trigger)
	if err != nil {
		return false, fmt.Errorf("postgres: restore run: trigger: %w", err)
	}
	trace, err := workflow.MarshalTrace(r.Trace)
	if err != nil {
		return false, fmt.Errorf("postgres: restore run: trace: %w", err)
	}
	var defHash []byte
	if r.DefinitionHash != ([32]byte{}) {
		defHash = r.DefinitionHash[:]
	}
	var code, msg *string
	if r.ErrorCode != "" {
		code = &r.ErrorCode
	}
	if r.Error != "" {
		msg = &r.Error
	}
	return s.restoreTx(ctx, "restore run", c, func(tx pgx.Tx) (bool, error) {
		if err := rowExists(ctx, tx, `SELECT 1 FROM workflows WHERE community_id = $1 AND id = $2`, c.UUID(), [16]byte(r.Workflow)); err != nil {
			return false, err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO workflow_runs (community_id, id, workflow_id, status, trigger_event_id, trigger_context, current_step,
    execution_trace, error_code, error_message, resume_at, created_at, started_at, completed_at, definition_hash)
VALUES ($1, $2, $3, $4::text::run_status, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT DO NOTHING`,
			c.UUID(), [16]byte(r.ID), [16]byte(r.Workflow), string(r.Status), trig, tctx, r.CurrentStep, trace, code, msg,
			timeOrNil(r.ResumeAt), r.CreatedAt, timeOrNil(r.StartedAt), timeOrNil(r.CompletedAt), defHash)
		if err != nil || tag.RowsAffected() == 0 {
			return false, err
		}
		if !r.Status.Terminal() {
			at := r.ResumeAt
			if at.IsZero() {
				at = epoch
			}
			if _, err := tx.Exec(ctx, `INSERT INTO workflow_run_queue (community_id, run_id, available_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
				c.UUID(), [16]byte(r.ID), at); err != nil {
				return false, err
			}
		}
		for _, e := range r.Effects {
			if _, err := tx.Exec(ctx, `INSERT INTO workflow_effects (community_id, run_id, key, intent, done, result, created_at, finished_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`, c.UUID(), [16]byte(r.ID), e.Key, e.Intent, e.Done, e.Result, e.CreatedAt,
				timeOrNil(e.FinishedAt)); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// RestoreApproval implements transfer.WorkflowDestination: it inserts the
// approval unless its token hash exists in c. Its run must exist (else
// workflow.ErrNotFound). An expired approval keeps no decision time.
func (s *Store) RestoreApproval(ctx context.Context, c tenant.CommunityID, a workflow.Approval) (bool, error) {
	by, err := hexOrNil(a.DecidedBy)
	if err != nil {
		return false, fmt.Errorf("postgres: restore approval: decided_by: %w", err)
	}
	var granted, denied *time.Time
	switch a.Status {
	case workflow.ApprovalGranted:
		granted = timeOrNil(a.DecidedAt)
	case workflow.ApprovalDenied:
		denied = timeOrNil(a.DecidedAt)
	}
	return s.restoreTx(ctx, "restore approval", c, func(tx pgx.Tx) (bool, error) {
		if err := rowExists(ctx, tx, `SELECT 1 FROM workflow_runs WHERE community_id = $1 AND id = $2 AND workflow_id = $3`,
			c.UUID(), [16]byte(a.Run), [16]byte(a.Workflow)); err != nil {
			return false, err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO workflow_approvals (community_id, token, workflow_id, run_id, step_id, step_index, approver_spec, message,
    status, approver_pubkey, granted_at, denied_at, expires_at, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::approval_status, $10, $11, $12, $13, $14) ON CONFLICT DO NOTHING`,
			c.UUID(), a.TokenHash[:], [16]byte(a.Workflow), [16]byte(a.Run), a.StepID, a.StepIndex, a.Approver, a.Message, string(a.Status),
			by, granted, denied, a.ExpiresAt, a.CreatedAt)
		return err == nil && tag.RowsAffected() > 0, err
	})
}

// RestoreScheduleFire implements transfer.WorkflowDestination: it inserts
// the claim of a slot unless it exists. Its workflow must exist (else
// workflow.ErrNotFound).
func (s *Store) RestoreScheduleFire(ctx context.Context, c tenant.CommunityID, f workflow.FireState) (bool, error) {
	var run any
	if !f.Run.IsZero() {
		run = [16]byte(f.Run)
	}
	return s.restoreTx(ctx, "restore schedule fire", c, func(tx pgx.Tx) (bool, error) {
		if err := rowExists(ctx, tx, `SELECT 1 FROM workflows WHERE community_id = $1 AND id = $2`, c.UUID(), [16]byte(f.Workflow)); err != nil {
			return false, err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO scheduled_workflow_fires (community_id, workflow_id, scheduled_for, claimed_at, workflow_run_id)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, c.UUID(), [16]byte(f.Workflow), f.Slot, f.ClaimedAt, run)
		return err == nil && tag.RowsAffected() > 0, err
	})
}
