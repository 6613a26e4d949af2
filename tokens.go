package buzz

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// API tokens (package apitoken) in the relay: an HTTP request presents one
// as "Authorization: Bearer buzz_…" (authorize); a connection in a NIP-42
// AUTH event signed by the pubkey the token acts as, in an "auth_token"
// tag (authToken). Either then does exactly what the token's scopes allow:
// an EVENT needs apitoken.ScopeForEvent, a REQ or COUNT messages:read;
// HTTP routes declare what they need (Host.AuthenticateHTTP). A revoked
// token's connections are closed on every process (control.TokenRevoked).

// WithAPITokens accepts the API tokens of s on HTTP requests and in
// NIP-42 AUTH events (see package apitoken). Give s the deployment's
// control bus (apitoken.WithBus) so that a revocation closes the
// connections of every process.
func WithAPITokens(s *apitoken.Service) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("buzz: WithAPITokens: nil service")
		}
		c.tokens = s
		return nil
	}
}

// HTTPCaller is who an authenticated HTTP request acts as (see
// Host.AuthenticateHTTP).
type HTTPCaller struct {
	// PubKey is the NIP-98 signer, or the pubkey the API token acts as.
	PubKey string
	// Body is the request's body (at most MaxHTTPBodyBytes).
	Body []byte
	// Token is the API token's grant; nil for a NIP-98 request, which may
	// do whatever its signer may.
	Token *apitoken.Grant
}

// Allows reports whether the caller's credentials allow s: always for
// NIP-98, the token's scopes otherwise. It says nothing about the
// pubkey's own rights (membership, roles), which apply as well.
func (c HTTPCaller) Allows(s apitoken.Scope) bool { return c.Token == nil || c.Token.Allows(s) }

// authorize reads the body (at most MaxHTTPBodyBytes) and authenticates
// the request for tc's host: an API token (Bearer, when WithAPITokens),
// else NIP-98. A token must allow every scope of need, checked here with
// the refusal audited. It answers the request itself and returns ok false
// on any failure: 401 for bad credentials (the token refusals' codes are
// apitoken.Error's), 403 "restricted: insufficient scope (need …)".
func (r *Relay) authorize(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, need ...apitoken.Scope) (HTTPCaller, bool) {
	token, bearer := apitoken.FromAuthorization(req.Header.Get("Authorization"))
	if !bearer {
		if r.cfg.httpAuth == nil {
			drainBody(req)
			w.Header().Set("WWW-Authenticate", nip98.Scheme)
			apiError(w, http.StatusUnauthorized, "unauthorized", "auth-required: this relay authenticates no HTTP requests")
			return HTTPCaller{}, false
		}
		pk, body, ok := r.authenticate(w, req, tc)
		return HTTPCaller{PubKey: pk, Body: body}, ok
	}
	body, ok := r.readBody(w, req)
	if !ok {
		return HTTPCaller{}, false
	}
	if r.cfg.tokens == nil {
		w.Header().Set("WWW-Authenticate", nip98.Scheme)
		apiError(w, http.StatusUnauthorized, apitoken.ErrInvalidToken.Code, "auth-required: this relay accepts no API tokens")
		return HTTPCaller{}, false
	}
	g, err := r.cfg.tokens.Authenticate(req.Context(), tc.Community(), token)
	if err != nil {
		var te *apitoken.Error
		if !errors.As(err, &te) {
			r.internalError(w, req, "API token lookup", err)
			return HTTPCaller{}, false
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		apiError(w, http.StatusUnauthorized, te.Code, te.Message)
		return HTTPCaller{}, false
	}
	for _, s := range need {
		if reason := r.cfg.tokens.Check(req.Context(), tc.Community(), &g, s); reason != "" {
			refusal(w, reason)
			return HTTPCaller{}, false
		}
	}
	return HTTPCaller{PubKey: g.PubKey, Body: body, Token: &g}, true
}

// checkCaller is authorize's scope check for a scope known only once the
// body was read (the kind of a POSTed event): "" when c may, else the
// refusal (audited).
func (r *Relay) checkCaller(ctx context.Context, tc tenant.TenantContext, c HTTPCaller, need apitoken.Scope) string {
	if c.Token == nil {
		return ""
	}
	return r.cfg.tokens.Check(ctx, tc.Community(), c.Token, need)
}

// authToken authenticates the API token of ev, a NIP-42 AUTH event whose
// signature, challenge and relay were verified: the token must belong to
// this community and act as ev's signer. It returns the grant, or the
// refusal the AUTH's OK carries.
func (c *conn) authToken(ev *nostr.Event, token string) (*apitoken.Grant, string) {
	if c.r.cfg.tokens == nil {
		return nil, "auth-required: this relay accepts no API tokens"
	}
	g, err := c.r.cfg.tokens.Authenticate(c.ctx, c.tc.Community(), token)
	if err != nil {
		var te *apitoken.Error
		if errors.As(err, &te) {
			return nil, te.Message
		}
		c.log.ErrorContext(c.ctx, "buzz: API token lookup", "err", err)
		return nil, msgInternal
	}
	if g.PubKey != ev.PubKey {
		// Buzz: the AUTH event must be signed by the pubkey the token acts as.
		return nil, apitoken.ErrInvalidToken.Message
	}
	return &g, ""
}

// tokenOf returns the AUTH event's "auth_token" value; ok is false when it
// has none. More than one is refused.
func tokenOf(ev *nostr.Event) (token string, ok bool, reason string) {
	tags := ev.Tags.All("auth_token")
	switch len(tags) {
	case 0:
		return "", false, ""
	case 1:
		return tags[0][1], true, ""
	}
	return "", true, "invalid: AUTH event must carry at most one auth_token tag"
}

// grantOf returns the token grant pubkey authenticated with on this
// connection, nil when it authenticated without one (or not at all).
func (c *conn) grantOf(pubkey string) *apitoken.Grant {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.grants[pubkey]
}

// checkScope returns "" when the connection may act as pubkey for need —
// pubkey authenticated without a token, or with one that allows need —
// else the refusal (audited).
func (c *conn) checkScope(pubkey string, need apitoken.Scope) string {
	g := c.grantOf(pubkey)
	if g == nil {
		return ""
	}
	return c.r.cfg.tokens.Check(c.ctx, c.tc.Community(), g, need)
}

// readScope returns the refusal of a REQ or COUNT on a connection every
// authenticated pubkey of which holds a token without messages:read (a
// connection with a reader of its own is never refused), or "".
func (c *conn) readScope() string {
	c.mu.Lock()
	var limited []string
	for _, p := range c.authed {
		g := c.grants[p]
		if g == nil || g.Allows(apitoken.MessagesRead) {
			c.mu.Unlock()
			return ""
		}
		limited = append(limited, p)
	}
	c.mu.Unlock()
	if len(limited) == 0 {
		return ""
	}
	return c.checkScope(limited[0], apitoken.MessagesRead)
}

// tokenRevoked closes every connection of community on this process that
// authenticated with the token id.
func (r *Relay) tokenRevoked(community tenant.CommunityID, id string) {
	if id == "" {
		return
	}
	for _, c := range r.connsOf(community, nil) {
		c.mu.Lock()
		hit := false
		for _, g := range c.grants {
			if g.ID == id {
				hit = true
			}
		}
		c.mu.Unlock()
		if hit {
			c.beginClose(websocket.ClosePolicyViolation, apitoken.ErrTokenRevoked.Message)
		}
	}
}

// drainBody discards the body of a refused request (at most
// MaxHTTPBodyBytes).
func drainBody(req *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, MaxHTTPBodyBytes))
}
