// Package tokenhttp lets a community's owner and admins mint, list and
// revoke the community's API tokens (package apitoken) over HTTP, as a
// feature mounted on a relay:
//
//	buzz.WithFeature(tokenhttp.New(svc))
//
// with the same *apitoken.Service given to buzz.WithAPITokens. Every route
// is on the community's own host and takes NIP-98 only — a token never
// mints, lists or revokes tokens — signed by an owner or admin of the
// community who is not banned:
//
//	POST   /tokens       {"name": "ci bot", "scopes": ["messages:read"], "expires_in": 86400}
//	                     → 201 {"token": "buzz_…", "id", "pubkey", "name", "scopes",
//	                     "created_at", "expires_at"}: the token acts as the signer;
//	                     expires_in is seconds (3600 to 365 days), 0 or absent never
//	                     expires. The token is in this answer only: the relay keeps
//	                     its SHA-256.
//	GET    /tokens       → 200 {"tokens": [{"id", "pubkey", "name", "scopes",
//	                     "created_by", "created_at", "expires_at", "revoked_at"}, …]},
//	                     newest first, revoked and expired ones included.
//	DELETE /tokens/{id}  → 200 {"id", "revoked": true}; revoking again is 200 with
//	                     "revoked": false. Every pod refuses it at once and closes
//	                     its connections (apitoken.WithBus).
//
// Refusals are the HTTP API's JSON errors: 401 without a valid NIP-98
// authorization; 403 "restricted: …" for a token-authenticated request, a
// signer who is not the owner or an admin, or a banned one; 400
// "invalid: …" for a bad body (nothing is minted); 404 for an id the
// community does not hold (another community's included); 409
// "conflict: …" when the signer already holds apitoken's limit of active
// tokens. Minting and revoking are recorded in the community's audit
// chain with the signer as actor.
package tokenhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Path is where the routes are mounted on every community host.
const Path = "/tokens"

// Refusals of the routes.
const (
	MsgTokenAuth   = "restricted: API tokens are managed with NIP-98, not with a token"
	MsgNotAdmin    = "restricted: only the community's owner and admins manage its API tokens"
	MsgBadBody     = "invalid: want a JSON object {\"name\", \"scopes\", \"expires_in\"}"
	MsgNoToken     = "invalid: no such token"
	msgTokenLimitF = "conflict: you already hold %d active tokens in this community; revoke one first"
)

// Feature serves the routes; New makes one.
type Feature struct {
	svc *apitoken.Service
	h   buzz.Host
}

// New returns the feature over svc, the service the relay authenticates
// tokens with (buzz.WithAPITokens). It panics on a nil svc.
func New(svc *apitoken.Service) *Feature {
	if svc == nil {
		panic("tokenhttp: New: nil service")
	}
	return &Feature{svc: svc}
}

// Mount mounts the routes. It fails on a relay that authenticates no HTTP
// requests (buzz.WithHTTPAuth).
func (f *Feature) Mount(h buzz.Host) error {
	if !h.HTTPAuth() {
		return errors.New("tokenhttp: the relay authenticates no HTTP requests (buzz.WithHTTPAuth)")
	}
	f.h = h
	h.HandleCommunity("POST "+Path, f.serveMint)
	h.HandleCommunity("GET "+Path, f.serveList)
	h.HandleCommunity("DELETE "+Path+"/{id}", f.serveRevoke)
	return nil
}

// admin authenticates the request and checks the signer may manage tc's
// tokens. It answers the request itself when ok is false.
func (f *Feature) admin(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) (buzz.HTTPCaller, bool) {
	caller, ok := f.h.AuthenticateHTTP(w, req, tc)
	if !ok {
		return caller, false
	}
	if caller.Token != nil {
		apijson.Refusal(w, MsgTokenAuth)
		return caller, false
	}
	ctx := req.Context()
	reason, err := f.h.Admitted(ctx, tc, caller.PubKey)
	if err == nil && reason == "" {
		role, member, rerr := f.h.CommunityRole(ctx, tc, caller.PubKey)
		err = rerr
		if !member || !apitoken.MayMint(role) {
			reason = MsgNotAdmin
		}
	}
	if err != nil {
		f.internalError(w, req, "authorize", err)
		return caller, false
	}
	if reason != "" {
		apijson.Refusal(w, reason)
		return caller, false
	}
	return caller, true
}

type mintBody struct {
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes"`
	ExpiresIn int64    `json:"expires_in"`
}

func (f *Feature) serveMint(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	caller, ok := f.admin(w, req, tc)
	if !ok {
		return
	}
	var b mintBody
	dec := json.NewDecoder(bytes.NewReader(caller.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || dec.More() {
		apijson.Refusal(w, MsgBadBody)
		return
	}
	if b.ExpiresIn < 0 || b.ExpiresIn > int64(apitoken.MaxLifetime/time.Second) {
		apijson.Refusal(w, "invalid: a token expires in 1 hour to 365 days, or never")
		return
	}
	scopes, err := apitoken.ParseScopes(b.Scopes...)
	if err != nil {
		apijson.Refusal(w, err.Error())
		return
	}
	if len(scopes) == 0 {
		apijson.Refusal(w, "invalid: a token needs at least one scope")
		return
	}
	ctx := audit.WithActor(req.Context(), caller.PubKey)
	token, t, err := f.svc.Mint(ctx, tc.Community(), apitoken.MintRequest{
		PubKey: caller.PubKey, Name: b.Name, Scopes: scopes, ExpiresIn: time.Duration(b.ExpiresIn) * time.Second,
	})
	switch {
	case errors.Is(err, store.ErrTokenLimit):
		apijson.Refusal(w, fmt.Sprintf(msgTokenLimitF, store.MaxActiveTokens))
		return
	case err != nil && apijson.Status(err.Error()) == http.StatusBadRequest:
		apijson.Refusal(w, err.Error())
		return
	case err != nil:
		f.internalError(w, req, "mint", err)
		return
	}
	j := apitoken.NewView(t)
	j.Token = token
	w.Header().Set("Cache-Control", "no-store")
	apijson.Write(w, http.StatusCreated, j)
}

func (f *Feature) serveList(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	if _, ok := f.admin(w, req, tc); !ok {
		return
	}
	ts, err := f.svc.List(req.Context(), tc.Community())
	if err != nil {
		f.internalError(w, req, "list", err)
		return
	}
	out := make([]apitoken.View, len(ts))
	for i, t := range ts {
		out[i] = apitoken.NewView(t)
	}
	apijson.Write(w, http.StatusOK, map[string]any{"tokens": out})
}

func (f *Feature) serveRevoke(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	caller, ok := f.admin(w, req, tc)
	if !ok {
		return
	}
	ctx := audit.WithActor(req.Context(), caller.PubKey)
	t, changed, err := f.svc.Revoke(ctx, tc.Community(), req.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNoToken):
		apijson.Error(w, http.StatusNotFound, "not_found", MsgNoToken)
		return
	case err != nil && t.ID == "":
		f.internalError(w, req, "revoke", err)
		return
	case err != nil:
		// Revoked, but the other pods were not told: say so, it stands.
		f.h.Logger().ErrorContext(req.Context(), "tokenhttp: revoke", "err", err)
	}
	apijson.Write(w, http.StatusOK, map[string]any{"id": t.ID, "revoked": changed})
}

func (f *Feature) internalError(w http.ResponseWriter, req *http.Request, what string, err error) {
	f.h.Logger().ErrorContext(req.Context(), "tokenhttp: "+what, "err", err)
	apijson.Error(w, http.StatusInternalServerError, "error", apijson.MsgInternal)
}
