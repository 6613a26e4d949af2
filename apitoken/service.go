package apitoken

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Error is a refused token: Code is the HTTP API's error code (Buzz's),
// Message the NIP-01 prefixed sentence a client sees.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// The refusals of Authenticate. Over HTTP they answer 401 with Code; over
// WebSocket the AUTH's OK false carries Message.
var (
	// ErrInvalidToken: malformed, or unknown in this community.
	ErrInvalidToken = &Error{Code: "invalid_token", Message: "auth-required: invalid token"}
	ErrTokenRevoked = &Error{Code: "token_revoked", Message: "auth-required: token revoked"}
	ErrTokenExpired = &Error{Code: "token_expired", Message: "auth-required: token expired"}
)

// Grant is what an authenticated token allows: acting as PubKey with
// Scopes until ExpiresAt (zero: no expiry).
type Grant struct {
	ID        string // the token's id
	PubKey    string
	Scopes    []Scope
	ExpiresAt time.Time
}

// Allows reports whether g grants s.
func (g *Grant) Allows(s Scope) bool {
	for _, have := range g.Scopes {
		if have == s {
			return true
		}
	}
	return false
}

// Expired reports whether g has expired at now.
func (g *Grant) Expired(now time.Time) bool { return !g.ExpiresAt.IsZero() && !now.Before(g.ExpiresAt) }

// Bounds of a minted token's lifetime (MintRequest.ExpiresIn).
const (
	MinLifetime = time.Hour
	MaxLifetime = 365 * 24 * time.Hour
)

// MintRequest is what Service.Mint is asked for.
type MintRequest struct {
	// PubKey is whom the token acts as (64 lowercase hex).
	PubKey string
	// Name labels the token in listings: 1 to store.MaxTokenNameLen bytes
	// of printable UTF-8.
	Name   string
	Scopes []Scope
	// ExpiresIn is the token's lifetime, MinLifetime to MaxLifetime; zero
	// means it never expires (as Buzz allows).
	ExpiresIn time.Duration
}

// MayMint reports whether a member of a community with role may mint its
// tokens: its owner and admins.
func MayMint(role channel.Role) bool { return role == channel.RoleOwner || role == channel.RoleAdmin }

// Service mints, lists, revokes and authenticates API tokens over a
// store.TokenStore. It is safe for concurrent use.
type Service struct {
	st     store.TokenStore
	audit  store.AuditLog // nil: refusals are not recorded
	bus    control.Bus    // nil: revocations are not published
	now    func() time.Time
	logger *slog.Logger
}

// Option configures a Service.
type Option func(*Service) error

// WithClock sets the clock that decides expiry and stamps tokens
// (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(s *Service) error {
		if now == nil {
			return errors.New("apitoken: WithClock: nil clock")
		}
		s.now = now
		return nil
	}
}

// WithBus publishes every revocation on b (control.TokenRevoked), so that
// every relay process on it closes the connections that authenticated
// with the token. Give it the deployment's bus (the Redis broker).
func WithBus(b control.Bus) Option {
	return func(s *Service) error {
		if b == nil {
			return errors.New("apitoken: WithBus: nil bus")
		}
		s.bus = b
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(s *Service) error {
		if l == nil {
			return errors.New("apitoken: WithLogger: nil logger")
		}
		s.logger = l
		return nil
	}
}

// New returns a Service over st. When st is also a store.AuditLog (both
// backends are), refusals are recorded in its chains.
func New(st store.TokenStore, opts ...Option) (*Service, error) {
	if st == nil {
		return nil, errors.New("apitoken: nil store")
	}
	s := &Service{st: st, now: time.Now, logger: slog.Default()}
	s.audit, _ = st.(store.AuditLog)
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Mint creates a token of community c for req and returns it — the only
// time it is ever shown — with its stored record. The minter is
// audit.ActorFrom(ctx); the caller decides who may mint (MayMint). An
// invalid request is an error whose message is NIP-01 prefixed
// ("invalid: …"); store.ErrTokenLimit when req.PubKey already holds
// store.MaxActiveTokens active tokens of c.
func (s *Service) Mint(ctx context.Context, c tenant.CommunityID, req MintRequest) (string, store.APIToken, error) {
	if !nostr.IsLowerHex(req.PubKey, 64) {
		return "", store.APIToken{}, errors.New("invalid: the token's pubkey must be 64 lowercase hex characters")
	}
	if err := validName(req.Name); err != nil {
		return "", store.APIToken{}, err
	}
	scopes, err := ParseScopes(Strings(req.Scopes)...)
	if err != nil {
		return "", store.APIToken{}, err
	}
	if req.ExpiresIn != 0 && (req.ExpiresIn < MinLifetime || req.ExpiresIn > MaxLifetime) {
		return "", store.APIToken{}, errors.New("invalid: a token expires in 1 hour to 365 days, or never")
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	token, hash := Generate()
	now := s.now().UTC().Truncate(time.Second)
	t := store.APIToken{Community: c, ID: hex.EncodeToString(id[:]), Hash: hash, Owner: req.PubKey, Name: req.Name,
		Scopes: Strings(scopes), CreatedBy: audit.ActorFrom(ctx), CreatedAt: now}
	if req.ExpiresIn != 0 {
		t.ExpiresAt = now.Add(req.ExpiresIn)
	}
	if err := s.st.CreateAPIToken(ctx, t); err != nil {
		return "", store.APIToken{}, err
	}
	return token, t, nil
}

func validName(n string) error {
	if n == "" || len(n) > store.MaxTokenNameLen || !utf8.ValidString(n) ||
		strings.IndexFunc(n, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("invalid: a token's name is 1 to %d bytes of printable text", store.MaxTokenNameLen)
	}
	return nil
}

// List returns c's tokens, newest first, revoked and expired ones
// included. Records hold the tokens' hashes, never the tokens.
func (s *Service) List(ctx context.Context, c tenant.CommunityID) ([]store.APIToken, error) {
	return s.st.APITokens(ctx, c)
}

// Revoke revokes c's token id (the revoker is audit.ActorFrom(ctx)) and
// publishes control.TokenRevoked on the bus (WithBus) — also when it was
// revoked already, so that revoking again re-announces it. changed is
// false when it was. store.ErrNoToken when c has no such token. A failed
// publish is returned after the revocation committed: the token is
// refused over HTTP at once either way; connections that authenticated
// with it stay open on other processes until they are told.
func (s *Service) Revoke(ctx context.Context, c tenant.CommunityID, id string) (t store.APIToken, changed bool, err error) {
	t, changed, err = s.st.RevokeAPIToken(ctx, c, id, s.now())
	if err != nil {
		return t, false, err
	}
	if s.bus != nil {
		if err := s.bus.PublishControl(context.WithoutCancel(ctx), c, control.TokenRevoked{Token: t.ID}); err != nil {
			return t, changed, fmt.Errorf("apitoken: revoked, but publishing the revocation failed: %w", err)
		}
	}
	return t, changed, nil
}

// Authenticate returns the grant of token in community c, or
// ErrInvalidToken (malformed, or unknown in c — a token of another
// community is unknown), ErrTokenRevoked or ErrTokenExpired (by the
// service's clock); the last two are recorded in c's audit chain
// (store.AuditTokenRefused). Other errors are the store's.
func (s *Service) Authenticate(ctx context.Context, c tenant.CommunityID, token string) (Grant, error) {
	if !WellFormed(token) {
		return Grant{}, ErrInvalidToken
	}
	t, err := s.st.APITokenByHash(ctx, c, Hash(token))
	if errors.Is(err, store.ErrNoToken) {
		return Grant{}, ErrInvalidToken
	}
	if err != nil {
		return Grant{}, err
	}
	g := Grant{ID: t.ID, PubKey: t.Owner, ExpiresAt: t.ExpiresAt}
	switch {
	case t.Revoked():
		s.refused(ctx, c, &g, "revoked", "")
		return Grant{}, ErrTokenRevoked
	case t.Expired(s.now()):
		s.refused(ctx, c, &g, "expired", "")
		return Grant{}, ErrTokenExpired
	}
	for _, n := range t.Scopes {
		if sc := Scope(n); sc.Valid() {
			g.Scopes = append(g.Scopes, sc)
		}
	}
	return g, nil
}

// Check returns "" when g allows need now, else the refusal a client
// sees — InsufficientScope(need), or ErrTokenExpired's message once g has
// expired — recording it in c's audit chain.
func (s *Service) Check(ctx context.Context, c tenant.CommunityID, g *Grant, need Scope) string {
	if g.Expired(s.now()) {
		s.refused(ctx, c, g, "expired", "")
		return ErrTokenExpired.Message
	}
	if g.Allows(need) {
		return ""
	}
	s.refused(ctx, c, g, "scope", need)
	return InsufficientScope(need)
}

// refused records a refusal of g in c's chain; a failure is logged (the
// refusal itself stands).
func (s *Service) refused(ctx context.Context, c tenant.CommunityID, g *Grant, reason string, need Scope) {
	if s.audit == nil {
		return
	}
	d := map[string]any{"reason": reason}
	if need != "" {
		d["scope"] = string(need)
	}
	rec := audit.Record{Action: store.AuditTokenRefused, Actor: g.PubKey, Object: g.ID, Detail: d, Time: s.now()}
	if err := s.audit.AppendAudit(context.WithoutCancel(ctx), c, rec); err != nil {
		s.logger.WarnContext(ctx, "apitoken: audit refusal", "community", c.String(), "err", err)
	}
}
