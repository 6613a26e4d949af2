package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.FeedbackStore = (*Store)(nil)

// AddFeedback implements store.FeedbackStore. product_feedback is an
// operator-global table (no row-level security): community_id attributes
// the feedback, it does not scope it.
func (s *Store) AddFeedback(ctx context.Context, f store.Feedback) error {
	tags := f.Tags
	if len(tags) == 0 {
		tags = []byte("[]")
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO product_feedback (id, community_id, host, pubkey, content, tags, created_at)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7) ON CONFLICT (id) DO NOTHING`,
		f.ID, f.Community.UUID(), f.Host, f.PubKey, f.Content, string(tags), f.CreatedAt)
	if err != nil {
		return fmt.Errorf("postgres: add feedback: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrDuplicate
	}
	return nil
}

// RecentFeedback implements store.FeedbackStore.
func (s *Store) RecentFeedback(ctx context.Context, limit int) ([]store.Feedback, error) {
	rows, err := s.pool.Query(ctx, `SELECT community_id, host, id, pubkey, content, tags::text, created_at, received_at
FROM product_feedback ORDER BY seq DESC LIMIT $1`, store.FeedbackPage(limit))
	if err != nil {
		return nil, fmt.Errorf("postgres: recent feedback: %w", err)
	}
	defer rows.Close()
	var out []store.Feedback
	for rows.Next() {
		var (
			f        store.Feedback
			u        [16]byte
			tags     string
			received time.Time
		)
		if err := rows.Scan(&u, &f.Host, &f.ID, &f.PubKey, &f.Content, &tags, &f.CreatedAt, &received); err != nil {
			return nil, fmt.Errorf("postgres: recent feedback: %w", err)
		}
		f.Community, f.Tags, f.ReceivedAt = tenant.FromUUID(u), []byte(tags), received.UTC()
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: recent feedback: %w", err)
	}
	return out, nil
}
