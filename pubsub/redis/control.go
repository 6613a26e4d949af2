package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/pubsub/redis/control"
	"github.com/buzzrelay/buzz/tenant"
)

var _ control.Bus = (*Broker)(nil)

// PublishControl delivers m to local control handlers at once and publishes
// it on the community's control topic, which every pod with interest in the
// community subscribes. Each message carries this process's origin id, so
// its own echo is dropped on receipt. While Redis is unavailable it returns
// an error wrapping ErrUnavailable after local delivery.
func (b *Broker) PublishControl(ctx context.Context, community tenant.CommunityID, m control.Message) error {
	if community.IsZero() {
		return errors.New("pubsub/redis: control message has no community")
	}
	if b.closed.Load() {
		return ErrClosed
	}
	payload, err := control.Encode(community, b.origin, m)
	if err != nil {
		return err
	}
	b.ctrl.Deliver(community, m)
	if !b.healthy.Load() {
		return ErrUnavailable
	}
	pctx, cancel := context.WithTimeout(ctx, b.cfg.publishTimeout)
	defer cancel()
	cmd := b.client.B().Publish().Channel(b.controlChannel(community)).Message(rueidis.BinaryString(payload)).Build()
	if err := b.client.Do(pctx, cmd).Error(); err != nil {
		return fmt.Errorf("pubsub/redis: publish control: %w", err)
	}
	return nil
}

// ListenControl registers h for control messages of every community this
// process has interest in, including its own PublishControl calls.
func (b *Broker) ListenControl(h control.Handler) (stop func()) { return b.ctrl.Add(h) }

func (b *Broker) onControl(st *chanState, payload string) {
	d, err := control.Decode([]byte(payload))
	switch {
	case errors.Is(err, control.ErrUnknownType):
		b.log.Info("ignoring control message of unknown type", "channel", st.name, "type", d.Type)
		return
	case err != nil:
		b.log.Warn("dropping malformed control message", "channel", st.name, "err", err)
		return
	}
	if d.Community != st.communityText {
		b.log.Error("dropping control message whose community differs from its topic's", "channel", st.name)
		return
	}
	if d.Origin == b.origin {
		return // delivered locally by PublishControl
	}
	b.ctrl.Deliver(st.community, d.Message)
}
