package apitoken

import "github.com/buzzrelay/buzz/nostr"

// ScopeForEvent is the scope a token needs to publish ev, after Buzz's
// per-kind table: a profile or contact list needs users:write; channel
// creation, metadata edits and invites channels:write, except an edit that
// archives (an "archived" tag), which like adding or removing members and
// deleting a channel needs admin:channels; joining or leaving a channel
// channels:read; community moderation (members, roles, bans, timeouts,
// reports' resolution) admin:users; workflow definitions, manual triggers
// and approvals jobs:write; repository announcements repos:write; every
// other kind — messages, reactions, deletions, gift wraps, edits —
// messages:write.
func ScopeForEvent(ev *nostr.Event) Scope {
	switch ev.Kind {
	case nostr.KindProfile, nostr.KindContacts:
		return UsersWrite
	case nostr.KindCreateChannel, nostr.KindCreateInvite:
		return ChannelsWrite
	case nostr.KindEditMetadata:
		for _, t := range ev.Tags {
			if len(t) > 0 && t[0] == "archived" {
				return AdminChannels
			}
		}
		return ChannelsWrite
	case nostr.KindPutUser, nostr.KindRemoveUser, nostr.KindDeleteChannel, nostr.KindDeleteEvent:
		return AdminChannels
	case nostr.KindJoinRequest, nostr.KindLeaveRequest:
		return ChannelsRead
	case nostr.KindAddCommunityMember, nostr.KindRemoveCommunityMember, nostr.KindChangeCommunityRole,
		nostr.KindBan, nostr.KindUnban, nostr.KindTimeout, nostr.KindUntimeout, nostr.KindResolveReport:
		return AdminUsers
	case nostr.KindDefinition, nostr.KindManualTrigger, nostr.KindApprovalGrant, nostr.KindApprovalDeny:
		return JobsWrite
	case nostr.KindRepository, nostr.KindRepository + 1:
		return ReposWrite
	}
	return MessagesWrite
}
