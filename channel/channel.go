package channel

import (
	"unicode"
	"unicode/utf8"
)

// Visibility says who may read a channel.
type Visibility string

// Visibilities.
const (
	VisibilityOpen    Visibility = "open"
	VisibilityPrivate Visibility = "private"
)

// Valid reports whether v is a known visibility.
func (v Visibility) Valid() bool { return v == VisibilityOpen || v == VisibilityPrivate }

// Type is what a channel is for.
type Type string

// Channel types.
const (
	TypeStream   Type = "stream"
	TypeForum    Type = "forum"
	TypeDM       Type = "dm"
	TypeWorkflow Type = "workflow"
)

// Valid reports whether t is a known channel type.
func (t Type) Valid() bool {
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

// ValidRole reports whether r may be given in a channel (9000): a
// known role, or any other name of 1 to MaxRoleLen bytes without control
// characters (NIP-29 leaves roles to the relay; a role Buzz does not know
// grants what member grants and is listed in 39003).
func ValidRole(r Role) bool {
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
	ID ID
	// Slug is the group id when it is not a UUID ("" for UUID ids); use
	// GroupID.
	Slug       string
	Name       string
	About      string
	Picture    string
	Visibility Visibility
	Type       Type
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
