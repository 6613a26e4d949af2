package channel

import (
	"slices"
	"strings"

	"github.com/buzzrelay/buzz/nostr"
)

// roleDescriptions are the roles Buzz knows, as 39003 describes them.
var roleDescriptions = [...]struct {
	Role        Role
	Description string
}{
	{RoleOwner, "everything, including role changes and deleting the channel"},
	{RoleAdmin, "add and remove members, edit metadata, delete messages"},
	{RoleMember, "read and post"},
	{RoleBot, "read and post (automation)"},
	{RoleGuest, "read only"},
}

// StateEvents builds the relay-signed NIP-29 state events a change calls
// for, unsigned and without created_at (the caller signs them with the
// community's state key): 39000 on metadata changes (for a DM
// conversation with "t" dm and a "p" per member, as Buzz); 39001, 39002 and 39003
// on membership changes. Every one carries d = the group id, and h too
// unless the channel is private and not hidden, so it is stored in the
// channel and read under the channel's access rules. Nothing for a deleted
// channel.
func StateEvents(change Change, members []Member) []*nostr.Event {
	if change.Deleted {
		return nil
	}
	ch := change.Channel
	id := ch.GroupID()
	base := nostr.Tags{{"d", id}}
	if ch.Visibility != VisibilityPrivate || ch.Hidden {
		// Stored in the channel, read under its rules; a private group that
		// is not hidden has its state stored community-wide, so
		// non-members can find it (NIP-29).
		base = append(base, nostr.Tag{"h", id})
	}
	var evs []*nostr.Event
	add := func(kind int, tags nostr.Tags) {
		evs = append(evs, &nostr.Event{Kind: kind, Tags: tags, Content: ""})
	}
	if change.Metadata {
		tags := append(nostr.Tags{}, base...)
		if ch.Name != "" {
			tags = append(tags, nostr.Tag{"name", ch.Name})
		}
		if ch.About != "" {
			tags = append(tags, nostr.Tag{"about", ch.About})
		}
		if ch.Picture != "" {
			tags = append(tags, nostr.Tag{"picture", ch.Picture})
		}
		// NIP-29 flags; "public" and "open" for clients of its older text.
		if ch.Visibility == VisibilityPrivate {
			tags = append(tags, nostr.Tag{"private"})
		} else {
			tags = append(tags, nostr.Tag{"public"})
		}
		if ch.Closed {
			tags = append(tags, nostr.Tag{"closed"})
		} else {
			tags = append(tags, nostr.Tag{"open"})
		}
		if ch.Restricted || ch.Visibility == VisibilityPrivate {
			tags = append(tags, nostr.Tag{"restricted"})
		}
		if ch.Hidden {
			tags = append(tags, nostr.Tag{"hidden"})
		}
		tags = append(tags, nostr.Tag{"visibility", string(ch.Visibility)}, nostr.Tag{"channel_type", string(ch.Type)})
		if ch.Type == TypeDM {
			// Buzz's clients list conversations by 39000 with t = dm and a
			// p per participant (when the change carries the members).
			tags = append(tags, nostr.Tag{"t", string(TypeDM)})
			for _, m := range members {
				tags = append(tags, nostr.Tag{"p", m.PubKey})
			}
		}
		add(nostr.KindChannelMetadata, tags)
	}
	if change.Members {
		admins := append(nostr.Tags{}, base...)
		all := append(nostr.Tags{}, base...)
		for _, m := range members {
			if m.Role == RoleOwner || m.Role == RoleAdmin {
				admins = append(admins, nostr.Tag{"p", m.PubKey, string(m.Role)})
			}
			all = append(all, nostr.Tag{"p", m.PubKey, string(m.Role)})
		}
		add(nostr.KindChannelAdmins, admins)
		add(nostr.KindChannelMembers, all)
		roles := append(nostr.Tags{}, base...)
		for _, r := range roleDescriptions {
			roles = append(roles, nostr.Tag{"role", string(r.Role), r.Description})
		}
		// Roles Buzz does not know, as members hold them (sorted).
		var custom []string
		for _, m := range members {
			if !m.Role.Valid() && !slices.Contains(custom, string(m.Role)) {
				custom = append(custom, string(m.Role))
			}
		}
		slices.Sort(custom)
		for _, r := range custom {
			roles = append(roles, nostr.Tag{"role", r, "read and post (a role named by a client)"})
		}
		add(nostr.KindChannelRoles, roles)
	}
	return evs
}

// MembershipEvent is the relay's own put-user (9000) after a join (9021)
// or remove-user (9001) after a leave (9022) of cmd's author, unsigned and
// without created_at (the caller signs it with the state key): NIP-29
// clients follow membership through the latest 9000/9001 of a user. Nil
// for any other command, or a deleted channel.
func MembershipEvent(change Change, cmd *Command) *nostr.Event {
	if cmd == nil || change.Deleted {
		return nil
	}
	tags := nostr.Tags{{"h", change.Channel.GroupID()}, {"p", cmd.Actor}}
	switch cmd.Kind {
	case nostr.KindJoinRequest:
		tags[1] = append(tags[1], string(RoleMember))
		return &nostr.Event{Kind: nostr.KindPutUser, Tags: tags, Content: ""}
	case nostr.KindLeaveRequest:
		return &nostr.Event{Kind: nostr.KindRemoveUser, Tags: tags, Content: ""}
	}
	return nil
}

// PreviousWindow is how many of a group's latest events NIP-29 "previous"
// references are checked against (NIP-29 has clients cite ids among the
// last 50 events they saw; the margin covers events racing them).
const PreviousWindow = 250

// PreviousRefs returns the references of the event's NIP-29 "previous"
// tags (each value the first 8 or more hex characters of an event id; at
// most 100 in a tag), or MsgBadPrevious for a malformed one. Every
// reference must name one of the latest PreviousWindow events of the group
// (PreviousFilter, PreviousKnown) — the author's view of the timeline —
// else the event was written against another relay's copy of the group or
// replayed from one, and is refused with MsgUnknownPrevious.
func PreviousRefs(ev *nostr.Event) (refs []string, refusal string) {
	for _, t := range ev.Tags {
		if len(t) >= 1 && t[0] == "previous" {
			// NIP-29 clients put every reference in one tag.
			if len(t) < 2 || len(t) > 101 {
				return nil, MsgBadPrevious
			}
			for _, ref := range t[1:] {
				if len(ref) < 8 || len(ref) > 64 || !nostr.IsLowerHex(ref, len(ref)) {
					return nil, MsgBadPrevious
				}
				refs = append(refs, ref)
			}
		}
	}
	return refs, ""
}

// PreviousFilter reads the latest PreviousWindow events of the event's
// group (query it scoped to the group's channel).
func PreviousFilter(ev *nostr.Event) nostr.Filter {
	return nostr.Filter{Tags: map[string][]string{"h": {GroupIDOf(ev)}}, Limit: PreviousWindow, LimitSet: true}
}

// PreviousKnown reports whether every reference is a prefix of one of the
// recent event ids.
func PreviousKnown(refs, recent []string) bool {
	for _, ref := range refs {
		if !slices.ContainsFunc(recent, func(id string) bool { return strings.HasPrefix(id, ref) }) {
			return false
		}
	}
	return true
}

// MaxInvites bounds the invites of one channel a join's code is compared
// with (the newest first).
const MaxInvites = 1000

// InviteFilter reads the invites (9009) of group gid, newest first (query
// it scoped to the group's channel). An invite is valid while its event is
// stored, for any number of joins; deleting it (9005) revokes it.
func InviteFilter(gid string) nostr.Filter {
	return nostr.Filter{Kinds: []int{nostr.KindCreateInvite}, Tags: map[string][]string{"h": {gid}}, Limit: MaxInvites, LimitSet: true}
}

// IsInvite reports whether ev, an event InviteFilter read, is the invite
// of code.
func IsInvite(ev *nostr.Event, code string) bool {
	t := ev.Tags.Find("code")
	return ev.Kind == nostr.KindCreateInvite && t != nil && t[1] == code
}
