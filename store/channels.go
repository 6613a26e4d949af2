package store

import (
	"context"
	"errors"
	"iter"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// IsChannelOutcome reports whether err is one of the channel command
// errors (see package channel) or ErrDuplicate or ErrDeleted: a verdict,
// not a failure.
func IsChannelOutcome(err error) bool {
	for _, s := range []error{channel.ErrNoChannel, channel.ErrChannelExists, channel.ErrNotPermitted, channel.ErrNotMember,
		channel.ErrNoEvent, channel.ErrInvalidCommand, channel.ErrUnsupportedFlags, channel.ErrAlreadyMember,
		channel.ErrPublicInvite, channel.ErrStaleEdit, ErrDuplicate, ErrDeleted} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// ChannelStore is the channel and access state a relay needs beside its
// events: what package channel reads (channel.Store) and what persisting
// channels takes. Every call is scoped by community: a channel id is only
// ever looked up in c. Both backends implement it.
type ChannelStore interface {
	// QueryScoped is EventStore.Query restricted to the community-wide
	// events and the channels of scope, pushed into the query so limits
	// count only events in scope.
	QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope) iter.Seq2[Record, error]
	// CountScoped is EventStore.Count restricted the same way.
	CountScoped(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter, scope channel.Scope) (int64, error)

	// channel.Store: Channel, ChannelRole, ReadableChannels,
	// CommunityAccess and CommunityRole, what package channel reads.
	channel.Store

	// ChannelMembers returns the active members, sorted by pubkey.
	ChannelMembers(ctx context.Context, c tenant.CommunityID, id channel.ID) ([]channel.Member, error)
	// ApplyChannelCommand atomically authorizes cmd (channel.Authorize), applies
	// it and stores ev (the command event, whose h names cmd.Channel): all
	// or nothing, serialized with every other command of the channel, also
	// across processes. A repeat of a stored event is ErrDuplicate and
	// changes nothing; a refused command returns one of the channel errors
	// and changes nothing.
	ApplyChannelCommand(ctx context.Context, c tenant.CommunityID, cmd channel.Command, ev *nostr.Event) (channel.Change, error)

	// SetCommunityAccess sets c's access policy.
	SetCommunityAccess(ctx context.Context, c tenant.CommunityID, p channel.AccessPolicy) error
	// PutCommunityMember adds pubkey to c as channel.RoleAdmin or
	// channel.RoleMember (or changes its role).
	PutCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string, role channel.Role) error
	// RemoveCommunityMember removes pubkey from c's members (not the owner).
	RemoveCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string) error
}
