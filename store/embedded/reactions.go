package embedded

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.ReactionStore = (*Store)(nil)

// ClaimReaction implements store.ReactionStore. The single writer makes
// the insert-or-read atomic.
func (s *Store) ClaimReaction(ctx context.Context, c tenant.CommunityID, k store.ReactionKey, eventID string, at time.Time) (store.ReactionHolder, bool, error) {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return store.ReactionHolder{}, false, err
	}
	var (
		h       store.ReactionHolder
		claimed bool
	)
	err = s.submit(ctx, func(w *writer) error {
		res, err := w.exec(`INSERT INTO reactions (community, pubkey, target, emoji, event_id, claimed_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, cseq, k.PubKey, k.Target, k.Emoji, eventID, at.Unix())
		if err != nil {
			return internal("claim reaction", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return internal("claim reaction", err)
		} else if n == 1 {
			h, claimed = store.ReactionHolder{EventID: eventID, ClaimedAt: time.Unix(at.Unix(), 0)}, true
			return nil
		}
		var ts int64
		err = w.queryRow(`SELECT event_id, claimed_at FROM reactions
WHERE community = ? AND pubkey = ? AND target = ? AND emoji = ?`, cseq, k.PubKey, k.Target, k.Emoji).Scan(&h.EventID, &ts)
		if errors.Is(err, sql.ErrNoRows) {
			return internal("claim reaction", errors.New("slot vanished"))
		}
		if err != nil {
			return internal("claim reaction", err)
		}
		h.ClaimedAt = time.Unix(ts, 0)
		return nil
	})
	return h, claimed, err
}

// ReplaceReaction implements store.ReactionStore.
func (s *Store) ReplaceReaction(ctx context.Context, c tenant.CommunityID, k store.ReactionKey, old, eventID string, at time.Time) (bool, error) {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return false, err
	}
	var ok bool
	err = s.submit(ctx, func(w *writer) error {
		res, err := w.exec(`UPDATE reactions SET event_id = ?, claimed_at = ?
WHERE community = ? AND pubkey = ? AND target = ? AND emoji = ? AND event_id = ?`,
			eventID, at.Unix(), cseq, k.PubKey, k.Target, k.Emoji, old)
		if err != nil {
			return internal("replace reaction", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return internal("replace reaction", err)
		}
		ok = n == 1
		return nil
	})
	return ok, err
}

// ReleaseReactions implements store.ReactionStore.
func (s *Store) ReleaseReactions(ctx context.Context, c tenant.CommunityID, pubkey string, eventIDs []string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	q := `DELETE FROM reactions WHERE community = ? AND event_id IN (?` + strings.Repeat(", ?", len(eventIDs)-1) + `)`
	args := []any{cseq}
	for _, id := range eventIDs {
		args = append(args, id)
	}
	if pubkey != "" {
		q += ` AND pubkey = ?`
		args = append(args, pubkey)
	}
	return s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, q, args...); err != nil {
			return internal("release reactions", err)
		}
		return nil
	})
}
