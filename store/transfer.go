package store

import (
	"context"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/channel"
)

// State a backend keeps beside its events, in the shape an export carries
// it (package transfer). Times are whole seconds, the embedded store's
// precision; audit entries keep their microseconds (audit.Entry).

// CommunityState is a community's registry row with its hosts and settings.
type CommunityState struct {
	Community
	Aliases []HostAlias
	Access  channel.AccessPolicy
	Profile CommunityProfile
}

// HostAlias is a further host of a community.
type HostAlias struct {
	Host      string
	CreatedAt time.Time
}

// MemberState is one community member and its role.
type MemberState struct {
	PubKey  string
	Role    channel.Role
	AddedAt time.Time
}

// ChannelState is a channel row, deleted ones included.
type ChannelState struct {
	channel.Channel
	DeletedAt time.Time // zero unless Deleted
}

// ChannelMemberState is one active member of a channel.
type ChannelMemberState struct {
	Channel  channel.ID
	PubKey   string
	Role     channel.Role
	JoinedAt time.Time
	AddedBy  string // "" when unknown
}

// NameState is one NIP-05 name and its holder.
type NameState struct {
	PubKey    string
	Name      string
	UpdatedAt time.Time
}

// noDeletionAudit marks a context whose Saves append no audit entry.
type noDeletionAudit struct{}

// WithoutDeletionAudit returns a context under which a backend's Save of a
// NIP-09 deletion request appends no audit entry. It is for restoring an
// export, whose audit chains are restored entry by entry: the deletion's
// entry is already among them. Relay code never uses it.
func WithoutDeletionAudit(ctx context.Context) context.Context {
	return context.WithValue(ctx, noDeletionAudit{}, true)
}

// DeletionAuditOff reports whether ctx came from WithoutDeletionAudit.
func DeletionAuditOff(ctx context.Context) bool {
	v, _ := ctx.Value(noDeletionAudit{}).(bool)
	return v
}

// ErrAuditConflict: a restored audit entry does not continue the
// destination's chain (another entry holds its seq, or it does not link
// to the chain's head). Nothing of the call is appended.
var ErrAuditConflict = errors.New("store: audit entry conflicts with the chain")
