package channel

import (
	"errors"
	"slices"

	"github.com/buzzrelay/buzz/nostr"
)

// IsCommand reports whether kind is one of the commands
// ApplyChannelCommand executes.
func IsCommand(kind int) bool {
	switch kind {
	case nostr.KindPutUser, nostr.KindRemoveUser, nostr.KindEditMetadata, nostr.KindDeleteEvent,
		nostr.KindCreateChannel, nostr.KindDeleteChannel, nostr.KindJoinRequest, nostr.KindLeaveRequest, nostr.KindCreateInvite:
		return true
	}
	return false
}

// IsState reports whether kind is a relay-signed channel state kind
// (39000–39003), which clients may never publish.
func IsState(kind int) bool {
	return kind >= nostr.KindChannelMetadata && kind <= nostr.KindChannelRoles
}

// Command is a parsed channel command event (ParseCommand; the kinds are
// nostr.KindPutUser … nostr.KindLeaveRequest, see the package doc).
type Command struct {
	Kind    int
	Actor   string // the event's author, 64 lowercase hex
	Channel ID
	GroupID string // the h tag's value (9007 records it as the channel's)
	Target  string // 9000, 9001: the user (64 lowercase hex)
	Role    Role   // 9000: the role to give; "" means member
	// 9007 and 9002: metadata. For 9002, nil means unchanged.
	Name, About, Picture *string
	// Visibility is Buzz's visibility tag: "" = nothing said; private
	// stands for the NIP-29 flags private, closed, restricted and hidden,
	// open for none of them.
	Visibility Visibility
	// NIP-29 flags, overriding what Visibility implies: nil = nothing said.
	// A flag nothing said of is false on 9007 and unchanged on 9002.
	Private, Closed, Restricted, Hidden *bool
	Type                                Type   // 9007; "" = stream
	EventID                             string // 9005: the event to delete
	// Code is the invite code: 9009 creates it; 9021 offers it.
	Code string
	// Invited: a 9021's Code names an invite of the channel (the caller
	// checked it against the channel's stored 9009 events).
	Invited bool
}

// MaxInviteCodeLen bounds an invite code.
const MaxInviteCodeLen = 256

// Change is what a command did.
type Change struct {
	Channel  Channel // the channel after the command
	Metadata bool    // name, about, picture, visibility or type changed (or created)
	Members  bool    // the member set or a role changed
	// Revoked lists the users who stopped being members (9001, 9022). For
	// a private channel they lost read access.
	Revoked []string
	// Added lists the users who became members (9021, 9000 of a
	// non-member); Removed those who were members and are no more (9022,
	// 9001 of a member). The relay narrates them (Notices).
	Added, Removed []string
	// BecamePrivate: a 9002 turned an open channel private; every non-member
	// lost read access.
	BecamePrivate bool
	// Deleted: a 9008 deleted the channel; everybody lost access.
	Deleted bool
	// DeletedEvent is the id a 9005 removed.
	DeletedEvent string
}

// Errors of channel commands. Backends return them unwrapped or wrapped
// (test with errors.Is); nothing was written when one is returned.
var (
	// ErrNoChannel: the community holds no such channel (or it was deleted).
	ErrNoChannel = errors.New("channel: no such channel")
	// ErrChannelExists: 9007 with an id already used in this community.
	ErrChannelExists = errors.New("channel: channel already exists")
	// ErrNotPermitted: the actor's role does not allow the command.
	ErrNotPermitted = errors.New("channel: not permitted")
	// ErrPublicInvite: a 9009 in a channel that is not private, whose
	// events — the invite among them — anyone may read.
	ErrPublicInvite = errors.New("channel: invite codes need a private channel")
	// ErrStaleEdit: a 9002 older than the channel's newest metadata event
	// (9007 or 9002), which it may never overwrite.
	ErrStaleEdit = errors.New("channel: metadata edit older than the channel's current metadata")
	// ErrAlreadyMember: a member's repeated join (9021).
	ErrAlreadyMember = errors.New("channel: already a channel member")
	// ErrNotMember: the command needs a member who is not one.
	ErrNotMember = errors.New("channel: not a channel member")
	// ErrNoEvent: 9005 names an event the channel does not hold.
	ErrNoEvent = errors.New("channel: no such event in the channel")
	// ErrInvalidCommand: the command is malformed (unknown kind, role,
	// visibility or type, missing target).
	ErrInvalidCommand = errors.New("channel: invalid channel command")
	// ErrUnsupportedFlags: 9007 or 9002 would make a channel hidden but not
	// private, which this relay cannot honour (its metadata is hidden by
	// the same rule that hides its content).
	ErrUnsupportedFlags = errors.New("channel: a hidden group must be private")
)

// ch (ignored for 9007): private (as a Visibility), closed, restricted,
// hidden. It returns ErrUnsupportedFlags for a hidden channel that is not
// private.
func (cmd *Command) Flags(ch Channel) (vis Visibility, closed, restricted, hidden bool, err error) {
	if cmd.Kind == nostr.KindCreateChannel {
		ch = Channel{Visibility: VisibilityOpen}
	}
	private := ch.Visibility == VisibilityPrivate
	closed, restricted, hidden = ch.Closed, ch.Restricted, ch.Hidden
	if cmd.Visibility != "" {
		v := cmd.Visibility == VisibilityPrivate
		private, closed, restricted, hidden = v, v, v, v
	}
	for _, f := range []struct {
		dst *bool
		v   *bool
	}{{&private, cmd.Private}, {&closed, cmd.Closed}, {&restricted, cmd.Restricted}, {&hidden, cmd.Hidden}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if hidden && !private {
		return "", false, false, false, ErrUnsupportedFlags
	}
	vis = VisibilityOpen
	if private {
		vis = VisibilityPrivate
	}
	return vis, closed, restricted, hidden, nil
}

// CommandState is what a backend read, inside the command's transaction,
// for Authorize to judge.
type CommandState struct {
	Channel    Channel
	ActorRole  Role // "" when the actor is not an active member
	TargetRole Role // "" when the target is not an active member (9000, 9001)
	Owners     int  // active owners of the channel
}

// Validate checks a command's shape (independent of state).
func (cmd *Command) Validate() error {
	if !IsCommand(cmd.Kind) || cmd.Channel.IsZero() || !nostr.IsLowerHex(cmd.Actor, 64) {
		return ErrInvalidCommand
	}
	if cmd.GroupID != "" {
		if id, ok := ParseID(cmd.GroupID); !ok || id != cmd.Channel {
			return ErrInvalidCommand
		}
	}
	switch cmd.Kind {
	case nostr.KindCreateChannel:
		if cmd.Name != nil && *cmd.Name == "" {
			return ErrInvalidCommand
		}
		// DM conversations are opened by 41010 only, in their own id space
		// (DMID), which nobody can claim first.
		if cmd.Type == TypeDM || IsDMID(cmd.Channel) {
			return ErrInvalidCommand
		}
		if cmd.Visibility != "" && !cmd.Visibility.Valid() || cmd.Type != "" && !cmd.Type.Valid() {
			return ErrInvalidCommand
		}
	case nostr.KindPutUser, nostr.KindRemoveUser:
		if !nostr.IsLowerHex(cmd.Target, 64) || cmd.Role != "" && !ValidRole(cmd.Role) {
			return ErrInvalidCommand
		}
	case nostr.KindEditMetadata:
		if cmd.Visibility != "" && !cmd.Visibility.Valid() || cmd.Name != nil && *cmd.Name == "" {
			return ErrInvalidCommand
		}
	case nostr.KindDeleteEvent:
		if !nostr.IsLowerHex(cmd.EventID, 64) {
			return ErrInvalidCommand
		}
	case nostr.KindCreateInvite:
		if cmd.Code == "" || len(cmd.Code) > MaxInviteCodeLen {
			return ErrInvalidCommand
		}
	}
	return nil
}

// Authorize decides a command (other than 9007, which needs only that the
// id is unused) against the state its backend read in the same
// transaction. It returns nil or one of ErrNoChannel, ErrNotPermitted,
// ErrNotMember. It is the one place the role rules of this file live.
func Authorize(cmd *Command, st CommandState) error {
	if st.Channel.Deleted {
		return ErrNoChannel
	}
	actor := st.ActorRole
	privileged := actor == RoleOwner || actor == RoleAdmin
	switch cmd.Kind {
	case nostr.KindJoinRequest:
		if actor != "" {
			return ErrAlreadyMember
		}
		if !st.Channel.Closed || cmd.Invited {
			return nil
		}
		return ErrNotPermitted
	case nostr.KindLeaveRequest:
		if actor == "" {
			return ErrNotMember
		}
		if actor == RoleOwner && st.Owners <= 1 {
			return ErrNotPermitted
		}
		return nil
	case nostr.KindPutUser:
		role := cmd.Role
		if role == "" {
			role = RoleMember
		}
		switch actor {
		case RoleOwner:
			if st.TargetRole == RoleOwner && role != RoleOwner && st.Owners <= 1 {
				return ErrNotPermitted // would leave the channel without owner
			}
			return nil
		case RoleAdmin:
			if st.TargetRole != "" || role == RoleOwner || role == RoleAdmin {
				return ErrNotPermitted
			}
			return nil
		}
		return ErrNotPermitted
	case nostr.KindRemoveUser:
		if st.TargetRole == "" {
			if privileged {
				return ErrNotMember
			}
			return ErrNotPermitted
		}
		if cmd.Target == cmd.Actor { // removing oneself is leaving
			if actor == RoleOwner && st.Owners <= 1 {
				return ErrNotPermitted
			}
			return nil
		}
		switch actor {
		case RoleOwner:
			if st.TargetRole == RoleOwner && st.Owners <= 1 {
				return ErrNotPermitted
			}
			return nil
		case RoleAdmin:
			if st.TargetRole == RoleOwner || st.TargetRole == RoleAdmin {
				return ErrNotPermitted
			}
			return nil
		}
		return ErrNotPermitted
	case nostr.KindCreateInvite:
		if !privileged {
			return ErrNotPermitted
		}
		if st.Channel.Visibility != VisibilityPrivate {
			return ErrPublicInvite
		}
		return nil
	case nostr.KindEditMetadata, nostr.KindDeleteEvent:
		if privileged {
			return nil
		}
		return ErrNotPermitted
	case nostr.KindDeleteChannel:
		if actor == RoleOwner {
			return nil
		}
		return ErrNotPermitted
	}
	return ErrInvalidCommand
}

// ParseCommand reads a command event of channel id (as OfEvent returned
// it) into a validated Command, or returns ErrInvalidCommand. Tags: 9007
// and 9002 "name", "about", "picture", "visibility" (open|private) and
// the NIP-29 flags (single-element tags): "private"/"public",
// "closed"/"open", "restricted"/"unrestricted", "hidden"/"visible" — with
// at least one of them and no "visibility", the flags left out are off
// (the whole set is stated); 9007 "channel_type"; 9000 "p" = [p, pubkey,
// role?]; 9001 "p"; 9005 "e"; 9009 "code" (required), 9021 "code"
// (optional). Buzz's "visibility" private stands for private, closed,
// restricted and hidden, open for none of them; an explicit flag tag
// overrides what visibility implies for that flag. A tag given twice,
// contradicting flags, a missing required tag or an unknown value is an
// error.
func ParseCommand(ev *nostr.Event, id ID) (Command, error) {
	cmd := Command{Kind: ev.Kind, Actor: ev.PubKey, Channel: id, GroupID: GroupIDOf(ev)}
	bad := ErrInvalidCommand
	seen := map[string]bool{}
	one := func(t nostr.Tag) (string, error) {
		if seen[t[0]] || len(t) < 2 {
			return "", bad
		}
		seen[t[0]] = true
		return t[1], nil
	}
	meta := ev.Kind == nostr.KindCreateChannel || ev.Kind == nostr.KindEditMetadata
	// Explicit NIP-29 flags: index 0 private, 1 closed, 2 restricted, 3 hidden.
	var explicit [4]*bool
	flag := func(i int, v bool) error {
		if explicit[i] != nil && *explicit[i] != v {
			return bad
		}
		explicit[i] = &v
		return nil
	}
	for _, t := range ev.Tags {
		if len(t) == 0 {
			continue
		}
		if meta {
			if i, v, ok := flagTag(t[0]); ok {
				if err := flag(i, v); err != nil {
					return cmd, err
				}
				continue
			}
		}
		switch {
		case meta && (t[0] == "name" || t[0] == "about" || t[0] == "picture"):
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			switch t[0] {
			case "name":
				cmd.Name = &v
			case "about":
				cmd.About = &v
			case "picture":
				cmd.Picture = &v
			}
		case meta && t[0] == "visibility":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.Visibility = Visibility(v)
		case ev.Kind == nostr.KindCreateChannel && t[0] == "channel_type":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.Type = Type(v)
		case (ev.Kind == nostr.KindPutUser || ev.Kind == nostr.KindRemoveUser) && t[0] == "p":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.Target = v
			if ev.Kind == nostr.KindPutUser && len(t) >= 3 && t[2] != "" {
				cmd.Role = Role(t[2])
			}
		case (ev.Kind == nostr.KindCreateInvite || ev.Kind == nostr.KindJoinRequest) && t[0] == "code":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.Code = v
		case ev.Kind == nostr.KindDeleteEvent && t[0] == "e":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.EventID = v
		}
	}
	if meta {
		// A NIP-29 client states the whole flag set (nostr-tools sends the
		// flags that are on): once one flag tag is given without Buzz's
		// visibility, every flag it leaves out is off.
		if cmd.Visibility == "" && slices.ContainsFunc(explicit[:], func(b *bool) bool { return b != nil }) {
			for i := range explicit {
				if explicit[i] == nil {
					explicit[i] = new(bool)
				}
			}
		}
		cmd.Private, cmd.Closed, cmd.Restricted, cmd.Hidden = explicit[0], explicit[1], explicit[2], explicit[3]
	}
	if err := cmd.Validate(); err != nil {
		return cmd, bad
	}
	return cmd, nil
}

// flagTag maps a NIP-29 flag tag name to its index (0 private, 1 closed, 2
// restricted, 3 hidden) and value.
func flagTag(name string) (i int, v, ok bool) {
	switch name {
	case "private":
		return 0, true, true
	case "public":
		return 0, false, true
	case "closed":
		return 1, true, true
	case "open":
		return 1, false, true
	case "restricted":
		return 2, true, true
	case "unrestricted":
		return 2, false, true
	case "hidden":
		return 3, true, true
	case "visible":
		return 3, false, true
	}
	return 0, false, false
}
