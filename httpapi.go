package buzz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The NIP-98 HTTP API (WithHTTPAPI), served on every community's host:
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
// whose payload tag is the SHA-256 of the body (required on POST); each such event is accepted once
// per community (the verifier's replay guard, shared through Redis when
// configured). A token minted for another community's host, or signed
// wrongly, gets the same answer: 401 "NIP-98: invalid signature". Bodies are
// limited to MaxHTTPBodyBytes (413 beyond).
//
// Reads apply the rules of REQ and COUNT with the signer as the
// authenticated reader: bans, the members-only community policy, channel scope
// (community-wide events plus the channels the signer may read; a filter
// whose "#h" names no readable channel is refused 403 "restricted: not a
// channel member") and the gift wrap rule; embedder filter policies run too.
// Errors are {"error": "<code>", "message": "<NIP-01 prefixed text>"} where
// code is the prefix without its colon (invalid → 400, restricted and
// blocked → 403, auth-required → 401, rate-limited → 429, error → 500).
const (
	QueryPath  = "/query"
	CountPath  = "/count"
	EventsPath = "/events"
	// MaxHTTPBodyBytes bounds the body of every HTTP API request.
	MaxHTTPBodyBytes = 1 << 20
)

// Messages of the HTTP API's own refusals.
const (
	msgBodyTooLarge = "invalid: request body too large (limit 1048576 bytes)"
	msgBadFilters   = "invalid: the body must be a filter or an array of filters"
	msgBadCursor    = "invalid: until and before_id must be a unix time and a 64-character lowercase hex id; before_id needs until"
)

// WithHTTPAPI serves the NIP-98 HTTP API (POST /query, /count, /events;
// see QueryPath) on every community host, authenticating requests with v.
// v's replay guard decides replays per community (nip98.CommunityScope):
// give it a shared guard (redisreplay.Guard) when several processes serve
// one deployment.
func WithHTTPAPI(v *nip98.Verifier) Option {
	return func(c *config) error {
		if v == nil {
			return errors.New("buzz: WithHTTPAPI: nil verifier")
		}
		c.httpAPI = v
		return nil
	}
}

func (r *Relay) registerHTTPAPI() {
	if r.cfg.httpAPI == nil {
		return
	}
	r.HandleCommunity("POST "+QueryPath, r.serveQuery)
	r.HandleCommunity("POST "+CountPath, r.serveCount)
	r.HandleCommunity("POST "+EventsPath, r.serveEvents)
}

// apiError writes {"error": code, "message": msg} with status.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	apijson.Error(w, status, code, msg)
}

func writeJSON(w http.ResponseWriter, status int, v any) { apijson.Write(w, status, v) }

// internalError logs err and answers 500 without details.
func (r *Relay) internalError(w http.ResponseWriter, req *http.Request, what string, err error) {
	r.log.ErrorContext(req.Context(), "buzz: "+what, "err", err)
	apiError(w, http.StatusInternalServerError, "error", msgInternal)
}

// refusal answers a NIP-01 prefixed reason with the status its prefix maps
// to.
func refusal(w http.ResponseWriter, reason string) { apijson.Refusal(w, reason) }

// prefixStatus maps a NIP-01 prefixed message to an HTTP status.
func prefixStatus(msg string) int { return apijson.Status(msg) }

// origin is the scheme and host a NIP-98 u tag must name on tc's host: the
// scheme of the relay URL (https for wss, http for ws), or of the request
// itself when no relay URL was configured.
func (r *Relay) origin(req *http.Request, tc tenant.TenantContext) string {
	scheme := "http"
	switch {
	case r.cfg.relayScheme == "wss":
		scheme = "https"
	case r.cfg.relayScheme == "" && req.TLS != nil:
		scheme = "https"
	}
	return scheme + "://" + tc.Host()
}

// authenticate reads the body (at most MaxHTTPBodyBytes) and verifies the
// request's NIP-98 authorization for tc's host. It answers the request
// itself and returns ok false on any failure.
func (r *Relay) authenticate(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) (pubkey string, body []byte, ok bool) {
	body, ok = r.readBody(w, req)
	if !ok {
		return "", nil, false
	}
	hr := nip98.HTTPRequest(req, nip98.ExpectedURL(r.origin(req, tc), req), body)
	hr.RequirePayload = req.Method == http.MethodPost // GETs (moderation reads) carry no body
	hr.Scope = nip98.CommunityScope(tc.Community())
	pubkey, err := r.cfg.httpAPI.Verify(req.Context(), hr)
	if err != nil {
		r.log.DebugContext(req.Context(), "buzz: HTTP API request refused", "err", err)
		w.Header().Set("WWW-Authenticate", nip98.Scheme)
		apiError(w, http.StatusUnauthorized, "unauthorized", nip98.ClientMessage(err))
		return "", nil, false
	}
	return pubkey, body, true
}

// readBody reads the request's body, at most MaxHTTPBodyBytes; it answers
// the request (413, 400) and returns ok false when it cannot.
func (r *Relay) readBody(w http.ResponseWriter, req *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxHTTPBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			apiError(w, http.StatusRequestEntityTooLarge, "invalid", msgBodyTooLarge)
		} else {
			apiError(w, http.StatusBadRequest, "invalid", "invalid: unreadable request body")
		}
		return nil, false
	}
	return body, true
}

// parseFilters decodes a filter or an array of filters, bounded as the
// filters of a REQ are (Limits.MaxFilters, MaxFilterValues,
// MaxSubscriptionBytes), by the same parser and with the same messages; a
// search that does not parse is refused as a REQ's is (search.CheckFilters).
func parseFilters(body []byte, lim Limits) ([]nostr.Filter, error) {
	trimmed := strings.TrimLeft(string(body), " \t\r\n")
	if !strings.HasPrefix(trimmed, "[") && !strings.HasPrefix(trimmed, "{") {
		return nil, errors.New(msgBadFilters)
	}
	filters, err := nostr.ParseFiltersLimited(body, lim.filterLimits())
	if err != nil {
		return nil, err
	}
	if err := search.CheckFilters(filters); err != nil {
		return nil, err
	}
	return filters, nil
}

// readRequest is the part of /query and /count shared by both: parse and
// check the filters, then decide access for reader. It answers the request
// and returns ok false on refusal.
func (r *Relay) readRequest(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, seam string) (filters []nostr.Filter, readers []string, scope channel.Scope, rt readTrace, ok bool) {
	caller, ok := r.authorize(w, req, tc, apitoken.MessagesRead)
	if !ok {
		return nil, nil, scope, rt, false
	}
	pubkey, body := caller.PubKey, caller.Body
	ctx := req.Context()
	rt = r.armHTTPRead(tc, pubkey, seam)
	refuse := func(reason string) {
		rt.refuse(ctx, reason)
		refusal(w, reason)
	}
	filters, err := parseFilters(body, r.cfg.limits)
	if err != nil {
		refuse(ingest.Reason(err, "invalid: "))
		return nil, nil, scope, rt, false
	}
	pctx := r.httpConn(ctx, req, pubkey)
	for _, f := range filters {
		for _, fn := range r.cfg.filterPolicy {
			if err := fn(pctx, tc, f); err != nil {
				refuse(ingest.Reason(err, "blocked: "))
				return nil, nil, scope, rt, false
			}
		}
	}
	// A REQ's rules (bans, community policy, then channels) for the one
	// signer, through a Reader of this request alone.
	readers = []string{pubkey}
	scope, reason, _, err := r.readAccess(ctx, tc.Community(), readers, r.signerReader(ctx, tc.Community(), pubkey), filters, rt.channelCheck(ctx, tc))
	if err != nil {
		r.log.ErrorContext(ctx, "buzz: HTTP read access", "err", err)
		refuse(msgInternal)
		return nil, nil, scope, rt, false
	}
	if reason != "" {
		refuse(reason)
		return nil, nil, scope, rt, false
	}
	return filters, readers, scope, rt, true
}

// readTrace is the isolation trace (WithTracer) of one HTTP read: the read
// seam armed for the signer, as a REQ or COUNT arms it on a connection.
// Its zero value (no tracer) records nothing.
type readTrace struct {
	guard *trace.Guard
	g     trace.Tracer
	st    trace.State
}

func (r *Relay) armHTTPRead(tc tenant.TenantContext, actor, seam string) readTrace {
	if r.cfg.tracer == nil {
		return readTrace{}
	}
	st := trace.State{Tenant: tc, Actor: actor}
	guard := trace.Arm(r.cfg.tracer(tc), st, seam)
	return readTrace{guard: guard, g: guard, st: st}
}

// refuse records a refusal and ends the seam.
func (rt readTrace) refuse(ctx context.Context, reason string) {
	if rt.g == nil {
		return
	}
	rt.g.SanitizedError(ctx, rt.st, trace.ReasonOf(reason))
	rt.guard.Release(ctx)
}

// channelCheck records each channel decision of channel.Readable.
func (rt readTrace) channelCheck(ctx context.Context, tc tenant.TenantContext) func(id *channel.ID, ok bool) {
	if rt.g == nil {
		return nil
	}
	return func(id *channel.ID, ok bool) {
		switch {
		case id == nil:
			rt.g.AuthCheck(ctx, rt.st, "", tenant.CommunityID{}, false)
		case ok:
			rt.g.AuthCheck(ctx, rt.st, id.String(), tc.Community(), true)
		default:
			rt.g.AuthCheck(ctx, rt.st, id.String(), tenant.CommunityID{}, false)
		}
	}
}

// rows records the rows one filter returned (nil for a count).
func (rt readTrace) rows(ctx context.Context, f *nostr.Filter, rows []tenant.CommunityID) {
	if rt.g != nil {
		traceRows(ctx, rt.g, rt.st, f, rows)
	}
}

// done ends the seam.
func (rt readTrace) done(ctx context.Context) { rt.guard.Release(ctx) }

// readFailed answers a failed HTTP read: the deadline reason when it ran
// past Limits.QueryTimeout, the internal-error reason (logged) otherwise;
// nothing when the client has gone.
func (r *Relay) readFailed(ctx context.Context, w http.ResponseWriter, what string, err error) {
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, errQueryTimeout):
		r.log.InfoContext(ctx, "buzz: "+what+" timed out", "err", err)
		refusal(w, fmt.Sprintf(msgQueryTimeout, r.cfg.limits.QueryTimeout))
	default:
		r.log.ErrorContext(ctx, "buzz: "+what, "err", err)
		refusal(w, msgInternal)
	}
}

// cursor is /query's keyset position: the created_at and id of the last
// event of the previous page.
type cursor struct {
	set    bool // until given
	until  int64
	lastID string // "" = only the until bound
}

func parseCursor(req *http.Request) (cursor, bool) {
	q := req.URL.Query()
	u, id := q.Get("until"), q.Get("before_id")
	if u == "" {
		return cursor{}, id == ""
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n < 0 || (id != "" && !nostr.IsLowerHex(id, 64)) {
		return cursor{}, false
	}
	return cursor{set: true, until: n, lastID: id}, true
}

func (r *Relay) serveQuery(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	cur, ok := parseCursor(req)
	if !ok {
		// Authenticate first: an unauthenticated request learns nothing.
		if _, ok := r.authorize(w, req, tc, apitoken.MessagesRead); ok {
			refusal(w, msgBadCursor)
		}
		return
	}
	filters, readers, scope, rt, ok := r.readRequest(w, req, tc, "req")
	if !ok {
		return
	}
	defer rt.done(req.Context())
	// Each filter's page is one bounded read (read.go): in turn in the
	// relay's fair queue, the client's address standing for its
	// connection, under the query deadline.
	ctx := req.Context()
	owner := r.ClientAddr(req)
	recs := make(map[string]store.Record)
	var rows *[]tenant.CommunityID // the communities of each filter's rows, when tracing
	if rt.g != nil {
		rows = new([]tenant.CommunityID)
	}
	for i := range filters {
		if rows != nil {
			*rows = (*rows)[:0]
		}
		err := r.bounded(ctx, tc.Community(), owner, func(ctx context.Context) error {
			return r.queryPage(ctx, tc.Community(), filters[i], scope, readers, cur, recs, rows)
		})
		if rows != nil {
			rt.rows(ctx, &filters[i], *rows)
		}
		if err != nil {
			if rt.g != nil {
				rt.g.SanitizedError(ctx, rt.st, trace.ReasonServerError)
			}
			r.readFailed(ctx, w, "HTTP query", err)
			return
		}
	}
	out := make([]store.Record, 0, len(recs))
	for _, rec := range recs {
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b store.Record) int {
		if a.CreatedAt != b.CreatedAt {
			if a.CreatedAt > b.CreatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	buf := []byte{'['}
	for i, rec := range out {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, rec.Raw...)
	}
	buf = append(buf, ']')
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf)
}

// queryPage adds to recs the events of one filter on the page after cur
// (see QueryPath), at most the filter's clamped limit of them, under the
// same rules as a REQ's replay.
//
// rows, when not nil, receives the community of every row taken (tracing).
func (r *Relay) queryPage(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope, readers []string, cur cursor, recs map[string]store.Record, rows *[]tenant.CommunityID) error {
	if f.LimitSet && f.Limit == 0 {
		return nil
	}
	maxLimit := r.cfg.limits.MaxLimit
	if !f.LimitSet || f.Limit > maxLimit {
		f.Limit, f.LimitSet = maxLimit, true
	}
	f, gated, ok := channel.GiftWrapQuery(f, readers)
	if !ok {
		return nil
	}
	want := f.Limit
	n := 0
	take := func(q nostr.Filter, skipThrough string) error {
		for rec, err := range r.queryScoped(ctx, c, q, scope) {
			if err != nil {
				return err
			}
			if n >= want {
				return nil
			}
			if skipThrough != "" && rec.ID <= skipThrough {
				continue
			}
			if gated && !channel.GiftWrapVisibleRaw(rec.Raw, readers) {
				continue
			}
			recs[rec.ID] = rec
			if rows != nil {
				*rows = append(*rows, rec.Community)
			}
			n++
		}
		return nil
	}
	if !cur.set {
		return take(f, "")
	}
	until := cur.until
	if f.Until != nil && *f.Until < until {
		until = *f.Until
	}
	if cur.lastID != "" && until == cur.until {
		// The rest of the cursor's second: ids after the last one. The
		// store returns one second's events in id order, at most MaxLimit
		// of them: a second holding more (of this filter) than that may
		// give a short page.
		if f.Since == nil || *f.Since <= until {
			q := f
			q.Since, q.Until = &until, &until
			q.Limit = maxLimit
			if err := take(q, cur.lastID); err != nil || n >= want {
				return err
			}
		}
		until--
	}
	if f.Since != nil && *f.Since > until {
		return nil
	}
	q := f
	q.Until = &until
	q.Limit = want - n
	return take(q, "")
}

func (r *Relay) serveCount(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	filters, readers, scope, rt, ok := r.readRequest(w, req, tc, "count")
	if !ok {
		return
	}
	ctx := req.Context()
	defer rt.done(ctx)
	owner := r.ClientAddr(req)
	n, err := channel.CountGiftWrapped(ctx, filters, readers, func(ctx context.Context, sets [][]nostr.Filter) ([]int64, error) {
		return r.countBounded(ctx, tc.Community(), owner, sets, scope)
	})
	if err != nil {
		if rt.g != nil {
			rt.g.SanitizedError(ctx, rt.st, trace.ReasonServerError)
		}
		r.readFailed(ctx, w, "HTTP count", err)
		return
	}
	// A count carries no rows; each filter's read is recorded empty.
	for i := range filters {
		rt.rows(ctx, &filters[i], nil)
	}
	writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

// eventResult is /events' answer: the OK message as JSON.
type eventResult struct {
	EventID  string `json:"event_id"`
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

func (r *Relay) serveEvents(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	caller, ok := r.authorize(w, req, tc)
	if !ok {
		return
	}
	pubkey := caller.PubKey
	ev, err := nostr.ParseEvent(caller.Body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, eventResult{Message: ingest.Reason(err, "invalid: ")})
		return
	}
	if ev.Kind == nostr.KindPresence {
		writeJSON(w, http.StatusBadRequest, eventResult{EventID: ev.ID, Message: msgPresenceHTTP})
		return
	}
	if reason := r.checkCaller(req.Context(), tc, caller, apitoken.ScopeForEvent(ev)); reason != "" {
		writeJSON(w, prefixStatus(reason), eventResult{EventID: ev.ID, Message: reason})
		return
	}
	ticket := r.inflight.Begin()
	sub := ingest.Submission{
		Tenant:   tc,
		Event:    ev,
		AuthedAs: func(pk string) bool { return pk == pubkey },
		Actor:    pubkey,
	}
	if r.cfg.tracer != nil {
		sub.Tracer = r.cfg.tracer(tc)
	}
	out := r.pipeline.Ingest(r.httpConn(req.Context(), req, pubkey), sub)
	r.inflight.End(ticket)
	r.cfg.metrics.EventIngested(tc, out.OK, out.Stored, out.Message)
	status := http.StatusOK
	if !out.OK {
		status = prefixStatus(out.Message)
	}
	writeJSON(w, status, eventResult{EventID: ev.ID, Accepted: out.OK, Message: out.Message})
}
