package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// The workflow side of package transfer's export and restore: workflows
// with their schedule position and webhook secret hash, runs with their
// effects, approvals and claimed schedule slots, each restored only when
// absent. Times are Unix milliseconds, as stored.

func msOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func msOrZero(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

// ExportWorkflows implements transfer.WorkflowSource: c's workflows by
// created_at then id.
func (s *Store) ExportWorkflows(ctx context.Context, c tenant.CommunityID, fn func(workflow.WorkflowState) error) error {
	return s.each(ctx, "export workflows", c, `SELECT w.id, w.name, w.owner, w.channel, w.definition, w.hash, w.event_id, w.enabled, w.created_at, w.updated_at,
    w.webhook_secret_hash, s.next_fire_at, s.since
FROM workflows w LEFT JOIN workflow_schedules s ON s.community = w.community AND s.workflow = w.id
WHERE w.community = ? ORDER BY w.created_at, w.id`, func(r rowScanner) error {
		var (
			secret      []byte
			next, since sql.NullInt64
		)
		w, err := scanSQLWorkflow(c, suffixScanner{r, []any{&secret, &next, &since}})
		if err != nil {
			return internal("export workflows", err)
		}
		w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
		st := workflow.WorkflowState{Workflow: w, WebhookSecretHash: secret}
		if next.Valid {
			st.Schedule = &workflow.ScheduleState{NextFire: msOrZero(next), Since: msOrZero(since)}
			if next.Int64 == 0 {
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
	err := s.each(ctx, "export runs", c, `SELECT r.id, r.workflow, r.status, r.trigger_event_id, r.trigger_context, r.current_step, r.trace,
    r.error_code, r.error_message, r.resume_at, r.created_at, r.started_at, r.completed_at, r.definition_hash,
    e.key, e.intent, coalesce(e.done, 0), e.result, e.created_at, e.finished_at
FROM workflow_runs r LEFT JOIN workflow_effects e ON e.community = r.community AND e.run = r.id
WHERE r.community = ? ORDER BY r.workflow, r.created_at, r.id, e.key`, func(row rowScanner) error {
		var (
			key               sql.NullString
			intent, result    []byte
			done              bool
			created, finished sql.NullInt64
		)
		run, err := scanSQLRun(c, suffixScanner{row, []any{&key, &intent, &done, &result, &created, &finished}})
		if err != nil {
			return internal("export runs", err)
		}
		if cur != nil && cur.ID != run.ID {
			if err := fn(*cur); err != nil {
				return err
			}
			cur = nil
		}
		if cur == nil {
			utcRun(&run)
			cur = &workflow.RunState{Run: run}
		}
		if key.Valid {
			cur.Effects = append(cur.Effects, workflow.EffectState{Key: key.String, Intent: intent, Done: done, Result: result,
				CreatedAt: msOrZero(created), FinishedAt: msOrZero(finished)})
		}
		return nil
	})
	if err != nil || cur == nil {
		return err
	}
	return fn(*cur)
}

func utcRun(r *workflow.Run) {
	for _, t := range []*time.Time{&r.CreatedAt, &r.StartedAt, &r.CompletedAt, &r.ResumeAt} {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
}

// ExportApprovals implements transfer.WorkflowSource: c's approvals by
// created_at then token hash.
func (s *Store) ExportApprovals(ctx context.Context, c tenant.CommunityID, fn func(workflow.Approval) error) error {
	return s.each(ctx, "export approvals", c, `SELECT `+sqlApprovalCols+` FROM workflow_approvals WHERE community = ? ORDER BY created_at, token`, func(r rowScanner) error {
		a, err := scanSQLApproval(c, r)
		if err != nil {
			return internal("export approvals", err)
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
	return s.each(ctx, "export schedule fires", c, `SELECT workflow, scheduled_for, claimed_at, run FROM scheduled_workflow_fires
WHERE community = ? ORDER BY workflow, scheduled_for`, func(r rowScanner) error {
		var (
			wf, run       []byte
			slot, claimed int64
			f             workflow.FireState
		)
		if err := r.Scan(&wf, &slot, &claimed, &run); err != nil {
			return internal("export schedule fires", err)
		}
		copy(f.Workflow[:], wf)
		copy(f.Run[:], run)
		f.Slot, f.ClaimedAt = time.UnixMilli(slot).UTC(), time.UnixMilli(claimed).UTC()
		return fn(f)
	})
}

// restoreTx runs fn on the writer with c's key; fn reports whether it
// added anything.
func (s *Store) restoreTx(ctx context.Context, op string, c tenant.CommunityID, fn func(w *writer, cseq int64) (bool, error)) (bool, error) {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return false, err
	}
	var added bool
	err = s.submit(ctx, func(w *writer) error {
		var err error
		added, err = fn(w, cseq)
		return err
	})
	if err != nil {
		if errors.Is(err, workflow.ErrNotFound) {
			return false, err
		}
		return false, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return added, nil
}

// exists reports whether query (community key first) finds a row.
func exists(w *writer, query string, args ...any) (bool, error) {
	var one int
	err := w.conn.QueryRowContext(w.ctx, query, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// RestoreWorkflow implements transfer.WorkflowDestination: it inserts the
// workflow (the caps of PutWorkflow do not apply: the source kept them)
// with its schedule position and webhook secret hash, unless a workflow
// with its id exists in c.
func (s *Store) RestoreWorkflow(ctx context.Context, c tenant.CommunityID, st workflow.WorkflowState) (bool, error) {
	owner, err := hexBytes(st.Owner, 32)
	if err != nil || st.Definition == nil {
		return false, fmt.Errorf("sqlite: restore workflow: invalid owner or no definition")
	}
	evID, err := hexOrNull(st.EventID)
	if err != nil {
		return false, fmt.Errorf("sqlite: restore workflow: event id: %w", err)
	}
	var secret any
	if len(st.WebhookSecretHash) == 32 {
		secret = st.WebhookSecretHash
	}
	def := string(st.Definition.CanonicalJSON())
	return s.restoreTx(ctx, "restore workflow", c, func(w *writer, cseq int64) (bool, error) {
		res, err := w.conn.ExecContext(w.ctx, `INSERT INTO workflows (community, id, name, owner, channel, definition, hash, trigger_on, event_id,
    enabled, created_at, updated_at, webhook_secret_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			cseq, st.ID[:], st.Name, owner, st.Channel[:], def, st.Hash[:], string(st.Definition.Trigger.On), evID, st.Enabled,
			st.CreatedAt.UnixMilli(), st.UpdatedAt.UnixMilli(), secret)
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return false, nil
		}
		if st.Schedule != nil {
			var next int64
			if !st.Schedule.NextFire.IsZero() {
				next = st.Schedule.NextFire.UnixMilli()
			}
			if _, err := w.conn.ExecContext(w.ctx, `UPDATE workflow_schedules SET next_fire_at = ?, since = ? WHERE community = ? AND workflow = ?`,
				next, st.Schedule.Since.UnixMilli(), cseq, st.ID[:]); err != nil {
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
		return false, fmt.Errorf("sqlite: restore run: trigger event id: %w", err)
	}
	tctx, err := json.Marshal(r.Trigger)
	if err != nil {
		return false, fmt.Errorf("sqlite: restore run: trigger: %w", err)
	}
	trace, err := workflow.MarshalTrace(r.Trace)
	if err != nil {
		return false, fmt.Errorf("sqlite: restore run: trace: %w", err)
	}
	var defHash any
	if r.DefinitionHash != ([32]byte{}) {
		defHash = r.DefinitionHash[:]
	}
	var code, msg any
	if r.ErrorCode != "" {
		code = r.ErrorCode
	}
	if r.Error != "" {
		msg = r.Error
	}
	return s.restoreTx(ctx, "restore run", c, func(w *writer, cseq int64) (bool, error) {
		if ok, err := exists(w, `SELECT 1 FROM workflows WHERE community = ? AND id = ?`, cseq, r.Workflow[:]); err != nil || !ok {
			return false, errors.Join(err, notFoundIf(!ok))
		}
		res, err := w.conn.ExecContext(w.ctx, `INSERT INTO workflow_runs (community, id, workflow, status, trigger_event_id, trigger_context, current_step,
    trace, error_code, error_message, resume_at, created_at, started_at, completed_at, definition_hash)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			cseq, r.ID[:], r.Workflow[:], string(r.Status), trig, string(tctx), r.CurrentStep, string(trace), code, msg,
			msOrNull(r.ResumeAt), r.CreatedAt.UnixMilli(), msOrNull(r.StartedAt), msOrNull(r.CompletedAt), defHash)
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return false, nil
		}
		if !r.Status.Terminal() {
			var at int64
			if !r.ResumeAt.IsZero() {
				at = r.ResumeAt.UnixMilli()
			}
			if _, err := w.conn.ExecContext(w.ctx, `INSERT OR IGNORE INTO workflow_run_queue (community, run, available_at) VALUES (?, ?, ?)`,
				cseq, r.ID[:], at); err != nil {
				return false, err
			}
		}
		for _, e := range r.Effects {
			if _, err := w.conn.ExecContext(w.ctx, `INSERT OR IGNORE INTO workflow_effects (community, run, key, intent, done, result, created_at, finished_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, cseq, r.ID[:], e.Key, e.Intent, e.Done, e.Result, e.CreatedAt.UnixMilli(), msOrNull(e.FinishedAt)); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// RestoreApproval implements transfer.WorkflowDestination: it inserts the
// approval unless its token hash exists in c. Its run must exist (else
// workflow.ErrNotFound).
func (s *Store) RestoreApproval(ctx context.Context, c tenant.CommunityID, a workflow.Approval) (bool, error) {
	by, err := hexOrNull(a.DecidedBy)
	if err != nil {
		return false, fmt.Errorf("sqlite: restore approval: decided_by: %w", err)
	}
	return s.restoreTx(ctx, "restore approval", c, func(w *writer, cseq int64) (bool, error) {
		if ok, err := exists(w, `SELECT 1 FROM workflow_runs WHERE community = ? AND id = ? AND workflow = ?`, cseq, a.Run[:], a.Workflow[:]); err != nil || !ok {
			return false, errors.Join(err, notFoundIf(!ok))
		}
		res, err := w.conn.ExecContext(w.ctx, `INSERT INTO workflow_approvals (community, token, workflow, run, step_id, step_index, approver, message,
    status, decided_by, decided_at, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			cseq, a.TokenHash[:], a.Workflow[:], a.Run[:], a.StepID, a.StepIndex, a.Approver, a.Message, string(a.Status), by,
			msOrNull(a.DecidedAt), a.ExpiresAt.UnixMilli(), a.CreatedAt.UnixMilli())
		if err != nil {
			return false, err
		}
		n, _ := res.RowsAffected()
		return n > 0, nil
	})
}

// RestoreScheduleFire implements transfer.WorkflowDestination: it inserts
// the claim of a slot unless it exists. Its workflow must exist (else
// workflow.ErrNotFound).
func (s *Store) RestoreScheduleFire(ctx context.Context, c tenant.CommunityID, f workflow.FireState) (bool, error) {
	var run any
	if !f.Run.IsZero() {
		run = f.Run[:]
	}
	return s.restoreTx(ctx, "restore schedule fire", c, func(w *writer, cseq int64) (bool, error) {
		if ok, err := exists(w, `SELECT 1 FROM workflows WHERE community = ? AND id = ?`, cseq, f.Workflow[:]); err != nil || !ok {
			return false, errors.Join(err, notFoundIf(!ok))
		}
		res, err := w.conn.ExecContext(w.ctx, `INSERT OR IGNORE INTO scheduled_workflow_fires (community, workflow, scheduled_for, claimed_at, run)
VALUES (?, ?, ?, ?, ?)`, cseq, f.Workflow[:], f.Slot.UnixMilli(), f.ClaimedAt.UnixMilli(), run)
		if err != nil {
			return false, err
		}
		n, _ := res.RowsAffected()
		return n > 0, nil
	})
}

func notFoundIf(b bool) error {
	if b {
		return workflow.ErrNotFound
	}
	return nil
}
