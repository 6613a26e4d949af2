package embedded

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Channels and community access (store.ChannelStore). Reads use the
// read-only pool; every command runs on the single writer inside its
// BEGIN IMMEDIATE transaction, so its authorization, its effect and the
// storage of its event are one atomic step, serialized with every other
// write (also across processes sharing the file). A verdict (not permitted,
// no channel, …) is reported through a captured variable with a nil return,
// so it never fails the writer's batch; each run of the closure starts by
// resetting it, because a failed batch replays its requests.

var _ store.ChannelStore = (*Store)(nil)

const channelCols = `id, name, about, picture, visibility, channel_type, created_by, created_at, deleted_at, coalesce(slug, ''), closed, restricted, hidden`

func scanChannel(r rowScanner) (channel.Channel, error) {
	var (
		ch        channel.Channel
		id, by    []byte
		vis, typ  string
		deletedAt sql.NullInt64
	)
	if err := r.Scan(&id, &ch.Name, &ch.About, &ch.Picture, &vis, &typ, &by, &ch.CreatedAt, &deletedAt, &ch.Slug, &ch.Closed, &ch.Restricted, &ch.Hidden); err != nil {
		return channel.Channel{}, err
	}
	if len(id) != 16 || len(by) != 32 {
		return channel.Channel{}, errors.New("sqlite: corrupt channel row")
	}
	copy(ch.ID[:], id)
	ch.Visibility = channel.Visibility(vis)
	ch.Type = channel.Type(typ)
	ch.CreatedBy = hex.EncodeToString(by)
	ch.Deleted = deletedAt.Valid
	return ch, nil
}

// Channel implements store.ChannelStore.
func (s *Store) Channel(ctx context.Context, c tenant.CommunityID, id channel.ID) (channel.Channel, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return channel.Channel{}, channel.ErrNoChannel
	}
	if err != nil {
		return channel.Channel{}, err
	}
	ch, err := scanChannel(s.rdb.QueryRowContext(ctx,
		`SELECT `+channelCols+` FROM channels WHERE community = ? AND id = ? AND deleted_at IS NULL`, cseq, id[:]))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return channel.Channel{}, channel.ErrNoChannel
	case err != nil:
		return channel.Channel{}, internal("channel", err)
	}
	return ch, nil
}

// ChannelRole implements store.ChannelStore.
func (s *Store) ChannelRole(ctx context.Context, c tenant.CommunityID, id channel.ID, pubkey string) (channel.Role, bool, error) {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return "", false, nil
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var role string
	err = s.rdb.QueryRowContext(ctx, `SELECT role FROM channel_members WHERE community = ? AND channel = ? AND pubkey = ?`,
		cseq, id[:], pk).Scan(&role)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, internal("channel role", err)
	}
	return channel.Role(role), true, nil
}

// ChannelMembers implements store.ChannelStore.
func (s *Store) ChannelMembers(ctx context.Context, c tenant.CommunityID, id channel.ID) ([]channel.Member, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT pubkey, role FROM channel_members WHERE community = ? AND channel = ? ORDER BY pubkey`,
		cseq, id[:])
	if err != nil {
		return nil, internal("channel members", err)
	}
	defer rows.Close()
	var out []channel.Member
	for rows.Next() {
		var (
			pk   []byte
			role string
		)
		if err := rows.Scan(&pk, &role); err != nil {
			return nil, internal("channel members", err)
		}
		out = append(out, channel.Member{PubKey: hex.EncodeToString(pk), Role: channel.Role(role)})
	}
	if err := rows.Err(); err != nil {
		return nil, internal("channel members", err)
	}
	return out, nil
}

// ReadableChannels implements store.ChannelStore.
func (s *Store) ReadableChannels(ctx context.Context, c tenant.CommunityID, pubkeys []string) ([]channel.ID, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var q strings.Builder
	q.WriteString(`SELECT id FROM channels WHERE community = ? AND deleted_at IS NULL AND (visibility = 'open'`)
	args := []any{cseq}
	var pks [][]byte
	for _, p := range pubkeys {
		if b, ok := nostr.DecodeHex32(p); ok {
			pks = append(pks, b)
		}
	}
	if len(pks) > 0 {
		q.WriteString(` OR id IN (SELECT channel FROM channel_members WHERE community = ? AND pubkey IN (`)
		args = append(args, cseq)
		for i, b := range pks {
			if i > 0 {
				q.WriteString(`,`)
			}
			q.WriteString(`?`)
			args = append(args, b)
		}
		q.WriteString(`))`)
	}
	q.WriteString(`) ORDER BY id`)
	rows, err := s.rdb.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, internal("readable channels", err)
	}
	defer rows.Close()
	var out []channel.ID
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, internal("readable channels", err)
		}
		var id channel.ID
		if len(b) != len(id) {
			return nil, errors.New("sqlite: corrupt channel id")
		}
		copy(id[:], b)
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("readable channels", err)
	}
	return out, nil
}

// ApplyChannelCommand implements store.ChannelStore.
func (s *Store) ApplyChannelCommand(ctx context.Context, c tenant.CommunityID, cmd channel.Command, ev *nostr.Event) (channel.Change, error) {
	if err := cmd.Validate(); err != nil {
		return channel.Change{}, err
	}
	if ev == nil || ev.Kind != cmd.Kind || ev.PubKey != cmd.Actor {
		return channel.Change{}, channel.ErrInvalidCommand
	}
	if id, ok, err := channel.OfEvent(ev); err != nil || !ok || id != cmd.Channel {
		return channel.Change{}, channel.ErrInvalidCommand
	}
	if err := s.eventsOff(); err != nil {
		return channel.Change{}, err
	}
	p, err := prepare(ev)
	if err != nil {
		return channel.Change{}, err
	}
	p.community, err = s.communitySeq(ctx, c)
	if err != nil {
		return channel.Change{}, err
	}
	p.cid = c
	var (
		change  channel.Change
		verdict error
	)
	err = s.submit(ctx, func(w *writer) error {
		change, verdict = channel.Change{}, nil
		ch, v, err := w.applyCommand(p, &cmd)
		if err != nil {
			return err
		}
		if v != nil {
			verdict = w.refuse(v)
			return nil
		}
		ch.Channel, err = w.channelRow(p.community, cmd.Channel)
		if err != nil {
			return err
		}
		if err := w.appendAudit(p.community, c, store.ChannelCommandAudit(&cmd, ev.ID)); err != nil {
			return err
		}
		change = ch
		return nil
	})
	if err != nil {
		return channel.Change{}, err
	}
	if verdict != nil {
		return channel.Change{}, verdict
	}
	return change, nil
}

func (w *writer) channelRow(community int64, id channel.ID) (channel.Channel, error) {
	ch, err := scanChannel(w.conn.QueryRowContext(w.ctx,
		`SELECT `+channelCols+` FROM channels WHERE community = ? AND id = ?`, community, id[:]))
	if err != nil {
		return channel.Channel{}, internal("channel", err)
	}
	return ch, nil
}

// applyCommand runs on the writer inside the transaction. It returns the
// change, or a verdict (having written nothing), or an internal error.
func (w *writer) applyCommand(p *prepared, cmd *channel.Command) (channel.Change, error, error) {
	ctx, conn := w.ctx, w.conn
	var none channel.Change
	// The event first: a repeat changes nothing.
	if v, err := w.commandSeen(p); v != nil || err != nil {
		return none, v, err
	}

	chID := cmd.Channel[:]
	now := time.Now().Unix()
	var change channel.Change
	if cmd.Kind == nostr.KindCreateChannel {
		vis, closed, restricted, hidden, ferr := cmd.Flags(channel.Channel{})
		if ferr != nil {
			return none, ferr, nil
		}
		typ := cmd.Type
		if typ == "" {
			typ = channel.TypeStream
		}
		var slug any
		if sl := channel.SlugFor(cmd.GroupID); sl != "" {
			slug = sl
		}
		res, err := conn.ExecContext(ctx, `INSERT INTO channels (community, id, name, about, picture, visibility, channel_type, created_by, created_at, slug, closed, restricted, hidden)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (community, id) DO NOTHING`,
			p.community, chID, deref(cmd.Name), deref(cmd.About), deref(cmd.Picture), string(vis), string(typ), p.pubkey, p.createdAt,
			slug, closed, restricted, hidden)
		if err != nil {
			return none, nil, internal("create channel", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return none, nil, internal("create channel", err)
		} else if n == 0 {
			return none, channel.ErrChannelExists, nil
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO channel_members (community, channel, pubkey, role, joined_at, added_by) VALUES (?, ?, ?, 'owner', ?, ?)`,
			p.community, chID, p.pubkey, now, p.pubkey); err != nil {
			return none, nil, internal("create channel", err)
		}
		change.Metadata, change.Members = true, true
		return change, nil, w.saveCommandEvent(p)
	}

	ch, err := w.channelRow(p.community, cmd.Channel)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return none, channel.ErrNoChannel, nil
		}
		return none, nil, err
	}
	st := channel.CommandState{Channel: ch}
	role := func(pk []byte) (channel.Role, error) {
		var r string
		err := conn.QueryRowContext(ctx, `SELECT role FROM channel_members WHERE community = ? AND channel = ? AND pubkey = ?`,
			p.community, chID, pk).Scan(&r)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		if err != nil {
			return "", internal("channel role", err)
		}
		return channel.Role(r), nil
	}
	if st.ActorRole, err = role(p.pubkey); err != nil {
		return none, nil, err
	}
	var target []byte
	if cmd.Target != "" {
		target, _ = nostr.DecodeHex32(cmd.Target)
		if st.TargetRole, err = role(target); err != nil {
			return none, nil, err
		}
	}
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM channel_members WHERE community = ? AND channel = ? AND role = 'owner'`,
		p.community, chID).Scan(&st.Owners); err != nil {
		return none, nil, internal("channel owners", err)
	}
	if v := channel.Authorize(cmd, st); v != nil {
		return none, v, nil
	}
	// 9005 needs its target before anything is written.
	var victimAuthor []byte
	if cmd.Kind == nostr.KindDeleteEvent {
		var found bool
		victimAuthor, found, err = w.channelEvent(p, cmd.EventID, cmd.Channel)
		if err != nil {
			return none, nil, err
		}
		if !found {
			return none, channel.ErrNoEvent, nil
		}
	}

	exec := func(q string, args ...any) error {
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			return internal("channel command", err)
		}
		return nil
	}
	switch cmd.Kind {
	case nostr.KindJoinRequest:
		if st.ActorRole == "" {
			if err := exec(`INSERT INTO channel_members (community, channel, pubkey, role, joined_at) VALUES (?, ?, ?, 'member', ?)`,
				p.community, chID, p.pubkey, now); err != nil {
				return none, nil, err
			}
			change.Members, change.Added = true, []string{cmd.Actor}
		}
	case nostr.KindLeaveRequest:
		if err := exec(`DELETE FROM channel_members WHERE community = ? AND channel = ? AND pubkey = ?`, p.community, chID, p.pubkey); err != nil {
			return none, nil, err
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
		if err := exec(`INSERT INTO channel_members (community, channel, pubkey, role, joined_at, added_by) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (community, channel, pubkey) DO UPDATE SET role = excluded.role`,
			p.community, chID, target, string(r), now, p.pubkey); err != nil {
			return none, nil, err
		}
		change.Members = true
		if st.TargetRole == "" {
			change.Added = []string{cmd.Target}
		}
	case nostr.KindRemoveUser:
		if err := exec(`DELETE FROM channel_members WHERE community = ? AND channel = ? AND pubkey = ?`, p.community, chID, target); err != nil {
			return none, nil, err
		}
		change.Members, change.Revoked = true, []string{cmd.Target}
		if st.TargetRole != "" {
			change.Removed = []string{cmd.Target}
		}
	case nostr.KindEditMetadata:
		// An edit older than the channel's newest metadata event never
		// overwrites it.
		newest, err := w.newestMetadata(p, cmd.Channel)
		if err != nil {
			return none, nil, err
		}
		if newest.Valid && p.createdAt < newest.Int64 {
			return none, channel.ErrStaleEdit, nil
		}
		var sets []string
		var args []any
		for _, f := range []struct {
			col string
			v   *string
		}{{"name", cmd.Name}, {"about", cmd.About}, {"picture", cmd.Picture}} {
			if f.v != nil {
				sets = append(sets, f.col+" = ?")
				args = append(args, *f.v)
			}
		}
		vis, closed, restricted, hidden, ferr := cmd.Flags(ch)
		if ferr != nil {
			return none, ferr, nil
		}
		if vis != ch.Visibility || closed != ch.Closed || restricted != ch.Restricted || hidden != ch.Hidden {
			sets = append(sets, "visibility = ?", "closed = ?", "restricted = ?", "hidden = ?")
			args = append(args, string(vis), closed, restricted, hidden)
			change.BecamePrivate = ch.Visibility == channel.VisibilityOpen && vis == channel.VisibilityPrivate
		}
		if len(sets) > 0 {
			args = append(args, p.community, chID)
			if err := exec(`UPDATE channels SET `+strings.Join(sets, ", ")+` WHERE community = ? AND id = ?`, args...); err != nil {
				return none, nil, err
			}
			change.Metadata = true
		}
	case nostr.KindDeleteEvent:
		if err := w.deleteChannelEvent(p, cmd.EventID, victimAuthor); err != nil {
			return none, nil, err
		}
		change.DeletedEvent = cmd.EventID
	case nostr.KindCreateInvite:
		// The stored command event is the invite.
	case nostr.KindDeleteChannel:
		if err := exec(`UPDATE channels SET deleted_at = ? WHERE community = ? AND id = ?`, now, p.community, chID); err != nil {
			return none, nil, err
		}
		change.Deleted, change.Metadata = true, true
	default:
		return none, channel.ErrInvalidCommand, nil
	}
	return change, nil, w.saveCommandEvent(p)
}

// saveCommandEvent stores the command event after its effect. The checks
// that could refuse it ran before the effect, so any refusal here is an
// internal error (rolling the effect back).
func (w *writer) saveCommandEvent(p *prepared) error {
	tx, err := w.eventsTx()
	if err == nil {
		err = tx.Save(w.ctx, p.cid, p.ev)
	}
	if err != nil && isOutcome(err) {
		return fmt.Errorf("sqlite: channel command event refused after its checks: %w", err)
	}
	return err
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// CommunityAccess implements store.ChannelStore.
func (s *Store) CommunityAccess(ctx context.Context, c tenant.CommunityID) (channel.AccessPolicy, error) {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return "", err
	}
	var p string
	if err := s.rdb.QueryRowContext(ctx, `SELECT access_policy FROM communities WHERE seq = ?`, cseq).Scan(&p); err != nil {
		return "", internal("community access", err)
	}
	return channel.AccessPolicy(p), nil
}

// SetCommunityAccess implements store.ChannelStore.
func (s *Store) SetCommunityAccess(ctx context.Context, c tenant.CommunityID, p channel.AccessPolicy) error {
	if !p.Valid() {
		return fmt.Errorf("sqlite: unknown access policy %q", p)
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	return s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, `UPDATE communities SET access_policy = ? WHERE seq = ?`, string(p), cseq); err != nil {
			return internal("set community access", err)
		}
		return w.appendAudit(cseq, c, audit.Record{Action: audit.CommunityPolicyChanged, Actor: audit.ActorFrom(ctx),
			Detail: map[string]any{"access": string(p)}})
	})
}

// CommunityRole implements store.ChannelStore.
func (s *Store) CommunityRole(ctx context.Context, c tenant.CommunityID, pubkey string) (channel.Role, bool, error) {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return "", false, nil
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var role string
	err = s.rdb.QueryRowContext(ctx, `
SELECT 'owner' FROM communities WHERE seq = ?1 AND owner_pubkey = ?2
UNION ALL
SELECT role FROM community_members WHERE community = ?1 AND pubkey = ?2
LIMIT 1`, cseq, pk).Scan(&role)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, internal("community role", err)
	}
	return channel.Role(role), true, nil
}

// PutCommunityMember implements store.ChannelStore.
func (s *Store) PutCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string, role channel.Role) error {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return errors.New("sqlite: member key must be 64 lowercase hex characters")
	}
	if !store.ValidCommunityRole(role) {
		return fmt.Errorf("sqlite: community role must be admin, moderator or member, not %q", role)
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	ann := store.MembershipAnnouncerFrom(ctx)
	return s.submit(ctx, func(w *writer) error {
		prev, err := w.memberRole(cseq, pk)
		if err != nil {
			return err
		}
		if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO community_members (community, pubkey, role, added_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (community, pubkey) DO UPDATE SET role = excluded.role`, cseq, pk, string(role), time.Now().Unix()); err != nil {
			return internal("put community member", err)
		}
		if ann != nil && prev != role {
			if err := w.announceMembership(ann, cseq, c, pubkey, prev == "", false); err != nil {
				return err
			}
		}
		return w.appendAudit(cseq, c, audit.Record{Action: audit.CommunityMemberPut, Actor: audit.ActorFrom(ctx),
			Object: pubkey, Detail: map[string]any{"role": string(role)}})
	})
}

// RemoveCommunityMember implements store.ChannelStore.
func (s *Store) RemoveCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string) error {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return nil
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	ann := store.MembershipAnnouncerFrom(ctx)
	return s.submit(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(w.ctx, `DELETE FROM community_members WHERE community = ? AND pubkey = ?`, cseq, pk)
		if err != nil {
			return internal("remove community member", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if ann != nil {
			if err := w.announceMembership(ann, cseq, c, pubkey, false, true); err != nil {
				return err
			}
		}
		return w.appendAudit(cseq, c, audit.Record{Action: audit.CommunityMemberRemoved, Actor: audit.ActorFrom(ctx), Object: pubkey})
	})
}

// CommunityProfile implements store.ProfileStore.
func (s *Store) CommunityProfile(ctx context.Context, c tenant.CommunityID) (store.CommunityProfile, error) {
	var p store.CommunityProfile
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return p, store.ErrNoCommunity
	}
	if err != nil {
		return p, err
	}
	if err := s.rdb.QueryRowContext(ctx, `SELECT profile_name, profile_description, profile_icon, profile_contact FROM communities WHERE seq = ?`,
		cseq).Scan(&p.Name, &p.Description, &p.Icon, &p.Contact); err != nil {
		return p, internal("community profile", err)
	}
	return p, nil
}

// SetCommunityProfile implements store.ProfileStore.
func (s *Store) SetCommunityProfile(ctx context.Context, c tenant.CommunityID, p store.CommunityProfile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return store.ErrNoCommunity
	}
	if err != nil {
		return err
	}
	return s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, `UPDATE communities SET profile_name = ?, profile_description = ?, profile_icon = ?, profile_contact = ? WHERE seq = ?`,
			p.Name, p.Description, p.Icon, p.Contact, cseq); err != nil {
			return internal("set community profile", err)
		}
		return w.appendAudit(cseq, c, store.ProfileAudit(ctx, p))
	})
}

// Channels lists community c's channels that are not deleted, oldest
// first (for the local admin CLI). An unknown community has none.
func (s *Store) Channels(ctx context.Context, c tenant.CommunityID) ([]channel.Channel, error) {
	out := []channel.Channel{}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+channelCols+` FROM channels WHERE community = ? AND deleted_at IS NULL ORDER BY created_at, id`, cseq)
	if err != nil {
		return nil, internal("channels", err)
	}
	defer rows.Close()
	for rows.Next() {
		ch, err := scanChannel(rows)
		if err != nil {
			return nil, internal("channels", err)
		}
		out = append(out, ch)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("channels", err)
	}
	return out, nil
}

// commandSeen returns the verdict for a command event already known: a
// repeat (store.ErrDuplicate) or one its author deleted (store.ErrDeleted).
func (w *writer) commandSeen(p *prepared) (verdict, err error) {
	tx, err := w.eventsTx()
	if err != nil {
		return nil, err
	}
	switch err := tx.Seen(w.ctx, p.cid, p.ev); {
	case err == nil:
		return nil, nil
	case isOutcome(err):
		return err, nil
	default:
		return nil, internal("channel command", err)
	}
}

// channelEvent finds the live event with id in channel ch, and its author.
func (w *writer) channelEvent(p *prepared, id string, ch channel.ID) (author []byte, found bool, err error) {
	tx, err := w.eventsTx()
	if err != nil {
		return nil, false, err
	}
	e, ok, err := tx.Event(w.ctx, p.cid, id)
	if err != nil {
		return nil, false, internal("delete event", err)
	}
	if !ok || e.Channel != ch {
		return nil, false, nil
	}
	author, _ = nostr.DecodeHex32(e.PubKey)
	return author, true, nil
}

// newestMetadata returns the created_at of channel ch's newest metadata
// event (creation or edit).
func (w *writer) newestMetadata(p *prepared, ch channel.ID) (sql.NullInt64, error) {
	tx, err := w.eventsTx()
	if err != nil {
		return sql.NullInt64{}, err
	}
	at, ok, err := tx.Newest(w.ctx, p.cid, ch, nostr.KindCreateChannel, nostr.KindEditMetadata)
	if err != nil {
		return sql.NullInt64{}, internal("channel metadata", err)
	}
	return sql.NullInt64{Int64: at, Valid: ok}, nil
}

// deleteChannelEvent removes event id (found by channelEvent, by author)
// and refuses it from then on.
func (w *writer) deleteChannelEvent(p *prepared, id string, author []byte) error {
	tx, err := w.eventsTx()
	if err != nil {
		return err
	}
	if _, err := tx.Remove(w.ctx, p.cid, id); err != nil {
		return internal("delete event", err)
	}
	if err := tx.Tombstone(w.ctx, p.cid, id, hex.EncodeToString(author)); err != nil {
		return internal("delete event", err)
	}
	eid, _ := nostr.DecodeHex32(id)
	return w.removeReplies(p.community, nil, eid)
}
