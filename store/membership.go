package store

import (
	"context"
	"slices"
	"strings"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Membership announcements (NIP-43): every change of a community's
// membership made through ChannelStore.PutCommunityMember or
// RemoveCommunityMember with a context carrying a MembershipAnnouncer
// (WithMembershipAnnouncer) stores, in the transaction of the change, the
// events the announcer builds for it — the relay's kind 8000 (member
// added) or 8001 (member removed) and its kind 13534 (the member list). So
// the change and its announcements commit together or not at all, on every
// backend, and a reader that sees one sees the other.
//
// Changes of one community are serialized (the community's row, across
// processes sharing a PostgreSQL database) and each gets an At strictly
// after the previous one's, so a community's announcements are totally
// ordered by created_at and the newest 13534 is the current list.

// MembershipChange is one change of a community's membership, as a
// MembershipAnnouncer sees it inside the change's transaction.
type MembershipChange struct {
	// Community is the community whose membership changed.
	Community tenant.CommunityID
	// Pubkey is the key whose membership changed.
	Pubkey string
	// Added: Pubkey was no member and is one now (NIP-43 kind 8000).
	// Removed: it was a member and is none now (8001). Neither: its role
	// changed.
	Added, Removed bool
	// Members is the community's membership after the change: its owner
	// (role channel.RoleOwner) and its members, sorted by pubkey.
	Members []channel.Member
	// At is the created_at to give the announcements: the announcer's Now,
	// or one second after the community's previous announcement when that
	// is not earlier.
	At int64
}

// MembershipAnnouncer builds the announcements of membership changes.
type MembershipAnnouncer struct {
	// Now is the announcer's clock, in Unix seconds.
	Now func() int64
	// Build returns the signed events to store with change. An error
	// aborts the change. Called inside the transaction, possibly more than
	// once when the backend retries it: the last call's events are stored.
	Build func(change MembershipChange) ([]*nostr.Event, error)
}

type membershipKey struct{}

// WithMembershipAnnouncer returns a context whose membership writes store
// a's announcements with each change (see MembershipChange).
func WithMembershipAnnouncer(ctx context.Context, a *MembershipAnnouncer) context.Context {
	return context.WithValue(ctx, membershipKey{}, a)
}

// MembershipAnnouncerFrom returns the announcer ctx carries, nil when none.
// Backends call it in PutCommunityMember and RemoveCommunityMember.
func MembershipAnnouncerFrom(ctx context.Context) *MembershipAnnouncer {
	a, _ := ctx.Value(membershipKey{}).(*MembershipAnnouncer)
	if a == nil || a.Build == nil || a.Now == nil {
		return nil
	}
	return a
}

// NextMembershipAt is a change's At: now, or last+1 when that is later.
func NextMembershipAt(now, last int64) int64 {
	return max(now, last+1)
}

// SortMembers sorts a membership list by pubkey, as MembershipChange.Members
// is.
func SortMembers(ms []channel.Member) {
	slices.SortFunc(ms, func(a, b channel.Member) int { return strings.Compare(a.PubKey, b.PubKey) })
}
