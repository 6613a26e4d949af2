package redis

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/tenant"
)

var _ control.Bus = (*Broker)(nil)

// PublishControl delivers m to local control handlers at once and publishes
// it on the community's control topic, which every pod with interest in the
// community subscribes — or, for a deployment-wide message
// (control.DeploymentWide), on the deployment's directory topic, which
// every pod subscribes. Each message carries this process's origin id, so
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
	channel := b.controlChannel(community)
	if control.DeploymentWide(m) {
		channel = b.directoryChannel()
	}
	cmd := b.client.B().Publish().Channel(channel).Message(rueidis.BinaryString(payload)).Build()
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
	if d.Origin == b.origin {
		return // delivered locally by PublishControl
	}
	if st.deployment {
		// The directory topic carries messages of every community; only
		// deployment-wide ones belong on it.
		c, ok := communityFromWire(d.Community)
		if !control.DeploymentWide(d.Message) || !ok {
			b.log.Error("dropping a message that does not belong on the directory topic", "channel", st.name, "type", d.Type)
			return
		}
		b.ctrl.Deliver(c, d.Message)
		return
	}
	if d.Community != st.communityText || control.DeploymentWide(d.Message) {
		b.log.Error("dropping control message whose community differs from its topic's", "channel", st.name)
		return
	}
	b.ctrl.Deliver(st.community, d.Message)
}

// communityFromWire reads the community of a directory-topic message: the
// canonical UUID text Encode wrote. Only the deployment's own pods publish
// on that topic (Redis is trusted infrastructure, like the database); no
// client input reaches it.
func communityFromWire(s string) (tenant.CommunityID, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return tenant.CommunityID{}, false
	}
	if _, err := hex.Decode(u[:], []byte(s[0:8]+s[9:13]+s[14:18]+s[19:23]+s[24:])); err != nil {
		return tenant.CommunityID{}, false
	}
	c := tenant.FromUUID(u)
	return c, !c.IsZero() && c.String() == s
}
