package embedded

import (
	"context"
	"database/sql"
	"errors"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.ChannelTopicSetter = (*Store)(nil)

// SetChannelTopic implements store.ChannelTopicSetter.
func (s *Store) SetChannelTopic(ctx context.Context, c tenant.CommunityID, id channel.ID, topic string) (channel.Channel, bool, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return channel.Channel{}, false, channel.ErrNoChannel
	}
	if err != nil {
		return channel.Channel{}, false, err
	}
	var (
		ch      channel.Channel
		changed bool
		missing bool
	)
	err = s.submit(ctx, func(w *writer) error {
		ch, changed, missing = channel.Channel{}, false, false
		got, err := scanChannel(w.conn.QueryRowContext(w.ctx,
			`SELECT `+channelCols+` FROM channels WHERE community = ? AND id = ? AND deleted_at IS NULL`, cseq, id[:]))
		if errors.Is(err, sql.ErrNoRows) {
			missing = true
			return nil
		}
		if err != nil {
			return internal("set channel topic", err)
		}
		ch = got
		if ch.About == topic {
			return nil
		}
		if _, err := w.conn.ExecContext(w.ctx, `UPDATE channels SET about = ? WHERE community = ? AND id = ?`, topic, cseq, id[:]); err != nil {
			return internal("set channel topic", err)
		}
		ch.About, changed = topic, true
		return nil
	})
	if err != nil {
		return channel.Channel{}, false, err
	}
	if missing {
		return channel.Channel{}, false, channel.ErrNoChannel
	}
	return ch, changed, nil
}
