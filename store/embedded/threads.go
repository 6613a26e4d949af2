package embedded

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.ThreadStore = (*Store)(nil)

// insertNodeSQL records a stored reply (community, id, parent, pubkey,
// created_at) at its parent's depth plus one in its parent's thread, or at
// depth 1 below a parent that is not a recorded reply; the
// thread_nodes_insert trigger counts it.
const insertNodeSQL = `INSERT OR IGNORE INTO thread_nodes (community, id, parent, root, depth, pubkey, created_at, expires_at)
SELECT ?1, ?2, ?3, coalesce(p.root, ?3), coalesce(p.depth, 0) + 1, ?4, ?5, ?6
FROM (SELECT 1) LEFT JOIN thread_nodes p ON p.community = ?1 AND p.id = ?3`

// threadParent returns the parent of ev as a 32-byte id when ev is a reply
// a backend records (store.IsThreadReply), else nil.
func threadParent(ev *nostr.Event) []byte {
	ref, ok := store.IsThreadReply(ev)
	if !ok {
		return nil
	}
	b, _ := nostr.DecodeHex32(ref.Parent)
	return b
}

// addReply records reply ev of community cseq, whose parent is parent.
func (w *writer) addReply(cseq int64, ev *nostr.Event, id, pubkey, parent []byte) error {
	var expires any
	if at, ok := ev.Expiration(); ok {
		expires = at
	}
	if _, err := w.conn.ExecContext(w.ctx, insertNodeSQL, cseq, id, parent, pubkey, ev.CreatedAt, expires); err != nil {
		return internal("thread", err)
	}
	return nil
}

// removeReplies takes the events of community cseq with ids out of their
// threads; with pubkey set, only those by pubkey (a NIP-09 request removes
// its author's own). The events engine's deletions call it.
func (w *writer) removeReplies(cseq int64, pubkey []byte, ids ...[]byte) error {
	for _, id := range ids {
		var err error
		if pubkey != nil {
			_, err = w.conn.ExecContext(w.ctx, `DELETE FROM thread_nodes WHERE community = ? AND id = ? AND pubkey = ?`, cseq, id, pubkey)
		} else {
			_, err = w.conn.ExecContext(w.ctx, `DELETE FROM thread_nodes WHERE community = ? AND id = ?`, cseq, id)
		}
		if err != nil {
			return internal("thread", err)
		}
	}
	return nil
}

// saveReply stores reply ev in the events engine and records it in the
// same batch: the node is written only when the engine stored the event.
func (s *Store) saveReply(ctx context.Context, c tenant.CommunityID, cseq int64, ev *nostr.Event, parent []byte) error {
	id, ok1 := nostr.DecodeHex32(ev.ID)
	pk, ok2 := nostr.DecodeHex32(ev.PubKey)
	if !ok1 || !ok2 {
		return errors.New("sqlite: event id and pubkey must be 64 lowercase hex characters")
	}
	return s.submit(ctx, func(w *writer) error {
		tx, err := w.eventsTx()
		if err != nil {
			return err
		}
		if err := tx.Save(w.ctx, c, ev); err != nil {
			if isOutcome(err) {
				return err
			}
			return internal("save", err)
		}
		return w.addReply(cseq, ev, id, pk, parent)
	})
}

// deleteExpiredReplies takes the replies expired at now out of their
// threads, once the events engine has removed them.
func (s *Store) deleteExpiredReplies(ctx context.Context, now time.Time) error {
	return s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, `DELETE FROM thread_nodes WHERE expires_at <= ?`, now.Unix()); err != nil {
			return internal("thread", err)
		}
		return nil
	})
}

// threadCommunity is c's seq, 0 for a community the store does not hold.
func (s *Store) threadCommunity(ctx context.Context, c tenant.CommunityID) (int64, error) {
	seq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return 0, nil
	}
	return seq, err
}

// ThreadNode implements store.ThreadStore.
func (s *Store) ThreadNode(ctx context.Context, c tenant.CommunityID, id string) (store.ThreadNode, bool, error) {
	cseq, err := s.threadCommunity(ctx, c)
	if err != nil || cseq == 0 {
		return store.ThreadNode{}, false, err
	}
	eid, ok := nostr.DecodeHex32(id)
	if !ok {
		return store.ThreadNode{}, false, nil
	}
	var parent, root []byte
	n := store.ThreadNode{ID: id}
	err = s.rdb.QueryRowContext(ctx, `SELECT parent, root, depth FROM thread_nodes WHERE community = ? AND id = ?`, cseq, eid).
		Scan(&parent, &root, &n.Depth)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ThreadNode{}, false, nil
	case err != nil:
		return store.ThreadNode{}, false, internal("thread", err)
	}
	n.Parent, n.Root = hex.EncodeToString(parent), hex.EncodeToString(root)
	return n, true, nil
}

// ThreadSummary implements store.ThreadStore.
func (s *Store) ThreadSummary(ctx context.Context, c tenant.CommunityID, id string) (store.ThreadSummary, error) {
	var sum store.ThreadSummary
	cseq, err := s.threadCommunity(ctx, c)
	if err != nil || cseq == 0 {
		return sum, err
	}
	eid, ok := nostr.DecodeHex32(id)
	if !ok {
		return sum, nil
	}
	var last sql.NullInt64
	err = s.rdb.QueryRowContext(ctx, `SELECT replies, descendants, last_reply_at FROM thread_stats WHERE community = ? AND event = ?`, cseq, eid).
		Scan(&sum.ReplyCount, &sum.DescendantCount, &last)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return sum, nil
	case err != nil:
		return sum, internal("thread", err)
	}
	sum.LastReplyAt = last.Int64
	if sum.DescendantCount == 0 {
		return sum, nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT pubkey, max(created_at) AS at FROM thread_nodes WHERE community = ? AND root = ?
GROUP BY pubkey ORDER BY at DESC, pubkey LIMIT ?`, cseq, eid, store.MaxThreadParticipants)
	if err != nil {
		return sum, internal("thread", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pk []byte
		var at int64
		if err := rows.Scan(&pk, &at); err != nil {
			return sum, internal("thread", err)
		}
		sum.Participants = append(sum.Participants, hex.EncodeToString(pk))
	}
	if err := rows.Err(); err != nil {
		return sum, internal("thread", err)
	}
	return sum, nil
}
