package ingest

import (
	"context"
	"errors"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// Community membership commands (in the style of NIP-43 relay membership),
// for communities whose access policy is channel.AccessMembers. They carry no
// h tag: membership belongs to the community, and the event is stored as a
// community-wide event once its effect is applied.
//
//   - 9030 add member: p tag = the user, optional third element = role,
//     "member" (default) or "admin". The community's owner may add members
//     and admins; an admin may add members. A repeat changes nothing.
//   - 9031 remove member: p tag = the user. The owner may remove anyone
//     but itself (ownership is the operator's to transfer); an admin may
//     remove members and moderators. Removing a key that is no member is
//     accepted and changes nothing.
//   - 9032 change role: p tag = the user, the role in a "role" tag (as
//     Buzz's clients send it) or as the p tag's third element: admin,
//     moderator or member. The owner may give any of them to anyone but
//     itself; an admin may make members and non-members moderators or
//     members, and moderators members. A non-member becomes a member with
//     that role.
//
// Roles (store.CommunityRole): the owner and admins administer (these
// commands) and moderate (9040–9044, see Moderation); moderators
// (store.RoleModerator) moderate but do not administer.
//
// The author's role is the one store.ChannelStore.CommunityRole returns
// (the owner set by the operator API, or a role given here).
//
// The kinds are nostr.KindAddCommunityMember (9030) and
// nostr.KindRemoveCommunityMember (9031); 9032 is
// nostr.KindChangeCommunityRole.
//
// Messages of community membership commands.
const (
	MsgCommunityRole     = "restricted: your community role does not allow this"
	MsgBadMemberCommand  = "invalid: a membership command needs one p tag with a 64-hex pubkey (to add or change a role: one role member, moderator or admin) and no h tag"
	msgCommunityDisabled = "restricted: this relay does not manage community membership"
)

// isCommunityCommand reports whether kind is a membership command.
func isCommunityCommand(kind int) bool {
	return kind == nostr.KindAddCommunityMember || kind == nostr.KindRemoveCommunityMember || kind == nostr.KindChangeCommunityRole
}

// applyCommunityCommand authorizes and applies a membership command, before
// its event is stored. It returns "" when applied, else the OK message:
// a refusal, or MsgDuplicate (ok) when the command was applied before.
//
// ctx carries the command's store.Authority mark (the authority rule): the
// membership write records it, atomically with the change — a command
// that changes nothing (removing a key that is no member) writes it all
// the same — so a replay's write changes nothing and is reported as a
// duplicate, whatever membership looks like by then.
func (p *Pipeline) applyCommunityCommand(ctx context.Context, s Submission) (msg string, ok bool) {
	cs := p.cfg.Channels
	if cs == nil {
		return msgCommunityDisabled, false
	}
	ev, c := s.Event, s.Tenant.Community()
	target, role, err := parseMemberCommand(ev)
	if err != nil {
		return MsgBadMemberCommand, false
	}
	actor, isMember, err := cs.Store.CommunityRole(ctx, c, ev.PubKey)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: community role", "community", c.String(), "err", err)
		return MsgInternal, false
	}
	if !isMember || (actor != channel.RoleOwner && actor != channel.RoleAdmin) {
		return MsgCommunityRole, false
	}
	current, targetIsMember, err := cs.Store.CommunityRole(ctx, c, target)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: community role", "community", c.String(), "err", err)
		return MsgInternal, false
	}
	// The audit entry's actor, and the change's NIP-43 announcements
	// (membership.go), stored with it.
	actx, built := p.announcing(audit.WithActor(ctx, ev.PubKey), c)
	switch ev.Kind {
	case nostr.KindAddCommunityMember, nostr.KindChangeCommunityRole:
		if current == channel.RoleOwner {
			return MsgCommunityRole, false // the owner's role is not changed here
		}
		if actor == channel.RoleAdmin && (role == channel.RoleAdmin || current == channel.RoleAdmin) {
			return MsgCommunityRole, false
		}
		err = cs.Store.PutCommunityMember(actx, c, target, role)
	case nostr.KindRemoveCommunityMember:
		if current == channel.RoleOwner || (actor == channel.RoleAdmin && current == channel.RoleAdmin) {
			return MsgCommunityRole, false
		}
		err = cs.Store.RemoveCommunityMember(actx, c, target)
	}
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return MsgDuplicate, true
	case err != nil:
		p.cfg.Logger.ErrorContext(ctx, "ingest: community membership", "community", c.String(), "err", err)
		return MsgInternal, false
	}
	cs.Access.MemberChanged(c, target)
	if ev.Kind == nostr.KindRemoveCommunityMember && targetIsMember && cs.OnMemberRemoved != nil {
		cs.OnMemberRemoved(ctx, s.Tenant, target)
	}
	p.publishAnnouncements(ctx, c, *built)
	return "", false
}

func parseMemberCommand(ev *nostr.Event) (target string, role channel.Role, err error) {
	bad := errors.New("bad membership command")
	if ev.Tags.Find("h") != nil {
		return "", "", bad // membership is the community's, never a channel's
	}
	ps := ev.Tags.All("p")
	if len(ps) != 1 || !nostr.IsLowerHex(ps[0][1], 64) {
		return "", "", bad
	}
	var named []string
	if len(ps[0]) >= 3 && ps[0][2] != "" {
		named = append(named, ps[0][2])
	}
	for _, t := range ev.Tags.All("role") {
		named = append(named, t[1])
	}
	switch {
	case len(named) > 1:
		return "", "", bad
	case ev.Kind == nostr.KindRemoveCommunityMember && len(named) > 0:
		return "", "", bad
	case ev.Kind == nostr.KindChangeCommunityRole && len(named) == 0:
		return "", "", bad
	}
	role = channel.RoleMember
	if len(named) == 1 {
		role = channel.Role(named[0])
	}
	if !store.ValidCommunityRole(role) {
		return "", "", bad
	}
	return ps[0][1], role, nil
}
