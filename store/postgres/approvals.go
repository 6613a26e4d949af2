package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

var _ workflow.ApprovalStore = (*Store)(nil)

const pgApprovalCols = `token, workflow_id, run_id, step_id, step_index, approver_spec, message, status::text,
    approver_pubkey, coalesce(granted_at, denied_at), expires_at, created_at`

func scanPGApproval(c tenant.CommunityID, r pgx.Row) (workflow.Approval, error) {
	var (
		a           workflow.Approval
		tok, by     []byte
		wf, run     [16]byte
		status      string
		decidedAt   *time.Time
		expires, at time.Time
	)
	if err := r.Scan(&tok, &wf, &run, &a.StepID, &a.StepIndex, &a.Approver, &a.Message, &status, &by, &decidedAt, &expires, &at); err != nil {
		return a, err
	}
	a.Community, a.Workflow, a.Run, a.Status = c, workflow.ID(wf), workflow.ID(run), workflow.ApprovalStatus(status)
	copy(a.TokenHash[:], tok)
	if len(by) == 32 {
		a.DecidedBy = hex.EncodeToString(by)
	}
	if decidedAt != nil {
		a.DecidedAt = *decidedAt
	}
	a.ExpiresAt, a.CreatedAt = expires, at
	return a, nil
}

// CreateApproval implements workflow.ApprovalStore.
func (s *Store) CreateApproval(ctx context.Context, c tenant.CommunityID, a workflow.Approval) error {
	if c.IsZero() {
		return workflow.ErrNotFound
	}
	_, err := s.execCount(ctx, c, `INSERT INTO workflow_approvals
    (community_id, token, workflow_id, run_id, step_id, step_index, approver_spec, message, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
		c.UUID(), a.TokenHash[:], [16]byte(a.Workflow), [16]byte(a.Run), a.StepID, a.StepIndex, a.Approver, a.Message, a.ExpiresAt)
	if err != nil {
		return pgWorkflowErr("create approval", err)
	}
	return nil
}

// Approval implements workflow.ApprovalStore.
func (s *Store) Approval(ctx context.Context, c tenant.CommunityID, tokenHash [32]byte) (workflow.Approval, error) {
	if c.IsZero() {
		return workflow.Approval{}, workflow.ErrNotFound
	}
	var a workflow.Approval
	err := s.readInCommunity(ctx, c, func(tx pgx.Tx) error {
		var err error
		a, err = scanPGApproval(c, tx.QueryRow(ctx, `SELECT `+pgApprovalCols+` FROM workflow_approvals
WHERE community_id = $1 AND token = $2`, c.UUID(), tokenHash[:]))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return workflow.Approval{}, workflow.ErrNotFound
	}
	if err != nil {
		return workflow.Approval{}, fmt.Errorf("postgres: approval: %w", err)
	}
	return a, nil
}

// DecideApproval implements workflow.ApprovalStore.
func (s *Store) DecideApproval(ctx context.Context, c tenant.CommunityID, tokenHash [32]byte, d workflow.Decision) (workflow.Approval, error) {
	if c.IsZero() {
		return workflow.Approval{}, workflow.ErrNotFound
	}
	var by []byte
	if d.Approver != "" {
		pk, ok := nostr.DecodeHex32(d.Approver)
		if !ok {
			return workflow.Approval{}, fmt.Errorf("postgres: decide approval: approver is not a hex pubkey")
		}
		by = pk
	}
	var (
		a       workflow.Approval
		audited bool
	)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		// Lock the run's queue row first, as UpdateRun does: a run parking
		// concurrently then sees this decision and stays claimable.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM workflow_run_queue q JOIN workflow_approvals a
    ON a.community_id = q.community_id AND a.run_id = q.run_id
WHERE a.community_id = $1 AND a.token = $2 FOR UPDATE OF q`, c.UUID(), tokenHash[:]); err != nil {
			return err
		}
		var err error
		a, err = scanPGApproval(c, tx.QueryRow(ctx, `UPDATE workflow_approvals SET status = $3::text::approval_status,
    approver_pubkey = $4,
    granted_at = CASE WHEN $3::text = 'granted' THEN $5::timestamptz END,
    denied_at = CASE WHEN $3::text = 'denied' THEN $5::timestamptz END
WHERE community_id = $1 AND token = $2 AND status = 'pending' AND ($3::text = 'expired' OR expires_at > $5::timestamptz)
RETURNING `+pgApprovalCols, c.UUID(), tokenHash[:], string(d.Status), by, d.At))
		if errors.Is(err, pgx.ErrNoRows) {
			var one int
			if err := tx.QueryRow(ctx, `SELECT 1 FROM workflow_approvals WHERE community_id = $1 AND token = $2`,
				c.UUID(), tokenHash[:]).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
				return workflow.ErrNotFound
			} else if err != nil {
				return err
			}
			return workflow.ErrApprovalClosed
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE workflow_run_queue SET available_at = now() WHERE community_id = $1 AND run_id = $2`,
			c.UUID(), [16]byte(a.Run)); err != nil {
			return err
		}
		if rec := workflow.ApprovalAudit(a, d); rec != nil {
			audited = true
			return queueAudit(ctx, tx, c, *rec)
		}
		return nil
	})
	if errors.Is(err, workflow.ErrNotFound) || errors.Is(err, workflow.ErrApprovalClosed) {
		return workflow.Approval{}, err
	}
	if err != nil {
		return workflow.Approval{}, fmt.Errorf("postgres: decide approval: %w", err)
	}
	if audited {
		s.audit.pending(c)
	}
	return a, nil
}
