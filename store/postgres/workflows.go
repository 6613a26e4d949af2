package postgres

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// The workflow engine's storage (workflow.Store).
//
// Definitions and runs live in tenant tables under row-level security;
// every statement runs with the community set. Leases live in
// workflow_run_queue, a registered global table holding ids, times and
// lease bookkeeping only, because a worker looks for due runs of every
// community at once (FOR UPDATE SKIP LOCKED, so concurrent workers claim
// disjoint runs). The lease token is a fence: every write under a lease
// checks it in the same transaction.

var _ workflow.Store = (*Store)(nil)

const pgWorkflowCols = `id, name, owner_pubkey, channel_id, definition, definition_hash, event_id, enabled, created_at, updated_at`

func scanPGWorkflow(c tenant.CommunityID, r pgx.Row) (workflow.Workflow, error) {
	var (
		w              workflow.Workflow
		id, ch         [16]byte
		owner, hash, e []byte
		def            []byte
	)
	if err := r.Scan(&id, &w.Name, &owner, &ch, &def, &hash, &e, &w.Enabled, &w.CreatedAt, &w.UpdatedAt); err != nil {
		return w, err
	}
	d, err := workflow.DecodeJSON(def, nil)
	if err != nil {
		return w, fmt.Errorf("stored definition: %w", err)
	}
	w.Community, w.ID, w.Channel, w.Definition = c, workflow.ID(id), channel.ID(ch), d
	w.Owner = hex.EncodeToString(owner)
	copy(w.Hash[:], hash)
	if len(e) > 0 {
		w.EventID = hex.EncodeToString(e)
	}
	return w, nil
}

func pgWorkflowErr(op string, err error) error {
	if errors.Is(err, workflow.ErrNotFound) || errors.Is(err, workflow.ErrNotOwner) ||
		errors.Is(err, workflow.ErrRevisionConflict) || errors.Is(err, workflow.ErrLeaseLost) ||
		errors.Is(err, workflow.ErrBadCursor) || errors.Is(err, workflow.ErrTooManyWorkflows) {
		return err
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// PutWorkflow implements workflow.Store.
func (s *Store) PutWorkflow(ctx context.Context, c tenant.CommunityID, p workflow.PutWorkflow) (workflow.Workflow, error) {
	owner, ok := nostr.DecodeHex32(p.Owner)
	if !ok || p.Definition == nil || p.ID.IsZero() || c.IsZero() {
		return workflow.Workflow{}, errors.New("postgres: put workflow: need an id, a 64-hex owner and a definition")
	}
	var evID []byte
	if p.EventID != "" {
		if evID, ok = nostr.DecodeHex32(p.EventID); !ok {
			return workflow.Workflow{}, errors.New("postgres: put workflow: event id must be 64 hex")
		}
	}
	def := p.Definition.CanonicalJSON()
	hash := p.Definition.Hash()
	var out workflow.Workflow
	for attempt := 0; attempt < 2; attempt++ {
		retry := false
		err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
			var (
				curOwner, curHash []byte
				curCh             [16]byte
			)
			err := tx.QueryRow(ctx, `SELECT owner_pubkey, channel_id, definition_hash FROM workflows
WHERE community_id = $1 AND id = $2 FOR UPDATE`, c.UUID(), [16]byte(p.ID)).Scan(&curOwner, &curCh, &curHash)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				if p.ExpectedRevision != "" {
					return workflow.ErrNotFound
				}
				if err := pgWorkflowCaps(ctx, tx, c, p.Channel, owner); err != nil {
					return err
				}
				row := tx.QueryRow(ctx, `INSERT INTO workflows (community_id, id, name, owner_pubkey, channel_id, definition,
    definition_hash, trigger_on, event_id, enabled)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (community_id, id) DO NOTHING RETURNING `+pgWorkflowCols,
					c.UUID(), [16]byte(p.ID), p.Definition.Name, owner, [16]byte(p.Channel), def, hash[:],
					string(p.Definition.Trigger.On), evID, p.Definition.Enabled)
				out, err = scanPGWorkflow(c, row)
				if errors.Is(err, pgx.ErrNoRows) {
					retry = true // created concurrently: decide again against it
					return nil
				}
				if err != nil {
					return err
				}
				return queueAudit(ctx, tx, c, workflow.PutAudit(p, true))
			case err != nil:
				return err
			}
			if hex.EncodeToString(curOwner) != p.Owner || curCh != p.Channel {
				return workflow.ErrNotOwner
			}
			var ch [32]byte
			copy(ch[:], curHash)
			if p.ExpectedRevision != "" && p.ExpectedRevision != workflow.RevisionOf(ch) {
				return workflow.ErrRevisionConflict
			}
			out, err = scanPGWorkflow(c, tx.QueryRow(ctx, `UPDATE workflows SET name = $3, definition = $4, definition_hash = $5,
    trigger_on = $6, event_id = $7, enabled = $8, updated_at = now()
WHERE community_id = $1 AND id = $2 RETURNING `+pgWorkflowCols,
				c.UUID(), [16]byte(p.ID), p.Definition.Name, def, hash[:], string(p.Definition.Trigger.On), evID, p.Definition.Enabled))
			if err != nil {
				return err
			}
			return queueAudit(ctx, tx, c, workflow.PutAudit(p, false))
		})
		if err != nil {
			return workflow.Workflow{}, pgWorkflowErr("put workflow", err)
		}
		if !retry {
			s.audit.pending(c)
			return out, nil
		}
	}
	return workflow.Workflow{}, errors.New("postgres: put workflow: concurrent creation did not settle")
}

// pgWorkflowCaps returns a *workflow.LimitError when one more workflow in
// channel ch, owned by owner, would exceed a cap. Creations in a community
// are serialized by a transaction-scoped advisory lock taken first, so two
// concurrent puts cannot both pass the counts.
func pgWorkflowCaps(ctx context.Context, tx pgx.Tx, c tenant.CommunityID, ch channel.ID, owner []byte) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('buzz workflows ' || $1::text, 0))`, c.String()); err != nil {
		return err
	}
	var inChannel, owned int
	if err := tx.QueryRow(ctx, `SELECT
    (SELECT count(*) FROM workflows WHERE community_id = $1 AND channel_id = $2),
    (SELECT count(*) FROM workflows WHERE community_id = $1 AND owner_pubkey = $3)`,
		c.UUID(), [16]byte(ch), owner).Scan(&inChannel, &owned); err != nil {
		return err
	}
	switch {
	case inChannel >= workflow.MaxWorkflowsPerChannel:
		return &workflow.LimitError{PerChannel: true, Max: workflow.MaxWorkflowsPerChannel}
	case owned >= workflow.MaxWorkflowsPerOwner:
		return &workflow.LimitError{Max: workflow.MaxWorkflowsPerOwner}
	}
	return nil
}

// Workflow implements workflow.Store.
func (s *Store) Workflow(ctx context.Context, c tenant.CommunityID, id workflow.ID) (workflow.Workflow, error) {
	if c.IsZero() {
		return workflow.Workflow{}, workflow.ErrNotFound
	}
	var b pgx.Batch
	b.Queue(`SELECT `+pgWorkflowCols+` FROM workflows WHERE community_id = $1 AND id = $2`, c.UUID(), [16]byte(id))
	var w workflow.Workflow
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		var err error
		w, err = scanPGWorkflow(c, br.QueryRow())
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return workflow.Workflow{}, workflow.ErrNotFound
	}
	if err != nil {
		return workflow.Workflow{}, pgWorkflowErr("workflow", err)
	}
	return w, nil
}

func (s *Store) listWorkflows(ctx context.Context, c tenant.CommunityID, q string, args ...any) ([]workflow.Workflow, error) {
	if c.IsZero() {
		return nil, nil
	}
	var b pgx.Batch
	b.Queue(q, args...)
	var out []workflow.Workflow
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			w, err := scanPGWorkflow(c, rows)
			if err != nil {
				return err
			}
			out = append(out, w)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, pgWorkflowErr("list workflows", err)
	}
	return out, nil
}

// Workflows implements workflow.Store.
func (s *Store) Workflows(ctx context.Context, c tenant.CommunityID, ch channel.ID) ([]workflow.Workflow, error) {
	return s.listWorkflows(ctx, c, `SELECT `+pgWorkflowCols+` FROM workflows
WHERE community_id = $1 AND channel_id = $2 ORDER BY id`, c.UUID(), [16]byte(ch))
}

// ActiveWorkflows implements workflow.Store.
func (s *Store) ActiveWorkflows(ctx context.Context, c tenant.CommunityID, ch channel.ID, on workflow.TriggerKind) ([]workflow.Workflow, error) {
	return s.listWorkflows(ctx, c, `SELECT `+pgWorkflowCols+` FROM workflows
WHERE community_id = $1 AND channel_id = $2 AND trigger_on = $3 AND enabled AND status = 'active' ORDER BY id`,
		c.UUID(), [16]byte(ch), string(on))
}

// execCount runs one statement in community c and returns rows affected.
func (s *Store) execCount(ctx context.Context, c tenant.CommunityID, q string, args ...any) (int64, error) {
	return s.execCountAudited(ctx, c, nil, q, args...)
}

// execCountAudited is execCount that, when the statement affected rows,
// queues rec(n) in c's audit chain in the same transaction (rec nil: no
// entry).
func (s *Store) execCountAudited(ctx context.Context, c tenant.CommunityID, rec func(n int64) audit.Record, q string, args ...any) (int64, error) {
	var n int64
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, q, args...)
		n = tag.RowsAffected()
		if err != nil || n == 0 || rec == nil {
			return err
		}
		return queueAudit(ctx, tx, c, rec(n))
	})
	if err == nil && n > 0 && rec != nil {
		s.audit.pending(c)
	}
	return n, err
}

// DeleteWorkflow implements workflow.Store.
func (s *Store) DeleteWorkflow(ctx context.Context, c tenant.CommunityID, id workflow.ID) error {
	if c.IsZero() {
		return workflow.ErrNotFound
	}
	n, err := s.execCountAudited(ctx, c, func(int64) audit.Record { return workflow.DeleteAudit(ctx, id) },
		`DELETE FROM workflows WHERE community_id = $1 AND id = $2`, c.UUID(), [16]byte(id))
	if err != nil {
		return pgWorkflowErr("delete workflow", err)
	}
	if n == 0 {
		return workflow.ErrNotFound
	}
	return nil
}

// SetWorkflowEnabled implements workflow.Store.
func (s *Store) SetWorkflowEnabled(ctx context.Context, c tenant.CommunityID, id workflow.ID, enabled bool) error {
	if c.IsZero() {
		return workflow.ErrNotFound
	}
	n, err := s.execCountAudited(ctx, c, func(int64) audit.Record { return workflow.EnabledAudit(ctx, id, enabled) },
		`UPDATE workflows SET enabled = $3, updated_at = now() WHERE community_id = $1 AND id = $2`,
		c.UUID(), [16]byte(id), enabled)
	if err != nil {
		return pgWorkflowErr("set workflow enabled", err)
	}
	if n == 0 {
		return workflow.ErrNotFound
	}
	return nil
}

// DisableOwnerWorkflows implements workflow.Store.
func (s *Store) DisableOwnerWorkflows(ctx context.Context, c tenant.CommunityID, ch channel.ID, owner string) (int64, error) {
	pk, ok := nostr.DecodeHex32(owner)
	if !ok || c.IsZero() {
		return 0, nil
	}
	n, err := s.execCountAudited(ctx, c, func(n int64) audit.Record { return workflow.OwnerDisabledAudit(ctx, ch, owner, n) },
		`UPDATE workflows SET enabled = false, updated_at = now()
WHERE community_id = $1 AND channel_id = $2 AND owner_pubkey = $3 AND enabled`, c.UUID(), [16]byte(ch), pk)
	if err != nil {
		return 0, pgWorkflowErr("disable owner workflows", err)
	}
	return n, nil
}

const pgRunCols = `id, workflow_id, status::text, trigger_event_id, trigger_context, current_step, execution_trace,
    error_code, error_message, resume_at, created_at, started_at, completed_at, definition_hash`

func scanPGRun(c tenant.CommunityID, r pgx.Row) (workflow.Run, error) {
	var (
		run            workflow.Run
		id, wf         [16]byte
		status         string
		trig           []byte
		tctx, trace    []byte
		code, msg      *string
		resume, st, co *time.Time
		defHash        []byte
	)
	if err := r.Scan(&id, &wf, &status, &trig, &tctx, &run.CurrentStep, &trace, &code, &msg, &resume, &run.CreatedAt, &st, &co, &defHash); err != nil {
		return run, err
	}
	copy(run.DefinitionHash[:], defHash)
	run.Community, run.ID, run.Workflow, run.Status = c, workflow.ID(id), workflow.ID(wf), workflow.RunStatus(status)
	run.TriggerEventID = hex.EncodeToString(trig)
	if len(tctx) > 0 {
		if err := json.Unmarshal(tctx, &run.Trigger); err != nil {
			return run, fmt.Errorf("trigger context: %w", err)
		}
	}
	t, err := workflow.UnmarshalTrace(trace)
	if err != nil {
		return run, fmt.Errorf("trace: %w", err)
	}
	run.Trace = t
	if code != nil {
		run.ErrorCode = *code
	}
	if msg != nil {
		run.Error = *msg
	}
	if resume != nil {
		run.ResumeAt = *resume
	}
	if st != nil {
		run.StartedAt = *st
	}
	if co != nil {
		run.CompletedAt = *co
	}
	return run, nil
}

// CreateRun implements workflow.Store.
func (s *Store) CreateRun(ctx context.Context, c tenant.CommunityID, r workflow.NewRun) (workflow.Run, bool, error) {
	trig, ok := nostr.DecodeHex32(r.TriggerEventID)
	if !ok {
		return workflow.Run{}, false, errors.New("postgres: create run: trigger event id must be 64 hex")
	}
	if c.IsZero() {
		return workflow.Run{}, false, workflow.ErrNotFound
	}
	tctx, err := json.Marshal(r.Trigger)
	if err != nil {
		return workflow.Run{}, false, fmt.Errorf("postgres: create run: %w", err)
	}
	var (
		run     workflow.Run
		created bool
	)
	err = s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		id := workflow.NewID()
		run, err = scanPGRun(c, tx.QueryRow(ctx, `INSERT INTO workflow_runs (community_id, id, workflow_id, status, trigger_event_id, trigger_context, definition_hash)
SELECT $1, $2, $3, 'pending', $4, $5, w.definition_hash FROM workflows w WHERE w.community_id = $1 AND w.id = $3
ON CONFLICT (community_id, workflow_id, trigger_event_id) DO NOTHING RETURNING `+pgRunCols,
			c.UUID(), [16]byte(id), [16]byte(r.Workflow), trig, tctx))
		if err == nil {
			created = true
			_, err = tx.Exec(ctx, `INSERT INTO workflow_run_queue (community_id, run_id) VALUES ($1, $2)`, c.UUID(), [16]byte(id))
			return err
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		run, err = scanPGRun(c, tx.QueryRow(ctx, `SELECT `+pgRunCols+` FROM workflow_runs
WHERE community_id = $1 AND workflow_id = $2 AND trigger_event_id = $3`, c.UUID(), [16]byte(r.Workflow), trig))
		if errors.Is(err, pgx.ErrNoRows) {
			return workflow.ErrNotFound
		}
		return err
	})
	if err != nil {
		return workflow.Run{}, false, pgWorkflowErr("create run", err)
	}
	return run, created, nil
}

// Run implements workflow.Store.
func (s *Store) Run(ctx context.Context, c tenant.CommunityID, id workflow.ID) (workflow.Run, error) {
	if c.IsZero() {
		return workflow.Run{}, workflow.ErrNotFound
	}
	var b pgx.Batch
	b.Queue(`SELECT `+pgRunCols+` FROM workflow_runs WHERE community_id = $1 AND id = $2`, c.UUID(), [16]byte(id))
	var run workflow.Run
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		var err error
		run, err = scanPGRun(c, br.QueryRow())
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return workflow.Run{}, workflow.ErrNotFound
	}
	if err != nil {
		return workflow.Run{}, pgWorkflowErr("run", err)
	}
	return run, nil
}

// encodeRunCursor / decodeRunCursor: "unix-micros.run-id-hex", base64url.
func encodeRunCursor(t time.Time, id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(t.UnixMicro(), 10) + "." + hex.EncodeToString(id[:])))
}

func decodeRunCursor(s string) (time.Time, [16]byte, error) {
	var id [16]byte
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, id, workflow.ErrBadCursor
	}
	ts, h, ok := strings.Cut(string(raw), ".")
	us, err := strconv.ParseInt(ts, 10, 64)
	b, ok2 := decodeHexN(h, 16)
	if !ok || err != nil || !ok2 {
		return time.Time{}, id, workflow.ErrBadCursor
	}
	copy(id[:], b)
	return time.UnixMicro(us), id, nil
}

// Runs implements workflow.Store.
func (s *Store) Runs(ctx context.Context, c tenant.CommunityID, wf workflow.ID, p workflow.RunPage) ([]workflow.Run, string, error) {
	if c.IsZero() {
		return nil, "", workflow.ErrNotFound
	}
	limit := p.Limit
	if limit <= 0 {
		limit = workflow.DefaultRunPage
	}
	limit = min(limit, workflow.MaxRunPage)
	after := time.UnixMicro(1 << 62)
	var afterID [16]byte
	for i := range afterID {
		afterID[i] = 0xff
	}
	if p.Cursor != "" {
		var err error
		if after, afterID, err = decodeRunCursor(p.Cursor); err != nil {
			return nil, "", err
		}
	}
	var b pgx.Batch
	b.Queue(`SELECT EXISTS (SELECT 1 FROM workflows WHERE community_id = $1 AND id = $2)`, c.UUID(), [16]byte(wf))
	b.Queue(`SELECT `+pgRunCols+` FROM workflow_runs WHERE community_id = $1 AND workflow_id = $2
  AND (created_at, id) < ($3, $4) ORDER BY created_at DESC, id DESC LIMIT $5`,
		c.UUID(), [16]byte(wf), after, afterID, limit+1)
	var (
		out    []workflow.Run
		exists bool
	)
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&exists); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanPGRun(c, rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, "", pgWorkflowErr("runs", err)
	}
	if !exists {
		return nil, "", workflow.ErrNotFound
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = encodeRunCursor(last.CreatedAt, last.ID)
	}
	return out, next, nil
}

func secs(d time.Duration) float64 { return d.Seconds() }

// ClaimRuns implements workflow.Store.
func (s *Store) ClaimRuns(ctx context.Context, owner string, ttl time.Duration, max int) ([]workflow.Lease, error) {
	if max <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `WITH due AS (
    SELECT community_id, run_id FROM workflow_run_queue
    WHERE available_at <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now())
    ORDER BY available_at LIMIT $3 FOR UPDATE SKIP LOCKED)
UPDATE workflow_run_queue q SET lease_owner = $1, lease_token = q.lease_token + 1,
    lease_expires_at = now() + make_interval(secs => $2), heartbeat_at = now()
FROM due WHERE q.community_id = due.community_id AND q.run_id = due.run_id
RETURNING q.community_id, q.run_id, q.lease_token`, owner, secs(ttl), max)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim runs: %w", err)
	}
	var out []workflow.Lease
	var c, id [16]byte
	var tok int64
	_, err = pgx.ForEachRow(rows, []any{&c, &id, &tok}, func() error {
		out = append(out, workflow.Lease{Community: tenant.FromUUID(c), Run: workflow.ID(id), Owner: owner, Token: tok})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claim runs: %w", err)
	}
	return out, nil
}

// RenewLease implements workflow.Store.
func (s *Store) RenewLease(ctx context.Context, l workflow.Lease, ttl time.Duration) error {
	tag, err := s.pool.Exec(ctx, `UPDATE workflow_run_queue SET lease_expires_at = now() + make_interval(secs => $5), heartbeat_at = now()
WHERE community_id = $1 AND run_id = $2 AND lease_token = $3 AND lease_owner = $4`,
		l.Community.UUID(), [16]byte(l.Run), l.Token, l.Owner, secs(ttl))
	if err != nil {
		return fmt.Errorf("postgres: renew lease: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return workflow.ErrLeaseLost
	}
	return nil
}

// holdLease locks the queue row of a held lease inside tx, or ErrLeaseLost.
func holdLease(ctx context.Context, tx pgx.Tx, l workflow.Lease) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM workflow_run_queue
WHERE community_id = $1 AND run_id = $2 AND lease_token = $3 AND lease_owner = $4 FOR UPDATE`,
		l.Community.UUID(), [16]byte(l.Run), l.Token, l.Owner).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return workflow.ErrLeaseLost
	}
	return err
}

// UpdateRun implements workflow.Store.
func (s *Store) UpdateRun(ctx context.Context, l workflow.Lease, u workflow.RunUpdate) error {
	trace, err := workflow.MarshalTrace(u.Trace)
	if err != nil {
		return fmt.Errorf("postgres: update run: %w", err)
	}
	var resume *time.Time
	if !u.ResumeAt.IsZero() && !u.Status.Terminal() {
		resume = &u.ResumeAt
	}
	err = s.inCommunityTx(ctx, l.Community, func(tx pgx.Tx) error {
		if err := holdLease(ctx, tx, l); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE workflow_runs SET status = $3::text::run_status, current_step = $4, execution_trace = $5,
    error_code = NULLIF($6, ''), error_message = NULLIF($7, ''), resume_at = $8,
    started_at = CASE WHEN $3::text <> 'pending' THEN coalesce(started_at, now()) END,
    completed_at = CASE WHEN $3::text IN ('completed', 'failed', 'cancelled') THEN now() END
WHERE community_id = $1 AND id = $2`, l.Community.UUID(), [16]byte(l.Run), string(u.Status), u.CurrentStep, trace,
			u.ErrorCode, u.Error, resume); err != nil {
			return err
		}
		switch {
		case u.Status.Terminal():
			_, err = tx.Exec(ctx, `DELETE FROM workflow_run_queue WHERE community_id = $1 AND run_id = $2`, l.Community.UUID(), [16]byte(l.Run))
		case resume != nil:
			// A run waiting for an approval decided meanwhile stays
			// claimable at once (DecideApproval locks this row first).
			_, err = tx.Exec(ctx, `UPDATE workflow_run_queue SET available_at = CASE WHEN EXISTS (SELECT 1 FROM workflow_approvals a
        WHERE a.community_id = $1 AND a.run_id = $2 AND a.step_index = $4 AND a.status <> 'pending') THEN now() ELSE $3 END,
    lease_owner = NULL, lease_expires_at = NULL
WHERE community_id = $1 AND run_id = $2`, l.Community.UUID(), [16]byte(l.Run), *resume, u.CurrentStep)
		}
		return err
	})
	if err != nil {
		return pgWorkflowErr("update run", err)
	}
	return nil
}

// ReleaseRun implements workflow.Store.
func (s *Store) ReleaseRun(ctx context.Context, l workflow.Lease) error {
	tag, err := s.pool.Exec(ctx, `UPDATE workflow_run_queue SET lease_owner = NULL, lease_expires_at = NULL
WHERE community_id = $1 AND run_id = $2 AND lease_token = $3 AND lease_owner = $4`,
		l.Community.UUID(), [16]byte(l.Run), l.Token, l.Owner)
	if err != nil {
		return fmt.Errorf("postgres: release run: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return workflow.ErrLeaseLost
	}
	return nil
}

// BeginEffect implements workflow.Store.
func (s *Store) BeginEffect(ctx context.Context, l workflow.Lease, key string, intent []byte) (workflow.Effect, bool, error) {
	var (
		e       = workflow.Effect{Key: key}
		created bool
	)
	err := s.inCommunityTx(ctx, l.Community, func(tx pgx.Tx) error {
		if err := holdLease(ctx, tx, l); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO workflow_effects (community_id, run_id, key, intent) VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING`, l.Community.UUID(), [16]byte(l.Run), key, intent)
		if err != nil {
			return err
		}
		created = tag.RowsAffected() == 1
		return tx.QueryRow(ctx, `SELECT intent, done, result FROM workflow_effects WHERE community_id = $1 AND run_id = $2 AND key = $3`,
			l.Community.UUID(), [16]byte(l.Run), key).Scan(&e.Intent, &e.Done, &e.Result)
	})
	if err != nil {
		return workflow.Effect{}, false, pgWorkflowErr("begin effect", err)
	}
	return e, created, nil
}

// FinishEffect implements workflow.Store. It records the result even if
// the lease was lost meanwhile: the effect happened.
func (s *Store) FinishEffect(ctx context.Context, l workflow.Lease, key string, result []byte) error {
	if result == nil {
		result = []byte{}
	}
	_, err := s.execCount(ctx, l.Community, `UPDATE workflow_effects SET done = true, result = $4, finished_at = now()
WHERE community_id = $1 AND run_id = $2 AND key = $3`, l.Community.UUID(), [16]byte(l.Run), key, result)
	if err != nil {
		return fmt.Errorf("postgres: finish effect: %w", err)
	}
	return nil
}
