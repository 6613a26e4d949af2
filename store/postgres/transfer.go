package postgres

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The export and restore side of package transfer: every row as stored,
// in a stable order, and inserts that keep what is already there (a
// repeat reports false and changes nothing). Restores queue no audit
// entry: the chain is restored entry by entry with RestoreAudit. Times
// other than audit entries' travel in whole seconds (the embedded store's
// precision).

// CommunityStates implements transfer.Source: every community, archived
// ones included, oldest first (created_at, then id).
func (s *Store) CommunityStates(ctx context.Context) ([]store.CommunityState, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+communityCols+`, access_policy, profile_name, profile_description, profile_icon, profile_contact
FROM communities ORDER BY date_trunc('second', created_at), id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: community states: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.CommunityState, error) {
		var (
			st     store.CommunityState
			access string
		)
		c, err := scanCommunity(suffixRow{r, []any{&access, &st.Profile.Name, &st.Profile.Description, &st.Profile.Icon, &st.Profile.Contact}})
		st.Community, st.Access = c, channel.AccessPolicy(access)
		return st, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: community states: %w", err)
	}
	for i := range out {
		rows, err := s.pool.Query(ctx, `SELECT host, created_at FROM community_host_aliases WHERE community_id = $1 ORDER BY host COLLATE "C"`, out[i].ID.UUID())
		if err != nil {
			return nil, fmt.Errorf("postgres: community aliases: %w", err)
		}
		out[i].Aliases, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.HostAlias, error) {
			var a store.HostAlias
			err := r.Scan(&a.Host, &a.CreatedAt)
			a.CreatedAt = a.CreatedAt.UTC()
			return a, err
		})
		if err != nil {
			return nil, fmt.Errorf("postgres: community aliases: %w", err)
		}
	}
	return out, nil
}

// suffixRow scans a row into dest followed by tail.
type suffixRow struct {
	r    pgx.Row
	tail []any
}

func (p suffixRow) Scan(dest ...any) error {
	return p.r.Scan(append(append([]any{}, dest...), p.tail...)...)
}

// each runs query (whose only argument is c) in c and calls scan for every
// row.
func (s *Store) each(ctx context.Context, op string, c tenant.CommunityID, query string, scan func(pgx.Row) error) error {
	err := s.readInCommunity(ctx, c, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, c.UUID())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	return nil
}

// ExportMembers implements transfer.Source: c's members by pubkey.
func (s *Store) ExportMembers(ctx context.Context, c tenant.CommunityID, fn func(store.MemberState) error) error {
	return s.each(ctx, "export members", c, `SELECT pubkey, role, added_at FROM community_members WHERE community_id = $1 ORDER BY pubkey`, func(r pgx.Row) error {
		var (
			pk   []byte
			m    store.MemberState
			role string
		)
		if err := r.Scan(&pk, &role, &m.AddedAt); err != nil {
			return err
		}
		m.PubKey, m.Role, m.AddedAt = hex.EncodeToString(pk), channel.Role(role), m.AddedAt.UTC()
		return fn(m)
	})
}

// ExportChannels implements transfer.Source: c's channels, deleted ones
// included, by created_at then id.
func (s *Store) ExportChannels(ctx context.Context, c tenant.CommunityID, fn func(store.ChannelState) error) error {
	return s.each(ctx, "export channels", c, `SELECT `+pgChannelCols+`, coalesce(deleted_at, 'epoch') FROM channels WHERE community_id = $1
ORDER BY date_trunc('second', created_at), id`, func(r pgx.Row) error {
		var del time.Time
		ch, err := scanPGChannel(suffixRow{r, []any{&del}})
		if err != nil {
			return err
		}
		st := store.ChannelState{Channel: ch}
		if ch.Deleted {
			st.DeletedAt = del.UTC()
		}
		return fn(st)
	})
}

// ExportChannelMembers implements transfer.Source: the active members of
// c's channels, by channel then pubkey.
func (s *Store) ExportChannelMembers(ctx context.Context, c tenant.CommunityID, fn func(store.ChannelMemberState) error) error {
	return s.each(ctx, "export channel members", c, `SELECT channel_id, pubkey, role::text, joined_at, invited_by FROM channel_members
WHERE community_id = $1 AND removed_at IS NULL ORDER BY channel_id, pubkey`, func(r pgx.Row) error {
		var (
			ch      [16]byte
			pk, by  []byte
			m       store.ChannelMemberState
			roleTxt string
		)
		if err := r.Scan(&ch, &pk, &roleTxt, &m.JoinedAt, &by); err != nil {
			return err
		}
		m.Channel, m.PubKey, m.Role, m.JoinedAt, m.AddedBy = channel.ID(ch), hex.EncodeToString(pk), channel.Role(roleTxt), m.JoinedAt.UTC(), hexOrEmpty(by)
		return fn(m)
	})
}

// ExportNames implements transfer.Source: c's NIP-05 names by pubkey.
func (s *Store) ExportNames(ctx context.Context, c tenant.CommunityID, fn func(store.NameState) error) error {
	return s.each(ctx, "export names", c, `SELECT pubkey, nip05, updated_at FROM users WHERE community_id = $1 AND nip05 IS NOT NULL ORDER BY pubkey`, func(r pgx.Row) error {
		var (
			pk []byte
			n  store.NameState
		)
		if err := r.Scan(&pk, &n.Name, &n.UpdatedAt); err != nil {
			return err
		}
		n.PubKey, n.UpdatedAt = hex.EncodeToString(pk), n.UpdatedAt.UTC()
		return fn(n)
	})
}

// ExportRestrictions implements transfer.Source: c's stored bans and
// timeouts, expired ones included, by pubkey then kind.
func (s *Store) ExportRestrictions(ctx context.Context, c tenant.CommunityID, fn func(store.Restriction) error) error {
	return s.each(ctx, "export restrictions", c, `SELECT `+restrictionCols+` FROM moderation_restrictions WHERE community_id = $1 ORDER BY pubkey, kind`, func(r pgx.Row) error {
		x, err := scanRestriction(r)
		if err != nil {
			return err
		}
		return fn(x)
	})
}

// ExportReports implements transfer.Source: c's reports, oldest first.
func (s *Store) ExportReports(ctx context.Context, c tenant.CommunityID, fn func(store.Report) error) error {
	return s.each(ctx, "export reports", c, `SELECT `+reportCols+` FROM moderation_reports WHERE community_id = $1 ORDER BY seq`, func(r pgx.Row) error {
		x, err := scanReport(r)
		if err != nil {
			return err
		}
		return fn(x)
	})
}

// ExportModerationActions implements transfer.Source: c's action log,
// oldest first.
func (s *Store) ExportModerationActions(ctx context.Context, c tenant.CommunityID, fn func(store.ModerationAction) error) error {
	return s.each(ctx, "export moderation actions", c, `SELECT seq, action, actor, target, reason, until, status, event_id, created_at
FROM moderation_actions WHERE community_id = $1 ORDER BY seq`, func(r pgx.Row) error {
		var (
			a                   store.ModerationAction
			actor, target, evID []byte
			until               *int64
			status              *string
		)
		if err := r.Scan(&a.Seq, &a.Action, &actor, &target, &a.Reason, &until, &status, &evID, &a.CreatedAt); err != nil {
			return err
		}
		a.Actor, a.Target, a.EventID, a.Until, a.CreatedAt = hex.EncodeToString(actor), hex.EncodeToString(target), hexOrEmpty(evID), unixTime(until), a.CreatedAt.UTC()
		if status != nil {
			a.Status = store.ReportStatus(*status)
		}
		return fn(a)
	})
}

// RestoreCommunity implements transfer.Destination: it creates st's
// community with its id, hosts and settings unless a community with that
// id exists (then it adds the aliases it lacks and changes nothing else).
// A host or alias of st that names another community is
// store.ErrCommunityExists, and nothing changes.
func (s *Store) RestoreCommunity(ctx context.Context, st store.CommunityState) (created bool, err error) {
	if err := tenant.ValidateHost(st.Host); err != nil {
		return false, fmt.Errorf("%w: %w", store.ErrInvalidHost, err)
	}
	for _, a := range st.Aliases {
		if err := tenant.ValidateHost(a.Host); err != nil {
			return false, fmt.Errorf("%w: %w", store.ErrInvalidHost, err)
		}
	}
	if !st.Access.Valid() {
		return false, fmt.Errorf("postgres: restore community: unknown access policy %q", st.Access)
	}
	owner, err := ownerKey(st.OwnerPubKey)
	if err != nil {
		return false, err
	}
	var outcome error
	u := st.ID.UUID()
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		outcome, created = nil, false
		hosts := append([]string{st.Host}, make([]string, 0, len(st.Aliases))...)
		for _, a := range st.Aliases {
			hosts = append(hosts, a.Host)
		}
		missing := map[string]bool{}
		for _, h := range hosts {
			if err := lockHost(ctx, tx, h); err != nil {
				return err
			}
			c, err := scanCommunity(tx.QueryRow(ctx, byHost, h))
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				missing[h] = true
			case err != nil:
				return err
			case c.ID != st.ID:
				outcome = store.ErrCommunityExists
				return nil
			}
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM communities WHERE id = $1)`, u).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			var archived *time.Time
			if !st.ArchivedAt.IsZero() {
				archived = &st.ArchivedAt
			}
			if _, err := tx.Exec(ctx, `INSERT INTO communities (id, host, owner_pubkey, created_at, archived_at, access_policy,
    profile_name, profile_description, profile_icon, profile_contact) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				u, st.Host, owner, st.CreatedAt, archived, string(st.Access),
				sqlText(st.Profile.Name), sqlText(st.Profile.Description), sqlText(st.Profile.Icon), sqlText(st.Profile.Contact)); err != nil {
				return err
			}
			created = true
		}
		for _, a := range st.Aliases {
			if !missing[a.Host] {
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO community_host_aliases (host, community_id, created_at) VALUES ($1, $2, $3)`, a.Host, u, a.CreatedAt); err != nil {
				return err
			}
			created = true
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("postgres: restore community: %w", err)
	}
	return created, outcome
}

// restoreRow runs one insert in c that changes at most one row and
// reports whether it did.
func (s *Store) restoreRow(ctx context.Context, op string, c tenant.CommunityID, query string, args ...any) (bool, error) {
	var n int64
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, query, append([]any{c.UUID()}, args...)...)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: %s: %w", op, err)
	}
	return n > 0, nil
}

func hexBytes(s string, n int) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != n || hex.EncodeToString(b) != s {
		return nil, fmt.Errorf("want %d lowercase hex characters", 2*n)
	}
	return b, nil
}

// hexOrNil decodes an optional key: "" is NULL.
func hexOrNil(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	return hexBytes(s, 32)
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// RestoreMember implements transfer.Destination.
func (s *Store) RestoreMember(ctx context.Context, c tenant.CommunityID, m store.MemberState) (bool, error) {
	pk, err := hexBytes(m.PubKey, 32)
	if err != nil || !store.ValidCommunityRole(m.Role) {
		return false, fmt.Errorf("postgres: restore member: invalid member %q (%s)", m.PubKey, m.Role)
	}
	return s.restoreRow(ctx, "restore member", c, `INSERT INTO community_members (community_id, pubkey, role, added_at) VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING`, pk, string(m.Role), m.AddedAt)
}

// RestoreChannel implements transfer.Destination.
func (s *Store) RestoreChannel(ctx context.Context, c tenant.CommunityID, ch store.ChannelState) (bool, error) {
	by, err := hexBytes(ch.CreatedBy, 32)
	if err != nil {
		return false, fmt.Errorf("postgres: restore channel: created_by: %w", err)
	}
	var del *time.Time
	if ch.Deleted {
		d := ch.DeletedAt
		del = &d
	}
	var slug *string
	if ch.Slug != "" {
		slug = &ch.Slug
	}
	return s.restoreRow(ctx, "restore channel", c, `INSERT INTO channels (community_id, id, name, description, picture, visibility, channel_type, created_by, created_at,
    deleted_at, nip29_group_id, closed, restricted, hidden)
VALUES ($1, $2, $3, $4, $5, $6::channel_visibility, $7::channel_type, $8, to_timestamp($9), $10, $11, $12, $13, $14) ON CONFLICT DO NOTHING`,
		[16]byte(ch.ID), sqlText(ch.Name), sqlText(ch.About), sqlText(ch.Picture), string(ch.Visibility), string(ch.Type), by, ch.CreatedAt,
		del, slug, ch.Closed, ch.Restricted, ch.Hidden)
}

// RestoreChannelMember implements transfer.Destination. A member removed
// in the destination stays removed.
func (s *Store) RestoreChannelMember(ctx context.Context, c tenant.CommunityID, m store.ChannelMemberState) (bool, error) {
	pk, err := hexBytes(m.PubKey, 32)
	if err != nil {
		return false, fmt.Errorf("postgres: restore channel member: pubkey: %w", err)
	}
	by, err := hexOrNil(m.AddedBy)
	if err != nil {
		return false, fmt.Errorf("postgres: restore channel member: added_by: %w", err)
	}
	return s.restoreRow(ctx, "restore channel member", c, `INSERT INTO channel_members (community_id, channel_id, pubkey, role, joined_at, invited_by)
SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM channels WHERE community_id = $1 AND id = $2) ON CONFLICT DO NOTHING`,
		[16]byte(m.Channel), pk, string(m.Role), m.JoinedAt, by)
}

// RestoreName implements transfer.Destination. A name held by another
// pubkey is store.ErrNameTaken; a pubkey holding another name keeps it.
func (s *Store) RestoreName(ctx context.Context, c tenant.CommunityID, n store.NameState) (bool, error) {
	pk, err := hexBytes(n.PubKey, 32)
	if err != nil {
		return false, fmt.Errorf("postgres: restore name: pubkey: %w", err)
	}
	name, ok := store.NormalizeName(n.Name)
	if !ok {
		return false, store.ErrInvalidName
	}
	done, err := s.restoreRow(ctx, "restore name", c, `INSERT INTO users (community_id, pubkey, nip05, updated_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (community_id, pubkey) DO UPDATE SET nip05 = EXCLUDED.nip05, updated_at = EXCLUDED.updated_at WHERE users.nip05 IS NULL`,
		pk, name, n.UpdatedAt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return false, store.ErrNameTaken
	}
	return done, err
}

// RestoreRestriction implements transfer.Destination; a pubkey already
// holding a restriction of the kind keeps it.
func (s *Store) RestoreRestriction(ctx context.Context, c tenant.CommunityID, r store.Restriction) (bool, error) {
	pk, err1 := hexBytes(r.PubKey, 32)
	actor, err2 := hexBytes(r.Actor, 32)
	if err1 != nil || err2 != nil || (r.Kind != store.RestrictionBan && r.Kind != store.RestrictionTimeout) ||
		(r.Kind == store.RestrictionTimeout && r.Until.IsZero()) {
		return false, store.ErrInvalidModeration
	}
	return s.restoreRow(ctx, "restore restriction", c, `INSERT INTO moderation_restrictions (community_id, pubkey, kind, until, reason, actor, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, pk, string(r.Kind), unixOrNil(r.Until), sqlText(r.Reason), actor, r.CreatedAt)
}

// RestoreReport implements transfer.Destination.
func (s *Store) RestoreReport(ctx context.Context, c tenant.CommunityID, r store.Report) (bool, error) {
	id, err1 := hexBytes(r.ID, 32)
	reporter, err2 := hexBytes(r.Reporter, 32)
	target, err3 := hexBytes(r.TargetPubKey, 32)
	tev, err4 := hexOrNil(r.TargetEvent)
	res, err5 := hexOrNil(r.ResolvedBy)
	if errors.Join(err1, err2, err3, err4, err5) != nil || !r.Status.Valid() || len(r.Raw) == 0 || r.Type == "" {
		return false, store.ErrInvalidModeration
	}
	return s.restoreRow(ctx, "restore report", c, `INSERT INTO moderation_reports
(community_id, id, reporter, target_pubkey, target_event, report_type, created_at, raw, status, received_at, resolved_by, resolved_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (community_id, id) DO NOTHING`,
		id, reporter, target, tev, sqlText(r.Type), r.CreatedAt, r.Raw, string(r.Status), r.ReceivedAt, res, timeOrNil(r.ResolvedAt))
}

// RestoreModerationAction implements transfer.Destination: it appends a
// to c's action log unless an identical entry is there.
func (s *Store) RestoreModerationAction(ctx context.Context, c tenant.CommunityID, a store.ModerationAction) (bool, error) {
	actor, err1 := hexBytes(a.Actor, 32)
	target, err2 := hexBytes(a.Target, 32)
	ev, err3 := hexOrNil(a.EventID)
	if errors.Join(err1, err2, err3) != nil || a.Action == "" {
		return false, store.ErrInvalidModeration
	}
	var status *string
	if a.Status != "" {
		st := string(a.Status)
		status = &st
	}
	return s.restoreRow(ctx, "restore moderation action", c, `INSERT INTO moderation_actions (community_id, action, actor, target, reason, until, status, event_id, created_at)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE NOT EXISTS (SELECT 1 FROM moderation_actions WHERE community_id = $1 AND action = $2
    AND actor = $3 AND target = $4 AND reason = $5 AND until IS NOT DISTINCT FROM $6 AND status IS NOT DISTINCT FROM $7
    AND event_id IS NOT DISTINCT FROM $8 AND created_at = $9)`,
		a.Action, actor, target, sqlText(a.Reason), unixOrNil(a.Until), status, ev, a.CreatedAt)
}

// RestoreAudit implements transfer.Destination: it links what is queued
// for c, then appends entries (c's, in seq order, each verified by the
// caller) verbatim after c's chain head, skipping those already there. An
// entry whose seq holds a different entry, or that does not link to the
// head, is store.ErrAuditConflict and nothing of the call is appended.
func (s *Store) RestoreAudit(ctx context.Context, c tenant.CommunityID, entries []audit.Entry) (int, error) {
	if err := s.linkAll(ctx, c); err != nil {
		return 0, err
	}
	var (
		n       int
		outcome error
	)
	err := s.communityTx(ctx, c, false, func(tx pgx.Tx) error {
		n, outcome = 0, nil
		cu := c.UUID()
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('buzz_audit:' || $1::text, 0))`, c.String()); err != nil {
			return err
		}
		var (
			head     int64
			headHash []byte
		)
		if err := tx.QueryRow(ctx, `SELECT seq, hash FROM audit_log WHERE community_id = $1 ORDER BY seq DESC LIMIT 1`, cu).Scan(&head, &headHash); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var fresh []audit.Entry
		at, atHash := head, headHash
		for _, e := range entries {
			if e.Seq <= head {
				var h []byte
				if err := tx.QueryRow(ctx, `SELECT hash FROM audit_log WHERE community_id = $1 AND seq = $2`, cu, e.Seq).Scan(&h); err != nil {
					return err
				}
				if !bytes.Equal(h, e.Hash[:]) {
					outcome = fmt.Errorf("%w: seq %d holds another entry", store.ErrAuditConflict, e.Seq)
					return nil
				}
				continue
			}
			var zero [32]byte
			if e.Seq != at+1 || (at == 0 && e.PrevHash != zero) || (at > 0 && !bytes.Equal(atHash, e.PrevHash[:])) {
				outcome = fmt.Errorf("%w: seq %d does not follow the chain's head (seq %d)", store.ErrAuditConflict, e.Seq, at)
				return nil
			}
			if _, err := hexOrNil(e.Actor); err != nil {
				outcome = fmt.Errorf("%w: seq %d: actor: %w", store.ErrAuditConflict, e.Seq, err)
				return nil
			}
			fresh = append(fresh, e)
			at, atHash = e.Seq, e.Hash[:]
		}
		for _, e := range fresh {
			actor, _ := hexOrNil(e.Actor)
			var prev, object any
			if e.Seq > 1 {
				prev = e.PrevHash[:]
			}
			if e.Object != "" {
				object = e.Object
			}
			if _, err := tx.Exec(ctx, `INSERT INTO audit_log (community_id, seq, hash, prev_hash, hash_version, action, actor_pubkey, object_id, detail, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10)`, cu, e.Seq, e.Hash[:], prev, int16(e.Version), string(e.Action), actor, object, string(e.Detail), e.Time); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: restore audit: %w", err)
	}
	return n, outcome
}

// RestoreEvent implements transfer.Destination: Save without the audit
// entry of a deletion request (the export's chain holds it).
func (s *Store) RestoreEvent(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	return s.Save(store.WithoutDeletionAudit(ctx), c, ev)
}

// RestoreEvents implements transfer.EventBatchDestination: RestoreEvent of
// each event in order, in one transaction (the group commit's, with the
// plain events inserted set-based). If that transaction fails, each event
// is retried in its own, so one bad event cannot fail its neighbours.
func (s *Store) RestoreEvents(ctx context.Context, c tenant.CommunityID, evs []*nostr.Event) ([]error, error) {
	if c.IsZero() {
		return nil, errors.New("postgres: restore events: zero community")
	}
	results := make([]error, len(evs))
	batch := make([]*saveReq, 0, len(evs))
	at := make([]int, 0, len(evs))
	for i, ev := range evs {
		if ev == nil {
			results[i] = errors.New("postgres: save: nil event")
			continue
		}
		args, err := encodeEvent(c, ev)
		if err != nil {
			results[i] = err
			continue
		}
		batch = append(batch, &saveReq{ctx: ctx, args: args})
		at = append(at, i)
	}
	if len(batch) == 0 {
		return results, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Held until the batch is written, so Close waits for it.
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	tctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	var stored int64
	codes, err := s.saveMany(tctx, batch)
	if err != nil {
		s.cfg.logger.Debug("postgres: restore batch failed; retrying events one by one", "events", len(batch), "err", err)
		for j, r := range batch {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			octx, ocancel := context.WithTimeout(ctx, commitTimeout)
			results[at[j]] = s.saveOne(octx, r.args)
			ocancel()
			if results[at[j]] == nil {
				stored++
			}
		}
	} else {
		for j, code := range codes {
			results[at[j]] = saveResult(code)
			if code == 0 {
				stored++
			}
		}
	}
	s.noteSaved(stored)
	return results, nil
}
