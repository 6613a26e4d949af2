package store

import (
	"context"
	"errors"
	"strings"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/tenant"
)

// NIP-05 names.
//
// A community's users may hold a NIP-05 name (the local part of
// name@host, where host is the community's host): at most one name per
// pubkey per community, and each name held by at most one pubkey per
// community. Names are case-insensitive: they are stored and compared in
// lower case (NormalizeName). A name held in one community says nothing
// about another: the same name may be held by different pubkeys in two
// communities.

// Audit actions of names (see package audit). Object: the name; detail
// "pubkey": the holder; Actor: audit.ActorFrom(ctx) of the call.
const (
	AuditNameSet      audit.Action = "nip05_name_set"
	AuditNameReleased audit.Action = "nip05_name_released"
)

// NameAudit is the audit record of a name given to (or released from)
// pubkey, by the actor in ctx.
func NameAudit(ctx context.Context, action audit.Action, name, pubkey string) audit.Record {
	return audit.Record{Action: action, Actor: audit.ActorFrom(ctx), Object: name, Detail: map[string]any{"pubkey": pubkey}}
}

// MaxNameLen is the longest name NormalizeName accepts, in bytes.
const MaxNameLen = 64

// Errors of NameStore.
var (
	// ErrNameTaken: another pubkey holds the name in this community.
	ErrNameTaken = errors.New("store: name is held by another user")
	// ErrNoName: nobody holds the name in this community.
	ErrNoName = errors.New("store: no such name")
	// ErrInvalidName: the name is not a NIP-05 local part NormalizeName accepts.
	ErrInvalidName = errors.New("store: invalid name")
)

// NormalizeName returns name in lower case when it is a valid NIP-05 local
// part: 1–64 characters of a-z, 0-9, '-', '_' and '.' (upper case letters
// are folded). "_" is the name NIP-05 resolves for the bare host.
func NormalizeName(name string) (string, bool) {
	if name == "" || len(name) > MaxNameLen {
		return "", false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		case c >= 'A' && c <= 'Z':
		default:
			return "", false
		}
	}
	return strings.ToLower(name), true
}

// NameStore keeps the NIP-05 names of each community's users (the users
// table). Every call is scoped by the community; names are normalized by
// the backend (an invalid one is ErrInvalidName).
type NameStore interface {
	// SetName gives name to pubkey in community c, replacing the name
	// pubkey held before (if any), and records AuditNameSet. Setting the
	// name pubkey already holds changes (and records) nothing. ErrNameTaken when another pubkey holds it; the check
	// and the write are one atomic step, also across processes.
	SetName(ctx context.Context, c tenant.CommunityID, pubkey, name string) error
	// ReleaseName frees name, records AuditNameReleased and returns the
	// pubkey that held it;
	// ErrNoName when nobody holds it or, with holder set, when holder does
	// not hold it (then nothing changes).
	ReleaseName(ctx context.Context, c tenant.CommunityID, name, holder string) (pubkey string, err error)
	// NameOwner returns the pubkey holding name; ErrNoName when nobody does.
	NameOwner(ctx context.Context, c tenant.CommunityID, name string) (pubkey string, err error)
	// PubKeyName returns the name pubkey holds; ErrNoName when it holds none.
	PubKeyName(ctx context.Context, c tenant.CommunityID, pubkey string) (name string, err error)
}
