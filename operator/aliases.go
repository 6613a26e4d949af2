package operator

import (
	"context"
	"errors"
	"net/http"

	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Host aliases: further hosts that select a community. An alias is
// normalized and validated like a community's host, is unique across every
// host and alias of every community, and serves the same community with
// its own binding — NIP-42 AUTH and NIP-98 on the alias name the alias
// host. Adding and removing one is recorded in the community's audit
// chain.
//
//	POST /operator/communities/aliases         {community_id, alias}  201 added
//	POST /operator/communities/aliases/remove  {alias}                200 removed
//
// Errors: 400 invalid_host / invalid_community_id, 404 community_not_found
// (unknown community, or no such alias to remove), 409 community_exists
// (the alias is already a host or an alias).

// AliasStore is the registry's host aliases. store/embedded and
// store/postgres implement it; a Store without it serves no alias routes.
type AliasStore interface {
	// AddHostAlias maps alias (which must pass tenant.ValidateHost, else
	// store.ErrInvalidHost) to community id: store.ErrCommunityExists when
	// it already is a host or an alias, store.ErrNoCommunity when id is
	// unknown.
	AddHostAlias(ctx context.Context, alias string, id tenant.CommunityID) error
	// RemoveHostAlias unmaps alias and returns the community it served;
	// store.ErrNoCommunity when it is no alias.
	RemoveHostAlias(ctx context.Context, alias string) (tenant.CommunityID, error)
}

// AliasRequest is the body of the alias routes (CommunityID only to add).
type AliasRequest struct {
	CommunityID string `json:"community_id,omitempty"`
	Alias       string `json:"alias"`
}

// AliasResponse answers the alias routes. Status is "added" or "removed";
// Alias is the normalized alias.
type AliasResponse struct {
	CommunityID string `json:"community_id"`
	Alias       string `json:"alias"`
	Status      string `json:"status"`
}

// aliasRoute returns the handler of an alias path, or nil.
func (h *Handler) aliasRoute(path string) func(ctx context.Context, actor string, r *http.Request, body []byte) (int, any, error) {
	switch path {
	case "/operator/communities/aliases":
		return h.addAlias
	case "/operator/communities/aliases/remove":
		return h.removeAlias
	}
	return nil
}

func (h *Handler) aliasStore() (AliasStore, error) {
	as, ok := h.store.(AliasStore)
	if !ok {
		return nil, errorf(http.StatusNotFound, CodeNotFound, "not found")
	}
	return as, nil
}

func (h *Handler) addAlias(ctx context.Context, actor string, _ *http.Request, body []byte) (int, any, error) {
	as, err := h.aliasStore()
	if err != nil {
		return 0, nil, err
	}
	var req AliasRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	u, ok := parseUUID(req.CommunityID)
	if !ok {
		return 0, nil, errorf(http.StatusBadRequest, CodeInvalidCommunity, "community_id must be a UUID")
	}
	alias, err := candidateHost(req.Alias)
	if err != nil {
		return 0, nil, err
	}
	id := tenant.FromUUID(u)
	if err := as.AddHostAlias(ctx, alias, id); err != nil {
		return 0, nil, h.storeError(err)
	}
	h.aliasChanged(ctx, id, alias) // drop a cached "unmapped" everywhere
	h.log.InfoContext(ctx, "operator: host alias added", "operator", actor, "community", id.String(), "alias", alias)
	return http.StatusCreated, AliasResponse{CommunityID: id.String(), Alias: alias, Status: "added"}, nil
}

func (h *Handler) removeAlias(ctx context.Context, actor string, _ *http.Request, body []byte) (int, any, error) {
	as, err := h.aliasStore()
	if err != nil {
		return 0, nil, err
	}
	var req AliasRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	if req.CommunityID != "" {
		return 0, nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "remove takes only the alias")
	}
	alias, err := candidateHost(req.Alias)
	if err != nil {
		return 0, nil, err
	}
	id, err := as.RemoveHostAlias(ctx, alias)
	if errors.Is(err, store.ErrNoCommunity) {
		return 0, nil, errorf(http.StatusNotFound, CodeCommunityNotFound, "no such alias")
	}
	if err != nil {
		return 0, nil, err
	}
	h.aliasChanged(ctx, id, alias)
	h.log.InfoContext(ctx, "operator: host alias removed", "operator", actor, "community", id.String(), "alias", alias)
	return http.StatusOK, AliasResponse{CommunityID: id.String(), Alias: alias, Status: "removed"}, nil
}

// aliasChanged makes an alias change take effect at once on every process
// (their host caches forget the alias); a failed publish is logged: other
// processes then see it when their cache entry expires. The message is
// AliasOnly: it says nothing about whether the community is archived, so
// it neither fences nor unfences it anywhere.
func (h *Handler) aliasChanged(ctx context.Context, id tenant.CommunityID, alias string) {
	if err := h.hostsChanged(ctx, id, control.HostsChanged{Hosts: []string{alias}, AliasOnly: true}); err != nil {
		h.log.WarnContext(ctx, "operator: alias change not confirmed on every process", "alias", alias, "err", err)
	}
}
