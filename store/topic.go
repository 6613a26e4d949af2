package store

import (
	"context"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/tenant"
)

// ChannelTopicSetter is implemented by backends that let the relay itself
// (not a channel member's command) change a channel's topic, as the
// workflow engine's set_channel_topic action does. store/embedded and
// store/postgres implement it; storetest.RunChannelTopic pins it.
type ChannelTopicSetter interface {
	// SetChannelTopic sets channel id's topic (its "about") and returns
	// the channel after the change, changed reporting whether the topic
	// differed. ErrNoChannel when community c holds no such (undeleted)
	// channel — another community's channel included.
	SetChannelTopic(ctx context.Context, c tenant.CommunityID, id channel.ID, topic string) (ch channel.Channel, changed bool, err error)
}
