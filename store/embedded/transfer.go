package embedded

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The export and restore side of package transfer: every row as stored,
// in a stable order, and inserts that keep what is already there (a
// repeat reports false and changes nothing). Restores append no audit
// entry: the chain is restored entry by entry with RestoreAudit.

var errAuditConflict = store.ErrAuditConflict

// suffixScanner scans a row into dest followed by tail.
type suffixScanner struct {
	r    rowScanner
	tail []any
}

func (p suffixScanner) Scan(dest ...any) error {
	return p.r.Scan(append(append([]any{}, dest...), p.tail...)...)
}

// CommunityStates implements transfer.Source: every community, archived
// ones included, oldest first (created_at, then id).
func (s *Store) CommunityStates(ctx context.Context) ([]store.CommunityState, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+communityCols+`, access_policy, profile_name, profile_description, profile_icon, profile_contact
FROM communities ORDER BY created_at, id`)
	if err != nil {
		return nil, internal("community states", err)
	}
	var (
		out  []store.CommunityState
		seqs []int64
	)
	for rows.Next() {
		var (
			st     store.CommunityState
			access string
		)
		row, err := scanCommunity(suffixScanner{rows, []any{&access, &st.Profile.Name, &st.Profile.Description, &st.Profile.Icon, &st.Profile.Contact}})
		if err != nil {
			rows.Close()
			return nil, internal("community states", err)
		}
		st.Community, st.Access = row.c, channel.AccessPolicy(access)
		out, seqs = append(out, st), append(seqs, row.seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, internal("community states", err)
	}
	for i := range out {
		ar, err := s.rdb.QueryContext(ctx, `SELECT host, created_at FROM community_host_aliases WHERE community = ? ORDER BY host`, seqs[i])
		if err != nil {
			return nil, internal("community aliases", err)
		}
		for ar.Next() {
			var (
				a  store.HostAlias
				at int64
			)
			if err := ar.Scan(&a.Host, &at); err != nil {
				ar.Close()
				return nil, internal("community aliases", err)
			}
			a.CreatedAt = time.Unix(at, 0).UTC()
			out[i].Aliases = append(out[i].Aliases, a)
		}
		ar.Close()
		if err := ar.Err(); err != nil {
			return nil, internal("community aliases", err)
		}
	}
	return out, nil
}

// each runs query (whose first argument is c's key) and calls scan for
// every row.
func (s *Store) each(ctx context.Context, op string, c tenant.CommunityID, query string, scan func(rowScanner) error) error {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return store.ErrNoCommunity
	}
	if err != nil {
		return err
	}
	rows, err := s.rdb.QueryContext(ctx, query, cseq)
	if err != nil {
		return internal(op, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return internal(op, err)
	}
	return nil
}

// ExportMembers implements transfer.Source: c's members by pubkey.
func (s *Store) ExportMembers(ctx context.Context, c tenant.CommunityID, fn func(store.MemberState) error) error {
	return s.each(ctx, "export members", c, `SELECT pubkey, role, added_at FROM community_members WHERE community = ? ORDER BY pubkey`, func(r rowScanner) error {
		var (
			pk   []byte
			role string
			at   int64
		)
		if err := r.Scan(&pk, &role, &at); err != nil {
			return internal("export members", err)
		}
		return fn(store.MemberState{PubKey: hex.EncodeToString(pk), Role: channel.Role(role), AddedAt: time.Unix(at, 0).UTC()})
	})
}

// ExportChannels implements transfer.Source: c's channels, deleted ones
// included, by created_at then id.
func (s *Store) ExportChannels(ctx context.Context, c tenant.CommunityID, fn func(store.ChannelState) error) error {
	return s.each(ctx, "export channels", c, `SELECT `+channelCols+`, coalesce(deleted_at, 0) FROM channels WHERE community = ? ORDER BY created_at, id`, func(r rowScanner) error {
		var del int64
		ch, err := scanChannel(suffixScanner{r, []any{&del}})
		if err != nil {
			return internal("export channels", err)
		}
		st := store.ChannelState{Channel: ch}
		if ch.Deleted {
			st.DeletedAt = time.Unix(del, 0).UTC()
		}
		return fn(st)
	})
}

// ExportChannelMembers implements transfer.Source: the members of c's
// channels, by channel then pubkey.
func (s *Store) ExportChannelMembers(ctx context.Context, c tenant.CommunityID, fn func(store.ChannelMemberState) error) error {
	return s.each(ctx, "export channel members", c, `SELECT channel, pubkey, role, joined_at, added_by FROM channel_members WHERE community = ? ORDER BY channel, pubkey`, func(r rowScanner) error {
		var (
			ch, pk, by []byte
			m          store.ChannelMemberState
			role       string
			at         int64
		)
		if err := r.Scan(&ch, &pk, &role, &at, &by); err != nil || len(ch) != 16 {
			return internal("export channel members", errors.Join(err, errors.New("corrupt channel member row")))
		}
		copy(m.Channel[:], ch)
		m.PubKey, m.Role, m.JoinedAt, m.AddedBy = hex.EncodeToString(pk), channel.Role(role), time.Unix(at, 0).UTC(), hexOrEmpty(by)
		return fn(m)
	})
}

// ExportNames implements transfer.Source: c's NIP-05 names by pubkey.
func (s *Store) ExportNames(ctx context.Context, c tenant.CommunityID, fn func(store.NameState) error) error {
	return s.each(ctx, "export names", c, `SELECT pubkey, nip05, updated_at FROM users WHERE community = ? AND nip05 IS NOT NULL ORDER BY pubkey`, func(r rowScanner) error {
		var (
			pk []byte
			n  store.NameState
			at int64
		)
		if err := r.Scan(&pk, &n.Name, &at); err != nil {
			return internal("export names", err)
		}
		n.PubKey, n.UpdatedAt = hex.EncodeToString(pk), time.Unix(at, 0).UTC()
		return fn(n)
	})
}

// ExportRestrictions implements transfer.Source: c's stored bans and
// timeouts, expired ones included, by pubkey then kind.
func (s *Store) ExportRestrictions(ctx context.Context, c tenant.CommunityID, fn func(store.Restriction) error) error {
	return s.each(ctx, "export restrictions", c, `SELECT pubkey, kind, until, reason, actor, created_at FROM moderation_restrictions WHERE community = ? ORDER BY pubkey, kind`, func(r rowScanner) error {
		x, err := scanRestriction(r)
		if err != nil {
			return internal("export restrictions", err)
		}
		return fn(x)
	})
}

// ExportReports implements transfer.Source: c's reports, oldest first.
func (s *Store) ExportReports(ctx context.Context, c tenant.CommunityID, fn func(store.Report) error) error {
	return s.each(ctx, "export reports", c, `SELECT `+reportColumns+` FROM moderation_reports WHERE community = ? ORDER BY seq`, func(r rowScanner) error {
		x, err := scanReport(r)
		if err != nil {
			return internal("export reports", err)
		}
		return fn(x)
	})
}

// ExportModerationActions implements transfer.Source: c's action log,
// oldest first.
func (s *Store) ExportModerationActions(ctx context.Context, c tenant.CommunityID, fn func(store.ModerationAction) error) error {
	return s.each(ctx, "export moderation actions", c, `SELECT seq, action, actor, target, reason, until, status, event_id, created_at FROM moderation_actions WHERE community = ? ORDER BY seq`, func(r rowScanner) error {
		var (
			a                   store.ModerationAction
			actor, target, evID []byte
			until               sql.NullInt64
			status              sql.NullString
			created             int64
		)
		if err := r.Scan(&a.Seq, &a.Action, &actor, &target, &a.Reason, &until, &status, &evID, &created); err != nil {
			return internal("export moderation actions", err)
		}
		a.Actor, a.Target, a.EventID = hex.EncodeToString(actor), hex.EncodeToString(target), hexOrEmpty(evID)
		a.Until, a.Status, a.CreatedAt = timeOrZero(until), store.ReportStatus(status.String), time.Unix(created, 0).UTC()
		return fn(a)
	})
}

// RestoreCommunity implements transfer.Destination: it creates st's
// community with its id, hosts and settings unless a community with that
// id exists (then it adds the aliases it lacks and changes nothing else).
// A host or alias of st that names another community is
// store.ErrCommunityExists.
func (s *Store) RestoreCommunity(ctx context.Context, st store.CommunityState) (created bool, err error) {
	if err := tenant.ValidateHost(st.Host); err != nil {
		return false, fmt.Errorf("%w: %w", store.ErrInvalidHost, err)
	}
	if !st.Access.Valid() {
		return false, fmt.Errorf("sqlite: restore community: unknown access policy %q", st.Access)
	}
	owner, err := ownerBytes(st.OwnerPubKey)
	if err != nil {
		return false, err
	}
	u := st.ID.UUID()
	var (
		outcome error
		seq     int64
	)
	err = s.submit(ctx, func(w *writer) error {
		outcome = nil
		hostOf := func(h string) (bool, error) { // true: h is free or already st's
			row, err := findByHost(w.ctx, w.conn, h)
			if errors.Is(err, sql.ErrNoRows) {
				return true, nil
			}
			if err != nil {
				return false, internal("restore community", err)
			}
			return row.c.ID == st.ID, nil
		}
		err := w.conn.QueryRowContext(w.ctx, `SELECT seq FROM communities WHERE id = ?`, u[:]).Scan(&seq)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return internal("restore community", err)
		}
		// Check every host first: a refusal writes nothing.
		hosts := []string{}
		if !exists {
			hosts = append(hosts, st.Host)
		}
		var missing []store.HostAlias
		for _, a := range st.Aliases {
			if err := tenant.ValidateHost(a.Host); err != nil {
				outcome = fmt.Errorf("%w: %w", store.ErrInvalidHost, err)
				return nil
			}
			row, err := findByHost(w.ctx, w.conn, a.Host)
			switch {
			case err == nil && row.c.ID != st.ID:
				outcome = store.ErrCommunityExists
				return nil
			case errors.Is(err, sql.ErrNoRows):
				missing = append(missing, a)
			case err != nil:
				return internal("restore community", err)
			}
		}
		for _, h := range hosts {
			ok, err := hostOf(h)
			if err != nil {
				return err
			}
			if !ok {
				outcome = store.ErrCommunityExists
				return nil
			}
		}
		if !exists {
			var archived any
			if !st.ArchivedAt.IsZero() {
				archived = st.ArchivedAt.Unix()
			}
			if err := w.conn.QueryRowContext(w.ctx, `INSERT INTO communities (id, host, owner_pubkey, created_at, archived_at, access_policy,
    profile_name, profile_description, profile_icon, profile_contact) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
				u[:], st.Host, owner, st.CreatedAt.Unix(), archived, string(st.Access),
				st.Profile.Name, st.Profile.Description, st.Profile.Icon, st.Profile.Contact).Scan(&seq); err != nil {
				return internal("restore community", err)
			}
			created = true
		}
		for _, a := range missing {
			if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO community_host_aliases (host, community, created_at) VALUES (?, ?, ?)`,
				a.Host, seq, a.CreatedAt.Unix()); err != nil {
				return internal("restore community", err)
			}
			created = true
		}
		return nil
	})
	if outcome != nil {
		return false, outcome
	}
	if err != nil {
		return false, err
	}
	s.remember(st.ID, seq)
	return created, nil
}

// restoreRow runs one insert in c that changes at most one row and
// reports whether it did.
func (s *Store) restoreRow(ctx context.Context, op string, c tenant.CommunityID, query string, args ...any) (bool, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return false, store.ErrNoCommunity
	}
	if err != nil {
		return false, err
	}
	var n int64
	err = s.submit(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(w.ctx, query, append([]any{cseq}, args...)...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlite: %s: %w", op, err)
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

// hexOrNull decodes an optional key: "" is NULL.
func hexOrNull(s string) (any, error) {
	if s == "" {
		return nil, nil
	}
	return hexBytes(s, 32)
}

// RestoreMember implements transfer.Destination.
func (s *Store) RestoreMember(ctx context.Context, c tenant.CommunityID, m store.MemberState) (bool, error) {
	pk, err := hexBytes(m.PubKey, 32)
	if err != nil || !store.ValidCommunityRole(m.Role) {
		return false, fmt.Errorf("sqlite: restore member: invalid member %q (%s)", m.PubKey, m.Role)
	}
	return s.restoreRow(ctx, "restore member", c, `INSERT INTO community_members (community, pubkey, role, added_at) VALUES (?, ?, ?, ?)
ON CONFLICT DO NOTHING`, pk, string(m.Role), m.AddedAt.Unix())
}

// RestoreChannel implements transfer.Destination.
func (s *Store) RestoreChannel(ctx context.Context, c tenant.CommunityID, ch store.ChannelState) (bool, error) {
	by, err := hexBytes(ch.CreatedBy, 32)
	if err != nil {
		return false, fmt.Errorf("sqlite: restore channel: created_by: %w", err)
	}
	var del, slug any
	if ch.Deleted {
		del = ch.DeletedAt.Unix()
	}
	if ch.Slug != "" {
		slug = ch.Slug
	}
	return s.restoreRow(ctx, "restore channel", c, `INSERT INTO channels (community, id, name, about, picture, visibility, channel_type, created_by, created_at, deleted_at, slug, closed, restricted, hidden)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		ch.ID[:], ch.Name, ch.About, ch.Picture, string(ch.Visibility), string(ch.Type), by, ch.CreatedAt, del, slug, ch.Closed, ch.Restricted, ch.Hidden)
}

// RestoreChannelMember implements transfer.Destination.
func (s *Store) RestoreChannelMember(ctx context.Context, c tenant.CommunityID, m store.ChannelMemberState) (bool, error) {
	pk, err := hexBytes(m.PubKey, 32)
	if err != nil {
		return false, fmt.Errorf("sqlite: restore channel member: pubkey: %w", err)
	}
	by, err := hexOrNull(m.AddedBy)
	if err != nil {
		return false, fmt.Errorf("sqlite: restore channel member: added_by: %w", err)
	}
	return s.restoreRow(ctx, "restore channel member", c, `INSERT INTO channel_members (community, channel, pubkey, role, joined_at, added_by)
SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM channels WHERE community = ?1 AND id = ?2) ON CONFLICT DO NOTHING`,
		m.Channel[:], pk, string(m.Role), m.JoinedAt.Unix(), by)
}

// RestoreName implements transfer.Destination. A name held by another
// pubkey is store.ErrNameTaken; a pubkey holding another name keeps it.
func (s *Store) RestoreName(ctx context.Context, c tenant.CommunityID, n store.NameState) (bool, error) {
	pk, err := hexBytes(n.PubKey, 32)
	if err != nil {
		return false, fmt.Errorf("sqlite: restore name: pubkey: %w", err)
	}
	name, ok := store.NormalizeName(n.Name)
	if !ok {
		return false, store.ErrInvalidName
	}
	if owner, err := s.NameOwner(ctx, c, name); err == nil && owner != n.PubKey {
		return false, store.ErrNameTaken
	}
	return s.restoreRow(ctx, "restore name", c, `INSERT INTO users (community, pubkey, nip05, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (community, pubkey) DO UPDATE SET nip05 = excluded.nip05, updated_at = excluded.updated_at WHERE users.nip05 IS NULL`,
		pk, name, n.UpdatedAt.Unix())
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
	if cseq, err := s.communitySeq(ctx, c); err == nil {
		s.markRestricted(cseq) // before the insert (see markRestricted)
	}
	return s.restoreRow(ctx, "restore restriction", c, `INSERT INTO moderation_restrictions (community, pubkey, kind, until, reason, actor, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, pk, string(r.Kind), unixOrNull(r.Until), r.Reason, actor, r.CreatedAt.Unix())
}

// RestoreReport implements transfer.Destination.
func (s *Store) RestoreReport(ctx context.Context, c tenant.CommunityID, r store.Report) (bool, error) {
	id, err1 := hexBytes(r.ID, 32)
	reporter, err2 := hexBytes(r.Reporter, 32)
	target, err3 := hexBytes(r.TargetPubKey, 32)
	tev, err4 := hexOrNull(r.TargetEvent)
	res, err5 := hexOrNull(r.ResolvedBy)
	if errors.Join(err1, err2, err3, err4, err5) != nil || !r.Status.Valid() || len(r.Raw) == 0 || r.Type == "" {
		return false, store.ErrInvalidModeration
	}
	return s.restoreRow(ctx, "restore report", c, `INSERT INTO moderation_reports
(community, id, reporter, target_pubkey, target_event, report_type, created_at, raw, status, received_at, resolved_by, resolved_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (community, id) DO NOTHING`,
		id, reporter, target, tev, r.Type, r.CreatedAt, r.Raw, string(r.Status), r.ReceivedAt.Unix(), res, unixOrNull(r.ResolvedAt))
}

// RestoreModerationAction implements transfer.Destination: it appends a
// to c's action log unless an identical entry is there.
func (s *Store) RestoreModerationAction(ctx context.Context, c tenant.CommunityID, a store.ModerationAction) (bool, error) {
	actor, err1 := hexBytes(a.Actor, 32)
	target, err2 := hexBytes(a.Target, 32)
	ev, err3 := hexOrNull(a.EventID)
	if errors.Join(err1, err2, err3) != nil || a.Action == "" {
		return false, store.ErrInvalidModeration
	}
	var status any
	if a.Status != "" {
		status = string(a.Status)
	}
	return s.restoreRow(ctx, "restore moderation action", c, `INSERT INTO moderation_actions (community, action, actor, target, reason, until, status, event_id, created_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 WHERE NOT EXISTS (SELECT 1 FROM moderation_actions WHERE community = ?1 AND action = ?2
    AND actor = ?3 AND target = ?4 AND reason = ?5 AND until IS ?6 AND status IS ?7 AND event_id IS ?8 AND created_at = ?9)`,
		a.Action, actor, target, a.Reason, unixOrNull(a.Until), status, ev, a.CreatedAt.Unix())
}

// RestoreAudit implements transfer.Destination: it appends entries (c's,
// in seq order, each already verified by the caller) verbatim after c's
// chain head, skipping those already there. An entry whose seq holds a
// different entry, or that does not link to the head, is
// store.ErrAuditConflict and nothing of the call is appended.
func (s *Store) RestoreAudit(ctx context.Context, c tenant.CommunityID, entries []audit.Entry) (int, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return 0, store.ErrNoCommunity
	}
	if err != nil {
		return 0, err
	}
	var (
		n       int
		outcome error
	)
	err = s.submit(ctx, func(w *writer) error {
		n, outcome = 0, nil
		var (
			head     int64
			headHash []byte
		)
		err := w.conn.QueryRowContext(w.ctx, `SELECT seq, hash FROM audit_log WHERE community = ? ORDER BY seq DESC LIMIT 1`, cseq).Scan(&head, &headHash)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return internal("restore audit", err)
		}
		// Check every entry first: a refusal writes nothing.
		var fresh []audit.Entry
		at, atHash := head, headHash
		for _, e := range entries {
			if e.Seq <= head {
				var h []byte
				if err := w.conn.QueryRowContext(w.ctx, `SELECT hash FROM audit_log WHERE community = ? AND seq = ?`, cseq, e.Seq).Scan(&h); err != nil {
					return internal("restore audit", err)
				}
				if !bytes.Equal(h, e.Hash[:]) {
					outcome = fmt.Errorf("%w: seq %d holds another entry", errAuditConflict, e.Seq)
					return nil
				}
				continue
			}
			var zero [32]byte
			if e.Seq != at+1 || (at == 0 && e.PrevHash != zero) || (at > 0 && !bytes.Equal(atHash, e.PrevHash[:])) {
				outcome = fmt.Errorf("%w: seq %d does not follow the chain's head (seq %d)", errAuditConflict, e.Seq, at)
				return nil
			}
			if e.Actor != "" {
				if _, err := hexBytes(e.Actor, 32); err != nil {
					outcome = fmt.Errorf("%w: seq %d: actor: %w", errAuditConflict, e.Seq, err)
					return nil
				}
			}
			fresh = append(fresh, e)
			at, atHash = e.Seq, e.Hash[:]
		}
		for _, e := range fresh {
			var actor any
			if e.Actor != "" {
				actor, _ = hexBytes(e.Actor, 32)
			}
			if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO audit_log (community, seq, hash, prev_hash, hash_version, action, actor, object, detail, created_us)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, cseq, e.Seq, e.Hash[:], e.PrevHash[:], e.Version, string(e.Action), actor, e.Object, string(e.Detail), e.Time.UnixMicro()); err != nil {
				return internal("restore audit", err)
			}
			n++
		}
		return nil
	})
	if err == nil {
		err = outcome
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// RestoreEvent implements transfer.Destination: Save without the audit
// entry of a deletion request (the export's chain holds it).
func (s *Store) RestoreEvent(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	return s.Save(store.WithoutDeletionAudit(ctx), c, ev)
}

// RestoreEvents implements transfer.EventBatchDestination: RestoreEvent of
// each event in order, as one write and one sync of the events engine.
func (s *Store) RestoreEvents(ctx context.Context, c tenant.CommunityID, evs []*nostr.Event) ([]error, error) {
	if _, err := s.communitySeq(ctx, c); err != nil {
		return nil, err
	}
	if err := s.eventsOff(); err != nil {
		return nil, err
	}
	return s.ev.SaveBatch(ctx, c, evs)
}
