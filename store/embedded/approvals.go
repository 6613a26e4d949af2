package embedded

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

var _ workflow.ApprovalStore = (*Store)(nil)

const sqlApprovalCols = `token, workflow, run, step_id, step_index, approver, message, status, decided_by, decided_at, expires_at, created_at`

func scanSQLApproval(c tenant.CommunityID, r rowScanner) (workflow.Approval, error) {
	var (
		a                workflow.Approval
		tok, wf, run, by []byte
		status           string
		decided          sql.NullInt64
		expires, created int64
	)
	if err := r.Scan(&tok, &wf, &run, &a.StepID, &a.StepIndex, &a.Approver, &a.Message, &status, &by, &decided, &expires, &created); err != nil {
		return a, err
	}
	a.Community, a.Status = c, workflow.ApprovalStatus(status)
	copy(a.TokenHash[:], tok)
	copy(a.Workflow[:], wf)
	copy(a.Run[:], run)
	if len(by) == 32 {
		a.DecidedBy = hex.EncodeToString(by)
	}
	if decided.Valid {
		a.DecidedAt = time.UnixMilli(decided.Int64)
	}
	a.ExpiresAt, a.CreatedAt = time.UnixMilli(expires), time.UnixMilli(created)
	return a, nil
}

// CreateApproval implements workflow.ApprovalStore.
func (s *Store) CreateApproval(ctx context.Context, c tenant.CommunityID, a workflow.Approval) error {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return err
	}
	_, err = s.writeCount(ctx, "create approval", []string{`INSERT INTO workflow_approvals
    (community, token, workflow, run, step_id, step_index, approver, message, expires_at, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING`},
		cseq, a.TokenHash[:], a.Workflow[:], a.Run[:], a.StepID, a.StepIndex, a.Approver, a.Message,
		a.ExpiresAt.UnixMilli(), time.Now().UnixMilli())
	return err
}

// Approval implements workflow.ApprovalStore.
func (s *Store) Approval(ctx context.Context, c tenant.CommunityID, tokenHash [32]byte) (workflow.Approval, error) {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return workflow.Approval{}, err
	}
	a, err := scanSQLApproval(c, s.rdb.QueryRowContext(ctx, `SELECT `+sqlApprovalCols+` FROM workflow_approvals
WHERE community = ? AND token = ?`, cseq, tokenHash[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return workflow.Approval{}, workflow.ErrNotFound
	}
	if err != nil {
		return workflow.Approval{}, internal("approval", err)
	}
	return a, nil
}

// DecideApproval implements workflow.ApprovalStore. The single writer
// serializes it with UpdateRun, which keeps a run whose approval was
// decided claimable.
func (s *Store) DecideApproval(ctx context.Context, c tenant.CommunityID, tokenHash [32]byte, d workflow.Decision) (workflow.Approval, error) {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return workflow.Approval{}, err
	}
	var by []byte
	if d.Approver != "" {
		pk, ok := nostr.DecodeHex32(d.Approver)
		if !ok {
			return workflow.Approval{}, errors.New("sqlite: decide approval: approver is not a hex pubkey")
		}
		by = pk
	}
	var (
		a       workflow.Approval
		verdict error
	)
	err = s.submit(ctx, func(w *writer) error {
		verdict = nil
		res, err := w.conn.ExecContext(w.ctx, `UPDATE workflow_approvals SET status = ?3, decided_by = ?4, decided_at = ?5
WHERE community = ?1 AND token = ?2 AND status = 'pending' AND (?3 = 'expired' OR expires_at > ?5)`,
			cseq, tokenHash[:], string(d.Status), by, d.At.UnixMilli())
		if err != nil {
			return internal("decide approval", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return internal("decide approval", err)
		}
		a, err = scanSQLApproval(c, w.conn.QueryRowContext(w.ctx, `SELECT `+sqlApprovalCols+` FROM workflow_approvals
WHERE community = ? AND token = ?`, cseq, tokenHash[:]))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			verdict = w.refuse(workflow.ErrNotFound)
			return nil
		case err != nil:
			return internal("decide approval", err)
		case n == 0:
			verdict = w.refuse(workflow.ErrApprovalClosed)
			return nil
		}
		if _, err := w.conn.ExecContext(w.ctx, `UPDATE workflow_run_queue SET available_at = ? WHERE community = ? AND run = ?`,
			time.Now().UnixMilli(), cseq, a.Run[:]); err != nil {
			return internal("decide approval", err)
		}
		if rec := workflow.ApprovalAudit(a, d); rec != nil {
			return w.appendAudit(cseq, c, *rec)
		}
		return nil
	})
	if err != nil {
		return workflow.Approval{}, err
	}
	if verdict != nil {
		return workflow.Approval{}, verdict
	}
	return a, nil
}
