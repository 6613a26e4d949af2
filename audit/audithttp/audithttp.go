// Package audithttp serves a community's audit chain over HTTP, as a
// feature mounted on a relay (buzz.WithFeature(audithttp.New())). The
// relay must authenticate HTTP requests (buzz.WithHTTPAuth) and its store
// keep audit chains (store.AuditLog) and community roles.
//
//	GET /audit?after=SEQ&limit=N
//
// on a community's host returns the entries of that community with seq >
// after (default 0), at most limit of them (default DefaultPage, at most
// MaxPage), in seq order, as {"entries": [...], "next_after": seq}
// (next_after only when more may follow). The request carries a NIP-98
// Authorization for its URL on this host (method GET; a payload tag, if
// any, is the hash of the empty body), accepted once per community. Only
// the community's owner and admins may read the chain: every other key —
// members, strangers, admins of another community — gets the same 403;
// an unmapped host is the fixed 404 of every tenant route. Errors are
// {"error": code, "message": NIP-01 prefixed text}, as in the HTTP API.
package audithttp

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/buzzrelay/buzz/apitoken"
	"net/http"
	"strconv"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Path is the route of a community's audit chain on its host.
const Path = "/audit"

// Paging of Path.
const (
	DefaultPage = 100
	MaxPage     = store.MaxAuditPage
)

// Feature is the audit chain route mounted on a relay. Create it with New.
type Feature struct {
	h   buzz.Host
	log store.AuditLog
}

// New returns the audit route feature, to mount with buzz.WithFeature.
func New() *Feature { return &Feature{} }

// Mount implements buzz.Feature.
func (f *Feature) Mount(h buzz.Host) error {
	log, ok := h.Store().(store.AuditLog)
	if !ok {
		return errors.New("audithttp: the relay's store keeps no audit chains (store.AuditLog)")
	}
	if !h.HTTPAuth() {
		return errors.New("audithttp: the relay authenticates no HTTP requests (buzz.WithHTTPAuth)")
	}
	f.h, f.log = h, log
	h.HandleCommunity("GET "+Path, f.serve)
	return nil
}

// entryJSON is one entry as AuditPath returns it.
type entryJSON struct {
	Seq       int64           `json:"seq"`
	PrevHash  string          `json:"prev_hash"` // hex; 64 zeros for seq 1
	Hash      string          `json:"hash"`      // hex
	Version   int             `json:"hash_version"`
	Action    string          `json:"action"`
	Actor     string          `json:"actor,omitempty"`
	Object    string          `json:"object,omitempty"`
	Detail    json.RawMessage `json:"detail"`     // canonical JSON, as hashed
	CreatedAt string          `json:"created_at"` // RFC 3339, microseconds, UTC
}

func (f *Feature) serve(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	ctx := req.Context()
	caller, ok := f.h.AuthenticateHTTP(w, req, tc, apitoken.AdminUsers)
	if !ok {
		return
	}
	pubkey := caller.PubKey
	role, ok, err := f.h.CommunityRole(ctx, tc, pubkey)
	if err != nil {
		f.h.Logger().ErrorContext(ctx, "audithttp: community role", "community", tc.Community().String(), "err", err)
		apijson.Error(w, http.StatusInternalServerError, "error", apijson.MsgInternal)
		return
	}
	if !ok || (role != channel.RoleOwner && role != channel.RoleAdmin) {
		apijson.Error(w, http.StatusForbidden, "restricted", "restricted: only the community's owner and admins may read its audit log")
		return
	}
	after, limit := int64(0), DefaultPage
	q := req.URL.Query()
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			apijson.Error(w, http.StatusBadRequest, "invalid", "invalid: after must be a non-negative integer")
			return
		}
		after = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPage {
			apijson.Error(w, http.StatusBadRequest, "invalid", "invalid: limit must be an integer from 1 to "+strconv.Itoa(MaxPage))
			return
		}
		limit = n
	}
	es, err := f.log.AuditEntries(ctx, tc.Community(), after, limit)
	if err != nil {
		f.h.Logger().ErrorContext(ctx, "audithttp: entries", "community", tc.Community().String(), "err", err)
		apijson.Error(w, http.StatusInternalServerError, "error", apijson.MsgInternal)
		return
	}
	out := struct {
		Entries   []entryJSON `json:"entries"`
		NextAfter int64       `json:"next_after,omitempty"`
	}{Entries: make([]entryJSON, len(es))}
	for i, e := range es {
		out.Entries[i] = entryJSON{
			Seq: e.Seq, PrevHash: hex.EncodeToString(e.PrevHash[:]), Hash: hex.EncodeToString(e.Hash[:]),
			Version: e.Version, Action: string(e.Action), Actor: e.Actor, Object: e.Object,
			Detail: e.Detail, CreatedAt: e.Time.UTC().Format(time.RFC3339Nano),
		}
	}
	if len(es) == limit {
		out.NextAfter = es[len(es)-1].Seq
	}
	w.Header().Set("Cache-Control", "no-store")
	apijson.Write(w, http.StatusOK, out)
}
