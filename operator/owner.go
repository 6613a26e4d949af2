package operator

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// OwnerAPI lets a community's owner change the community's own settings on
// the community's own host, without the operator:
//
//	GET  /community            {community_id, host, profile, access, kinds}
//	POST /community/profile    {name, description, icon, contact} (the whole profile)
//	POST /community/policy     {access: "open"|"members"}
//	POST /community/kinds      {kinds: "off"|"buzz"|"buzz,30023,…"|"" (the relay's)}
//
// Each request carries a NIP-98 header signed by the community's owner
// (store.Community.OwnerPubKey; a community without owner has no owner
// API) whose u tag is the community's origin — Scheme and the request's
// host — plus path and query, with a payload tag on POST; an event is
// usable once in the community's replay scope. Answers and errors are
// those of the operator API (403 not_owner for another signer). Changes
// are recorded in the community's audit chain with the owner as actor.
//
// Mount ServeCommunity on the community hosts (buzz.Relay.HandleCommunity),
// which binds the host first: an unmapped host never reaches it.
type OwnerAPI struct {
	registry  Store
	settings  SettingsStore
	verifier  *nip98.Verifier
	publisher ControlPublisher
	scheme    string
	log       *slog.Logger
}

// OwnerConfig configures NewOwnerAPI. Registry, Settings and Verifier are
// required; Scheme is "https" (default) or "http"; Publisher, when set,
// tells every relay process of a policy change at once; Logger defaults to
// slog.Default().
type OwnerConfig struct {
	Registry  Store
	Settings  SettingsStore
	Verifier  *nip98.Verifier
	Publisher ControlPublisher
	Scheme    string
	Logger    *slog.Logger
}

// CodeNotOwner: a valid signer who is not the community's owner (403).
const CodeNotOwner = "not_owner"

// NewOwnerAPI returns the owner API configured by cfg.
func NewOwnerAPI(cfg OwnerConfig) (*OwnerAPI, error) {
	if cfg.Registry == nil || cfg.Settings == nil || cfg.Verifier == nil {
		return nil, errors.New("operator: owner API needs a registry, a settings store and a NIP-98 verifier")
	}
	switch cfg.Scheme {
	case "":
		cfg.Scheme = "https"
	case "http", "https":
	default:
		return nil, errors.New(`operator: owner API scheme must be "http" or "https"`)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &OwnerAPI{registry: cfg.Registry, settings: cfg.Settings, verifier: cfg.Verifier, publisher: cfg.Publisher,
		scheme: cfg.Scheme, log: cfg.Logger}, nil
}

// Patterns are the net/http.ServeMux patterns ServeCommunity answers.
func (o *OwnerAPI) Patterns() []string {
	return []string{"/community", "/community/profile", "/community/policy", "/community/kinds"}
}

// ServeCommunity serves one owner request bound to tc (see OwnerAPI).
func (o *OwnerAPI) ServeCommunity(w http.ResponseWriter, r *http.Request, tc tenant.TenantContext) {
	var method string
	var fn func(ctx context.Context, c store.Community, body []byte) error
	switch r.URL.Path {
	case "/community":
		method = http.MethodGet
	case "/community/profile":
		method, fn = http.MethodPost, func(ctx context.Context, c store.Community, body []byte) error {
			var p store.CommunityProfile
			if err := decode(body, &p); err != nil {
				return err
			}
			return setProfile(ctx, o.settings, c.ID, p)
		}
	case "/community/policy":
		method, fn = http.MethodPost, func(ctx context.Context, c store.Community, body []byte) error {
			var req struct {
				Access string `json:"access"`
			}
			if err := decode(body, &req); err != nil {
				return err
			}
			return setPolicy(ctx, o.settings, o.publisher, o.log, c.ID, req.Access)
		}
	case "/community/kinds":
		method, fn = http.MethodPost, func(ctx context.Context, c store.Community, body []byte) error {
			var req struct {
				Kinds string `json:"kinds"`
			}
			if err := decode(body, &req); err != nil {
				return err
			}
			return setKinds(ctx, o.settings, c.ID, req.Kinds)
		}
	default:
		writeError(w, errorf(http.StatusNotFound, CodeNotFound, "not found"))
		return
	}
	if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
		w.Header().Set("Allow", method)
		writeError(w, errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed"))
		return
	}
	body, aerr := readBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	signer, aerr := verifyNIP98(o.verifier, o.log, r, body, o.scheme+"://"+tc.Host(), nip98.CommunityScope(tc.Community()))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	ctx := audit.WithActor(r.Context(), signer)
	c, err := o.registry.CommunityByHost(ctx, tc.Host())
	if err == nil && c.ID != tc.Community() {
		err = store.ErrNoCommunity // re-pointed meanwhile: answer as if unknown
	}
	if err == nil && (c.OwnerPubKey == "" || c.OwnerPubKey != signer) {
		err = errorf(http.StatusForbidden, CodeNotOwner, "actor not authorized: not this community's owner")
	}
	if err == nil && fn != nil {
		if err = fn(ctx, c, body); err == nil {
			o.log.InfoContext(ctx, "owner: community settings changed", "owner", signer, "community", c.ID.String(), "path", r.URL.Path)
		}
	}
	var resp SettingsResponse
	if err == nil {
		resp, err = settingsOf(ctx, o.settings, c.ID, c.Host)
	}
	if err != nil {
		var ae *apiError
		switch {
		case errors.As(err, &ae):
		case errors.Is(err, store.ErrNoCommunity):
			ae = errorf(http.StatusNotFound, CodeCommunityNotFound, "community not found")
		default:
			o.log.ErrorContext(ctx, "owner: request failed", "path", r.URL.Path, "err", err)
			ae = errorf(http.StatusInternalServerError, CodeInternal, internalMessage)
		}
		writeError(w, ae)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}
