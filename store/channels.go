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
// events. Every call is scoped by community: a channel id is only ever
// looked up in c. Both backends implement it.
type ChannelStore interface {
	// QueryScoped is EventStore.Query restricted to the community-wide
	// events and the channels of scope, pushed into the query so limits
	// count only events in scope.
	QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope) iter.Seq2[Record, error]
	// CountScoped is EventStore.Count restricted the same way.
	CountScoped(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter, scope channel.Scope) (int64, error)

	// Channel returns channel id of community c; channel.ErrNoChannel when
	// c holds no such channel or it was deleted.
	Channel(ctx context.Context, c tenant.CommunityID, id channel.ID) (channel.Channel, error)
	// ChannelRole returns pubkey's role in the channel, ok false when it is
	// not an active member.
	ChannelRole(ctx context.Context, c tenant.CommunityID, id channel.ID, pubkey string) (role channel.Role, ok bool, err error)
	// ChannelMembers returns the active members, sorted by pubkey.
	ChannelMembers(ctx context.Context, c tenant.CommunityID, id channel.ID) ([]channel.Member, error)
	// ReadableChannels returns the channels of c any of pubkeys may read
	// (channel.MayRead): every open channel, and the private ones where one of
	// pubkeys is an active member. Deleted channels are never included.
	ReadableChannels(ctx context.Context, c tenant.CommunityID, pubkeys []string) ([]channel.ID, error)
	// ApplyChannelCommand atomically authorizes cmd (channel.Authorize), applies
	// it and stores ev (the command event, whose h names cmd.Channel): all
	// or nothing, serialized with every other command of the channel, also
	// across processes. A repeat of a stored event is ErrDuplicate and
	// changes nothing; a refused command returns one of the channel errors
	// and changes nothing.
	ApplyChannelCommand(ctx context.Context, c tenant.CommunityID, cmd channel.Command, ev *nostr.Event) (channel.Change, error)

	// CommunityAccess returns c's access policy (channel.AccessOpen unless
	// set).
	CommunityAccess(ctx context.Context, c tenant.CommunityID) (channel.AccessPolicy, error)
	// SetCommunityAccess sets c's access policy.
	SetCommunityAccess(ctx context.Context, c tenant.CommunityID, p channel.AccessPolicy) error
	// CommunityRole returns pubkey's role in the community: channel.RoleOwner
	// for the community's owner, the role given with PutCommunityMember
	// otherwise; ok false for a non-member.
	CommunityRole(ctx context.Context, c tenant.CommunityID, pubkey string) (role channel.Role, ok bool, err error)
	// PutCommunityMember adds pubkey to c as channel.RoleAdmin or
	// channel.RoleMember (or changes its role).
	PutCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string, role channel.Role) error
	// RemoveCommunityMember removes pubkey from c's members (not the owner).
	RemoveCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string) error
}
