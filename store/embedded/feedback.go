package embedded

import (
	"context"
	"time"

	"github.com/buzzrelay/buzz/store"
)

var _ store.FeedbackStore = (*Store)(nil)

// AddFeedback implements store.FeedbackStore.
func (s *Store) AddFeedback(ctx context.Context, f store.Feedback) error {
	u := f.Community.UUID()
	tags := f.Tags
	if len(tags) == 0 {
		tags = []byte("[]")
	}
	return s.insertOnce(ctx, "add feedback", `INSERT INTO product_feedback
(id, community, host, pubkey, content, tags, created_at, received_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		f.ID, u[:], f.Host, f.PubKey, f.Content, string(tags), f.CreatedAt, time.Now().Unix())
}

// insertOnce runs an INSERT … ON CONFLICT DO NOTHING on the writer and
// reports store.ErrDuplicate when it inserted no row; op names the
// operation in errors.
func (s *Store) insertOnce(ctx context.Context, op, query string, args ...any) error {
	var dup bool
	err := s.submit(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(w.ctx, query, args...)
		if err != nil {
			return internal(op, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return internal(op, err)
		}
		dup = n == 0
		return nil
	})
	if err != nil {
		return err
	}
	if dup {
		return store.ErrDuplicate
	}
	return nil
}

// RecentFeedback implements store.FeedbackStore.
func (s *Store) RecentFeedback(ctx context.Context, limit int) ([]store.Feedback, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT community, host, id, pubkey, content, tags, created_at, received_at
FROM product_feedback ORDER BY seq DESC LIMIT ?`, store.FeedbackPage(limit))
	if err != nil {
		return nil, internal("recent feedback", err)
	}
	defer rows.Close()
	var out []store.Feedback
	for rows.Next() {
		var (
			f        store.Feedback
			cid      []byte
			tags     string
			received int64
		)
		if err := rows.Scan(&cid, &f.Host, &f.ID, &f.PubKey, &f.Content, &tags, &f.CreatedAt, &received); err != nil {
			return nil, internal("recent feedback", err)
		}
		if f.Community, err = communityFromBytes(cid); err != nil {
			return nil, err
		}
		f.Tags, f.ReceivedAt = []byte(tags), time.Unix(received, 0).UTC()
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("recent feedback", err)
	}
	return out, nil
}
