package channel

import "errors"

// Refusals: the one set of messages a client gets (in OK or CLOSED) when
// the channel rules or a community's access policy refuse a read or a
// write. Every frontend sends these, so a client cannot tell frontends —
// or an unknown channel from another community's — apart by the words.
const (
	// MsgChannelDenied answers every refused channel write or read that is
	// not a command verdict: unknown channel, another community's channel,
	// a private channel of which the author is no member, a guest posting.
	MsgChannelDenied = "restricted: not a channel member"
	// MsgChannelAuth answers an unauthenticated read naming only channels
	// it may not read (reading a private channel requires NIP-42 AUTH).
	MsgChannelAuth = "auth-required: authenticate (NIP-42) to read this channel"
	// MsgChannelRevoked closes a subscription naming a channel whose access
	// the connection lost.
	MsgChannelRevoked = "restricted: channel access revoked"
	// MsgCommunityRevoked closes the subscriptions of a connection that lost
	// access to a members-only community.
	MsgCommunityRevoked = "restricted: community access revoked"
	// MsgMembersOnly answers an authenticated non-member of a members-only
	// community (Buzz's words: the community is the relay its clients see,
	// and its members are the NIP-43 relay members).
	MsgMembersOnly = "restricted: not a relay member"
	// MsgMembersOnlyAuth answers an unauthenticated client of a
	// members-only community.
	MsgMembersOnlyAuth = "auth-required: this community is open to its members only; authenticate (NIP-42)"
	// MsgNotAuthor answers a write, in a members-only community, by an
	// author the connection did not authenticate as.
	MsgNotAuthor = "restricted: the event author is not authenticated on this connection"

	MsgRelaySigned   = "restricted: relay-signed kinds cannot be published"
	MsgBadChannelTag = "invalid: h tag must name exactly one group id (a-z0-9-_)"
	MsgNotPermitted  = "restricted: your channel role does not allow this"
	MsgChannelExists = "restricted: a channel with this id already exists"
	MsgNoSuchEvent   = "invalid: the channel holds no such event"
	MsgBadCommand    = "invalid: malformed channel command"
	// MsgCommunityCommandH answers a community-level command (moderation,
	// community membership) that names a group.
	MsgCommunityCommandH = "invalid: a community command takes no h tag"
	// MsgBadPrevious answers a malformed NIP-29 "previous" tag.
	MsgBadPrevious = "invalid: a previous tag holds 8 to 64 lowercase hex characters of an event id"
	// MsgUnknownPrevious answers a "previous" tag naming no recent event of
	// the group.
	MsgUnknownPrevious = "invalid: a previous tag names no recent event of this group"
	// MsgStaleEdit answers a 9002 older than the group's current metadata.
	MsgStaleEdit = "invalid: this edit is older than the group's current metadata"
	// MsgPublicInvite answers a 9009 in a group that is not private.
	MsgPublicInvite = "restricted: invite codes are kept secret in private groups only on this relay"
	// MsgAlreadyMember answers a member's repeated join (NIP-29).
	MsgAlreadyMember = "duplicate: already a member of this group"
	// MsgUnsupportedFlags answers a 9007 or 9002 asking for a combination
	// of NIP-29 flags this relay cannot honour.
	MsgUnsupportedFlags = "restricted: a hidden group must also be private on this relay"

	msgMissingChannel = "invalid: kind %d requires an h tag naming its channel"
	msgLateGroupEvent = "invalid: a group event's created_at may be at most %s in the past (NIP-29 late publication)"
)

// CommandMessage maps a command verdict (one of the Err values of this
// package, as a backend returned it) to the client's OK message; "" for
// any other error.
func CommandMessage(err error) string {
	switch {
	case errors.Is(err, ErrNoChannel), errors.Is(err, ErrNotMember):
		return MsgChannelDenied
	case errors.Is(err, ErrNotPermitted):
		return MsgNotPermitted
	case errors.Is(err, ErrChannelExists):
		return MsgChannelExists
	case errors.Is(err, ErrNoEvent):
		return MsgNoSuchEvent
	case errors.Is(err, ErrInvalidCommand):
		return MsgBadCommand
	case errors.Is(err, ErrStaleEdit):
		return MsgStaleEdit
	case errors.Is(err, ErrPublicInvite):
		return MsgPublicInvite
	case errors.Is(err, ErrAlreadyMember):
		return MsgAlreadyMember
	case errors.Is(err, ErrUnsupportedFlags):
		return MsgUnsupportedFlags
	}
	return ""
}
