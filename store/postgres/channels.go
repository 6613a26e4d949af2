package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Channels and community access (store.ChannelStore).
//
// A command runs in one transaction with the community set for RLS: the
// channel row is locked (SELECT … FOR UPDATE; a create arbitrates on the
// primary key), so every command of one channel is serialized across
// processes; its authorization (channel.Authorize) reads the member rows
// inside the lock; the effect and buzz_save_event (with the channel) commit
// together or not at all. Removed members keep their row with removed_at
// set (active = removed_at IS NULL).

var _ store.ChannelStore = (*Store)(nil)

const pgChannelCols = `id, name, description, picture, visibility::text, channel_type::text, created_by,
    extract(epoch FROM created_at)::bigint, deleted_at IS NOT NULL, coalesce(nip29_group_id, ''), closed, restricted, hidden`

func scanPGChannel(r pgx.Row) (channel.Channel, error) {
	var (
		ch       channel.Channel
		id       [16]byte
		by       []byte
		vis, typ string
	)
	if err := r.Scan(&id, &ch.Name, &ch.About, &ch.Picture, &vis, &typ, &by, &ch.CreatedAt, &ch.Deleted, &ch.Slug, &ch.Closed, &ch.Restricted, &ch.Hidden); err != nil {
		return channel.Channel{}, err
	}
	ch.ID = channel.ID(id)
	ch.Visibility = channel.Visibility(vis)
	ch.Type = channel.Type(typ)
	ch.CreatedBy = hex.EncodeToString(by)
	return ch, nil
}

// Channel implements store.ChannelStore.
func (s *Store) Channel(ctx context.Context, c tenant.CommunityID, id channel.ID) (channel.Channel, error) {
	if c.IsZero() {
		return channel.Channel{}, channel.ErrNoChannel
	}
	var b pgx.Batch
	b.Queue(`SELECT `+pgChannelCols+` FROM channels WHERE community_id = $1 AND id = $2 AND deleted_at IS NULL`,
		c.UUID(), [16]byte(id))
	var ch channel.Channel
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		var err error
		ch, err = scanPGChannel(br.QueryRow())
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return channel.Channel{}, channel.ErrNoChannel
	case err != nil:
		return channel.Channel{}, fmt.Errorf("postgres: channel: %w", err)
	}
	return ch, nil
}

// ChannelRole implements store.ChannelStore.
func (s *Store) ChannelRole(ctx context.Context, c tenant.CommunityID, id channel.ID, pubkey string) (channel.Role, bool, error) {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok || c.IsZero() {
		return "", false, nil
	}
	var b pgx.Batch
	b.Queue(`SELECT role::text FROM channel_members
WHERE community_id = $1 AND channel_id = $2 AND pubkey = $3 AND removed_at IS NULL`, c.UUID(), [16]byte(id), pk)
	var role string
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&role) })
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("postgres: channel role: %w", err)
	}
	return channel.Role(role), true, nil
}

// ChannelMembers implements store.ChannelStore.
func (s *Store) ChannelMembers(ctx context.Context, c tenant.CommunityID, id channel.ID) ([]channel.Member, error) {
	if c.IsZero() {
		return nil, nil
	}
	var b pgx.Batch
	b.Queue(`SELECT pubkey, role::text FROM channel_members
WHERE community_id = $1 AND channel_id = $2 AND removed_at IS NULL ORDER BY pubkey`, c.UUID(), [16]byte(id))
	var out []channel.Member
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var (
			pk   []byte
			role string
		)
		_, err = pgx.ForEachRow(rows, []any{&pk, &role}, func() error {
			out = append(out, channel.Member{PubKey: hex.EncodeToString(pk), Role: channel.Role(role)})
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: channel members: %w", err)
	}
	return out, nil
}

// ReadableChannels implements store.ChannelStore.
func (s *Store) ReadableChannels(ctx context.Context, c tenant.CommunityID, pubkeys []string) ([]channel.ID, error) {
	if c.IsZero() {
		return nil, nil
	}
	pks := make([][]byte, 0, len(pubkeys))
	for _, p := range pubkeys {
		if b, ok := nostr.DecodeHex32(p); ok {
			pks = append(pks, b)
		}
	}
	out, err := s.channelIDs(ctx, c, `SELECT id FROM channels ch
WHERE ch.community_id = $1 AND ch.deleted_at IS NULL
  AND (ch.visibility = 'open' OR EXISTS (
       SELECT 1 FROM channel_members m
       WHERE m.community_id = $1 AND m.channel_id = ch.id AND m.pubkey = ANY($2) AND m.removed_at IS NULL))
ORDER BY id`, c.UUID(), pks)
	if err != nil {
		return nil, fmt.Errorf("postgres: readable channels: %w", err)
	}
	return out, nil
}

// channelIDs runs query, whose one column is a channel id, in c's
// community (RLS) and returns the ids in the order of its rows.
func (s *Store) channelIDs(ctx context.Context, c tenant.CommunityID, query string, args ...any) ([]channel.ID, error) {
	var b pgx.Batch
	b.Queue(query, args...)
	var out []channel.ID
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var id [16]byte
		_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
			out = append(out, channel.ID(id))
			return nil
		})
		return err
	})
	return out, err
}

// inCommunityTx runs fn, a write, in a transaction bound to community c
// (RLS), committing when fn returns nil and rolling back otherwise. A
// pending authority mark of ctx (store.Authority) is recorded in it.
func (s *Store) inCommunityTx(ctx context.Context, c tenant.CommunityID, fn func(tx pgx.Tx) error) error {
	return s.communityTx(ctx, c, true, fn)
}

// readInCommunity runs fn, a read, in a transaction bound to community c
// (RLS). It never records an authority mark: a read made on behalf of an
// authority event (looking up what a decision is about) is not its effect.
func (s *Store) readInCommunity(ctx context.Context, c tenant.CommunityID, fn func(tx pgx.Tx) error) error {
	return s.communityTx(ctx, c, false, fn)
}

func (s *Store) communityTx(ctx context.Context, c tenant.CommunityID, write bool, fn func(tx pgx.Tx) error) (err error) {
	defer func() { err = withCtxErr(ctx, err) }()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, setCommunitySQL, c.String()); err != nil {
		return err
	}
	a, marked := store.PendingAuthority(ctx)
	marked = marked && write
	if marked {
		if err := recordAuthority(ctx, tx, a); err != nil {
			return err
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if marked {
		store.AuthorityRecorded(ctx)
	}
	return nil
}

// recordAuthority records authority mark a (see store.Authority) in tx, the
// transaction of its effect, or returns store.ErrDuplicate when a committed
// transaction (of any pod) recorded it already; a concurrent transaction
// inserting the same mark waits for that one to end.
func recordAuthority(ctx context.Context, tx pgx.Tx, a store.Authority) error {
	id, ok := nostr.DecodeHex32(a.Event)
	if !ok {
		return errors.New("postgres: authority mark: event id must be 64 lowercase hex characters")
	}
	tag, err := tx.Exec(ctx, `INSERT INTO applied_authority (community_id, event_id, until) VALUES ($1, $2, $3)
ON CONFLICT (community_id, event_id) DO NOTHING`, a.Community.UUID(), id, a.Until)
	if err != nil {
		return fmt.Errorf("postgres: authority mark: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrDuplicate
	}
	return nil
}

// verdictError carries a command verdict out of inTx (rolling back).
type verdictError struct{ err error }

func (v verdictError) Error() string { return v.err.Error() }

// ApplyChannelCommand implements store.ChannelStore.
func (s *Store) ApplyChannelCommand(ctx context.Context, c tenant.CommunityID, cmd channel.Command, ev *nostr.Event) (channel.Change, error) {
	if err := cmd.Validate(); err != nil {
		return channel.Change{}, err
	}
	if c.IsZero() || ev == nil || ev.Kind != cmd.Kind || ev.PubKey != cmd.Actor {
		return channel.Change{}, channel.ErrInvalidCommand
	}
	if id, ok, err := channel.OfEvent(ev); err != nil || !ok || id != cmd.Channel {
		return channel.Change{}, channel.ErrInvalidCommand
	}
	args, err := encodeEvent(c, ev)
	if err != nil {
		return channel.Change{}, err
	}
	var change channel.Change
	err = s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		change = channel.Change{}
		v, err := applyCommand(ctx, tx, c, &cmd, args, &change)
		if err != nil {
			return err
		}
		if v != nil {
			return verdictError{v}
		}
		change.Channel, err = scanPGChannel(tx.QueryRow(ctx,
			`SELECT `+pgChannelCols+` FROM channels WHERE community_id = $1 AND id = $2`, c.UUID(), [16]byte(cmd.Channel)))
		if err != nil {
			return err
		}
		return queueAudit(ctx, tx, c, store.ChannelCommandAudit(&cmd, ev.ID))
	})
	var v verdictError
	if errors.As(err, &v) {
		return channel.Change{}, v.err
	}
	if err != nil {
		return channel.Change{}, fmt.Errorf("postgres: channel command: %w", err)
	}
	s.audit.pending(c)
	return change, nil
}

// applyCommand authorizes and applies cmd and stores its event inside tx.
// It returns a verdict (the caller rolls back) or an internal error.
func applyCommand(ctx context.Context, tx pgx.Tx, c tenant.CommunityID, cmd *channel.Command, a *saveArgs, change *channel.Change) (verdict, err error) {
	cu, chID := c.UUID(), [16]byte(cmd.Channel)
	var tomb, dup bool
	if err := tx.QueryRow(ctx, `SELECT
    EXISTS (SELECT 1 FROM event_tombstones WHERE community_id = $1 AND event_id = $2 AND pubkey = $3),
    EXISTS (SELECT 1 FROM events WHERE community_id = $1 AND created_at = $4 AND id = $2)`,
		cu, a.id, a.pubkey, a.createdAt).Scan(&tomb, &dup); err != nil {
		return nil, err
	}
	switch {
	case dup:
		return store.ErrDuplicate, nil
	case tomb:
		return store.ErrDeleted, nil
	}

	if cmd.Kind == nostr.KindCreateChannel {
		vis, closed, restricted, hidden, ferr := cmd.Flags(channel.Channel{})
		if ferr != nil {
			return ferr, nil
		}
		typ := cmd.Type
		if typ == "" {
			typ = channel.TypeStream
		}
		var slug *string
		if sl := channel.SlugFor(cmd.GroupID); sl != "" {
			slug = &sl
		}
		tag, err := tx.Exec(ctx, `INSERT INTO channels (community_id, id, name, description, picture, visibility, channel_type, created_by, created_at,
    nip29_group_id, closed, restricted, hidden)
VALUES ($1, $2, $3, $4, $5, $6::channel_visibility, $7::channel_type, $8, to_timestamp($9), $10, $11, $12, $13)
ON CONFLICT DO NOTHING`,
			cu, chID, sqlText(deref(cmd.Name)), sqlText(deref(cmd.About)), sqlText(deref(cmd.Picture)), string(vis), string(typ), a.pubkey, a.createdAt,
			slug, closed, restricted, hidden)
		if err != nil {
			return nil, err
		}
		if tag.RowsAffected() == 0 {
			return channel.ErrChannelExists, nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO channel_members (community_id, channel_id, pubkey, role, invited_by)
VALUES ($1, $2, $3, 'owner', $3)`, cu, chID, a.pubkey); err != nil {
			return nil, err
		}
		change.Metadata, change.Members = true, true
		return saveCommandEvent(ctx, tx, a, chID)
	}

	ch, err := scanPGChannel(tx.QueryRow(ctx,
		`SELECT `+pgChannelCols+` FROM channels WHERE community_id = $1 AND id = $2 FOR UPDATE`, cu, chID))
	if errors.Is(err, pgx.ErrNoRows) {
		return channel.ErrNoChannel, nil
	}
	if err != nil {
		return nil, err
	}
	st := channel.CommandState{Channel: ch}
	var target []byte
	if cmd.Target != "" {
		target, _ = nostr.DecodeHex32(cmd.Target)
	}
	var actorRole, targetRole *string
	if err := tx.QueryRow(ctx, `SELECT
    (SELECT role::text FROM channel_members WHERE community_id = $1 AND channel_id = $2 AND pubkey = $3 AND removed_at IS NULL),
    (SELECT role::text FROM channel_members WHERE community_id = $1 AND channel_id = $2 AND pubkey = $4 AND removed_at IS NULL),
    (SELECT count(*) FROM channel_members WHERE community_id = $1 AND channel_id = $2 AND role = 'owner' AND removed_at IS NULL)`,
		cu, chID, a.pubkey, target).Scan(&actorRole, &targetRole, &st.Owners); err != nil {
		return nil, err
	}
	if actorRole != nil {
		st.ActorRole = channel.Role(*actorRole)
	}
	if targetRole != nil && target != nil {
		st.TargetRole = channel.Role(*targetRole)
	}
	if v := channel.Authorize(cmd, st); v != nil {
		return v, nil
	}

	switch cmd.Kind {
	case nostr.KindJoinRequest:
		if st.ActorRole == "" {
			if err := putMember(ctx, tx, cu, chID, a.pubkey, channel.RoleMember, a.pubkey); err != nil {
				return nil, err
			}
			change.Members, change.Added = true, []string{cmd.Actor}
		}
	case nostr.KindLeaveRequest:
		if err := removeMember(ctx, tx, cu, chID, a.pubkey, a.pubkey); err != nil {
			return nil, err
		}
		change.Members, change.Revoked = true, []string{cmd.Actor}
		if st.ActorRole != "" {
			change.Removed = []string{cmd.Actor}
		}
	case nostr.KindPutUser:
		r := cmd.Role
		if r == "" {
			r = channel.RoleMember
		}
		if err := putMember(ctx, tx, cu, chID, target, r, a.pubkey); err != nil {
			return nil, err
		}
		change.Members = true
		if st.TargetRole == "" {
			change.Added = []string{cmd.Target}
		}
	case nostr.KindRemoveUser:
		if err := removeMember(ctx, tx, cu, chID, target, a.pubkey); err != nil {
			return nil, err
		}
		change.Members, change.Revoked = true, []string{cmd.Target}
		if st.TargetRole != "" {
			change.Removed = []string{cmd.Target}
		}
	case nostr.KindEditMetadata:
		// An edit older than the channel's newest metadata event never
		// overwrites it.
		var newest *int64
		if err := tx.QueryRow(ctx, `SELECT max(created_at) FROM events WHERE community_id = $1 AND channel_id = $2 AND kind IN (9002, 9007)`,
			cu, chID).Scan(&newest); err != nil {
			return nil, err
		}
		if newest != nil && a.createdAt < *newest {
			return channel.ErrStaleEdit, nil
		}
		sets := []string{}
		args := []any{cu, chID}
		for _, f := range []struct {
			col string
			v   *string
		}{{"name", cmd.Name}, {"description", cmd.About}, {"picture", cmd.Picture}} {
			if f.v != nil {
				args = append(args, sqlText(*f.v))
				sets = append(sets, fmt.Sprintf("%s = $%d", f.col, len(args)))
			}
		}
		vis, closed, restricted, hidden, ferr := cmd.Flags(ch)
		if ferr != nil {
			return ferr, nil
		}
		if vis != ch.Visibility || closed != ch.Closed || restricted != ch.Restricted || hidden != ch.Hidden {
			args = append(args, string(vis), closed, restricted, hidden)
			n := len(args)
			sets = append(sets, fmt.Sprintf("visibility = $%d::channel_visibility, closed = $%d, restricted = $%d, hidden = $%d", n-3, n-2, n-1, n))
			change.BecamePrivate = ch.Visibility == channel.VisibilityOpen && vis == channel.VisibilityPrivate
		}
		if len(sets) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE channels SET `+strings.Join(sets, ", ")+` WHERE community_id = $1 AND id = $2`, args...); err != nil {
				return nil, err
			}
			change.Metadata = true
		}
	case nostr.KindDeleteEvent:
		eid, _ := nostr.DecodeHex32(cmd.EventID)
		var author []byte
		err := tx.QueryRow(ctx, `UPDATE events SET deleted_at = now()
WHERE community_id = $1 AND id = $2 AND channel_id = $3 AND deleted_at IS NULL RETURNING pubkey`, cu, eid, chID).Scan(&author)
		if errors.Is(err, pgx.ErrNoRows) {
			return channel.ErrNoEvent, nil
		}
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO event_tombstones (community_id, event_id, pubkey, deleted_by)
VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, cu, eid, author, a.id); err != nil {
			return nil, err
		}
		change.DeletedEvent = cmd.EventID
	case nostr.KindCreateInvite:
		// The stored command event is the invite.
	case nostr.KindDeleteChannel:
		if _, err := tx.Exec(ctx, `UPDATE channels SET deleted_at = now() WHERE community_id = $1 AND id = $2`, cu, chID); err != nil {
			return nil, err
		}
		change.Deleted, change.Metadata = true, true
	default:
		return channel.ErrInvalidCommand, nil
	}
	return saveCommandEvent(ctx, tx, a, chID)
}

func putMember(ctx context.Context, tx pgx.Tx, cu, chID [16]byte, pk []byte, role channel.Role, by []byte) error {
	_, err := tx.Exec(ctx, `INSERT INTO channel_members (community_id, channel_id, pubkey, role, invited_by)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (community_id, channel_id, pubkey) DO UPDATE SET role = EXCLUDED.role,
    joined_at = CASE WHEN channel_members.removed_at IS NULL THEN channel_members.joined_at ELSE now() END,
    invited_by = CASE WHEN channel_members.removed_at IS NULL THEN channel_members.invited_by ELSE EXCLUDED.invited_by END,
    removed_at = NULL, removed_by = NULL`, cu, chID, pk, string(role), by)
	return err
}

func removeMember(ctx context.Context, tx pgx.Tx, cu, chID [16]byte, pk, by []byte) error {
	_, err := tx.Exec(ctx, `UPDATE channel_members SET removed_at = now(), removed_by = $4
WHERE community_id = $1 AND channel_id = $2 AND pubkey = $3 AND removed_at IS NULL`, cu, chID, pk, by)
	return err
}

// saveCommandEvent stores the command event in its channel. A duplicate or
// tombstone that appeared since the checks (a concurrent twin) is a verdict
// that rolls the effect back.
func saveCommandEvent(ctx context.Context, tx pgx.Tx, a *saveArgs, chID [16]byte) (error, error) {
	vals := a.values()
	vals[9] = chID
	var code int16
	if err := tx.QueryRow(ctx, saveSQL, vals...).Scan(&code); err != nil {
		return nil, err
	}
	switch err := saveResult(code); {
	case err == nil:
		return nil, nil
	case errors.Is(err, store.ErrDuplicate), errors.Is(err, store.ErrDeleted):
		return err, nil
	default:
		return nil, fmt.Errorf("command event refused after its checks: %w", err)
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// CommunityAccess implements store.ChannelStore.
func (s *Store) CommunityAccess(ctx context.Context, c tenant.CommunityID) (channel.AccessPolicy, error) {
	var p string
	if err := s.pool.QueryRow(ctx, `SELECT access_policy FROM communities WHERE id = $1`, c.UUID()).Scan(&p); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", store.ErrNoCommunity
		}
		return "", fmt.Errorf("postgres: community access: %w", err)
	}
	return channel.AccessPolicy(p), nil
}

// SetCommunityAccess implements store.ChannelStore.
func (s *Store) SetCommunityAccess(ctx context.Context, c tenant.CommunityID, p channel.AccessPolicy) error {
	if !p.Valid() {
		return fmt.Errorf("postgres: unknown access policy %q", p)
	}
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE communities SET access_policy = $2 WHERE id = $1`, c.UUID(), string(p))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNoCommunity
		}
		return queueAudit(ctx, tx, c, audit.Record{Action: audit.CommunityPolicyChanged, Actor: audit.ActorFrom(ctx),
			Detail: map[string]any{"access": string(p)}})
	})
	switch {
	case errors.Is(err, store.ErrNoCommunity):
		return err
	case err != nil:
		return fmt.Errorf("postgres: set community access: %w", err)
	}
	s.audit.pending(c)
	return nil
}

// CommunityRole implements store.ChannelStore.
func (s *Store) CommunityRole(ctx context.Context, c tenant.CommunityID, pubkey string) (channel.Role, bool, error) {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok || c.IsZero() {
		return "", false, nil
	}
	var b pgx.Batch
	b.Queue(`SELECT 'owner' FROM communities WHERE id = $1 AND owner_pubkey = $2
UNION ALL
SELECT role FROM community_members WHERE community_id = $1 AND pubkey = $2
LIMIT 1`, c.UUID(), pk)
	var role string
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&role) })
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("postgres: community role: %w", err)
	}
	return channel.Role(role), true, nil
}

// PutCommunityMember implements store.ChannelStore.
func (s *Store) PutCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string, role channel.Role) error {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return errors.New("postgres: member key must be 64 lowercase hex characters")
	}
	if !store.ValidCommunityRole(role) {
		return fmt.Errorf("postgres: community role must be admin, moderator or member, not %q", role)
	}
	ann := store.MembershipAnnouncerFrom(ctx)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		var last int64
		var prev channel.Role
		if ann != nil {
			var err error
			if last, err = lockMembership(ctx, tx, c); err != nil {
				return err
			}
			if prev, err = memberRole(ctx, tx, c, pk); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO community_members (community_id, pubkey, role) VALUES ($1, $2, $3)
ON CONFLICT (community_id, pubkey) DO UPDATE SET role = EXCLUDED.role`, c.UUID(), pk, string(role))
		if err != nil {
			return err
		}
		if ann != nil && prev != role {
			if err := announceMembership(ctx, tx, ann, c, pubkey, prev == "", false, last); err != nil {
				return err
			}
		}
		return queueAudit(ctx, tx, c, audit.Record{Action: audit.CommunityMemberPut, Actor: audit.ActorFrom(ctx),
			Object: pubkey, Detail: map[string]any{"role": string(role)}})
	})
	if err != nil {
		return err
	}
	s.audit.pending(c)
	return nil
}

// RemoveCommunityMember implements store.ChannelStore.
func (s *Store) RemoveCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string) error {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return nil
	}
	ann := store.MembershipAnnouncerFrom(ctx)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		var last int64
		if ann != nil {
			var err error
			if last, err = lockMembership(ctx, tx, c); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `DELETE FROM community_members WHERE community_id = $1 AND pubkey = $2`, c.UUID(), pk)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if ann != nil {
			if err := announceMembership(ctx, tx, ann, c, pubkey, false, true, last); err != nil {
				return err
			}
		}
		return queueAudit(ctx, tx, c, audit.Record{Action: audit.CommunityMemberRemoved, Actor: audit.ActorFrom(ctx), Object: pubkey})
	})
	if err != nil {
		return err
	}
	s.audit.pending(c)
	return nil
}

// CommunityProfile implements store.ProfileStore.
func (s *Store) CommunityProfile(ctx context.Context, c tenant.CommunityID) (store.CommunityProfile, error) {
	var p store.CommunityProfile
	err := s.pool.QueryRow(ctx, `SELECT profile_name, profile_description, profile_icon, profile_contact FROM communities WHERE id = $1`,
		c.UUID()).Scan(&p.Name, &p.Description, &p.Icon, &p.Contact)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, store.ErrNoCommunity
	}
	if err != nil {
		return p, fmt.Errorf("postgres: community profile: %w", err)
	}
	return p, nil
}

// SetCommunityProfile implements store.ProfileStore.
func (s *Store) SetCommunityProfile(ctx context.Context, c tenant.CommunityID, p store.CommunityProfile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE communities SET profile_name = $2, profile_description = $3, profile_icon = $4, profile_contact = $5 WHERE id = $1`,
			c.UUID(), p.Name, p.Description, p.Icon, p.Contact)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNoCommunity
		}
		return queueAudit(ctx, tx, c, store.ProfileAudit(ctx, p))
	})
	switch {
	case errors.Is(err, store.ErrNoCommunity):
		return err
	case err != nil:
		return fmt.Errorf("postgres: set community profile: %w", err)
	}
	s.audit.pending(c)
	return nil
}

// Channels lists community c's channels that are not deleted, oldest
// first (for the local admin CLI). An unknown community has none.
func (s *Store) Channels(ctx context.Context, c tenant.CommunityID) ([]channel.Channel, error) {
	if c.IsZero() {
		return []channel.Channel{}, nil
	}
	var b pgx.Batch
	b.Queue(`SELECT `+pgChannelCols+` FROM channels WHERE community_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`, c.UUID())
	out := []channel.Channel{}
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			ch, err := scanPGChannel(rows)
			if err != nil {
				return err
			}
			out = append(out, ch)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: channels: %w", err)
	}
	return out, nil
}
