package embedded

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// DM conversations (store.DMStore): channels of type dm, written on the
// single writer like every channel command, so a conversation is created
// once however many opens race for it.

var _ store.DMStore = (*Store)(nil)

// OpenDM implements store.DMStore.
func (s *Store) OpenDM(ctx context.Context, c tenant.CommunityID, actor string, participants []string, createdAt int64) (channel.Channel, bool, error) {
	pks, ok := store.DMParticipants(actor, participants)
	if !ok {
		return channel.Channel{}, false, channel.ErrInvalidCommand
	}
	actorPK, _ := nostr.DecodeHex32(actor)
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return channel.Channel{}, false, err
	}
	id := channel.DMID(participants)
	var (
		ch      channel.Channel
		created bool
		verdict error
	)
	err = s.submit(ctx, func(w *writer) error {
		ch, created, verdict = channel.Channel{}, false, nil
		now := time.Now().Unix()
		existing, err := w.channelRow(cseq, id)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO channels (community, id, name, about, picture, visibility, channel_type, created_by, created_at, slug, closed, restricted, hidden)
				VALUES (?, ?, ?, '', '', 'private', 'dm', ?, ?, NULL, 1, 1, 1)`,
				cseq, id[:], channel.DMName(len(pks)), actorPK, createdAt); err != nil {
				return internal("open dm", err)
			}
			for _, pk := range pks {
				if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO channel_members (community, channel, pubkey, role, joined_at, added_by) VALUES (?, ?, ?, 'member', ?, ?)`,
					cseq, id[:], pk, now, actorPK); err != nil {
					return internal("open dm", err)
				}
			}
			created = true
		case err != nil:
			return err
		case existing.Deleted || existing.Type != channel.TypeDM:
			verdict = w.refuse(channel.ErrNoChannel)
			return nil
		default:
			if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO channel_members (community, channel, pubkey, role, joined_at, added_by) VALUES (?, ?, ?, 'member', ?, ?)
				ON CONFLICT (community, channel, pubkey) DO UPDATE SET hidden_at = NULL`,
				cseq, id[:], actorPK, now, actorPK); err != nil {
				return internal("open dm", err)
			}
		}
		ch, err = w.channelRow(cseq, id)
		return err
	})
	if err != nil {
		return channel.Channel{}, false, err
	}
	if verdict != nil {
		return channel.Channel{}, false, verdict
	}
	return ch, created, nil
}

// HideDM implements store.DMStore.
func (s *Store) HideDM(ctx context.Context, c tenant.CommunityID, id channel.ID, viewer string) error {
	pk, ok := nostr.DecodeHex32(viewer)
	if !ok {
		return channel.ErrNotMember
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return channel.ErrNoChannel
	}
	if err != nil {
		return err
	}
	var verdict error
	err = s.submit(ctx, func(w *writer) error {
		verdict = nil
		ch, err := w.channelRow(cseq, id)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			verdict = w.refuse(channel.ErrNoChannel)
			return nil
		case err != nil:
			return err
		case ch.Deleted || ch.Type != channel.TypeDM:
			verdict = w.refuse(channel.ErrNoChannel)
			return nil
		}
		res, err := w.conn.ExecContext(w.ctx, `UPDATE channel_members SET hidden_at = ? WHERE community = ? AND channel = ? AND pubkey = ?`,
			time.Now().Unix(), cseq, id[:], pk)
		if err != nil {
			return internal("hide dm", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return internal("hide dm", err)
		} else if n == 0 {
			verdict = w.refuse(channel.ErrNotMember)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return verdict
}

// HiddenDMs implements store.DMStore.
func (s *Store) HiddenDMs(ctx context.Context, c tenant.CommunityID, viewer string) ([]channel.ID, error) {
	pk, ok := nostr.DecodeHex32(viewer)
	if !ok {
		return nil, nil
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT m.channel FROM channel_members m
		JOIN channels ch ON ch.community = m.community AND ch.id = m.channel
		WHERE m.community = ? AND m.pubkey = ? AND m.hidden_at IS NOT NULL AND ch.channel_type = 'dm' AND ch.deleted_at IS NULL
		ORDER BY m.channel`, cseq, pk)
	if err != nil {
		return nil, internal("hidden dms", err)
	}
	defer rows.Close()
	var out []channel.ID
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, internal("hidden dms", err)
		}
		var id channel.ID
		if len(b) != len(id) {
			return nil, errors.New("sqlite: corrupt channel id")
		}
		copy(id[:], b)
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("hidden dms", err)
	}
	return out, nil
}
