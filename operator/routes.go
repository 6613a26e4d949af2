package operator

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
)

// CreateRequest is the body of POST /operator/communities.
type CreateRequest struct {
	Host               string `json:"host"`
	InitialOwnerPubKey string `json:"initial_owner_pubkey,omitempty"`
	CreateOnly         bool   `json:"create_only,omitempty"`
}

// CreateResponse answers POST /operator/communities: 201 with status
// "created", or 200 with status "existed".
type CreateResponse struct {
	CommunityID string  `json:"community_id"`
	Host        string  `json:"host"`
	Status      string  `json:"status"`
	OwnerPubKey *string `json:"owner_pubkey,omitempty"`
}

// CommunitySummary is one entry of ListResponse.
type CommunitySummary struct {
	CommunityID string  `json:"community_id"`
	Host        string  `json:"host"`
	CreatedAt   string  `json:"created_at"`  // RFC 3339, UTC
	ArchivedAt  *string `json:"archived_at"` // RFC 3339, UTC; null while active
}

// ListResponse answers GET /operator/communities?owner_pubkey=….
type ListResponse struct {
	OwnerPubKey            string             `json:"owner_pubkey"`
	MaxCommunitiesPerOwner int                `json:"max_communities_per_owner"`
	Communities            []CommunitySummary `json:"communities"`
}

// AvailabilityResponse answers GET /operator/communities/availability?host=….
// A host is available when no community (archived or not) holds it as its
// host or an alias; CommunityID names the holder otherwise.
type AvailabilityResponse struct {
	Host           string  `json:"host"`
	NormalizedHost string  `json:"normalized_host"`
	Available      bool    `json:"available"`
	CommunityID    *string `json:"community_id"`
}

// ArchiveRequest is the body of POST /operator/communities/archive and
// /unarchive. OwnerPubKey must be the community's owner ("" for a community
// without one).
type ArchiveRequest struct {
	Host        string  `json:"host"`
	OwnerPubKey *string `json:"owner_pubkey"`
}

// ArchiveResponse answers archive and unarchive. Status is "archived",
// "already_archived", "unarchived" or "already_active".
type ArchiveResponse struct {
	CommunityID string  `json:"community_id"`
	Host        string  `json:"host"`
	ArchivedAt  *string `json:"archived_at"`
	Status      string  `json:"status"`
}

// TransferRequest is the body of POST /operator/communities/transfer.
// ExpectedOwnerPubKey is the optimistic guard: the transfer happens only if
// it names the current owner (null or "" for a community without one). It
// is required.
type TransferRequest struct {
	CommunityID         string      `json:"community_id"`
	NewOwnerPubKey      string      `json:"new_owner_pubkey"`
	ExpectedOwnerPubKey optionalStr `json:"expected_owner_pubkey"`
}

// TransferResponse answers a transfer. Status is "transferred" or
// "already_owner"; PreviousOwner is the owner before the call (null if
// none).
type TransferResponse struct {
	CommunityID    string  `json:"community_id"`
	NewOwnerPubKey string  `json:"new_owner_pubkey"`
	Status         string  `json:"status"`
	PreviousOwner  *string `json:"previous_owner"`
}

// optionalStr is a JSON string field that records whether it was present;
// null counts as present and empty.
type optionalStr struct {
	Set   bool
	Value string
}

func (o *optionalStr) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = ""
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

func (o optionalStr) MarshalJSON() ([]byte, error) {
	if o.Value == "" {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

func summary(c store.Community) CommunitySummary {
	return CommunitySummary{
		CommunityID: c.ID.String(),
		Host:        c.Host,
		CreatedAt:   *formatTime(c.CreatedAt),
		ArchivedAt:  formatTime(c.ArchivedAt),
	}
}

func (h *Handler) list(ctx context.Context, _ string, r *http.Request, _ []byte) (int, any, error) {
	owner, err := query(r, "owner_pubkey")
	if err != nil {
		return 0, nil, err
	}
	if err := pubKeyField("owner_pubkey", owner); err != nil {
		return 0, nil, err
	}
	cs, err := h.store.OwnedCommunities(ctx, owner)
	if err != nil {
		return 0, nil, h.storeError(err)
	}
	resp := ListResponse{OwnerPubKey: owner, MaxCommunitiesPerOwner: h.maxOwned, Communities: make([]CommunitySummary, 0, len(cs))}
	for _, c := range cs {
		resp.Communities = append(resp.Communities, summary(c))
	}
	return http.StatusOK, resp, nil
}

func (h *Handler) create(ctx context.Context, actor string, _ *http.Request, body []byte) (int, any, error) {
	var req CreateRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	host, err := candidateHost(req.Host)
	if err != nil {
		return 0, nil, err
	}
	if req.InitialOwnerPubKey != "" {
		if err := pubKeyField("initial_owner_pubkey", req.InitialOwnerPubKey); err != nil {
			return 0, nil, err
		}
	}
	c, created, err := h.store.CreateCommunity(ctx, store.NewCommunity{
		Host:        host,
		OwnerPubKey: req.InitialOwnerPubKey,
		CreateOnly:  req.CreateOnly,
		MaxPerOwner: h.maxOwned,
	})
	if err != nil {
		return 0, nil, h.storeError(err)
	}
	resp := CreateResponse{CommunityID: c.ID.String(), Host: c.Host, Status: "existed", OwnerPubKey: optionalKey(c.OwnerPubKey)}
	status := http.StatusOK
	if created {
		resp.Status, status = "created", http.StatusCreated
		// Drop every process's cached "unmapped"; failing to tell the
		// others only delays the new host there (negative cache TTL).
		if err := h.hostsChanged(ctx, c.ID, control.HostsChanged{Hosts: []string{host, c.Host}, Archived: c.Archived()}); err != nil {
			h.log.WarnContext(ctx, "operator: other processes not told of a new community", "community", c.ID.String(), "err", err)
		}
		h.log.InfoContext(ctx, "operator: community created", "operator", actor,
			"community", c.ID.String(), "host", c.Host, "owner", c.OwnerPubKey)
	}
	return status, resp, nil
}

func (h *Handler) availability(ctx context.Context, _ string, r *http.Request, _ []byte) (int, any, error) {
	raw, err := query(r, "host")
	if err != nil {
		return 0, nil, err
	}
	host, err := candidateHost(raw)
	if err != nil {
		return 0, nil, err
	}
	resp := AvailabilityResponse{Host: raw, NormalizedHost: host, Available: true}
	c, err := h.store.CommunityByHost(ctx, host)
	switch {
	case err == nil:
		id := c.ID.String()
		resp.Available, resp.CommunityID = false, &id
	case errors.Is(err, store.ErrNoCommunity):
		// available
	default:
		return 0, nil, err
	}
	return http.StatusOK, resp, nil
}

func (h *Handler) archive(ctx context.Context, actor string, r *http.Request, body []byte) (int, any, error) {
	return h.setArchived(ctx, actor, body, true)
}

func (h *Handler) unarchive(ctx context.Context, actor string, r *http.Request, body []byte) (int, any, error) {
	return h.setArchived(ctx, actor, body, false)
}

func (h *Handler) setArchived(ctx context.Context, actor string, body []byte, archived bool) (int, any, error) {
	var req ArchiveRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	host, err := candidateHost(req.Host)
	if err != nil {
		return 0, nil, err
	}
	if req.OwnerPubKey == nil {
		return 0, nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "owner_pubkey is required")
	}
	owner := *req.OwnerPubKey
	if owner != "" {
		if err := pubKeyField("owner_pubkey", owner); err != nil {
			return 0, nil, err
		}
	}
	cur, err := h.store.CommunityByHost(ctx, host)
	if err != nil {
		return 0, nil, h.storeError(err)
	}
	if archived && h.protected[cur.ID] {
		return 0, nil, errorf(http.StatusConflict, CodeProtected, "the deployment's own community cannot be archived")
	}
	c, changed, err := h.store.SetArchived(ctx, cur.ID, owner, archived, h.maxOwned)
	if err != nil {
		return 0, nil, h.storeError(err)
	}
	resp := ArchiveResponse{CommunityID: c.ID.String(), Host: c.Host, ArchivedAt: formatTime(c.ArchivedAt)}
	switch {
	case archived && changed:
		resp.Status = "archived"
	case archived:
		resp.Status = "already_archived"
	case changed:
		resp.Status = "unarchived"
	default:
		resp.Status = "already_active"
	}
	pubErr := h.hostsChanged(ctx, c.ID, control.HostsChanged{Hosts: []string{c.Host, host}, Archived: c.Archived()})
	if pubErr != nil {
		h.log.WarnContext(ctx, "operator: other processes not told of the host change", "community", c.ID.String(), "err", pubErr)
	}
	if changed {
		h.log.InfoContext(ctx, "operator: community "+resp.Status, "operator", actor,
			"community", c.ID.String(), "host", c.Host)
	}
	if archived && h.disconnect != nil {
		// Also on "already_archived": a retry after a 503 finishes the job.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
		defer cancel()
		if err := h.disconnect.DisconnectCommunity(dctx, c.ID); err != nil {
			h.log.WarnContext(ctx, "operator: archived community's connections not confirmed closed",
				"community", c.ID.String(), "err", err)
			return 0, nil, errorf(http.StatusServiceUnavailable, CodePropagation,
				"community archived; closing its connections was not confirmed, retry to finish")
		}
		if pubErr != nil {
			// Fail closed: another process may still serve the host from
			// its cache until the entry expires. A retry publishes again.
			return 0, nil, errorf(http.StatusServiceUnavailable, CodePropagation,
				"community archived; telling the other relay processes was not confirmed, retry to finish")
		}
	}
	return http.StatusOK, resp, nil
}

func (h *Handler) transfer(ctx context.Context, actor string, _ *http.Request, body []byte) (int, any, error) {
	var req TransferRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	id, ok := parseUUID(req.CommunityID)
	if !ok {
		return 0, nil, errorf(http.StatusBadRequest, CodeInvalidCommunity, "community_id must be a UUID")
	}
	if err := pubKeyField("new_owner_pubkey", req.NewOwnerPubKey); err != nil {
		return 0, nil, err
	}
	if !req.ExpectedOwnerPubKey.Set {
		return 0, nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "expected_owner_pubkey is required (null for a community without owner)")
	}
	expected := req.ExpectedOwnerPubKey.Value
	if expected != "" {
		if err := pubKeyField("expected_owner_pubkey", expected); err != nil {
			return 0, nil, err
		}
	}
	c, prev, changed, err := h.store.TransferCommunity(ctx, id, req.NewOwnerPubKey, expected, h.maxOwned)
	if err != nil {
		return 0, nil, h.storeError(err)
	}
	resp := TransferResponse{CommunityID: c.ID.String(), NewOwnerPubKey: c.OwnerPubKey, Status: "already_owner", PreviousOwner: optionalKey(prev)}
	if changed {
		resp.Status = "transferred"
		h.log.InfoContext(ctx, "operator: community transferred", "operator", actor,
			"community", c.ID.String(), "from", prev, "to", c.OwnerPubKey)
	}
	return http.StatusOK, resp, nil
}
