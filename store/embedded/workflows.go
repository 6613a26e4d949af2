package embedded

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// The workflow engine's storage (workflow.Store). Writes go through the
// single writer like every other write, so each method's checks and
// effects are one transaction; a verdict (ErrNotOwner, ErrLeaseLost, …) is
// decided before anything is written and carried out of the transaction
// beside a nil error. Times are Unix milliseconds. The database has no
// foreign keys, so deleting a workflow deletes its runs, effects and queue
// rows explicitly.

var _ workflow.Store = (*Store)(nil)

const sqlWorkflowCols = `id, name, owner, channel, definition, hash, event_id, enabled, created_at, updated_at`

func scanSQLWorkflow(c tenant.CommunityID, r rowScanner) (workflow.Workflow, error) {
	var (
		w                         workflow.Workflow
		id, owner, ch, hash, evID []byte
		def                       string
		enabled                   bool
		created, updated          int64
	)
	if err := r.Scan(&id, &w.Name, &owner, &ch, &def, &hash, &evID, &enabled, &created, &updated); err != nil {
		return w, err
	}
	d, err := workflow.DecodeJSON([]byte(def), nil)
	if err != nil {
		return w, fmt.Errorf("stored definition: %w", err)
	}
	w.Community, w.Definition, w.Enabled = c, d, enabled
	copy(w.ID[:], id)
	copy(w.Channel[:], ch)
	copy(w.Hash[:], hash)
	w.Owner = hex.EncodeToString(owner)
	if len(evID) > 0 {
		w.EventID = hex.EncodeToString(evID)
	}
	w.CreatedAt, w.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return w, nil
}

// wfSeq maps a community for workflow calls: unknown is ErrNotFound.
func (s *Store) wfSeq(ctx context.Context, c tenant.CommunityID) (int64, error) {
	seq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return 0, workflow.ErrNotFound
	}
	return seq, err
}

// PutWorkflow implements workflow.Store.
func (s *Store) PutWorkflow(ctx context.Context, c tenant.CommunityID, p workflow.PutWorkflow) (workflow.Workflow, error) {
	owner, ok := nostr.DecodeHex32(p.Owner)
	if !ok || p.Definition == nil || p.ID.IsZero() {
		return workflow.Workflow{}, errors.New("sqlite: put workflow: need an id, a 64-hex owner and a definition")
	}
	var evID []byte
	if p.EventID != "" {
		if evID, ok = nostr.DecodeHex32(p.EventID); !ok {
			return workflow.Workflow{}, errors.New("sqlite: put workflow: event id must be 64 hex")
		}
	}
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return workflow.Workflow{}, err
	}
	def := string(p.Definition.CanonicalJSON())
	hash := p.Definition.Hash()
	var (
		out     workflow.Workflow
		verdict error
	)
	err = s.submit(ctx, func(w *writer) error {
		verdict = nil
		var curOwner, curCh, curHash []byte
		err := w.conn.QueryRowContext(w.ctx, `SELECT owner, channel, hash FROM workflows WHERE community = ? AND id = ?`,
			cseq, p.ID[:]).Scan(&curOwner, &curCh, &curHash)
		now := time.Now().UnixMilli()
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if p.ExpectedRevision != "" {
				verdict = w.refuse(workflow.ErrNotFound)
				return nil
			}
			// The caps, decided on the single writer: no put can
			// interleave between the counts and the insert.
			if verdict, err = sqlWorkflowCaps(w, cseq, p.Channel, owner); err != nil || verdict != nil {
				return err
			}
			out, err = scanSQLWorkflow(c, w.conn.QueryRowContext(w.ctx, `INSERT INTO workflows (community, id, name, owner, channel,
    definition, hash, trigger_on, event_id, enabled, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+sqlWorkflowCols,
				cseq, p.ID[:], p.Definition.Name, owner, p.Channel[:], def, hash[:], string(p.Definition.Trigger.On), evID,
				p.Definition.Enabled, now, now))
			if err != nil {
				return err
			}
			return w.appendAudit(cseq, c, workflow.PutAudit(p, true))
		case err != nil:
			return internal("put workflow", err)
		}
		if hex.EncodeToString(curOwner) != p.Owner || string(curCh) != string(p.Channel[:]) {
			verdict = w.refuse(workflow.ErrNotOwner)
			return nil
		}
		var h [32]byte
		copy(h[:], curHash)
		if p.ExpectedRevision != "" && p.ExpectedRevision != workflow.RevisionOf(h) {
			verdict = w.refuse(workflow.ErrRevisionConflict)
			return nil
		}
		out, err = scanSQLWorkflow(c, w.conn.QueryRowContext(w.ctx, `UPDATE workflows SET name = ?, definition = ?, hash = ?,
    trigger_on = ?, event_id = ?, enabled = ?, updated_at = ? WHERE community = ? AND id = ? RETURNING `+sqlWorkflowCols,
			p.Definition.Name, def, hash[:], string(p.Definition.Trigger.On), evID, p.Definition.Enabled, now, cseq, p.ID[:]))
		if err != nil {
			return err
		}
		return w.appendAudit(cseq, c, workflow.PutAudit(p, false))
	})
	if err != nil {
		return workflow.Workflow{}, internal("put workflow", err)
	}
	if verdict != nil {
		return workflow.Workflow{}, verdict
	}
	return out, nil
}

// sqlWorkflowCaps returns a *workflow.LimitError when one more workflow in
// channel ch, owned by owner, would exceed a cap.
func sqlWorkflowCaps(w *writer, cseq int64, ch channel.ID, owner []byte) (verdict, err error) {
	var inChannel, owned int
	if err := w.conn.QueryRowContext(w.ctx, `SELECT
    (SELECT count(*) FROM workflows WHERE community = ? AND channel = ?),
    (SELECT count(*) FROM workflows WHERE community = ? AND owner = ?)`,
		cseq, ch[:], cseq, owner).Scan(&inChannel, &owned); err != nil {
		return nil, internal("count workflows", err)
	}
	switch {
	case inChannel >= workflow.MaxWorkflowsPerChannel:
		return &workflow.LimitError{PerChannel: true, Max: workflow.MaxWorkflowsPerChannel}, nil
	case owned >= workflow.MaxWorkflowsPerOwner:
		return &workflow.LimitError{Max: workflow.MaxWorkflowsPerOwner}, nil
	}
	return nil, nil
}

// Workflow implements workflow.Store.
func (s *Store) Workflow(ctx context.Context, c tenant.CommunityID, id workflow.ID) (workflow.Workflow, error) {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return workflow.Workflow{}, err
	}
	wf, err := scanSQLWorkflow(c, s.rdb.QueryRowContext(ctx, `SELECT `+sqlWorkflowCols+` FROM workflows WHERE community = ? AND id = ?`,
		cseq, id[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return workflow.Workflow{}, workflow.ErrNotFound
	}
	if err != nil {
		return workflow.Workflow{}, internal("workflow", err)
	}
	return wf, nil
}

func (s *Store) listWorkflows(ctx context.Context, c tenant.CommunityID, q string, args ...any) ([]workflow.Workflow, error) {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, internal("list workflows", err)
	}
	defer rows.Close()
	var out []workflow.Workflow
	for rows.Next() {
		wf, err := scanSQLWorkflow(c, rows)
		if err != nil {
			return nil, internal("list workflows", err)
		}
		out = append(out, wf)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("list workflows", err)
	}
	return out, nil
}

// Workflows implements workflow.Store.
func (s *Store) Workflows(ctx context.Context, c tenant.CommunityID, ch channel.ID) ([]workflow.Workflow, error) {
	cseq, err := s.wfSeq(ctx, c)
	if errors.Is(err, workflow.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.listWorkflows(ctx, c, `SELECT `+sqlWorkflowCols+` FROM workflows WHERE community = ? AND channel = ? ORDER BY id`,
		cseq, ch[:])
}

// ActiveWorkflows implements workflow.Store.
func (s *Store) ActiveWorkflows(ctx context.Context, c tenant.CommunityID, ch channel.ID, on workflow.TriggerKind) ([]workflow.Workflow, error) {
	cseq, err := s.wfSeq(ctx, c)
	if errors.Is(err, workflow.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.listWorkflows(ctx, c, `SELECT `+sqlWorkflowCols+` FROM workflows
WHERE community = ? AND channel = ? AND trigger_on = ? AND enabled ORDER BY id`, cseq, ch[:], string(on))
}

// writeCount runs statements in one write transaction and returns the rows
// the first affected.
func (s *Store) writeCount(ctx context.Context, op string, stmts []string, args ...any) (int64, error) {
	return s.writeCountAudited(ctx, op, tenant.CommunityID{}, 0, nil, stmts, args...)
}

// writeCountAudited is writeCount that, when the first statement affected
// rows, appends rec(n) to community c's audit chain (cseq its key) in the
// same transaction (rec nil: no entry).
func (s *Store) writeCountAudited(ctx context.Context, op string, c tenant.CommunityID, cseq int64, rec func(n int64) audit.Record, stmts []string, args ...any) (int64, error) {
	var n int64
	err := s.submit(ctx, func(w *writer) error {
		for i, q := range stmts {
			res, err := w.conn.ExecContext(w.ctx, q, args...)
			if err != nil {
				return internal(op, err)
			}
			if i == 0 {
				if n, err = res.RowsAffected(); err != nil {
					return internal(op, err)
				}
			}
		}
		if n == 0 || rec == nil {
			return nil
		}
		return w.appendAudit(cseq, c, rec(n))
	})
	return n, err
}

// DeleteWorkflow implements workflow.Store.
func (s *Store) DeleteWorkflow(ctx context.Context, c tenant.CommunityID, id workflow.ID) error {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return err
	}
	n, err := s.writeCountAudited(ctx, "delete workflow", c, cseq, func(int64) audit.Record { return workflow.DeleteAudit(ctx, id) }, []string{
		`DELETE FROM workflows WHERE community = ?1 AND id = ?2`,
		`DELETE FROM workflow_effects WHERE community = ?1 AND run IN (SELECT id FROM workflow_runs WHERE community = ?1 AND workflow = ?2)`,
		`DELETE FROM workflow_run_queue WHERE community = ?1 AND run IN (SELECT id FROM workflow_runs WHERE community = ?1 AND workflow = ?2)`,
		`DELETE FROM workflow_approvals WHERE community = ?1 AND workflow = ?2`,
		`DELETE FROM workflow_runs WHERE community = ?1 AND workflow = ?2`,
	}, cseq, id[:])
	if err != nil {
		return err
	}
	if n == 0 {
		return workflow.ErrNotFound
	}
	return nil
}

// SetWorkflowEnabled implements workflow.Store.
func (s *Store) SetWorkflowEnabled(ctx context.Context, c tenant.CommunityID, id workflow.ID, enabled bool) error {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return err
	}
	n, err := s.writeCountAudited(ctx, "set workflow enabled", c, cseq, func(int64) audit.Record { return workflow.EnabledAudit(ctx, id, enabled) }, []string{
		`UPDATE workflows SET enabled = ?3, updated_at = ?4 WHERE community = ?1 AND id = ?2`,
	}, cseq, id[:], enabled, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	if n == 0 {
		return workflow.ErrNotFound
	}
	return nil
}

// DisableOwnerWorkflows implements workflow.Store.
func (s *Store) DisableOwnerWorkflows(ctx context.Context, c tenant.CommunityID, ch channel.ID, owner string) (int64, error) {
	pk, ok := nostr.DecodeHex32(owner)
	if !ok {
		return 0, nil
	}
	cseq, err := s.wfSeq(ctx, c)
	if errors.Is(err, workflow.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return s.writeCountAudited(ctx, "disable owner workflows", c, cseq, func(n int64) audit.Record { return workflow.OwnerDisabledAudit(ctx, ch, owner, n) }, []string{
		`UPDATE workflows SET enabled = 0, updated_at = ?4 WHERE community = ?1 AND channel = ?2 AND owner = ?3 AND enabled`,
	}, cseq, ch[:], pk, time.Now().UnixMilli())
}

const sqlRunCols = `id, workflow, status, trigger_event_id, trigger_context, current_step, trace, error_code, error_message,
    resume_at, created_at, started_at, completed_at, definition_hash`

func scanSQLRun(c tenant.CommunityID, r rowScanner) (workflow.Run, error) {
	var (
		run              workflow.Run
		id, wf, trig     []byte
		status           string
		tctx, trace      string
		code, msg        sql.NullString
		resume, st, done sql.NullInt64
		created          int64
		defHash          []byte
	)
	if err := r.Scan(&id, &wf, &status, &trig, &tctx, &run.CurrentStep, &trace, &code, &msg, &resume, &created, &st, &done, &defHash); err != nil {
		return run, err
	}
	copy(run.DefinitionHash[:], defHash)
	run.Community, run.Status = c, workflow.RunStatus(status)
	copy(run.ID[:], id)
	copy(run.Workflow[:], wf)
	run.TriggerEventID = hex.EncodeToString(trig)
	if err := json.Unmarshal([]byte(tctx), &run.Trigger); err != nil {
		return run, fmt.Errorf("trigger context: %w", err)
	}
	t, err := workflow.UnmarshalTrace([]byte(trace))
	if err != nil {
		return run, fmt.Errorf("trace: %w", err)
	}
	run.Trace, run.ErrorCode, run.Error = t, code.String, msg.String
	run.CreatedAt = time.UnixMilli(created)
	if resume.Valid {
		run.ResumeAt = time.UnixMilli(resume.Int64)
	}
	if st.Valid {
		run.StartedAt = time.UnixMilli(st.Int64)
	}
	if done.Valid {
		run.CompletedAt = time.UnixMilli(done.Int64)
	}
	return run, nil
}

// CreateRun implements workflow.Store.
func (s *Store) CreateRun(ctx context.Context, c tenant.CommunityID, r workflow.NewRun) (workflow.Run, bool, error) {
	trig, ok := nostr.DecodeHex32(r.TriggerEventID)
	if !ok {
		return workflow.Run{}, false, errors.New("sqlite: create run: trigger event id must be 64 hex")
	}
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return workflow.Run{}, false, err
	}
	tctx, err := json.Marshal(r.Trigger)
	if err != nil {
		return workflow.Run{}, false, fmt.Errorf("sqlite: create run: %w", err)
	}
	var (
		run     workflow.Run
		created bool
		verdict error
	)
	err = s.submit(ctx, func(w *writer) error {
		verdict, created = nil, false
		run, err = scanSQLRun(c, w.conn.QueryRowContext(w.ctx, `SELECT `+sqlRunCols+` FROM workflow_runs
WHERE community = ? AND workflow = ? AND trigger_event_id = ?`, cseq, r.Workflow[:], trig))
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return internal("create run", err)
		}
		var defHash []byte
		if err := w.conn.QueryRowContext(w.ctx, `SELECT hash FROM workflows WHERE community = ? AND id = ?`, cseq, r.Workflow[:]).Scan(&defHash); errors.Is(err, sql.ErrNoRows) {
			verdict = w.refuse(workflow.ErrNotFound)
			return nil
		} else if err != nil {
			return internal("create run", err)
		}
		id := workflow.NewID()
		now := time.Now().UnixMilli()
		run, err = scanSQLRun(c, w.conn.QueryRowContext(w.ctx, `INSERT INTO workflow_runs (community, id, workflow, status, trigger_event_id,
    trigger_context, created_at, definition_hash) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?) RETURNING `+sqlRunCols,
			cseq, id[:], r.Workflow[:], trig, string(tctx), now, defHash))
		if err != nil {
			return internal("create run", err)
		}
		if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO workflow_run_queue (community, run, available_at) VALUES (?, ?, ?)`,
			cseq, id[:], now); err != nil {
			return internal("create run", err)
		}
		created = true
		return nil
	})
	if err != nil {
		return workflow.Run{}, false, err
	}
	if verdict != nil {
		return workflow.Run{}, false, verdict
	}
	return run, created, nil
}

// Run implements workflow.Store.
func (s *Store) Run(ctx context.Context, c tenant.CommunityID, id workflow.ID) (workflow.Run, error) {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return workflow.Run{}, err
	}
	run, err := scanSQLRun(c, s.rdb.QueryRowContext(ctx, `SELECT `+sqlRunCols+` FROM workflow_runs WHERE community = ? AND id = ?`,
		cseq, id[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return workflow.Run{}, workflow.ErrNotFound
	}
	if err != nil {
		return workflow.Run{}, internal("run", err)
	}
	return run, nil
}

// Runs implements workflow.Store.
func (s *Store) Runs(ctx context.Context, c tenant.CommunityID, wf workflow.ID, p workflow.RunPage) ([]workflow.Run, string, error) {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return nil, "", err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = workflow.DefaultRunPage
	}
	limit = min(limit, workflow.MaxRunPage)
	after := int64(1 << 62)
	afterID := []byte(strings.Repeat("\xff", 16))
	if p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		ts, h, ok := strings.Cut(string(raw), ".")
		ms, err2 := strconv.ParseInt(ts, 10, 64)
		idb, err3 := hex.DecodeString(h)
		if err != nil || !ok || err2 != nil || err3 != nil || len(idb) != 16 {
			return nil, "", workflow.ErrBadCursor
		}
		after, afterID = ms, idb
	}
	var one int
	if err := s.rdb.QueryRowContext(ctx, `SELECT 1 FROM workflows WHERE community = ? AND id = ?`, cseq, wf[:]).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return nil, "", workflow.ErrNotFound
	} else if err != nil {
		return nil, "", internal("runs", err)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+sqlRunCols+` FROM workflow_runs
WHERE community = ? AND workflow = ? AND (created_at < ? OR created_at = ? AND id < ?)
ORDER BY created_at DESC, id DESC LIMIT ?`, cseq, wf[:], after, after, afterID, limit+1)
	if err != nil {
		return nil, "", internal("runs", err)
	}
	defer rows.Close()
	var out []workflow.Run
	for rows.Next() {
		r, err := scanSQLRun(c, rows)
		if err != nil {
			return nil, "", internal("runs", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", internal("runs", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(last.CreatedAt.UnixMilli(), 10) + "." + hex.EncodeToString(last.ID[:])))
	}
	return out, next, nil
}

// ClaimRuns implements workflow.Store.
func (s *Store) ClaimRuns(ctx context.Context, owner string, ttl time.Duration, max int) ([]workflow.Lease, error) {
	if max <= 0 {
		return nil, nil
	}
	var out []workflow.Lease
	err := s.submit(ctx, func(w *writer) error {
		out = out[:0]
		now := time.Now().UnixMilli()
		rows, err := w.conn.QueryContext(w.ctx, `UPDATE workflow_run_queue SET lease_owner = ?1, lease_token = lease_token + 1,
    lease_expires_at = ?2 + ?3
WHERE (community, run) IN (SELECT community, run FROM workflow_run_queue
    WHERE available_at <= ?2 AND (lease_expires_at IS NULL OR lease_expires_at < ?2) ORDER BY available_at LIMIT ?4)
RETURNING community, run, lease_token`, owner, now, ttl.Milliseconds(), max)
		if err != nil {
			return internal("claim runs", err)
		}
		var seqs []int64
		for rows.Next() {
			var (
				seq int64
				run []byte
				tok int64
			)
			if err := rows.Scan(&seq, &run, &tok); err != nil {
				rows.Close()
				return internal("claim runs", err)
			}
			var l workflow.Lease
			copy(l.Run[:], run)
			l.Owner, l.Token = owner, tok
			out = append(out, l)
			seqs = append(seqs, seq)
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return internal("claim runs", err)
		}
		rows.Close()
		ids := make(map[int64]tenant.CommunityID)
		for i, seq := range seqs {
			cid, ok := ids[seq]
			if !ok {
				var b []byte
				if err := w.conn.QueryRowContext(w.ctx, `SELECT id FROM communities WHERE seq = ?`, seq).Scan(&b); err != nil || len(b) != 16 {
					return internal("claim runs", fmt.Errorf("community %d: %v", seq, err))
				}
				cid = tenant.FromUUID([16]byte(b))
				ids[seq] = cid
			}
			out[i].Community = cid
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// leaseArgs returns the community seq of a lease's community.
func (s *Store) leaseSeq(ctx context.Context, l workflow.Lease) (int64, error) {
	seq, err := s.communitySeq(ctx, l.Community)
	if errors.Is(err, errNoSuchCommunity) {
		return 0, workflow.ErrLeaseLost
	}
	return seq, err
}

const sqlHoldsLease = `EXISTS (SELECT 1 FROM workflow_run_queue WHERE community = ? AND run = ? AND lease_token = ? AND lease_owner = ?)`

// leaseCheck reports inside the write transaction whether l is held.
func (w *writer) leaseHeld(cseq int64, l workflow.Lease) (bool, error) {
	var held bool
	err := w.conn.QueryRowContext(w.ctx, `SELECT `+sqlHoldsLease, cseq, l.Run[:], l.Token, l.Owner).Scan(&held)
	if err != nil {
		return false, internal("lease", err)
	}
	return held, nil
}

// RenewLease implements workflow.Store.
func (s *Store) RenewLease(ctx context.Context, l workflow.Lease, ttl time.Duration) error {
	cseq, err := s.leaseSeq(ctx, l)
	if err != nil {
		return err
	}
	n, err := s.writeCount(ctx, "renew lease", []string{
		`UPDATE workflow_run_queue SET lease_expires_at = ?5 WHERE community = ?1 AND run = ?2 AND lease_token = ?3 AND lease_owner = ?4`,
	}, cseq, l.Run[:], l.Token, l.Owner, time.Now().Add(ttl).UnixMilli())
	if err != nil {
		return err
	}
	if n == 0 {
		return workflow.ErrLeaseLost
	}
	return nil
}

// UpdateRun implements workflow.Store.
func (s *Store) UpdateRun(ctx context.Context, l workflow.Lease, u workflow.RunUpdate) error {
	cseq, err := s.leaseSeq(ctx, l)
	if err != nil {
		return err
	}
	trace, err := workflow.MarshalTrace(u.Trace)
	if err != nil {
		return fmt.Errorf("sqlite: update run: %w", err)
	}
	var resume sql.NullInt64
	if !u.ResumeAt.IsZero() && !u.Status.Terminal() {
		resume = sql.NullInt64{Int64: u.ResumeAt.UnixMilli(), Valid: true}
	}
	nullStr := func(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
	var verdict error
	err = s.submit(ctx, func(w *writer) error {
		verdict = nil
		held, err := w.leaseHeld(cseq, l)
		if err != nil {
			return err
		}
		if !held {
			verdict = workflow.ErrLeaseLost
			return nil
		}
		now := time.Now().UnixMilli()
		var started, completed sql.NullInt64
		if u.Status != workflow.RunPending {
			started = sql.NullInt64{Int64: now, Valid: true}
		}
		if u.Status.Terminal() {
			completed = sql.NullInt64{Int64: now, Valid: true}
		}
		if _, err := w.conn.ExecContext(w.ctx, `UPDATE workflow_runs SET status = ?, current_step = ?, trace = ?, error_code = ?,
    error_message = ?, resume_at = ?, started_at = coalesce(started_at, ?), completed_at = ?
WHERE community = ? AND id = ?`, string(u.Status), u.CurrentStep, string(trace), nullStr(u.ErrorCode), nullStr(u.Error),
			resume, started, completed, cseq, l.Run[:]); err != nil {
			return internal("update run", err)
		}
		switch {
		case u.Status.Terminal():
			_, err = w.conn.ExecContext(w.ctx, `DELETE FROM workflow_run_queue WHERE community = ? AND run = ?`, cseq, l.Run[:])
		case resume.Valid:
			// A run waiting for an approval decided meanwhile stays
			// claimable at once.
			_, err = w.conn.ExecContext(w.ctx, `UPDATE workflow_run_queue SET available_at = CASE WHEN EXISTS (SELECT 1 FROM workflow_approvals a
        WHERE a.community = ?2 AND a.run = ?3 AND a.step_index = ?4 AND a.status <> 'pending') THEN ?5 ELSE ?1 END,
    lease_owner = NULL, lease_expires_at = NULL
WHERE community = ?2 AND run = ?3`, resume.Int64, cseq, l.Run[:], u.CurrentStep, now)
		}
		if err != nil {
			return internal("update run", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return verdict
}

// ReleaseRun implements workflow.Store.
func (s *Store) ReleaseRun(ctx context.Context, l workflow.Lease) error {
	cseq, err := s.leaseSeq(ctx, l)
	if err != nil {
		return err
	}
	n, err := s.writeCount(ctx, "release run", []string{
		`UPDATE workflow_run_queue SET lease_owner = NULL, lease_expires_at = NULL
WHERE community = ?1 AND run = ?2 AND lease_token = ?3 AND lease_owner = ?4`,
	}, cseq, l.Run[:], l.Token, l.Owner)
	if err != nil {
		return err
	}
	if n == 0 {
		return workflow.ErrLeaseLost
	}
	return nil
}

// BeginEffect implements workflow.Store.
func (s *Store) BeginEffect(ctx context.Context, l workflow.Lease, key string, intent []byte) (workflow.Effect, bool, error) {
	cseq, err := s.leaseSeq(ctx, l)
	if err != nil {
		return workflow.Effect{}, false, err
	}
	var (
		e       workflow.Effect
		created bool
		verdict error
	)
	err = s.submit(ctx, func(w *writer) error {
		e, created, verdict = workflow.Effect{Key: key}, false, nil
		held, err := w.leaseHeld(cseq, l)
		if err != nil {
			return err
		}
		if !held {
			verdict = workflow.ErrLeaseLost
			return nil
		}
		res, err := w.conn.ExecContext(w.ctx, `INSERT OR IGNORE INTO workflow_effects (community, run, key, intent, created_at)
VALUES (?, ?, ?, ?, ?)`, cseq, l.Run[:], key, intent, time.Now().UnixMilli())
		if err != nil {
			return internal("begin effect", err)
		}
		n, _ := res.RowsAffected()
		created = n == 1
		if err := w.conn.QueryRowContext(w.ctx, `SELECT intent, done, result FROM workflow_effects WHERE community = ? AND run = ? AND key = ?`,
			cseq, l.Run[:], key).Scan(&e.Intent, &e.Done, &e.Result); err != nil {
			return internal("begin effect", err)
		}
		return nil
	})
	if err != nil {
		return workflow.Effect{}, false, err
	}
	if verdict != nil {
		return workflow.Effect{}, false, verdict
	}
	return e, created, nil
}

// FinishEffect implements workflow.Store. It records the result even if
// the lease was lost meanwhile: the effect happened.
func (s *Store) FinishEffect(ctx context.Context, l workflow.Lease, key string, result []byte) error {
	cseq, err := s.leaseSeq(ctx, l)
	if err != nil {
		return err
	}
	if result == nil {
		result = []byte{}
	}
	_, err = s.writeCount(ctx, "finish effect", []string{
		`UPDATE workflow_effects SET done = 1, result = ?4, finished_at = ?5 WHERE community = ?1 AND run = ?2 AND key = ?3`,
	}, cseq, l.Run[:], key, result, time.Now().UnixMilli())
	return err
}
