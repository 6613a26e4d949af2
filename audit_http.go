package buzz

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// AuditPath is the HTTP route of a community's audit chain, served on
// every community host beside the NIP-98 HTTP API (WithHTTPAPI), when the
// store keeps audit chains:
//
//	GET /audit?after=SEQ&limit=N
//
// returns the entries of the Host's community with seq > after (default
// 0), at most limit of them (default DefaultAuditPage, at most
// MaxAuditPage), in seq order, as {"entries": [...], "next_after": seq}
// (next_after only when more may follow). The request carries a NIP-98
// Authorization for its URL on this host (method GET; a payload tag, if
// any, is the hash of the empty body), accepted once per community. Only
// the community's owner and admins may read the chain: every other key —
// members, strangers, admins of another community — gets the same 403;
// an unmapped host is the fixed 404 of every tenant route. Errors are
// {"error": code, "message": NIP-01 prefixed text}, as in the HTTP API.
const AuditPath = "/audit"

// Paging of AuditPath.
const (
	DefaultAuditPage = 100
	MaxAuditPage     = store.MaxAuditPage
)

// auditReader is what the audit route needs from the store.
type auditReader interface {
	store.AuditLog
	CommunityRole(ctx context.Context, c tenant.CommunityID, pubkey string) (channel.Role, bool, error)
}

// setupAuditRoute mounts AuditPath when WithHTTPAPI is set and the store
// keeps audit chains and community roles.
func (r *Relay) setupAuditRoute() {
	st, ok := r.cfg.store.(auditReader)
	if r.cfg.httpAPI == nil || !ok {
		return
	}
	r.HandleCommunity("GET "+AuditPath, func(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
		r.serveAudit(w, req, tc, st)
	})
}

// auditEntryJSON is one entry as AuditPath returns it.
type auditEntryJSON struct {
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

func (r *Relay) serveAudit(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, st auditReader) {
	ctx := req.Context()
	hr := nip98.HTTPRequest(req, nip98.ExpectedURL(r.origin(req, tc), req), nil)
	hr.Scope = nip98.CommunityScope(tc.Community())
	pubkey, err := r.cfg.httpAPI.Verify(ctx, hr)
	if err != nil {
		r.log.DebugContext(ctx, "buzz: audit route request refused", "err", err)
		w.Header().Set("WWW-Authenticate", nip98.Scheme)
		apiError(w, http.StatusUnauthorized, "unauthorized", nip98.ClientMessage(err))
		return
	}
	role, ok, err := st.CommunityRole(ctx, tc.Community(), pubkey)
	if err != nil {
		r.log.ErrorContext(ctx, "buzz: audit route: community role", "community", tc.Community().String(), "err", err)
		apiError(w, http.StatusInternalServerError, "error", "error: internal server error")
		return
	}
	if !ok || (role != channel.RoleOwner && role != channel.RoleAdmin) {
		apiError(w, http.StatusForbidden, "restricted", "restricted: only the community's owner and admins may read its audit log")
		return
	}
	after, limit := int64(0), DefaultAuditPage
	q := req.URL.Query()
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			apiError(w, http.StatusBadRequest, "invalid", "invalid: after must be a non-negative integer")
			return
		}
		after = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxAuditPage {
			apiError(w, http.StatusBadRequest, "invalid", "invalid: limit must be an integer from 1 to "+strconv.Itoa(MaxAuditPage))
			return
		}
		limit = n
	}
	es, err := st.AuditEntries(ctx, tc.Community(), after, limit)
	if err != nil {
		r.log.ErrorContext(ctx, "buzz: audit route: entries", "community", tc.Community().String(), "err", err)
		apiError(w, http.StatusInternalServerError, "error", "error: internal server error")
		return
	}
	out := struct {
		Entries   []auditEntryJSON `json:"entries"`
		NextAfter int64            `json:"next_after,omitempty"`
	}{Entries: make([]auditEntryJSON, len(es))}
	for i, e := range es {
		out.Entries[i] = auditEntryJSON{
			Seq: e.Seq, PrevHash: hex.EncodeToString(e.PrevHash[:]), Hash: hex.EncodeToString(e.Hash[:]),
			Version: e.Version, Action: string(e.Action), Actor: e.Actor, Object: e.Object,
			Detail: e.Detail, CreatedAt: e.Time.UTC().Format(time.RFC3339Nano),
		}
	}
	if len(es) == limit {
		out.NextAfter = es[len(es)-1].Seq
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}
