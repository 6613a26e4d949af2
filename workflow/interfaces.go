package workflow

import (
	"context"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// EventSource delivers the events the relay stores.
type EventSource interface {
	// Subscribe calls deliver for every stored event, in order, until ctx
	// ends (then it returns ctx.Err()) or it fails. An event whose deliver
	// returned an error is delivered again by the next Subscribe: nothing
	// is dropped. The engine runs Subscribe in a supervised loop.
	Subscribe(ctx context.Context, deliver func(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error) error
}

// Publisher signs and publishes relay-authored events (messages, reactions,
// status events).
type Publisher interface {
	// Sign sets ev's PubKey, ID and Sig with community c's relay key.
	Sign(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error
	// Publish stores a signed event in community c and delivers it to
	// live subscribers. Publishing an event that is already stored is not
	// an error (so replaying a recorded effect is harmless).
	Publish(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error
}

// Authority answers who may own and run workflows. store.ChannelStore
// satisfies it.
type Authority interface {
	// ChannelRole returns pubkey's role in the channel; ok is false when
	// pubkey is not an active member (or the channel does not exist).
	ChannelRole(ctx context.Context, c tenant.CommunityID, channel channel.ID, pubkey string) (role channel.Role, ok bool, err error)
}

// TopicSetter changes a channel's topic for set_channel_topic.
type TopicSetter interface {
	// SetChannelTopic sets the channel's topic (its metadata "about") and
	// republishes the channel's relay-signed 39000. Setting the topic it
	// already has is not an error.
	SetChannelTopic(ctx context.Context, c tenant.CommunityID, channel channel.ID, topic string) error
}

// DMSealer prepares send_dm's private messages.
type DMSealer interface {
	// SealDM returns the events delivering text privately to the pubkey
	// to (64 hex) — NIP-17: a kind 14 rumor sealed and gift-wrapped as
	// kind 1059 — signed and ready to Publish. The engine records them
	// before publishing, so a run taken over publishes the same events.
	SealDM(ctx context.Context, c tenant.CommunityID, to, text string) ([]*nostr.Event, error)
}

// WebhookRequest is one call_webhook request.
type WebhookRequest struct {
	URL     string
	Method  string
	Headers map[string]string
	Body    []byte
	// IdempotencyKey is unique per (run, step); callers send it as the
	// Idempotency-Key header so receivers can deduplicate.
	IdempotencyKey string
}

// WebhookResponse is a call_webhook response.
type WebhookResponse struct {
	Status int
	Body   []byte
}

// WebhookCaller performs call_webhook's HTTP requests (SSRF-hardened).
type WebhookCaller interface {
	Call(ctx context.Context, r WebhookRequest) (WebhookResponse, error)
}
