package buzz

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// HTTP authentication (Host.AuthenticateHTTP) for the routes features
// mount on community hosts: "Authorization: Nostr <base64 kind 27235
// event>" whose u tag is this community's URL (the scheme of the relay
// URL, the request's host, path and query), whose method tag is the
// request's and whose payload tag is the SHA-256 of the body (required on
// POST); each such event is accepted once per community (the verifier's
// replay guard, shared through Redis when configured). A token minted for
// another community's host, or signed wrongly, gets the same answer: 401
// "NIP-98: invalid signature". An API token (WithAPITokens) is the other
// credential (tokens.go).

// MaxHTTPBodyBytes bounds the body of every request Host.AuthenticateHTTP
// reads (413 beyond).
const MaxHTTPBodyBytes = 1 << 20

const msgBodyTooLarge = "invalid: request body too large (limit 1048576 bytes)"

// WithHTTPAuth authenticates HTTP requests with NIP-98, verified by v, for
// the features mounted on the relay (Host.AuthenticateHTTP) — the HTTP
// query API of package httpapi, thread metadata, moderation… — and lists
// NIP-98 in NIP-11. v's replay guard decides replays per community
// (nip98.CommunityScope): give it a shared guard (redisreplay.Guard) when
// several processes serve one deployment.
func WithHTTPAuth(v *nip98.Verifier) Option {
	return func(c *config) error {
		if v == nil {
			return errors.New("buzz: WithHTTPAuth: nil verifier")
		}
		c.httpAuth = v
		return nil
	}
}

// apiError writes {"error": code, "message": msg} with status.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	apijson.Error(w, status, code, msg)
}

// internalError logs err and answers 500 without details.
func (r *Relay) internalError(w http.ResponseWriter, req *http.Request, what string, err error) {
	r.log.ErrorContext(req.Context(), "buzz: "+what, "err", err)
	apiError(w, http.StatusInternalServerError, "error", msgInternal)
}

// refusal answers a NIP-01 prefixed reason with the status its prefix maps
// to.
func refusal(w http.ResponseWriter, reason string) { apijson.Refusal(w, reason) }

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
	pubkey, err := r.cfg.httpAuth.Verify(req.Context(), hr)
	if err != nil {
		r.log.DebugContext(req.Context(), "buzz: HTTP request refused", "err", err)
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

// failed records a server error.
func (rt readTrace) failed(ctx context.Context) {
	if rt.g != nil {
		rt.g.SanitizedError(ctx, rt.st, trace.ReasonServerError)
	}
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
