package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// DM conversations (store.DMStore): channels of type dm. A conversation's
// row is created with ON CONFLICT DO NOTHING and then read FOR UPDATE, so
// opens racing across pods create it once and agree on it.

var _ store.DMStore = (*Store)(nil)

// OpenDM implements store.DMStore.
func (s *Store) OpenDM(ctx context.Context, c tenant.CommunityID, actor string, participants []string, createdAt int64) (channel.Channel, bool, error) {
	pks, ok := store.DMParticipants(actor, participants)
	if !ok || c.IsZero() {
		return channel.Channel{}, false, channel.ErrInvalidCommand
	}
	actorPK, _ := nostr.DecodeHex32(actor)
	id := [16]byte(channel.DMID(participants))
	cu := c.UUID()
	var (
		ch      channel.Channel
		created bool
	)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		ch, created = channel.Channel{}, false
		tag, err := tx.Exec(ctx, `INSERT INTO channels (community_id, id, name, description, picture, visibility, channel_type, created_by, created_at,
    nip29_group_id, closed, restricted, hidden)
VALUES ($1, $2, $3, '', '', 'private', 'dm', $4, to_timestamp($5), NULL, true, true, true)
ON CONFLICT DO NOTHING`, cu, id, channel.DMName(len(pks)), actorPK, createdAt)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			for _, pk := range pks {
				if _, err := tx.Exec(ctx, `INSERT INTO channel_members (community_id, channel_id, pubkey, role, invited_by)
VALUES ($1, $2, $3, 'member', $4)`, cu, id, pk, actorPK); err != nil {
					return err
				}
			}
			created = true
		} else {
			existing, err := scanPGChannel(tx.QueryRow(ctx,
				`SELECT `+pgChannelCols+` FROM channels WHERE community_id = $1 AND id = $2 FOR UPDATE`, cu, id))
			if err != nil {
				return err
			}
			if existing.Deleted || existing.Type != channel.TypeDM {
				return verdictError{channel.ErrNoChannel}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO channel_members (community_id, channel_id, pubkey, role, invited_by)
VALUES ($1, $2, $3, 'member', $3)
ON CONFLICT (community_id, channel_id, pubkey) DO UPDATE SET
    hidden_at = NULL,
    removed_at = NULL,
    removed_by = NULL,
    joined_at = CASE WHEN channel_members.removed_at IS NULL THEN channel_members.joined_at ELSE now() END`, cu, id, actorPK); err != nil {
				return err
			}
		}
		ch, err = scanPGChannel(tx.QueryRow(ctx, `SELECT `+pgChannelCols+` FROM channels WHERE community_id = $1 AND id = $2`, cu, id))
		return err
	})
	var v verdictError
	if errors.As(err, &v) {
		return channel.Channel{}, false, v.err
	}
	if err != nil {
		return channel.Channel{}, false, fmt.Errorf("postgres: open dm: %w", err)
	}
	return ch, created, nil
}

// HideDM implements store.DMStore.
func (s *Store) HideDM(ctx context.Context, c tenant.CommunityID, id channel.ID, viewer string) error {
	pk, ok := nostr.DecodeHex32(viewer)
	if !ok {
		return channel.ErrNotMember
	}
	if c.IsZero() {
		return channel.ErrNoChannel
	}
	cu, chID := c.UUID(), [16]byte(id)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		ch, err := scanPGChannel(tx.QueryRow(ctx,
			`SELECT `+pgChannelCols+` FROM channels WHERE community_id = $1 AND id = $2 FOR SHARE`, cu, chID))
		if errors.Is(err, pgx.ErrNoRows) {
			return verdictError{channel.ErrNoChannel}
		}
		if err != nil {
			return err
		}
		if ch.Deleted || ch.Type != channel.TypeDM {
			return verdictError{channel.ErrNoChannel}
		}
		tag, err := tx.Exec(ctx, `UPDATE channel_members SET hidden_at = now()
WHERE community_id = $1 AND channel_id = $2 AND pubkey = $3 AND removed_at IS NULL`, cu, chID, pk)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return verdictError{channel.ErrNotMember}
		}
		return nil
	})
	var v verdictError
	if errors.As(err, &v) {
		return v.err
	}
	if err != nil {
		return fmt.Errorf("postgres: hide dm: %w", err)
	}
	return nil
}

// HiddenDMs implements store.DMStore.
func (s *Store) HiddenDMs(ctx context.Context, c tenant.CommunityID, viewer string) ([]channel.ID, error) {
	pk, ok := nostr.DecodeHex32(viewer)
	if !ok || c.IsZero() {
		return nil, nil
	}
	out, err := s.channelIDs(ctx, c, `SELECT m.channel_id FROM channel_members m
JOIN channels ch ON ch.community_id = m.community_id AND ch.id = m.channel_id
WHERE m.community_id = $1 AND m.pubkey = $2 AND m.removed_at IS NULL AND m.hidden_at IS NOT NULL
  AND ch.channel_type = 'dm' AND ch.deleted_at IS NULL
ORDER BY m.channel_id`, c.UUID(), pk)
	if err != nil {
		return nil, fmt.Errorf("postgres: hidden dms: %w", err)
	}
	return out, nil
}
