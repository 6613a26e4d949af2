package postgres

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The moderation tables (migration 50); see store.ModerationStore. Every
// call runs bound to its community (RLS); OpenReports, the operator's view
// across communities, reads community by community.

func unixOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

func unixTime(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.Unix(*v, 0).UTC()
}

func hexOrEmpty(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return hex.EncodeToString(b)
}

func pageLimit(limit int) int {
	if limit <= 0 || limit > store.MaxModerationPage {
		return store.MaxModerationPage
	}
	return limit
}

const restrictionCols = `pubkey, kind, until, reason, actor, created_at`

func scanRestriction(r pgx.Row) (store.Restriction, error) {
	var (
		x         store.Restriction
		pk, actor []byte
		kind      string
		until     *int64
	)
	if err := r.Scan(&pk, &kind, &until, &x.Reason, &actor, &x.CreatedAt); err != nil {
		return x, err
	}
	x.PubKey, x.Kind, x.Until, x.Actor = hex.EncodeToString(pk), store.RestrictionKind(kind), unixTime(until), hex.EncodeToString(actor)
	x.CreatedAt = x.CreatedAt.UTC()
	return x, nil
}

// PubkeyRestrictions implements store.ModerationStore.
func (s *Store) PubkeyRestrictions(ctx context.Context, c tenant.CommunityID, pubkey string, now time.Time) ([]store.Restriction, error) {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok || c.IsZero() {
		return nil, nil
	}
	return s.restrictions(ctx, c, `SELECT `+restrictionCols+` FROM moderation_restrictions
WHERE community_id = $1 AND pubkey = $2 AND (until IS NULL OR until > $3) ORDER BY kind`, c.UUID(), pk, now.Unix())
}

// Restrictions implements store.ModerationStore.
func (s *Store) Restrictions(ctx context.Context, c tenant.CommunityID, now time.Time, after string, limit int) ([]store.Restriction, error) {
	from := []byte{}
	if after != "" {
		var ok bool
		if from, ok = nostr.DecodeHex32(after); !ok {
			return nil, store.ErrInvalidModeration
		}
	}
	return s.restrictions(ctx, c, `SELECT `+restrictionCols+` FROM moderation_restrictions
WHERE community_id = $1 AND pubkey > $2 AND (until IS NULL OR until > $3) ORDER BY pubkey, kind LIMIT $4`,
		c.UUID(), from, now.Unix(), pageLimit(limit))
}

func (s *Store) restrictions(ctx context.Context, c tenant.CommunityID, q string, args ...any) ([]store.Restriction, error) {
	var out []store.Restriction
	var b pgx.Batch
	b.Queue(q, args...)
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Restriction, error) { return scanRestriction(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: restrictions: %w", err)
	}
	return out, nil
}

// Moderate implements store.ModerationStore.
func (s *Store) Moderate(ctx context.Context, c tenant.CommunityID, a store.ModerationAction, now time.Time) (store.ModerationAction, error) {
	if err := a.Validate(); err != nil {
		return store.ModerationAction{}, err
	}
	actor, _ := nostr.DecodeHex32(a.Actor)
	target, _ := nostr.DecodeHex32(a.Target)
	var eventID []byte
	if a.EventID != "" {
		var ok bool
		if eventID, ok = nostr.DecodeHex32(a.EventID); !ok {
			return store.ModerationAction{}, store.ErrInvalidModeration
		}
	}
	cu := c.UUID()
	rec := a
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		switch a.Action {
		case store.ActionBan, store.ActionTimeout:
			kind := store.RestrictionBan
			if a.Action == store.ActionTimeout {
				kind = store.RestrictionTimeout
			}
			if _, err := tx.Exec(ctx, `INSERT INTO moderation_restrictions (community_id, pubkey, kind, until, reason, actor)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (community_id, pubkey, kind) DO UPDATE SET until = EXCLUDED.until, reason = EXCLUDED.reason,
    actor = EXCLUDED.actor, created_at = now()`, cu, target, string(kind), unixOrNil(a.Until), a.Reason, actor); err != nil {
				return err
			}
		case store.ActionUnban, store.ActionUntimeout:
			kind := store.RestrictionBan
			if a.Action == store.ActionUntimeout {
				kind = store.RestrictionTimeout
			}
			tag, err := tx.Exec(ctx, `DELETE FROM moderation_restrictions
WHERE community_id = $1 AND pubkey = $2 AND kind = $3 AND (until IS NULL OR until > $4)`, cu, target, string(kind), now.Unix())
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return verdictError{store.ErrNotRestricted}
			}
		case store.ActionResolveReport:
			var status string
			err := tx.QueryRow(ctx, `SELECT status FROM moderation_reports WHERE community_id = $1 AND id = $2 FOR UPDATE`, cu, target).Scan(&status)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return verdictError{store.ErrNoReport}
			case err != nil:
				return err
			case status == string(store.ReportResolved) || status == string(store.ReportDismissed):
				return verdictError{store.ErrReportClosed}
			}
			if _, err := tx.Exec(ctx, `UPDATE moderation_reports SET status = $3, resolved_by = $4, resolved_at = now()
WHERE community_id = $1 AND id = $2`, cu, target, string(a.Status), actor); err != nil {
				return err
			}
		}
		var status *string
		if a.Status != "" {
			st := string(a.Status)
			status = &st
		}
		if err := tx.QueryRow(ctx, `INSERT INTO moderation_actions (community_id, action, actor, target, reason, until, status, event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING seq, created_at`,
			cu, a.Action, actor, target, a.Reason, unixOrNil(a.Until), status, eventID).Scan(&rec.Seq, &rec.CreatedAt); err != nil {
			return err
		}
		rec.CreatedAt = rec.CreatedAt.UTC()
		return queueAudit(ctx, tx, c, store.ModerationAudit(rec))
	})
	if err == nil {
		s.audit.pending(c)
	}
	var v verdictError
	if errors.As(err, &v) {
		return store.ModerationAction{}, v.err
	}
	if err != nil {
		return store.ModerationAction{}, fmt.Errorf("postgres: moderate: %w", err)
	}
	return rec, nil
}

// ModerationActions implements store.ModerationStore.
func (s *Store) ModerationActions(ctx context.Context, c tenant.CommunityID, before int64, limit int) ([]store.ModerationAction, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	var out []store.ModerationAction
	var b pgx.Batch
	b.Queue(`SELECT seq, action, actor, target, reason, until, status, event_id, created_at FROM moderation_actions
WHERE community_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, c.UUID(), before, pageLimit(limit))
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ModerationAction, error) {
			var (
				a                   store.ModerationAction
				actor, target, evID []byte
				until               *int64
				status              *string
			)
			if err := r.Scan(&a.Seq, &a.Action, &actor, &target, &a.Reason, &until, &status, &evID, &a.CreatedAt); err != nil {
				return a, err
			}
			a.Actor, a.Target, a.EventID, a.Until = hex.EncodeToString(actor), hex.EncodeToString(target), hexOrEmpty(evID), unixTime(until)
			if status != nil {
				a.Status = store.ReportStatus(*status)
			}
			a.CreatedAt = a.CreatedAt.UTC()
			return a, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: moderation actions: %w", err)
	}
	return out, nil
}

// AddReport implements store.ModerationStore.
func (s *Store) AddReport(ctx context.Context, c tenant.CommunityID, r store.Report) error {
	k, err := r.Keys()
	if err != nil {
		return err
	}
	var inserted bool
	err = s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO moderation_reports
(community_id, id, reporter, target_pubkey, target_event, report_type, created_at, raw)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (community_id, id) DO NOTHING`,
			c.UUID(), k.ID, k.Reporter, k.TargetPubKey, k.TargetEvent, r.Type, r.CreatedAt, r.Raw)
		inserted = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: add report: %w", err)
	}
	if !inserted {
		return store.ErrDuplicate
	}
	return nil
}

const reportCols = `seq, id, reporter, target_pubkey, target_event, report_type, created_at, raw, status, received_at, resolved_by, resolved_at`

func scanReport(r pgx.Row) (store.Report, error) {
	var (
		x                              store.Report
		id, reporter, target, tev, res []byte
		status                         string
		resolved                       *time.Time
	)
	if err := r.Scan(&x.Seq, &id, &reporter, &target, &tev, &x.Type, &x.CreatedAt, &x.Raw, &status, &x.ReceivedAt, &res, &resolved); err != nil {
		return x, err
	}
	x.ID, x.Reporter, x.TargetPubKey, x.TargetEvent = hex.EncodeToString(id), hex.EncodeToString(reporter), hex.EncodeToString(target), hexOrEmpty(tev)
	x.Status, x.ReceivedAt, x.ResolvedBy = store.ReportStatus(status), x.ReceivedAt.UTC(), hexOrEmpty(res)
	if resolved != nil {
		x.ResolvedAt = resolved.UTC()
	}
	return x, nil
}

// Reports implements store.ModerationStore.
func (s *Store) Reports(ctx context.Context, c tenant.CommunityID, q store.ReportQuery) ([]store.Report, error) {
	var sb strings.Builder
	sb.WriteString(`SELECT ` + reportCols + ` FROM moderation_reports WHERE community_id = $1`)
	args := []any{c.UUID()}
	add := func(cond string, v any) {
		args = append(args, v)
		sb.WriteString(" AND " + cond + " $" + strconv.Itoa(len(args)))
	}
	if q.Status != "" {
		add("status =", string(q.Status))
	}
	if q.Reporter != "" {
		pk, ok := nostr.DecodeHex32(q.Reporter)
		if !ok {
			return nil, nil
		}
		add("reporter =", pk)
	}
	if q.Before > 0 {
		add("seq <", q.Before)
	}
	if q.Since > 0 {
		add("created_at >=", q.Since)
	}
	if q.Until > 0 {
		add("created_at <=", q.Until)
	}
	args = append(args, pageLimit(q.Limit))
	sb.WriteString(" ORDER BY seq DESC LIMIT $" + strconv.Itoa(len(args)))
	out, err := s.reports(ctx, c, sb.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: reports: %w", err)
	}
	return out, nil
}

func (s *Store) reports(ctx context.Context, c tenant.CommunityID, q string, args ...any) ([]store.Report, error) {
	var out []store.Report
	var b pgx.Batch
	b.Queue(q, args...)
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Report, error) { return scanReport(r) })
		return err
	})
	return out, err
}

// OpenReports implements store.ModerationStore. Row-level security binds
// every read to one community, so it reads the newest open reports of each
// active community in turn and keeps the newest limit overall: the cost is
// one query per active community (an operator's view, not a hot path).
func (s *Store) OpenReports(ctx context.Context, limit int) ([]store.CommunityReport, error) {
	limit = pageLimit(limit)
	rows, err := s.pool.Query(ctx, `SELECT id, host FROM communities WHERE archived_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: open reports: %w", err)
	}
	type comm struct {
		id   tenant.CommunityID
		host string
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (comm, error) {
		var u [16]byte
		var h string
		err := r.Scan(&u, &h)
		return comm{tenant.FromUUID(u), h}, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: open reports: %w", err)
	}
	var out []store.CommunityReport
	for _, cm := range cs {
		rs, err := s.reports(ctx, cm.id, `SELECT `+reportCols+` FROM moderation_reports
WHERE community_id = $1 AND status = 'open' ORDER BY seq DESC LIMIT $2`, cm.id.UUID(), limit)
		if err != nil {
			return nil, fmt.Errorf("postgres: open reports: %w", err)
		}
		for _, r := range rs {
			out = append(out, store.CommunityReport{Community: cm.id, Host: cm.host, Report: r})
		}
	}
	slices.SortStableFunc(out, func(a, b store.CommunityReport) int {
		return cmp.Or(b.ReceivedAt.Compare(a.ReceivedAt), cmp.Compare(b.Seq, a.Seq))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// RemoveHostAlias removes alias from the community it names and returns
// that community; store.ErrNoCommunity when alias is no alias.
func (s *Store) RemoveHostAlias(ctx context.Context, alias string) (tenant.CommunityID, error) {
	var c store.Community
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var u [16]byte
		if err := tx.QueryRow(ctx, `DELETE FROM community_host_aliases WHERE lower(host) = lower($1) RETURNING community_id`, alias).Scan(&u); err != nil {
			return err
		}
		var err error
		if c, err = lockCommunity(ctx, tx, u); err != nil {
			return err
		}
		return queueOperatorAudit(ctx, tx, store.AuditAliasRemoved, c, map[string]any{"alias": alias})
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return tenant.CommunityID{}, store.ErrNoCommunity
	case err != nil:
		return tenant.CommunityID{}, fmt.Errorf("postgres: remove host alias: %w", err)
	}
	s.audit.pending(c.ID)
	return c.ID, nil
}
