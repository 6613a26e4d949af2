package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// SettingsStore is what the profile, policy and kinds routes change: a
// community's own self-description (store.ProfileStore), its access
// policy and its kind allow-list (store.CommunityKindsStore). store/embedded and store/postgres implement it; both record every
// change in the community's audit chain, with the caller (audit.WithActor)
// as actor.
type SettingsStore interface {
	store.ProfileStore
	store.CommunityKindsStore
	CommunityAccess(ctx context.Context, c tenant.CommunityID) (channel.AccessPolicy, error)
	SetCommunityAccess(ctx context.Context, c tenant.CommunityID, p channel.AccessPolicy) error
}

// WithSettingsStore enables the profile and policy routes (operator
// /operator/communities/profile and /policy, and the owner API). Without it
// those routes answer 404.
func WithSettingsStore(s SettingsStore) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("operator: nil SettingsStore")
		}
		c.settings = s
		return nil
	}
}

// ProfileRequest is the body of POST /operator/communities/profile: the
// community's whole profile (fields left out are cleared).
type ProfileRequest struct {
	Host string `json:"host"`
	store.CommunityProfile
}

// PolicyRequest is the body of POST /operator/communities/policy.
type PolicyRequest struct {
	Host   string `json:"host"`
	Access string `json:"access"` // "open" or "members"
}

// KindsRequest is the body of POST /operator/communities/kinds: the
// community's kind allow-list, in messaging.ParseKinds' text ("off",
// "buzz", "buzz,30023,5000-5999"), or "" (or "default") to follow the
// relay's list.
type KindsRequest struct {
	Host  string `json:"host"`
	Kinds string `json:"kinds"`
}

// SettingsResponse answers the profile, policy and kinds routes: the
// community's settings after the call. Kinds is "" while the community
// follows the relay's kind allow-list.
type SettingsResponse struct {
	CommunityID string                 `json:"community_id"`
	Host        string                 `json:"host"`
	Profile     store.CommunityProfile `json:"profile"`
	Access      string                 `json:"access"`
	Kinds       string                 `json:"kinds"`
}

// Code of a profile refused by store.CommunityProfile.Validate, and of an
// unknown access policy.
const (
	CodeInvalidProfile = "invalid_profile" // 400
	CodeInvalidPolicy  = "invalid_policy"  // 400
	CodeInvalidKinds   = "invalid_kinds"   // 400
)

// settingsOf returns c's settings.
func settingsOf(ctx context.Context, s SettingsStore, id tenant.CommunityID, host string) (SettingsResponse, error) {
	p, err := s.CommunityProfile(ctx, id)
	if err != nil {
		return SettingsResponse{}, err
	}
	a, err := s.CommunityAccess(ctx, id)
	if err != nil {
		return SettingsResponse{}, err
	}
	k, err := s.CommunityKinds(ctx, id)
	if err != nil {
		return SettingsResponse{}, err
	}
	return SettingsResponse{CommunityID: id.String(), Host: host, Profile: p, Access: string(a), Kinds: k}, nil
}

// setKinds validates and stores kinds, a community's kind allow-list ("" or
// "default": the relay's). Relay processes read it anew within seconds.
func setKinds(ctx context.Context, s SettingsStore, id tenant.CommunityID, kinds string) error {
	kinds = strings.TrimSpace(kinds)
	if kinds == "default" {
		kinds = ""
	}
	if len(kinds) > store.MaxKindsSetting {
		return errorf(http.StatusBadRequest, CodeInvalidKinds, fmt.Sprintf("kinds: at most %d bytes", store.MaxKindsSetting))
	}
	if kinds != "" {
		if _, err := messaging.ParseKinds(kinds); err != nil {
			return errorf(http.StatusBadRequest, CodeInvalidKinds, err.Error())
		}
	}
	return s.SetCommunityKinds(ctx, id, kinds)
}

// setProfile validates and stores p for id.
func setProfile(ctx context.Context, s SettingsStore, id tenant.CommunityID, p store.CommunityProfile) error {
	if err := p.Validate(); err != nil {
		return errorf(http.StatusBadRequest, CodeInvalidProfile, err.Error())
	}
	return s.SetCommunityProfile(ctx, id, p)
}

// setPolicy parses and stores access for id, then tells every relay
// process through pub (when set): their cached policies go, and a switch to
// members-only closes non-members' live subscriptions at once. A failed
// publish is logged: the policy is stored, and caches expire within
// seconds.
func setPolicy(ctx context.Context, s SettingsStore, pub ControlPublisher, log *slog.Logger, id tenant.CommunityID, access string) error {
	p := channel.AccessPolicy(access)
	if !p.Valid() {
		return errorf(http.StatusBadRequest, CodeInvalidPolicy, `access must be "open" or "members"`)
	}
	if err := s.SetCommunityAccess(ctx, id, p); err != nil {
		return err
	}
	if pub != nil {
		if err := pub.PublishControl(ctx, id, control.PolicyChanged{Access: string(p)}); err != nil {
			log.WarnContext(ctx, "operator: other processes not told of the policy change", "community", id.String(), "err", err)
		}
	}
	return nil
}

// communityOf resolves a request's host field to its community.
func (h *Handler) communityOf(ctx context.Context, raw string) (store.Community, error) {
	host, err := candidateHost(raw)
	if err != nil {
		return store.Community{}, err
	}
	c, err := h.store.CommunityByHost(ctx, host)
	if err != nil {
		return store.Community{}, h.storeError(err)
	}
	return c, nil
}

func (h *Handler) getSettings(ctx context.Context, _ string, r *http.Request, _ []byte) (int, any, error) {
	raw, err := query(r, "host")
	if err != nil {
		return 0, nil, err
	}
	c, err := h.communityOf(ctx, raw)
	if err != nil {
		return 0, nil, err
	}
	resp, err := settingsOf(ctx, h.settings, c.ID, c.Host)
	if err != nil {
		return 0, nil, h.storeError(err)
	}
	return http.StatusOK, resp, nil
}

func (h *Handler) postProfile(ctx context.Context, actor string, _ *http.Request, body []byte) (int, any, error) {
	var req ProfileRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	c, err := h.communityOf(ctx, req.Host)
	if err != nil {
		return 0, nil, err
	}
	if err := setProfile(ctx, h.settings, c.ID, req.CommunityProfile); err != nil {
		return 0, nil, h.storeError(err)
	}
	h.log.InfoContext(ctx, "operator: community profile set", "operator", actor, "community", c.ID.String())
	resp, err := settingsOf(ctx, h.settings, c.ID, c.Host)
	if err != nil {
		return 0, nil, h.storeError(err)
	}
	return http.StatusOK, resp, nil
}

func (h *Handler) postKinds(ctx context.Context, actor string, _ *http.Request, body []byte) (int, any, error) {
	var req KindsRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	c, err := h.communityOf(ctx, req.Host)
	if err != nil {
		return 0, nil, err
	}
	if err := setKinds(ctx, h.settings, c.ID, req.Kinds); err != nil {
		return 0, nil, h.storeError(err)
	}
	h.log.InfoContext(ctx, "operator: community kinds set", "operator", actor, "community", c.ID.String(), "kinds", req.Kinds)
	resp, err := settingsOf(ctx, h.settings, c.ID, c.Host)
	if err != nil {
		return 0, nil, h.storeError(err)
	}
	return http.StatusOK, resp, nil
}

func (h *Handler) postPolicy(ctx context.Context, actor string, _ *http.Request, body []byte) (int, any, error) {
	var req PolicyRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	c, err := h.communityOf(ctx, req.Host)
	if err != nil {
		return 0, nil, err
	}
	if err := setPolicy(ctx, h.settings, h.publisher, h.log, c.ID, req.Access); err != nil {
		return 0, nil, h.storeError(err)
	}
	h.log.InfoContext(ctx, "operator: community policy set", "operator", actor, "community", c.ID.String(), "access", req.Access)
	resp, err := settingsOf(ctx, h.settings, c.ID, c.Host)
	if err != nil {
		return 0, nil, h.storeError(err)
	}
	return http.StatusOK, resp, nil
}
