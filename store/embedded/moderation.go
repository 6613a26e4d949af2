package embedded

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The moderation tables (schema version 50); see store.ModerationStore.

func unixOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Unix()
}

func timeOrZero(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(v.Int64, 0).UTC()
}

func hexOrEmpty(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return hex.EncodeToString(b)
}

const restrictionColumns = `pubkey, kind, until, reason, actor, created_at`

func scanRestriction(r rowScanner) (store.Restriction, error) {
	var (
		pk, actor []byte
		kind      string
		until     sql.NullInt64
		created   int64
		x         store.Restriction
	)
	if err := r.Scan(&pk, &kind, &until, &x.Reason, &actor, &created); err != nil {
		return x, err
	}
	x.PubKey, x.Kind, x.Until = hex.EncodeToString(pk), store.RestrictionKind(kind), timeOrZero(until)
	x.Actor, x.CreatedAt = hex.EncodeToString(actor), time.Unix(created, 0).UTC()
	return x, nil
}

// PubkeyRestrictions implements store.ModerationStore.
func (s *Store) PubkeyRestrictions(ctx context.Context, c tenant.CommunityID, pubkey string, now time.Time) ([]store.Restriction, error) {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return nil, nil
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return nil, err
	}
	if !s.mayBeRestricted(cseq) {
		return nil, nil
	}
	return s.restrictions(ctx, `SELECT `+restrictionColumns+` FROM moderation_restrictions
WHERE community = ? AND pubkey = ? AND (until IS NULL OR until > ?) ORDER BY kind`, cseq, pk, now.Unix())
}

// loadRestricted fills s.restricted from the database; it runs in open,
// before the writer goroutine starts.
func (s *Store) loadRestricted(ctx context.Context) error {
	rows, err := s.w.conn.QueryContext(ctx, `SELECT DISTINCT community FROM moderation_restrictions`)
	if err != nil {
		return internal("restrictions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var cseq int64
		if err := rows.Scan(&cseq); err != nil {
			return internal("restrictions", err)
		}
		s.restricted[cseq] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return internal("restrictions", err)
	}
	return nil
}

// markRestricted records that community cseq may hold restrictions from
// now on. The writer calls it before it inserts one, so a
// PubkeyRestrictions that starts after the insert is acknowledged queries.
// A mark whose insert is then rolled back only costs queries.
func (s *Store) markRestricted(cseq int64) {
	s.restrictMu.RLock()
	_, ok := s.restricted[cseq]
	s.restrictMu.RUnlock()
	if ok {
		return
	}
	s.restrictMu.Lock()
	s.restricted[cseq] = struct{}{}
	s.restrictMu.Unlock()
}

// mayBeRestricted reports whether community cseq may hold restrictions
// (see Store.restricted).
func (s *Store) mayBeRestricted(cseq int64) bool {
	s.restrictMu.RLock()
	_, ok := s.restricted[cseq]
	s.restrictMu.RUnlock()
	return ok
}

// Restrictions implements store.ModerationStore.
func (s *Store) Restrictions(ctx context.Context, c tenant.CommunityID, now time.Time, after string, limit int) ([]store.Restriction, error) {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return nil, err
	}
	q := `SELECT ` + restrictionColumns + ` FROM moderation_restrictions WHERE community = ? AND (until IS NULL OR until > ?)`
	args := []any{cseq, now.Unix()}
	if after != "" {
		from, ok := nostr.DecodeHex32(after)
		if !ok {
			return nil, store.ErrInvalidModeration
		}
		q += ` AND pubkey > ?`
		args = append(args, from)
	}
	return s.restrictions(ctx, q+` ORDER BY pubkey, kind LIMIT ?`, append(args, pageLimit(limit))...)
}

// restrictions runs q through the read statement cache: PubkeyRestrictions
// runs for every pubkey the ingest pipeline's cache does not hold, and
// compiling its statement was most of its cost (5 % of the relay's CPU in
// a closed-loop ingest).
func (s *Store) restrictions(ctx context.Context, q string, args ...any) ([]store.Restriction, error) {
	st, err := s.rstmts.get(ctx, q)
	if err != nil {
		return nil, internal("restrictions", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, internal("restrictions", err)
	}
	defer rows.Close()
	var out []store.Restriction
	for rows.Next() {
		x, err := scanRestriction(rows)
		if err != nil {
			return nil, internal("restrictions", err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("restrictions", err)
	}
	return out, nil
}

func pageLimit(limit int) int {
	if limit <= 0 || limit > store.MaxModerationPage {
		return store.MaxModerationPage
	}
	return limit
}

// Moderate implements store.ModerationStore.
func (s *Store) Moderate(ctx context.Context, c tenant.CommunityID, a store.ModerationAction, now time.Time) (store.ModerationAction, error) {
	if err := a.Validate(); err != nil {
		return store.ModerationAction{}, err
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return store.ModerationAction{}, err
	}
	actor, _ := nostr.DecodeHex32(a.Actor)
	target, _ := nostr.DecodeHex32(a.Target)
	var eventID []byte
	if a.EventID != "" {
		if eventID, _ = nostr.DecodeHex32(a.EventID); eventID == nil {
			return store.ModerationAction{}, store.ErrInvalidModeration
		}
	}
	var verdict error
	var rec store.ModerationAction
	err = s.submit(ctx, func(w *writer) error {
		verdict = nil
		// Decide before writing: a batch shares one transaction.
		switch a.Action {
		case store.ActionBan, store.ActionTimeout:
			kind := store.RestrictionBan
			if a.Action == store.ActionTimeout {
				kind = store.RestrictionTimeout
			}
			s.markRestricted(cseq)
			if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO moderation_restrictions (community, pubkey, kind, until, reason, actor, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (community, pubkey, kind) DO UPDATE SET until = excluded.until, reason = excluded.reason,
    actor = excluded.actor, created_at = excluded.created_at`,
				cseq, target, string(kind), unixOrNull(a.Until), a.Reason, actor, now.Unix()); err != nil {
				return internal("moderate", err)
			}
		case store.ActionUnban, store.ActionUntimeout:
			kind := store.RestrictionBan
			if a.Action == store.ActionUntimeout {
				kind = store.RestrictionTimeout
			}
			var n int
			if err := w.conn.QueryRowContext(w.ctx, `SELECT count(*) FROM moderation_restrictions
WHERE community = ? AND pubkey = ? AND kind = ? AND (until IS NULL OR until > ?)`, cseq, target, string(kind), now.Unix()).Scan(&n); err != nil {
				return internal("moderate", err)
			}
			if n == 0 {
				verdict = w.refuse(store.ErrNotRestricted)
				return nil
			}
			if _, err := w.conn.ExecContext(w.ctx, `DELETE FROM moderation_restrictions WHERE community = ? AND pubkey = ? AND kind = ?`,
				cseq, target, string(kind)); err != nil {
				return internal("moderate", err)
			}
		case store.ActionResolveReport:
			var status string
			err := w.conn.QueryRowContext(w.ctx, `SELECT status FROM moderation_reports WHERE community = ? AND id = ?`, cseq, target).Scan(&status)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				verdict = w.refuse(store.ErrNoReport)
				return nil
			case err != nil:
				return internal("moderate", err)
			case status == string(store.ReportResolved) || status == string(store.ReportDismissed):
				verdict = w.refuse(store.ErrReportClosed)
				return nil
			}
			if _, err := w.conn.ExecContext(w.ctx, `UPDATE moderation_reports SET status = ?, resolved_by = ?, resolved_at = ?
WHERE community = ? AND id = ?`, string(a.Status), actor, now.Unix(), cseq, target); err != nil {
				return internal("moderate", err)
			}
		}
		var status any
		if a.Status != "" {
			status = string(a.Status)
		}
		res, err := w.conn.ExecContext(w.ctx, `INSERT INTO moderation_actions (community, action, actor, target, reason, until, status, event_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, cseq, a.Action, actor, target, a.Reason, unixOrNull(a.Until), status, eventID, now.Unix())
		if err != nil {
			return internal("moderate", err)
		}
		rec = a
		rec.Seq, err = res.LastInsertId()
		if err != nil {
			return internal("moderate", err)
		}
		rec.CreatedAt = time.Unix(now.Unix(), 0).UTC()
		return w.appendAudit(cseq, c, store.ModerationAudit(rec))
	})
	if err != nil {
		return store.ModerationAction{}, err
	}
	if verdict != nil {
		return store.ModerationAction{}, verdict
	}
	return rec, nil
}

// ModerationActions implements store.ModerationStore.
func (s *Store) ModerationActions(ctx context.Context, c tenant.CommunityID, before int64, limit int) ([]store.ModerationAction, error) {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return nil, err
	}
	q := `SELECT seq, action, actor, target, reason, until, status, event_id, created_at FROM moderation_actions WHERE community = ?`
	args := []any{cseq}
	if before > 0 {
		q += ` AND seq < ?`
		args = append(args, before)
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, pageLimit(limit))
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, internal("moderation actions", err)
	}
	defer rows.Close()
	var out []store.ModerationAction
	for rows.Next() {
		var (
			a                   store.ModerationAction
			actor, target, evID []byte
			until               sql.NullInt64
			status              sql.NullString
			created             int64
		)
		if err := rows.Scan(&a.Seq, &a.Action, &actor, &target, &a.Reason, &until, &status, &evID, &created); err != nil {
			return nil, internal("moderation actions", err)
		}
		a.Actor, a.Target, a.EventID = hex.EncodeToString(actor), hex.EncodeToString(target), hexOrEmpty(evID)
		a.Until, a.Status, a.CreatedAt = timeOrZero(until), store.ReportStatus(status.String), time.Unix(created, 0).UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("moderation actions", err)
	}
	return out, nil
}

// AddReport implements store.ModerationStore.
func (s *Store) AddReport(ctx context.Context, c tenant.CommunityID, r store.Report) error {
	k, err := r.Keys()
	if err != nil {
		return err
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	return s.insertOnce(ctx, "add report", `INSERT INTO moderation_reports
(community, id, reporter, target_pubkey, target_event, report_type, created_at, raw, received_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (community, id) DO NOTHING`,
		cseq, k.ID, k.Reporter, k.TargetPubKey, k.TargetEvent, r.Type, r.CreatedAt, r.Raw, time.Now().Unix())
}

const reportColumns = `seq, id, reporter, target_pubkey, target_event, report_type, created_at, raw, status, received_at, resolved_by, resolved_at`

func scanReport(r rowScanner) (store.Report, error) {
	var (
		x                              store.Report
		id, reporter, target, tev, res []byte
		status                         string
		received                       int64
		resolved                       sql.NullInt64
	)
	if err := r.Scan(&x.Seq, &id, &reporter, &target, &tev, &x.Type, &x.CreatedAt, &x.Raw, &status, &received, &res, &resolved); err != nil {
		return x, err
	}
	x.ID, x.Reporter, x.TargetPubKey, x.TargetEvent = hex.EncodeToString(id), hex.EncodeToString(reporter), hex.EncodeToString(target), hexOrEmpty(tev)
	x.Status, x.ReceivedAt, x.ResolvedBy, x.ResolvedAt = store.ReportStatus(status), time.Unix(received, 0).UTC(), hexOrEmpty(res), timeOrZero(resolved)
	return x, nil
}

// Reports implements store.ModerationStore.
func (s *Store) Reports(ctx context.Context, c tenant.CommunityID, q store.ReportQuery) ([]store.Report, error) {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	sb.WriteString(`SELECT ` + reportColumns + ` FROM moderation_reports WHERE community = ?`)
	args := []any{cseq}
	if q.Status != "" {
		sb.WriteString(` AND status = ?`)
		args = append(args, string(q.Status))
	}
	if q.Reporter != "" {
		pk, ok := nostr.DecodeHex32(q.Reporter)
		if !ok {
			return nil, nil
		}
		sb.WriteString(` AND reporter = ?`)
		args = append(args, pk)
	}
	if q.Before > 0 {
		sb.WriteString(` AND seq < ?`)
		args = append(args, q.Before)
	}
	if q.Since > 0 {
		sb.WriteString(` AND created_at >= ?`)
		args = append(args, q.Since)
	}
	if q.Until > 0 {
		sb.WriteString(` AND created_at <= ?`)
		args = append(args, q.Until)
	}
	sb.WriteString(` ORDER BY seq DESC LIMIT ?`)
	args = append(args, pageLimit(q.Limit))
	return s.reports(ctx, sb.String(), args...)
}

func (s *Store) reports(ctx context.Context, q string, args ...any) ([]store.Report, error) {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, internal("reports", err)
	}
	defer rows.Close()
	var out []store.Report
	for rows.Next() {
		x, err := scanReport(rows)
		if err != nil {
			return nil, internal("reports", err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("reports", err)
	}
	return out, nil
}

// OpenReports implements store.ModerationStore.
func (s *Store) OpenReports(ctx context.Context, limit int) ([]store.CommunityReport, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT c.id, c.host, `+prefixed("r.", reportColumns)+`
FROM moderation_reports r JOIN communities c ON c.seq = r.community
WHERE r.status = 'open' AND c.archived_at IS NULL
ORDER BY r.seq DESC LIMIT ?`, pageLimit(limit))
	if err != nil {
		return nil, internal("open reports", err)
	}
	defer rows.Close()
	var out []store.CommunityReport
	for rows.Next() {
		var (
			cid  []byte
			host string
		)
		x, err := scanReport(prefixScanner{rows, []any{&cid, &host}})
		if err != nil {
			return nil, internal("open reports", err)
		}
		id, err := communityFromBytes(cid)
		if err != nil {
			return nil, err
		}
		out = append(out, store.CommunityReport{Community: id, Host: host, Report: x})
	}
	if err := rows.Err(); err != nil {
		return nil, internal("open reports", err)
	}
	return out, nil
}

// prefixed qualifies each column of a comma-separated list with p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ", ")
	for i := range parts {
		parts[i] = p + parts[i]
	}
	return strings.Join(parts, ", ")
}

// prefixScanner scans leading columns into head before the rest.
type prefixScanner struct {
	r    rowScanner
	head []any
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.r.Scan(append(append([]any{}, p.head...), dest...)...)
}

// RemoveHostAlias removes alias from the community it names. It returns
// the community it served; store.ErrNoCommunity when alias is no alias.
func (s *Store) RemoveHostAlias(ctx context.Context, alias string) (tenant.CommunityID, error) {
	var id tenant.CommunityID
	var found bool
	callerCtx := ctx
	err := s.submit(ctx, func(w *writer) error {
		found = false
		row, err := scanCommunity(w.conn.QueryRowContext(w.ctx, `SELECT `+prefixed("c.", communityCols)+`
FROM community_host_aliases a JOIN communities c ON c.seq = a.community WHERE a.host = ?`, alias))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return internal("remove host alias", err)
		}
		if _, err := w.conn.ExecContext(w.ctx, `DELETE FROM community_host_aliases WHERE host = ?`, alias); err != nil {
			return internal("remove host alias", err)
		}
		id, found = row.c.ID, true
		return w.appendAudit(row.seq, row.c.ID, store.OperatorAudit(callerCtx, store.AuditAliasRemoved, row.c, map[string]any{"alias": alias}))
	})
	if err != nil {
		return tenant.CommunityID{}, err
	}
	if !found {
		return tenant.CommunityID{}, store.ErrNoCommunity
	}
	return id, nil
}
