package store

import (
	"context"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// ReactionKey is the slot a reaction (kind 7) holds in its community: one
// per (author, target event, emoji).
type ReactionKey struct {
	PubKey string // the reaction's author
	Target string // the reacted-to event id
	Emoji  string // the content, "" read as "+"
}

// ReactionHolder is the reaction event holding a slot, and when it claimed
// it (by the caller's clock).
type ReactionHolder struct {
	EventID   string
	ClaimedAt time.Time
}

// ReactionStore keeps which reaction holds each ReactionKey of a community,
// so that a second identical reaction is refused, by every process sharing
// the backend. The relay claims the slot before it stores the reaction
// event, and frees it when a deletion removes that event; a holder whose
// event is not stored (a write that never finished) is taken over by the
// relay after a grace period. store/postgres implements it. A store can
// instead keep the slots with the events, written and freed in the same
// write as their holder, and refuse a reaction for a held slot in Save
// with ErrReactionHeld (store/embedded does): then no claim, grace period
// or release is needed.
type ReactionStore interface {
	// ClaimReaction makes eventID the holder of k in community c if k has
	// none. It returns the holder after the call (eventID when claimed)
	// and whether this call claimed it. Atomic across processes.
	ClaimReaction(ctx context.Context, c tenant.CommunityID, k ReactionKey, eventID string, at time.Time) (ReactionHolder, bool, error)
	// ReplaceReaction makes eventID the holder of k if old still is (a
	// compare-and-swap); false when the holder changed meanwhile.
	ReplaceReaction(ctx context.Context, c tenant.CommunityID, k ReactionKey, old, eventID string, at time.Time) (bool, error)
	// ReleaseReactions frees the slots held by eventIDs in community c;
	// with pubkey set, only those of reactions by pubkey (a NIP-09
	// deletion frees its author's own only).
	ReleaseReactions(ctx context.Context, c tenant.CommunityID, pubkey string, eventIDs []string) error
}
