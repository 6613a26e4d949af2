package embedded

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.AuditLog = (*Store)(nil)

// appendAudit links recs into community's chain (cid is its id) inside the
// writer's current transaction. The single writer serializes every append,
// so reading the head and inserting after it cannot race.
func (w *writer) appendAudit(community int64, cid tenant.CommunityID, recs ...audit.Record) error {
	if len(recs) == 0 {
		return nil
	}
	now := time.Now()
	prepared := make([]audit.Prepared, len(recs))
	for i, r := range recs {
		p, err := r.Prepare(now)
		if err != nil {
			return err
		}
		prepared[i] = p
	}
	var (
		seq  int64
		head []byte
	)
	err := w.conn.QueryRowContext(w.ctx, `SELECT seq, hash FROM audit_log WHERE community = ? ORDER BY seq DESC LIMIT 1`, community).Scan(&seq, &head)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return internal("audit head", err)
	}
	var prev [32]byte
	copy(prev[:], head)
	for _, p := range prepared {
		e := audit.Link(cid, seq, prev, p)
		var actor any
		if p.HasActor {
			actor = p.Actor[:]
		}
		if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO audit_log (community, seq, hash, prev_hash, hash_version, action, actor, object, detail, created_us)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, community, e.Seq, e.Hash[:], e.PrevHash[:], e.Version, string(e.Action), actor, e.Object, string(e.Detail), e.Time.UnixMicro()); err != nil {
			return internal("audit append", err)
		}
		seq, prev = e.Seq, e.Hash
	}
	return nil
}

// AppendAudit implements store.AuditLog.
func (s *Store) AppendAudit(ctx context.Context, c tenant.CommunityID, recs ...audit.Record) error {
	now := time.Now()
	recs = append([]audit.Record(nil), recs...) // times are filled in: not the caller's slice
	for i := range recs {
		if _, err := recs[i].Prepare(now); err != nil {
			return err
		}
		if recs[i].Time.IsZero() {
			recs[i].Time = now
		}
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	return s.submit(ctx, func(w *writer) error { return w.appendAudit(cseq, c, recs...) })
}

// AuditEntries implements store.AuditLog.
func (s *Store) AuditEntries(ctx context.Context, c tenant.CommunityID, afterSeq int64, limit int) ([]audit.Entry, error) {
	limit = min(limit, store.MaxAuditPage)
	if limit <= 0 {
		return []audit.Entry{}, nil
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return []audit.Entry{}, nil
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT seq, hash, prev_hash, hash_version, action, actor, object, detail, created_us
FROM audit_log WHERE community = ? AND seq > ? ORDER BY seq LIMIT ?`, cseq, afterSeq, limit)
	if err != nil {
		return nil, internal("audit entries", err)
	}
	defer rows.Close()
	out := []audit.Entry{}
	for rows.Next() {
		var (
			e                 = audit.Entry{Community: c}
			hash, prev, actor []byte
			action, detail    string
			us                int64
		)
		if err := rows.Scan(&e.Seq, &hash, &prev, &e.Version, &action, &actor, &e.Object, &detail, &us); err != nil {
			return nil, internal("audit entries", err)
		}
		copy(e.Hash[:], hash)
		copy(e.PrevHash[:], prev)
		e.Action, e.Detail, e.Time = audit.Action(action), []byte(detail), time.UnixMicro(us).UTC()
		if actor != nil {
			e.Actor = hex.EncodeToString(actor)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("audit entries", err)
	}
	return out, nil
}

// AuditCommunities implements store.AuditLog.
func (s *Store) AuditCommunities(ctx context.Context) ([]tenant.CommunityID, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id FROM communities ORDER BY seq`)
	if err != nil {
		return nil, internal("audit communities", err)
	}
	defer rows.Close()
	var out []tenant.CommunityID
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, internal("audit communities", err)
		}
		id, err := communityFromBytes(b)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// SyncAudit implements store.AuditLog: entries are linked in the change's
// own transaction, so there is never anything pending.
func (s *Store) SyncAudit(context.Context) error { return nil }
