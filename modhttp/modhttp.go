// Package modhttp serves a community's moderation reads over NIP-98, as a
// feature mounted on a relay (buzz.WithFeature(modhttp.New())), on the
// community's own host. The relay must authenticate HTTP requests
// (buzz.WithHTTPAuth) and its store keep moderation (store.ModerationStore):
//
//	GET /moderation/reports?status=&limit=&before=   the report queue, newest first
//	GET /moderation/actions?limit=&before=           the action log, newest first
//	GET /moderation/restricted?limit=&after=         bans and timeouts in force, by pubkey
//
// The Authorization header is a NIP-98 event for this host's URL (method
// GET, no payload needed), signed by the community's owner, an admin or a
// moderator; anyone else gets 403 "restricted: …", a banned signer 403
// "blocked: …". Everything read is the host's community's: another
// community's host answers with its own queue, never this one's. limit is
// 1..500 (default 100); a page that may continue carries "next", the
// cursor to pass as before (reports, actions) or after (restricted).
// Unknown parameters are refused (400).
package modhttp

import (
	"encoding/json"
	"errors"
	"github.com/buzzrelay/buzz/apitoken"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Routes of the feature on every community host.
const (
	ReportsPath    = "/moderation/reports"
	ActionsPath    = "/moderation/actions"
	RestrictedPath = "/moderation/restricted"
)

const (
	defaultPage = 100
	// MsgNotModerator answers a signer who does not moderate the community.
	MsgNotModerator = "restricted: only the community's owner, admins and moderators read moderation"
)

// ReportJSON is one report of GET /moderation/reports.
type ReportJSON struct {
	ID           string          `json:"id"`
	Reporter     string          `json:"reporter"`
	TargetPubKey string          `json:"target_pubkey"`
	TargetEvent  string          `json:"target_event,omitempty"`
	Type         string          `json:"type"`
	Status       string          `json:"status"`
	CreatedAt    int64           `json:"created_at"`
	ReceivedAt   string          `json:"received_at"`
	ResolvedBy   string          `json:"resolved_by,omitempty"`
	ResolvedAt   string          `json:"resolved_at,omitempty"`
	Event        json.RawMessage `json:"event"`
	Cursor       string          `json:"cursor"`
}

// ActionJSON is one entry of GET /moderation/actions.
type ActionJSON struct {
	Seq       int64  `json:"seq"`
	Action    string `json:"action"`
	Actor     string `json:"actor"`
	Target    string `json:"target"`
	Reason    string `json:"reason,omitempty"`
	Until     int64  `json:"until,omitempty"`
	Status    string `json:"status,omitempty"`
	EventID   string `json:"event_id,omitempty"`
	CreatedAt string `json:"created_at"`
}

// RestrictionJSON is one entry of GET /moderation/restricted.
type RestrictionJSON struct {
	PubKey    string `json:"pubkey"`
	Kind      string `json:"kind"`
	Until     int64  `json:"until,omitempty"` // absent: a ban without end
	Reason    string `json:"reason,omitempty"`
	Actor     string `json:"actor"`
	CreatedAt string `json:"created_at"`
}

// Feature is the moderation reads mounted on a relay. Create it with New.
type Feature struct {
	h   buzz.Host
	mod store.ModerationStore
}

// New returns the moderation reads feature, to mount with
// buzz.WithFeature.
func New() *Feature { return &Feature{} }

// Mount implements buzz.Feature: it needs HTTP authentication
// (buzz.WithHTTPAuth) and a store that keeps moderation.
func (f *Feature) Mount(h buzz.Host) error {
	mod, ok := h.Store().(store.ModerationStore)
	if !ok {
		return errors.New("modhttp: the relay's store keeps no moderation (store.ModerationStore)")
	}
	if !h.HTTPAuth() {
		return errors.New("modhttp: the relay authenticates no HTTP requests (buzz.WithHTTPAuth)")
	}
	f.h, f.mod = h, mod
	h.HandleCommunity("GET "+ReportsPath, f.serveReports)
	h.HandleCommunity("GET "+ActionsPath, f.serveActions)
	h.HandleCommunity("GET "+RestrictedPath, f.serveRestricted)
	return nil
}

// moderator authenticates a moderation read: the NIP-98 signer must not
// be banned from tc's community and must moderate it (owner, admin or
// moderator). It answers the request itself and returns ok false on any
// failure.
func (f *Feature) moderator(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) bool {
	caller, ok := f.h.AuthenticateHTTP(w, req, tc, apitoken.AdminUsers)
	if !ok {
		return false
	}
	pubkey := caller.PubKey
	ctx := req.Context()
	role, member, err := f.h.CommunityRole(ctx, tc, pubkey)
	reason := ""
	if err == nil {
		reason, err = f.h.Admitted(ctx, tc, pubkey)
	}
	if err == nil && reason == "" && !(member && (role == channel.RoleOwner || role == channel.RoleAdmin || role == store.RoleModerator)) {
		reason = MsgNotModerator
	}
	if err != nil {
		f.h.Logger().ErrorContext(ctx, "modhttp: moderation read", "err", err)
		refusal(w, apijson.MsgInternal)
		return false
	}
	if reason != "" {
		refusal(w, reason)
		return false
	}
	return true
}

// refusal answers a NIP-01 prefixed reason with the status its prefix maps
// to.
func refusal(w http.ResponseWriter, reason string) {
	apijson.Refusal(w, reason)
}

// pageParams reads the query: only the allowed names, each at most once;
// limit 1..MaxModerationPage.
func pageParams(w http.ResponseWriter, req *http.Request, allowed ...string) (url.Values, int, bool) {
	q, err := url.ParseQuery(req.URL.RawQuery)
	bad := func(msg string) (url.Values, int, bool) {
		refusal(w, "invalid: "+msg)
		return nil, 0, false
	}
	if err != nil {
		return bad("malformed query string")
	}
	for k, v := range q {
		known := k == "limit"
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			return bad("unknown query parameter " + strconv.Quote(k))
		}
		if len(v) != 1 {
			return bad("query parameter " + strconv.Quote(k) + " given more than once")
		}
	}
	limit := defaultPage
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxModerationPage {
			return bad("limit must be 1 to 500")
		}
		limit = n
	}
	return q, limit, true
}

func seqCursor(w http.ResponseWriter, q url.Values) (int64, bool) {
	s := q.Get("before")
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		refusal(w, "invalid: before must be a cursor from a previous page")
		return 0, false
	}
	return n, true
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (f *Feature) serveReports(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	if !f.moderator(w, req, tc) {
		return
	}
	q, limit, ok := pageParams(w, req, "status", "before")
	if !ok {
		return
	}
	before, ok := seqCursor(w, q)
	if !ok {
		return
	}
	status := store.ReportStatus(q.Get("status"))
	if status != "" && !status.Valid() {
		refusal(w, "invalid: status must be open, resolved, dismissed or escalated")
		return
	}
	rs, err := f.mod.Reports(req.Context(), tc.Community(), store.ReportQuery{Status: status, Before: before, Limit: limit})
	if err != nil {
		f.h.Logger().ErrorContext(req.Context(), "modhttp: reports", "err", err)
		refusal(w, apijson.MsgInternal)
		return
	}
	out := make([]ReportJSON, 0, len(rs))
	for _, x := range rs {
		out = append(out, ReportJSON{ID: x.ID, Reporter: x.Reporter, TargetPubKey: x.TargetPubKey, TargetEvent: x.TargetEvent,
			Type: x.Type, Status: string(x.Status), CreatedAt: x.CreatedAt, ReceivedAt: rfc3339(x.ReceivedAt),
			ResolvedBy: x.ResolvedBy, ResolvedAt: rfc3339(x.ResolvedAt), Event: x.Raw, Cursor: strconv.FormatInt(x.Seq, 10)})
	}
	var next *string
	if len(rs) == limit {
		s := strconv.FormatInt(rs[len(rs)-1].Seq, 10)
		next = &s
	}
	apijson.Write(w, http.StatusOK, map[string]any{"reports": out, "next": next})
}

func (f *Feature) serveActions(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	if !f.moderator(w, req, tc) {
		return
	}
	q, limit, ok := pageParams(w, req, "before")
	if !ok {
		return
	}
	before, ok := seqCursor(w, q)
	if !ok {
		return
	}
	as, err := f.mod.ModerationActions(req.Context(), tc.Community(), before, limit)
	if err != nil {
		f.h.Logger().ErrorContext(req.Context(), "modhttp: actions", "err", err)
		refusal(w, apijson.MsgInternal)
		return
	}
	out := make([]ActionJSON, 0, len(as))
	for _, a := range as {
		j := ActionJSON{Seq: a.Seq, Action: a.Action, Actor: a.Actor, Target: a.Target, Reason: a.Reason,
			Status: string(a.Status), EventID: a.EventID, CreatedAt: rfc3339(a.CreatedAt)}
		if !a.Until.IsZero() {
			j.Until = a.Until.Unix()
		}
		out = append(out, j)
	}
	var next *string
	if len(as) == limit {
		s := strconv.FormatInt(as[len(as)-1].Seq, 10)
		next = &s
	}
	apijson.Write(w, http.StatusOK, map[string]any{"actions": out, "next": next})
}

func (f *Feature) serveRestricted(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	if !f.moderator(w, req, tc) {
		return
	}
	q, limit, ok := pageParams(w, req, "after")
	if !ok {
		return
	}
	after := q.Get("after")
	if after != "" && !nostr.IsLowerHex(after, 64) {
		refusal(w, "invalid: after must be a pubkey from a previous page")
		return
	}
	rs, err := f.mod.Restrictions(req.Context(), tc.Community(), f.h.Now(), after, limit)
	if err != nil {
		f.h.Logger().ErrorContext(req.Context(), "modhttp: restrictions", "err", err)
		refusal(w, apijson.MsgInternal)
		return
	}
	var next *string
	if len(rs) == limit {
		// The cursor is a pubkey: a page must not end between a pubkey's
		// ban and its timeout, so that pubkey moves to the next page.
		// Rows come by pubkey then kind ("ban" < "timeout"): a page ending
		// on a ban may have cut off the same pubkey's timeout.
		if last := rs[len(rs)-1]; last.Kind == store.RestrictionBan {
			keep := len(rs) - 1
			for keep > 0 && rs[keep-1].PubKey == last.PubKey {
				keep--
			}
			if keep > 0 {
				rs = rs[:keep]
			}
		}
		next = &rs[len(rs)-1].PubKey
	}
	out := make([]RestrictionJSON, 0, len(rs))
	for _, x := range rs {
		j := RestrictionJSON{PubKey: x.PubKey, Kind: string(x.Kind), Reason: x.Reason, Actor: x.Actor, CreatedAt: rfc3339(x.CreatedAt)}
		if !x.Until.IsZero() {
			j.Until = x.Until.Unix()
		}
		out = append(out, j)
	}
	apijson.Write(w, http.StatusOK, map[string]any{"restricted": out, "next": next})
}
