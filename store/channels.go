package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"iter"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Channels (NIP-29 style, as Buzz has them).
//
// A channel is a UUID inside one community: channels are keyed (community,
// id), so the same UUID may name two unrelated channels in two communities,
// and nothing a client sends can name a channel of another community — a
// channel id is always looked up inside the community the connection is
// bound to. An event belongs to the channel named by its "h" tag (see
// EventChannel); an event without "h" is community-wide (channel NULL).
// Backends record the channel of every stored event and scope reads by it
// (QueryScoped, CountScoped).
//
// Roles and what they may do (enforced by Authorize and MayPost/MayRead,
// which both backends and the relay share):
//
//   - owner: everything — post, read, put and remove anyone (other owners
//     included), change roles, edit metadata, delete events, delete the
//     channel. A channel always keeps at least one owner: the last owner can
//     neither leave, be removed, nor be demoted.
//   - admin: post, read, put new users as member, guest, bot or a role of
//     the client's naming (see ValidChannelRole), remove
//     members, guests and bots (never admins or owners), edit metadata,
//     delete events in the channel. An admin cannot change an existing
//     member's role nor grant admin or owner.
//   - member: post and read.
//   - bot: post and read (a member kind for automation; no moderation).
//   - guest: read only — a guest can never post in the channel, open or not.
//   - any other role name (NIP-29 clients name their own, e.g.
//     "moderator"): what member may do; listed in 39003.
//
// Posting into a channel (MayPost): the channel exists and is not deleted,
// and the author is an active member whose role is not guest, or the
// channel is open and the author is not one of its guests. Reading (MayRead):
// an open channel is readable by every reader the community admits; a
// private one only by its active members (guests included).
//
// Commands (ApplyChannelCommand), one event kind each:
//
//   - 9007 create: h is the new channel's group id chosen by the client (a
//     UUID for Buzz's clients, any NIP-29 id otherwise); tags name
//     (optional), visibility open|private (default open), channel_type
//     stream|forum|dm|workflow (default stream), about, picture, and the
//     NIP-29 flags (see Channel). The author becomes its owner. An id
//     already used in this community — even by a deleted channel — is
//     ErrChannelExists.
//   - 9021 join: a channel that is not closed makes the author a member; a
//     member's repeat is ErrAlreadyMember and changes nothing; a closed
//     channel is joined by being put (9000), or by a join whose "code" tag
//     is an invite code of the channel (Invited, checked by the caller) —
//     any other join is ErrNotPermitted.
//   - 9009 create invite: "code" tag = the invite code (owner, admin), in
//     a private channel only (ErrPublicInvite otherwise: its events, the
//     invite among them, are readable by anyone). The command event is the
//     invite: a code is valid while its 9009 is
//     stored in the channel, for any number of joins (multi-use); deleting
//     the 9009 (9005) revokes it.
//   - 9022 leave: the author stops being a member (ErrNotMember if not one).
//   - 9000 put-user: p tag = the user, optional third element = role
//     (default member); see the roles above.
//   - 9001 remove-user: p tag = the user (ErrNotMember if not one).
//   - 9002 edit metadata: name, about, picture, visibility and flag tags
//     (private/public, closed/open, restricted/unrestricted,
//     hidden/visible); absent tags are unchanged. An edit older than the
//     channel's newest 9007/9002 is ErrStaleEdit.
//   - 9005 delete event: e tag = an event of this channel, which is removed
//     and cannot be stored again (ErrNoEvent if the channel holds no such
//     event).
//   - 9008 delete channel: the channel disappears: it resolves as unknown,
//     is readable by nobody, and its id cannot be reused.
//
// Every command event is stored in its channel, atomically with its effect.

// The channel command and state kinds.
const (
	KindChatMessage     = 9     // a channel message; requires h
	KindPutUser         = 9000  // NIP-29 put-user
	KindRemoveUser      = 9001  // NIP-29 remove-user
	KindEditMetadata    = 9002  // NIP-29 edit-metadata
	KindDeleteEvent     = 9005  // NIP-29 delete-event
	KindCreateChannel   = 9007  // NIP-29 create-group
	KindDeleteChannel   = 9008  // NIP-29 delete-group
	KindCreateInvite    = 9009  // NIP-29 create-invite
	KindJoinRequest     = 9021  // NIP-29 join-request
	KindLeaveRequest    = 9022  // NIP-29 leave-request
	KindChannelMetadata = 39000 // relay-signed metadata
	KindChannelAdmins   = 39001 // relay-signed admins
	KindChannelMembers  = 39002 // relay-signed members
	KindChannelRoles    = 39003 // relay-signed roles
)

// IsChannelCommand reports whether kind is one of the commands
// ApplyChannelCommand executes.
func IsChannelCommand(kind int) bool {
	switch kind {
	case KindPutUser, KindRemoveUser, KindEditMetadata, KindDeleteEvent,
		KindCreateChannel, KindDeleteChannel, KindJoinRequest, KindLeaveRequest, KindCreateInvite:
		return true
	}
	return false
}

// IsChannelState reports whether kind is a relay-signed channel state kind
// (39000–39003), which clients may never publish.
func IsChannelState(kind int) bool { return kind >= KindChannelMetadata && kind <= KindChannelRoles }

// ChannelID is a channel's storage key. It is only meaningful together with
// the community it is looked up in.
//
// A channel is named, in h and d tags, by its NIP-29 group id: a string of
// the characters a-z0-9-_ (see ValidGroupID). Buzz's own clients use
// canonical UUIDs, whose ChannelID is the UUID itself; any other group id
// maps to a name-based UUID (version 8: SHA-256 of a domain label and the
// id, truncated). The channel row records the group id it was created
// with (Channel.GroupID), and admission compares it with the h tag, so a
// UUID chosen to equal another group id's key names nothing.
type ChannelID [16]byte

// MaxGroupIDLen bounds a NIP-29 group id.
const MaxGroupIDLen = 128

// ValidGroupID reports whether s is a NIP-29 group id: 1 to MaxGroupIDLen
// characters of a-z0-9-_.
func ValidGroupID(s string) bool {
	if s == "" || len(s) > MaxGroupIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// groupKeyLabel domain-separates the name-based channel keys.
const groupKeyLabel = "buzz/nip29-group-id/v1\x00"

// ParseChannelID returns the storage key of group id s: the UUID itself for
// the canonical lowercase 8-4-4-4-12 UUID text, the name-based key for any
// other valid NIP-29 group id. It refuses anything else (upper case,
// spaces, braces, the empty string), so one channel has one spelling and
// an h tag filter matches exactly the events of the channel.
func ParseChannelID(s string) (ChannelID, bool) {
	if id, ok := parseUUID(s); ok {
		return id, true
	}
	if !ValidGroupID(s) {
		return ChannelID{}, false
	}
	h := sha256.Sum256([]byte(groupKeyLabel + s))
	var id ChannelID
	copy(id[:], h[:16])
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // RFC 9562 variant
	return id, true
}

// IsUUIDGroupID reports whether group id s is a canonical UUID (the ids
// Buzz's own clients choose).
func IsUUIDGroupID(s string) bool {
	_, ok := parseUUID(s)
	return ok
}

func parseUUID(s string) (ChannelID, bool) {
	var id ChannelID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := lowerHexVal(s[i])
		lo, ok2 := lowerHexVal(s[i+1])
		if !ok1 || !ok2 {
			return ChannelID{}, false
		}
		id[j] = hi<<4 | lo
		j++
		i += 2
	}
	return id, true
}

func lowerHexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// String returns the key's canonical UUID text (the group id of a channel
// whose group id is a UUID; see Channel.GroupID for the others).
func (id ChannelID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], id[10:])
	return string(b[:])
}

// IsZero reports whether id is the zero value (never a channel).
func (id ChannelID) IsZero() bool { return id == ChannelID{} }

// ErrInvalidChannelTag: an event's "h" tags do not name exactly one group
// (a tag without value, a value that is not a NIP-29 group id, or two
// different values).
var ErrInvalidChannelTag = errors.New("store: h tag must name exactly one group id (a-z0-9-_)")

// EventGroupID returns the value of an event's first "h" tag ("" when
// none). Use it after EventChannel accepted the event.
func EventGroupID(ev *nostr.Event) string {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "h" {
			return t[1]
		}
	}
	return ""
}

// EventChannel returns the channel an event names with its "h" tag. An
// event without "h" tag has none (ok false). Repeated "h" tags must all hold
// the same value.
func EventChannel(ev *nostr.Event) (id ChannelID, ok bool, err error) {
	var val string
	for _, t := range ev.Tags {
		if len(t) == 0 || t[0] != "h" {
			continue
		}
		if len(t) < 2 {
			return ChannelID{}, false, ErrInvalidChannelTag
		}
		if ok && t[1] != val {
			return ChannelID{}, false, ErrInvalidChannelTag
		}
		val, ok = t[1], true
	}
	if !ok {
		return ChannelID{}, false, nil
	}
	id, valid := ParseChannelID(val)
	if !valid || id.IsZero() {
		return ChannelID{}, false, ErrInvalidChannelTag
	}
	return id, true, nil
}

// Scope is the set of channels a read may return events of, besides the
// community-wide events (channel NULL), which every scope includes. The
// zero Scope is community-wide events only: a caller that forgets to
// compute access reads no channel at all (fail closed).
type Scope struct {
	all      bool
	channels []ChannelID // sorted, distinct
}

// AllChannels is the scope of trusted internal readers (tools, tests,
// the relay's own state lookups): every channel.
func AllChannels() Scope { return Scope{all: true} }

// ChannelsScope is the scope of the community-wide events plus the events
// of the given channels.
func ChannelsScope(ids ...ChannelID) Scope {
	s := slices.Clone(ids)
	slices.SortFunc(s, func(a, b ChannelID) int {
		for i := range a {
			if a[i] != b[i] {
				return int(a[i]) - int(b[i])
			}
		}
		return 0
	})
	s = slices.Compact(s)
	return Scope{channels: s}
}

// All reports whether the scope covers every channel.
func (s Scope) All() bool { return s.all }

// Channels returns the scope's channels, sorted (nil for AllChannels).
func (s Scope) Channels() []ChannelID { return s.channels }

// Contains reports whether the scope covers channel id.
func (s Scope) Contains(id ChannelID) bool {
	if s.all {
		return true
	}
	_, found := slices.BinarySearchFunc(s.channels, id, func(a, b ChannelID) int {
		for i := range a {
			if a[i] != b[i] {
				return int(a[i]) - int(b[i])
			}
		}
		return 0
	})
	return found
}

// Visibility says who may read a channel.
type Visibility string

// Visibilities.
const (
	VisibilityOpen    Visibility = "open"
	VisibilityPrivate Visibility = "private"
)

// Valid reports whether v is a known visibility.
func (v Visibility) Valid() bool { return v == VisibilityOpen || v == VisibilityPrivate }

// ChannelType is what a channel is for.
type ChannelType string

// Channel types.
const (
	TypeStream   ChannelType = "stream"
	TypeForum    ChannelType = "forum"
	TypeDM       ChannelType = "dm"
	TypeWorkflow ChannelType = "workflow"
)

// Valid reports whether t is a known channel type.
func (t ChannelType) Valid() bool {
	return t == TypeStream || t == TypeForum || t == TypeDM || t == TypeWorkflow
}

// Role is a member's role in a channel (or in a community: owner, admin,
// member).
type Role string

// Roles, most privileged first.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
	RoleGuest  Role = "guest"
	RoleBot    Role = "bot"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool {
	switch r {
	case RoleOwner, RoleAdmin, RoleMember, RoleGuest, RoleBot:
		return true
	}
	return false
}

// MaxRoleLen bounds a channel role's name.
const MaxRoleLen = 64

// ValidChannelRole reports whether r may be given in a channel (9000): a
// known role, or any other name of 1 to MaxRoleLen bytes without control
// characters (NIP-29 leaves roles to the relay; a role Buzz does not know
// grants what member grants and is listed in 39003).
func ValidChannelRole(r Role) bool {
	if r.Valid() {
		return true
	}
	if r == "" || len(r) > MaxRoleLen || !utf8.ValidString(string(r)) {
		return false
	}
	for _, c := range string(r) {
		if unicode.IsControl(c) {
			return false
		}
	}
	return true
}

// Channel is a channel's current state.
//
// NIP-29 flags: Visibility private is NIP-29's "private" (only members
// read); Closed: a join (9021) is refused unless it carries a valid invite
// code; Restricted: only members post; Hidden: the relay-signed state
// events are served to members only. A private channel is always
// restricted in effect (MayPost), and a hidden channel must be private.
// Buzz's "visibility" tag maps onto them: private = private, closed,
// restricted and hidden; open = none of them.
type Channel struct {
	ID ChannelID
	// Slug is the group id when it is not a UUID ("" for UUID ids); use
	// GroupID.
	Slug       string
	Name       string
	About      string
	Picture    string
	Visibility Visibility
	Type       ChannelType
	CreatedBy  string // 64 lowercase hex
	CreatedAt  int64  // unix seconds (the creating event's created_at)
	Deleted    bool
	Closed     bool
	Restricted bool
	Hidden     bool
}

// GroupID returns the channel's NIP-29 group id: the value of its h and d
// tags.
func (ch Channel) GroupID() string {
	if ch.Slug != "" {
		return ch.Slug
	}
	return ch.ID.String()
}

// SlugFor returns what a backend records as Channel.Slug for group id gid:
// "" for a UUID, gid otherwise.
func SlugFor(gid string) string {
	if IsUUIDGroupID(gid) {
		return ""
	}
	return gid
}

// Member is one active member of a channel.
type Member struct {
	PubKey string // 64 lowercase hex
	Role   Role
}

// ChannelCommand is a parsed channel command event (see the kinds above).
type ChannelCommand struct {
	Kind    int
	Actor   string // the event's author, 64 lowercase hex
	Channel ChannelID
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
	Type                                ChannelType // 9007; "" = stream
	EventID                             string      // 9005: the event to delete
	// Code is the invite code: 9009 creates it; 9021 offers it.
	Code string
	// Invited: a 9021's Code names an invite of the channel (the caller
	// checked it against the channel's stored 9009 events).
	Invited bool
}

// MaxInviteCodeLen bounds an invite code.
const MaxInviteCodeLen = 256

// ChannelChange is what a command did.
type ChannelChange struct {
	Channel  Channel // the channel after the command
	Metadata bool    // name, about, picture, visibility or type changed (or created)
	Members  bool    // the member set or a role changed
	// Revoked lists the users who stopped being members (9001, 9022). For
	// a private channel they lost read access.
	Revoked []string
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
	ErrNoChannel = errors.New("store: no such channel")
	// ErrChannelExists: 9007 with an id already used in this community.
	ErrChannelExists = errors.New("store: channel already exists")
	// ErrNotPermitted: the actor's role does not allow the command.
	ErrNotPermitted = errors.New("store: not permitted")
	// ErrPublicInvite: a 9009 in a channel that is not private, whose
	// events — the invite among them — anyone may read.
	ErrPublicInvite = errors.New("store: invite codes need a private channel")
	// ErrStaleEdit: a 9002 older than the channel's newest metadata event
	// (9007 or 9002), which it may never overwrite.
	ErrStaleEdit = errors.New("store: metadata edit older than the channel's current metadata")
	// ErrAlreadyMember: a member's repeated join (9021).
	ErrAlreadyMember = errors.New("store: already a channel member")
	// ErrNotMember: the command needs a member who is not one.
	ErrNotMember = errors.New("store: not a channel member")
	// ErrNoEvent: 9005 names an event the channel does not hold.
	ErrNoEvent = errors.New("store: no such event in the channel")
	// ErrInvalidCommand: the command is malformed (unknown kind, role,
	// visibility or type, missing target).
	ErrInvalidCommand = errors.New("store: invalid channel command")
	// ErrUnsupportedFlags: 9007 or 9002 would make a channel hidden but not
	// private, which this relay cannot honour (its metadata is hidden by
	// the same rule that hides its content).
	ErrUnsupportedFlags = errors.New("store: a hidden group must be private")
)

// IsChannelOutcome reports whether err is one of the channel command
// errors above (or ErrDuplicate): a verdict, not a failure.
func IsChannelOutcome(err error) bool {
	for _, s := range []error{ErrNoChannel, ErrChannelExists, ErrNotPermitted, ErrNotMember, ErrNoEvent, ErrInvalidCommand, ErrUnsupportedFlags, ErrAlreadyMember, ErrPublicInvite, ErrStaleEdit, ErrDuplicate, ErrDeleted} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// MayRead reports whether a reader may read ch: it is not deleted, and it
// is open or the reader is an active member (isMember).
func MayRead(ch Channel, isMember bool) bool {
	return !ch.Deleted && (ch.Visibility == VisibilityOpen || isMember)
}

// MayPost reports whether an author may post into ch: it is not deleted,
// and the author is an active member who is not a guest, or the channel is
// open (not private), not restricted, and the author is not one of its
// guests.
func MayPost(ch Channel, role Role, isMember bool) bool {
	if ch.Deleted {
		return false
	}
	if isMember {
		return role != RoleGuest
	}
	return ch.Visibility == VisibilityOpen && !ch.Restricted
}

// Flags returns the channel's flags after cmd (9007 or 9002) applied to
// ch (ignored for 9007): private (as a Visibility), closed, restricted,
// hidden. It returns ErrUnsupportedFlags for a hidden channel that is not
// private.
func (cmd *ChannelCommand) Flags(ch Channel) (vis Visibility, closed, restricted, hidden bool, err error) {
	if cmd.Kind == KindCreateChannel {
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
func (cmd *ChannelCommand) Validate() error {
	if !IsChannelCommand(cmd.Kind) || cmd.Channel.IsZero() || !isHex64(cmd.Actor) {
		return ErrInvalidCommand
	}
	if cmd.GroupID != "" {
		if id, ok := ParseChannelID(cmd.GroupID); !ok || id != cmd.Channel {
			return ErrInvalidCommand
		}
	}
	switch cmd.Kind {
	case KindCreateChannel:
		if cmd.Name != nil && *cmd.Name == "" {
			return ErrInvalidCommand
		}
		if cmd.Visibility != "" && !cmd.Visibility.Valid() || cmd.Type != "" && !cmd.Type.Valid() {
			return ErrInvalidCommand
		}
	case KindPutUser, KindRemoveUser:
		if !isHex64(cmd.Target) || cmd.Role != "" && !ValidChannelRole(cmd.Role) {
			return ErrInvalidCommand
		}
	case KindEditMetadata:
		if cmd.Visibility != "" && !cmd.Visibility.Valid() || cmd.Name != nil && *cmd.Name == "" {
			return ErrInvalidCommand
		}
	case KindDeleteEvent:
		if !isHex64(cmd.EventID) {
			return ErrInvalidCommand
		}
	case KindCreateInvite:
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
func Authorize(cmd *ChannelCommand, st CommandState) error {
	if st.Channel.Deleted {
		return ErrNoChannel
	}
	actor := st.ActorRole
	privileged := actor == RoleOwner || actor == RoleAdmin
	switch cmd.Kind {
	case KindJoinRequest:
		if actor != "" {
			return ErrAlreadyMember
		}
		if !st.Channel.Closed || cmd.Invited {
			return nil
		}
		return ErrNotPermitted
	case KindLeaveRequest:
		if actor == "" {
			return ErrNotMember
		}
		if actor == RoleOwner && st.Owners <= 1 {
			return ErrNotPermitted
		}
		return nil
	case KindPutUser:
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
	case KindRemoveUser:
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
	case KindCreateInvite:
		if !privileged {
			return ErrNotPermitted
		}
		if st.Channel.Visibility != VisibilityPrivate {
			return ErrPublicInvite
		}
		return nil
	case KindEditMetadata, KindDeleteEvent:
		if privileged {
			return nil
		}
		return ErrNotPermitted
	case KindDeleteChannel:
		if actor == RoleOwner {
			return nil
		}
		return ErrNotPermitted
	}
	return ErrInvalidCommand
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if _, ok := lowerHexVal(s[i]); !ok {
			return false
		}
	}
	return true
}

// AccessPolicy is a community's admission rule.
type AccessPolicy string

// Access policies.
const (
	// AccessOpen: any key may read the community and post community-wide;
	// any authenticated key may join its open channels. The default.
	AccessOpen AccessPolicy = "open"
	// AccessMembers: only community members — its owner and the keys put
	// with PutCommunityMember — may read or write at all, and only once
	// authenticated (NIP-42).
	AccessMembers AccessPolicy = "members"
)

// Valid reports whether p is a known policy.
func (p AccessPolicy) Valid() bool { return p == AccessOpen || p == AccessMembers }

// ChannelStore is the channel and access state a relay needs beside its
// events. Every call is scoped by community: a channel id is only ever
// looked up in c. Both backends implement it.
type ChannelStore interface {
	// QueryScoped is EventStore.Query restricted to the community-wide
	// events and the channels of scope, pushed into the query so limits
	// count only events in scope.
	QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope Scope) iter.Seq2[Record, error]
	// CountScoped is EventStore.Count restricted the same way.
	CountScoped(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter, scope Scope) (int64, error)

	// Channel returns channel id of community c; ErrNoChannel when c holds
	// no such channel or it was deleted.
	Channel(ctx context.Context, c tenant.CommunityID, id ChannelID) (Channel, error)
	// ChannelRole returns pubkey's role in the channel, ok false when it is
	// not an active member.
	ChannelRole(ctx context.Context, c tenant.CommunityID, id ChannelID, pubkey string) (role Role, ok bool, err error)
	// ChannelMembers returns the active members, sorted by pubkey.
	ChannelMembers(ctx context.Context, c tenant.CommunityID, id ChannelID) ([]Member, error)
	// ReadableChannels returns the channels of c any of pubkeys may read
	// (MayRead): every open channel, and the private ones where one of
	// pubkeys is an active member. Deleted channels are never included.
	ReadableChannels(ctx context.Context, c tenant.CommunityID, pubkeys []string) ([]ChannelID, error)
	// ApplyChannelCommand atomically authorizes cmd (Authorize), applies
	// it and stores ev (the command event, whose h names cmd.Channel): all
	// or nothing, serialized with every other command of the channel, also
	// across processes. A repeat of a stored event is ErrDuplicate and
	// changes nothing; a refused command returns one of the channel errors
	// and changes nothing.
	ApplyChannelCommand(ctx context.Context, c tenant.CommunityID, cmd ChannelCommand, ev *nostr.Event) (ChannelChange, error)

	// CommunityAccess returns c's access policy (AccessOpen unless set).
	CommunityAccess(ctx context.Context, c tenant.CommunityID) (AccessPolicy, error)
	// SetCommunityAccess sets c's access policy.
	SetCommunityAccess(ctx context.Context, c tenant.CommunityID, p AccessPolicy) error
	// CommunityRole returns pubkey's role in the community: RoleOwner for
	// the community's owner, the role given with PutCommunityMember
	// otherwise; ok false for a non-member.
	CommunityRole(ctx context.Context, c tenant.CommunityID, pubkey string) (role Role, ok bool, err error)
	// PutCommunityMember adds pubkey to c as RoleAdmin or RoleMember (or
	// changes its role).
	PutCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string, role Role) error
	// RemoveCommunityMember removes pubkey from c's members (not the owner).
	RemoveCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string) error
}
