package operator

import (
	"context"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Store is the community registry the operator API manages. store/embedded
// and store/postgres implement it; operator/optest is its conformance suite.
//
// Public keys are 64 lowercase hex characters; "" means "no owner". Errors
// are the store.Err* sentinels (test with errors.Is) or internal failures.
type Store interface {
	// CreateCommunity provisions n.Host (which must pass
	// tenant.ValidateHost, else store.ErrInvalidHost). When the host, or an
	// alias equal to it, is already mapped (archived or not) it returns
	// store.ErrCommunityExists if n.CreateOnly; otherwise the existing
	// community with created false — unless n.OwnerPubKey is set and is not
	// that community's owner (store.ErrOwnerConflict). A new community for
	// an owner who already owns n.MaxPerOwner non-archived ones (when > 0)
	// is store.ErrCommunityLimit; the count and the insert are atomic, even
	// across processes.
	CreateCommunity(ctx context.Context, n store.NewCommunity) (c store.Community, created bool, err error)

	// OwnedCommunities lists the communities ownerPubKey owns, archived ones
	// included, oldest first.
	OwnedCommunities(ctx context.Context, ownerPubKey string) ([]store.Community, error)

	// CommunityByHost returns the community whose host or alias is
	// normalizedHost, archived or not; store.ErrNoCommunity when none.
	CommunityByHost(ctx context.Context, normalizedHost string) (store.Community, error)

	// SetArchived archives (archived true) or unarchives community id,
	// whose owner must be ownerPubKey (else store.ErrOwnerConflict; ""
	// names an unowned community). An archived community resolves as
	// unmapped through tenant.Directory. Unarchiving counts against the
	// owner's quota like a create (store.ErrCommunityLimit). changed is
	// false when the community already was in the requested state. An
	// unknown id is store.ErrNoCommunity.
	SetArchived(ctx context.Context, id tenant.CommunityID, ownerPubKey string, archived bool, maxPerOwner int) (c store.Community, changed bool, err error)

	// TransferCommunity makes newOwner the owner of the community whose
	// UUID is id. If newOwner already owns it, nothing changes (changed
	// false). Otherwise the current owner must equal expectedOwner (else
	// store.ErrOwnerConflict), and an active community counts against
	// newOwner's quota (store.ErrCommunityLimit); the comparison, the count
	// and the update are atomic. previousOwner is the owner before the
	// call. An unknown id is store.ErrNoCommunity.
	TransferCommunity(ctx context.Context, id [16]byte, newOwner, expectedOwner string, maxPerOwner int) (c store.Community, previousOwner string, changed bool, err error)
}
