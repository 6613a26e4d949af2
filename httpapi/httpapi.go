// Package httpapi serves the NIP-98 HTTP API as a feature mounted on a
// relay (buzz.WithFeature(httpapi.New())): reading and writing events over
// plain HTTP with the rules of REQ, COUNT and EVENT. The relay must
// authenticate HTTP requests (buzz.WithHTTPAuth, or buzz.WithAPITokens).
// Every community host serves:
//
//	POST /query   body: a NIP-01 filter or a JSON array of filters
//	              → 200, a JSON array of events, newest first (created_at
//	              descending, then id ascending), each event once. Keyset
//	              pagination: ?until=<created_at>&before_id=<id> of the last
//	              event of the previous page returns the events after it in
//	              that order — stable when many share one created_at.
//	POST /count   body: a filter or an array of filters (NIP-45)
//	              → 200 {"count": n}
//	POST /events  body: one signed event, admitted by the same ingest
//	              pipeline as an EVENT → {"event_id", "accepted", "message"}
//	              where message is the OK message ("" or NIP-01 prefixed).
//
// Every request carries "Authorization: Nostr <base64 kind 27235 event>"
// whose u tag is this community's URL (the scheme of the relay URL, the
// request's host, path and query), whose method tag is the request's and
// whose payload tag is the SHA-256 of the body (required on POST); each
// such event is accepted once per community (the verifier's replay guard,
// shared through Redis when configured). A token minted for another
// community's host, or signed wrongly, gets the same answer: 401 "NIP-98:
// invalid signature". An API token ("Authorization: Bearer buzz_…",
// buzz.WithAPITokens) of the community may be used instead: /query and
// /count need messages:read, /events the scope of the event's kind
// (apitoken.ScopeForEvent). Bodies are limited to MaxBodyBytes (413
// beyond).
//
// Reads apply the rules of REQ and COUNT with the signer as the
// authenticated reader (buzz.Host.QueryHTTP): bans, the members-only
// community policy, channel scope (community-wide events plus the channels
// the signer may read; a filter whose "#h" names no readable channel is
// refused 403 "restricted: not a channel member") and the gift wrap rule;
// embedder filter policies run too. Filters are bounded as a REQ's are.
// Errors are {"error": "<code>", "message": "<NIP-01 prefixed text>"} where
// code is the prefix without its colon (invalid → 400, restricted and
// blocked → 403, auth-required → 401, rate-limited → 429, error → 500).
package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/tenant"
)

// The routes of the API on every community host.
const (
	QueryPath  = "/query"
	CountPath  = "/count"
	EventsPath = "/events"
)

// MaxBodyBytes bounds the body of every request (the relay's bound on
// the requests it authenticates).
const MaxBodyBytes = buzz.MaxHTTPBodyBytes

// Messages of the API's own refusals.
const (
	msgBadFilters = "invalid: the body must be a filter or an array of filters"
	msgBadCursor  = "invalid: until and before_id must be a unix time and a 64-character lowercase hex id; before_id needs until"
)

// API is the HTTP API mounted on a relay. Create it with New.
type API struct {
	h buzz.Host
}

// New returns the HTTP API, to mount with buzz.WithFeature.
func New() *API { return &API{} }

// Mount implements buzz.Feature: it needs a relay that authenticates HTTP
// requests.
func (a *API) Mount(h buzz.Host) error {
	if !h.HTTPAuth() {
		return errors.New("httpapi: the relay authenticates no HTTP requests (buzz.WithHTTPAuth)")
	}
	a.h = h
	h.HandleCommunity("POST "+QueryPath, a.serveQuery)
	h.HandleCommunity("POST "+CountPath, a.serveCount)
	h.HandleCommunity("POST "+EventsPath, a.serveEvents)
	return nil
}

// EventResult is the answer of POST /events: the OK message as JSON.
type EventResult struct {
	EventID  string `json:"event_id"`
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

// parseFilters decodes a filter or an array of filters, bounded as the
// filters of a REQ are, by the same parser and with the same messages; a
// search that does not parse is refused as a REQ's is (search.CheckFilters).
func parseFilters(body []byte, lim nostr.FilterLimits) ([]nostr.Filter, error) {
	trimmed := strings.TrimLeft(string(body), " \t\r\n")
	if !strings.HasPrefix(trimmed, "[") && !strings.HasPrefix(trimmed, "{") {
		return nil, errors.New(msgBadFilters)
	}
	filters, err := nostr.ParseFiltersLimited(body, lim)
	if err != nil {
		return nil, err
	}
	if err := search.CheckFilters(filters); err != nil {
		return nil, err
	}
	return filters, nil
}

// readRequest is the part of /query and /count shared by both:
// authenticate, then parse the filters. It answers the request and returns
// ok false on refusal.
func (a *API) readRequest(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, seam string) (pubkey string, filters []nostr.Filter, ok bool) {
	caller, ok := a.h.AuthenticateHTTP(w, req, tc, apitoken.MessagesRead)
	if !ok {
		return "", nil, false
	}
	filters, err := parseFilters(caller.Body, a.h.FilterLimits())
	if err != nil {
		reason := ingest.Reason(err, "invalid: ")
		a.h.ReadHTTP(tc, caller.PubKey, seam).Refused(req.Context(), reason)
		apijson.Refusal(w, reason)
		return "", nil, false
	}
	return caller.PubKey, filters, true
}

// answer answers a read's refusal or failure: the refusal's status, a
// logged 500 for err, nothing when the client has gone. It reports
// whether it answered.
func (a *API) answer(w http.ResponseWriter, req *http.Request, what, refusal string, err error) bool {
	switch {
	case err != nil && req.Context().Err() != nil:
	case err != nil:
		a.h.Logger().ErrorContext(req.Context(), "httpapi: "+what, "err", err)
		apijson.Refusal(w, apijson.MsgInternal)
	case refusal != "":
		apijson.Refusal(w, refusal)
	default:
		return false
	}
	return true
}

// parseCursor reads /query's keyset position: the created_at and id of
// the last event of the previous page.
func parseCursor(req *http.Request) (buzz.Cursor, bool) {
	q := req.URL.Query()
	u, id := q.Get("until"), q.Get("before_id")
	if u == "" {
		return buzz.Cursor{}, id == ""
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n < 0 || (id != "" && !nostr.IsLowerHex(id, 64)) {
		return buzz.Cursor{}, false
	}
	return buzz.Cursor{Until: &n, BeforeID: id}, true
}

func (a *API) serveQuery(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	cur, ok := parseCursor(req)
	if !ok {
		// Authenticate first: an unauthenticated request learns nothing.
		if _, ok := a.h.AuthenticateHTTP(w, req, tc, apitoken.MessagesRead); ok {
			apijson.Refusal(w, msgBadCursor)
		}
		return
	}
	pubkey, filters, ok := a.readRequest(w, req, tc, "req")
	if !ok {
		return
	}
	recs, refusal, err := a.h.QueryHTTP(req.Context(), req, tc, pubkey, filters, cur)
	if a.answer(w, req, "query", refusal, err) {
		return
	}
	buf := []byte{'['}
	for i, rec := range recs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, rec.Raw...)
	}
	buf = append(buf, ']')
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf)
}

func (a *API) serveCount(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	pubkey, filters, ok := a.readRequest(w, req, tc, "count")
	if !ok {
		return
	}
	n, refusal, err := a.h.CountHTTP(req.Context(), req, tc, pubkey, filters)
	if a.answer(w, req, "count", refusal, err) {
		return
	}
	apijson.Write(w, http.StatusOK, map[string]int64{"count": n})
}

func (a *API) serveEvents(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	caller, ok := a.h.AuthenticateHTTP(w, req, tc)
	if !ok {
		return
	}
	ev, err := nostr.ParseEvent(caller.Body)
	if err != nil {
		apijson.Write(w, http.StatusBadRequest, EventResult{Message: ingest.Reason(err, "invalid: ")})
		return
	}
	accepted, msg := a.h.IngestHTTP(req.Context(), req, tc, caller, ev)
	status := http.StatusOK
	if !accepted {
		status = apijson.Status(msg)
	}
	apijson.Write(w, status, EventResult{EventID: ev.ID, Accepted: accepted, Message: msg})
}
