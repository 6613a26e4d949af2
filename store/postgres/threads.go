package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The threads are kept by triggers on events (migration 240), in the
// transaction of every write that inserts or deletes a reply; these are
// the reads.
var _ store.ThreadStore = (*Store)(nil)

// ThreadNode implements store.ThreadStore.
func (s *Store) ThreadNode(ctx context.Context, c tenant.CommunityID, id string) (store.ThreadNode, bool, error) {
	eid, ok := nostr.DecodeHex32(id)
	if !ok || c.IsZero() {
		return store.ThreadNode{}, false, nil
	}
	var (
		parent, root []byte
		found        bool
	)
	n := store.ThreadNode{ID: id}
	err := s.readInCommunity(ctx, c, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT parent, root, depth FROM thread_nodes WHERE community_id = $1 AND id = $2`, c.UUID(), eid).
			Scan(&parent, &root, &n.Depth)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		return store.ThreadNode{}, false, fmt.Errorf("postgres: thread node: %w", err)
	}
	if !found {
		return store.ThreadNode{}, false, nil
	}
	n.Parent, n.Root = hex.EncodeToString(parent), hex.EncodeToString(root)
	return n, true, nil
}

// ThreadSummary implements store.ThreadStore.
func (s *Store) ThreadSummary(ctx context.Context, c tenant.CommunityID, id string) (store.ThreadSummary, error) {
	var sum store.ThreadSummary
	eid, ok := nostr.DecodeHex32(id)
	if !ok || c.IsZero() {
		return sum, nil
	}
	err := s.readInCommunity(ctx, c, func(tx pgx.Tx) error {
		var last *int64
		err := tx.QueryRow(ctx, `SELECT replies, descendants, last_reply_at FROM thread_stats WHERE community_id = $1 AND event = $2`,
			c.UUID(), eid).Scan(&sum.ReplyCount, &sum.DescendantCount, &last)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		if last != nil {
			sum.LastReplyAt = *last
		}
		if sum.DescendantCount == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT pubkey FROM thread_nodes WHERE community_id = $1 AND root = $2
GROUP BY pubkey ORDER BY max(created_at) DESC, pubkey LIMIT $3`, c.UUID(), eid, store.MaxThreadParticipants)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var pk []byte
			if err := rows.Scan(&pk); err != nil {
				return err
			}
			sum.Participants = append(sum.Participants, hex.EncodeToString(pk))
		}
		return rows.Err()
	})
	if err != nil {
		return store.ThreadSummary{}, fmt.Errorf("postgres: thread summary: %w", err)
	}
	return sum, nil
}
