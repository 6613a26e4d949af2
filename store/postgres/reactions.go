package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.ReactionStore = (*Store)(nil)

// ClaimReaction implements store.ReactionStore: an INSERT … ON CONFLICT DO
// NOTHING, then, when another row holds the key, that row — one statement
// against the primary key, so every pod agrees on the holder.
func (s *Store) ClaimReaction(ctx context.Context, c tenant.CommunityID, k store.ReactionKey, eventID string, at time.Time) (store.ReactionHolder, bool, error) {
	var (
		h       store.ReactionHolder
		claimed bool
	)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO reactions (community_id, pubkey, target, emoji, event_id, claimed_at)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, c.UUID(), k.PubKey, k.Target, k.Emoji, eventID, at)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			h, claimed = store.ReactionHolder{EventID: eventID, ClaimedAt: at}, true
			return nil
		}
		return tx.QueryRow(ctx, `SELECT event_id, claimed_at FROM reactions
WHERE community_id = $1 AND pubkey = $2 AND target = $3 AND emoji = $4`, c.UUID(), k.PubKey, k.Target, k.Emoji).Scan(&h.EventID, &h.ClaimedAt)
	})
	if err != nil {
		return store.ReactionHolder{}, false, fmt.Errorf("postgres: claim reaction: %w", err)
	}
	return h, claimed, nil
}

// ReplaceReaction implements store.ReactionStore.
func (s *Store) ReplaceReaction(ctx context.Context, c tenant.CommunityID, k store.ReactionKey, old, eventID string, at time.Time) (bool, error) {
	var ok bool
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE reactions SET event_id = $6, claimed_at = $7
WHERE community_id = $1 AND pubkey = $2 AND target = $3 AND emoji = $4 AND event_id = $5`,
			c.UUID(), k.PubKey, k.Target, k.Emoji, old, eventID, at)
		ok = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: replace reaction: %w", err)
	}
	return ok, nil
}

// ReleaseReactions implements store.ReactionStore.
func (s *Store) ReleaseReactions(ctx context.Context, c tenant.CommunityID, pubkey string, eventIDs []string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM reactions WHERE community_id = $1 AND event_id = ANY($2)
AND ($3 = '' OR pubkey = $3)`, c.UUID(), eventIDs, pubkey)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: release reactions: %w", err)
	}
	return nil
}
