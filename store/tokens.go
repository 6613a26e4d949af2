package store

import (
	"context"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/tenant"
)

// API tokens (package apitoken).
//
// A token belongs to one community and acts as one pubkey (Owner) with a
// fixed set of scopes until it expires or is revoked. The store keeps only
// the SHA-256 of the token: the token itself is shown once, when minted.
// Lookups are keyed on (community, hash): a token minted for one community
// is unknown in every other, whatever its bytes.

// Audit actions of API tokens. Object: the token id; Actor:
// audit.ActorFrom(ctx) of the call. Minting records detail "pubkey" (whom
// the token acts as), "scopes" and "expires_at" (RFC 3339, absent: never);
// a revocation records "pubkey". Refusals are appended by package apitoken
// (AuditTokenRefused).
const (
	AuditTokenMinted  audit.Action = "api_token_minted"
	AuditTokenRevoked audit.Action = "api_token_revoked"
	// AuditTokenRefused: a request presented a revoked or expired token, or
	// a token without the scope the request needs. Actor: whom the token
	// acts as; detail "reason", and "scope" for a scope refusal.
	AuditTokenRefused audit.Action = "api_token_refused"
)

// APIToken is one stored API token.
type APIToken struct {
	Community tenant.CommunityID
	// ID identifies the token in listings and revocations: 32 lowercase
	// hex characters, random; never the token itself.
	ID string
	// Hash is the SHA-256 of the token.
	Hash [32]byte
	// Owner is the pubkey the token acts as (64 lowercase hex).
	Owner string
	// Name is a label, 1 to MaxTokenNameLen bytes.
	Name string
	// Scopes are the scope names the token grants (package apitoken).
	Scopes []string
	// CreatedBy is who minted it (64 lowercase hex), or "" for a local
	// administrator.
	CreatedBy string
	CreatedAt time.Time
	// ExpiresAt is when the token stops working; zero: never.
	ExpiresAt time.Time
	// RevokedAt is when it was revoked; zero: it was not.
	RevokedAt time.Time
}

// Revoked reports whether t was revoked.
func (t APIToken) Revoked() bool { return !t.RevokedAt.IsZero() }

// Expired reports whether t has expired at now.
func (t APIToken) Expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)
}

// Bounds of APIToken.
const (
	MaxTokenNameLen = 100
	// MaxActiveTokens is how many tokens, neither revoked nor expired, one
	// pubkey may hold in one community.
	MaxActiveTokens = 10
)

// Errors of TokenStore.
var (
	// ErrNoToken: the community holds no such token.
	ErrNoToken = errors.New("store: no such API token")
	// ErrTokenLimit: the owner already holds MaxActiveTokens active
	// tokens in the community.
	ErrTokenLimit = errors.New("store: too many active API tokens")
)

// TokenAudit is the audit record of minting t, by the actor in ctx.
func TokenAudit(ctx context.Context, t APIToken) audit.Record {
	d := map[string]any{"pubkey": t.Owner, "scopes": t.Scopes, "name": clip(t.Name)}
	if !t.ExpiresAt.IsZero() {
		d["expires_at"] = t.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return audit.Record{Action: AuditTokenMinted, Actor: audit.ActorFrom(ctx), Object: t.ID, Detail: d, Time: t.CreatedAt}
}

// TokenStore keeps the API tokens of every community. Both backends
// implement it.
//
// Semantics (pinned by storetest.RunAPITokens):
//   - CreateAPIToken stores t and its audit entry (TokenAudit) in one
//     transaction; it returns ErrTokenLimit, storing nothing, when t.Owner
//     already holds MaxActiveTokens tokens of t.Community that are neither
//     revoked nor expired at t.CreatedAt — decided atomically, so
//     concurrent mints never pass the limit.
//   - APITokenByHash finds a token of c by hash, revoked and expired ones
//     included (the caller tells them apart); ErrNoToken when c has none —
//     a token of another community is never found.
//   - RevokeAPIToken marks the token id of c revoked at `at` and records
//     AuditTokenRevoked in the same transaction; it returns the token and
//     whether this call revoked it (false: it already was). ErrNoToken when
//     c has no such id.
type TokenStore interface {
	CreateAPIToken(ctx context.Context, t APIToken) error
	APITokenByHash(ctx context.Context, c tenant.CommunityID, hash [32]byte) (APIToken, error)
	// APITokens lists c's tokens, newest first, revoked ones included.
	APITokens(ctx context.Context, c tenant.CommunityID) ([]APIToken, error)
	RevokeAPIToken(ctx context.Context, c tenant.CommunityID, id string, at time.Time) (APIToken, bool, error)
}

// RevokeAudit is the audit record of revoking t, by the actor in ctx.
func RevokeAudit(ctx context.Context, t APIToken, at time.Time) audit.Record {
	return audit.Record{Action: AuditTokenRevoked, Actor: audit.ActorFrom(ctx), Object: t.ID, Detail: map[string]any{"pubkey": t.Owner}, Time: at}
}
