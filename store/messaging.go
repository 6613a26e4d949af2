package store

import (
	"context"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// MaxKindsSetting bounds a community's kind allow-list setting, in bytes.
const MaxKindsSetting = 4096

// CommunityKindsStore keeps each community's kind allow-list setting: the
// text form messaging.ParseKinds reads ("off", "buzz", "buzz,30023,…"), or
// "" when the community follows the relay's own list. Both backends
// implement it and record every change in the community's audit chain,
// with the caller (audit.WithActor) as actor.
type CommunityKindsStore interface {
	// CommunityKinds returns c's setting ("" when never set);
	// ErrNoCommunity when c does not exist.
	CommunityKinds(ctx context.Context, c tenant.CommunityID) (string, error)
	// SetCommunityKinds stores c's setting; the caller validates it (at
	// most MaxKindsSetting bytes).
	SetCommunityKinds(ctx context.Context, c tenant.CommunityID, kinds string) error
}

// AgentOwner is who owns an agent (a bot key) in a community, and when the
// relay recorded it.
type AgentOwner struct {
	Owner      string // pubkey, lowercase hex
	RecordedAt time.Time
}

// AgentOwnerStore keeps which key owns each agent key of a community, as
// the agent proved it (a NIP-OA attestation signed by the owner). The
// first owner recorded for an agent stays: a later attestation naming
// another owner changes nothing. Both backends implement it.
type AgentOwnerStore interface {
	// RecordAgentOwner records owner as agent's owner in c unless agent
	// has one. It returns the owner on record after the call, and whether
	// this call recorded it. Atomic across processes.
	RecordAgentOwner(ctx context.Context, c tenant.CommunityID, agent, owner string, at time.Time) (AgentOwner, bool, error)
	// AgentOwnerOf returns agent's owner in c; false when it has none.
	AgentOwnerOf(ctx context.Context, c tenant.CommunityID, agent string) (AgentOwner, bool, error)
}
