package store

import (
	"context"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// Community is one row of a backend's community registry, as the operator
// plane (provisioning, quotas, archiving, ownership) sees it. Relay code
// resolves hosts with tenant.Directory and never needs it.
type Community struct {
	ID   tenant.CommunityID
	Host string // the community's primary host (normalized)
	// OwnerPubKey is the owner's public key, 64 lowercase hex characters,
	// or "" when the community has no owner (for example the deployment's
	// own community, created from RELAY_URL).
	OwnerPubKey string
	CreatedAt   time.Time // UTC
	ArchivedAt  time.Time // UTC; zero while the community is active
}

// Archived reports whether the community is archived.
func (c Community) Archived() bool { return !c.ArchivedAt.IsZero() }

// NewCommunity asks a backend to provision a community.
type NewCommunity struct {
	// Host must pass tenant.ValidateHost; backends refuse anything else.
	Host string
	// OwnerPubKey is the initial owner (64 lowercase hex) or "".
	OwnerPubKey string
	// CreateOnly turns "the host already exists" into ErrCommunityExists
	// instead of returning the existing community.
	CreateOnly bool
	// MaxPerOwner bounds how many non-archived communities OwnerPubKey may
	// own; 0 means no bound. It is checked atomically with the insert.
	MaxPerOwner int
}

// Errors of the operator-plane registry calls. Backends return them
// unwrapped or wrapped (test with errors.Is); any other error is internal.
var (
	// ErrCommunityExists: CreateOnly and the host (or an alias equal to it)
	// is already mapped, archived or not.
	ErrCommunityExists = errors.New("store: community already exists")
	// ErrCommunityLimit: the owner already owns the maximum number of
	// non-archived communities.
	ErrCommunityLimit = errors.New("store: owner has reached the community limit")
	// ErrOwnerConflict: the community's owner is not the one the caller
	// named (an idempotent create for another owner, an archive by someone
	// else, or a transfer whose expected owner is stale).
	ErrOwnerConflict = errors.New("store: community owner does not match")
	// ErrNoCommunity: no community has this id or host.
	ErrNoCommunity = errors.New("store: no such community")
	// ErrInvalidHost: the host does not pass tenant.ValidateHost.
	ErrInvalidHost = errors.New("store: invalid host")
)

// MainHostStore records the deployment's main host: the host of the
// relay's own address (buzzd's RELAY_URL), whose community must stay
// mapped for the relay to answer there. buzzd records it every time it
// starts; the admin tools read it, so they protect the host the relay
// actually serves rather than the one their own environment names.
// store/embedded and store/postgres implement it.
type MainHostStore interface {
	// SetMainHost records host (normalized; it must pass
	// tenant.ValidateHost, else ErrInvalidHost) as the main host,
	// replacing the one recorded before.
	SetMainHost(ctx context.Context, host string) error
	// MainHost returns the recorded main host, "" when none is recorded.
	MainHost(ctx context.Context) (string, error)
}
