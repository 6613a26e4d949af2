package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.ChannelTopicSetter = (*Store)(nil)

// SetChannelTopic implements store.ChannelTopicSetter.
func (s *Store) SetChannelTopic(ctx context.Context, c tenant.CommunityID, id channel.ID, topic string) (channel.Channel, bool, error) {
	if c.IsZero() {
		return channel.Channel{}, false, channel.ErrNoChannel
	}
	var (
		ch      channel.Channel
		changed bool
	)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		var err error
		ch, err = scanPGChannel(tx.QueryRow(ctx, `SELECT `+pgChannelCols+`
FROM channels WHERE community_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE`, c.UUID(), [16]byte(id)))
		if err != nil {
			return err
		}
		topic := sqlText(topic)
		if ch.About == topic {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE channels SET description = $3 WHERE community_id = $1 AND id = $2`,
			c.UUID(), [16]byte(id), sqlText(topic)); err != nil {
			return err
		}
		ch.About, changed = topic, true
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return channel.Channel{}, false, channel.ErrNoChannel
	}
	if err != nil {
		return channel.Channel{}, false, fmt.Errorf("postgres: set channel topic: %w", err)
	}
	return ch, changed, nil
}
