package workflow

import (
	"context"
	"strconv"

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

// Authority answers who is a channel member: who may trigger a workflow by
// hand or approve a request. What a workflow's owner may do when it acts
// is OwnerRights' question (derived from Authority when the engine is
// given no OwnerRights). store.ChannelStore satisfies it.
type Authority interface {
	// ChannelRole returns pubkey's role in the channel; ok is false when
	// pubkey is not an active member (or the channel does not exist).
	ChannelRole(ctx context.Context, c tenant.CommunityID, channel channel.ID, pubkey string) (role channel.Role, ok bool, err error)
}

// Right is what a workflow's owner must hold, at the moment the workflow
// acts, for one thing it does. Every right includes RightRun.
type Right int

// Rights.
const (
	// RightRun: run at all — the owner still takes part in the channel
	// (see OwnerRights). Checked before every run and resumption.
	RightRun Right = iota
	// RightPost: post into the channel as a client would (send_message,
	// add_reaction, request_approval).
	RightPost
	// RightDM: send private messages in the community (send_dm).
	RightDM
	// RightMetadata: change the channel's metadata — what a client needs
	// for a 9002 (set_channel_topic).
	RightMetadata
	// RightAdmin: channel owner or admin (call_webhook).
	RightAdmin
)

func (r Right) String() string {
	switch r {
	case RightRun:
		return "run"
	case RightPost:
		return "post"
	case RightDM:
		return "dm"
	case RightMetadata:
		return "metadata"
	case RightAdmin:
		return "admin"
	}
	return "right(" + strconv.Itoa(int(r)) + ")"
}

// OwnerRights decides whether a workflow's owner holds a right now. The
// engine asks it before every run (RightRun), before every step (the
// step's right, see RightNeeder) and before a webhook delivery creates a
// run, so a workflow never acts with more than its owner could do by hand
// at that moment. The relay implements it (package workflowhost) from the
// store and moderation state; without one the engine derives a
// channel-role-only rule from its Authority.
type OwnerRights interface {
	// OwnerMay returns "" when owner may now exercise right in channel ch
	// of community c, else why not (a sentence for the run's trace). An
	// error means it could not be decided: the run is retried.
	OwnerMay(ctx context.Context, c tenant.CommunityID, ch channel.ID, owner string, right Right) (refusal string, err error)
}

// RightNeeder may be implemented by an Action: the right the workflow's
// owner must hold for a step of it to run (RightRun when the action does
// not implement it).
type RightNeeder interface {
	NeededRight() Right
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
