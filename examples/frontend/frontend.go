package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Bounds of one request.
const (
	maxBody      = 1 << 20
	writeTimeout = 10 * time.Second
)

// frontend is the example's feature: an HTTP + Server-Sent Events front end
// that mounts on a buzz.Relay (buzz.WithFeature) and serves, on every
// community host,
//
//	POST /events                  one signed event → {"event_id", "accepted", "message"}
//	GET  /timeline?filter=<JSON>  the stored events of one filter, as a JSON array
//	GET  /stream?filter=<JSON>    the stored events, "eose", then live events;
//	                              "closed" with the relay's reason when it ends
//
// Everything that decides who reads and writes what — admission, channel
// rules, bans, revocation on every process — is the relay's, reached
// through the seam (buzz.Host.Submit, buzz.Host.Subscribe); the feature
// only speaks HTTP and authenticates requests (NIP-98, optional). It is
// safe for concurrent use once mounted.
type frontend struct {
	scheme string // of the NIP-98 u tags: "http" or "https"
	sigs   *nostr.Verifier
	auth   *nip98.Verifier
	host   buzz.Host // set by Mount
}

// newFrontend returns the feature; scheme is the scheme NIP-98 u tags name
// ("" is "http"). Close it after the relay has shut down.
func newFrontend(scheme string) (*frontend, error) {
	switch scheme {
	case "":
		scheme = "http"
	case "http", "https":
	default:
		return nil, errors.New("frontend: the scheme must be http or https")
	}
	sigs, err := nostr.NewVerifier()
	if err != nil {
		return nil, err
	}
	auth, err := nip98.NewVerifier(nip98.WithSignatureVerifier(sigs))
	if err != nil {
		sigs.Close()
		return nil, err
	}
	return &frontend{scheme: scheme, sigs: sigs, auth: auth}, nil
}

// Mount attaches the routes to every community host of the relay.
func (f *frontend) Mount(h buzz.Host) error {
	f.host = h
	h.HandleCommunity("POST /events", f.publish)
	h.HandleCommunity("GET /timeline", f.timeline)
	h.HandleCommunity("GET /stream", f.stream)
	return nil
}

// Close releases the signature verifier.
func (f *frontend) Close() { f.sigs.Close() }

// signer verifies the request's NIP-98 Authorization for tc's host, when
// it has one, and returns the pubkeys the request acts as (none without).
// A header that does not verify is answered 401 (ok false).
func (f *frontend) signer(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, body []byte) (pubkeys []string, ok bool) {
	if req.Header.Get("Authorization") == "" {
		return nil, true
	}
	hr := nip98.HTTPRequest(req, nip98.ExpectedURL(f.scheme+"://"+tc.Host(), req), body)
	hr.RequirePayload = req.Method == http.MethodPost
	hr.Scope = nip98.CommunityScope(tc.Community())
	pk, err := f.auth.Verify(req.Context(), hr)
	if err != nil {
		w.Header().Set("WWW-Authenticate", nip98.Scheme)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized", "message": nip98.ClientMessage(err)})
		return nil, false
	}
	return []string{pk}, true
}

// publish admits one event as the relay admits an EVENT and answers with
// its OK message.
func (f *frontend) publish(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		refuse(w, "invalid: unreadable request body (limit 1048576 bytes)")
		return
	}
	signers, ok := f.signer(w, req, tc, body)
	if !ok {
		return
	}
	ev, err := nostr.ParseEvent(body)
	if err != nil {
		refuse(w, ingest.Reason(err, "invalid: "))
		return
	}
	accepted, msg := f.host.Submit(req.Context(), tc, ev, signers)
	status := http.StatusOK
	if !accepted {
		status = prefixStatus(msg)
	}
	writeJSON(w, status, map[string]any{"event_id": ev.ID, "accepted": accepted, "message": msg})
}

// subscribe opens the relay stream of the request's filter; on refusal it
// has answered the request and returns nil.
func (f *frontend) subscribe(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) *buzz.Stream {
	readers, ok := f.signer(w, req, tc, nil)
	if !ok {
		return nil
	}
	q := req.URL.Query().Get("filter")
	if q == "" {
		q = "{}"
	}
	flt, err := nostr.ParseFilter([]byte(q))
	if err != nil {
		refuse(w, ingest.Reason(err, "invalid: "))
		return nil
	}
	ctx := req.Context()
	s, err := f.host.Subscribe(ctx, tc, readers, []nostr.Filter{flt})
	var refusal *buzz.Refusal
	switch {
	case errors.As(err, &refusal):
		if refusal.AuthRequired {
			w.Header().Set("WWW-Authenticate", nip98.Scheme)
		}
		refuse(w, refusal.Reason)
		return nil
	case err != nil:
		if ctx.Err() == nil {
			f.host.Logger().ErrorContext(ctx, "frontend: subscribe", "err", err)
			refuse(w, "error: internal error")
		}
		return nil
	}
	return s
}

// timeline answers the stored events of the request's filter, newest
// first, as a JSON array: the stored part of a stream.
func (f *frontend) timeline(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	s := f.subscribe(w, req, tc)
	if s == nil {
		return
	}
	defer s.Close()
	body := []byte{'['}
	for {
		m, err := s.Next(req.Context())
		if err != nil {
			return // the client left
		}
		switch m.Kind {
		case buzz.StreamEvent:
			if len(body) > 1 {
				body = append(body, ',')
			}
			body = append(body, m.Event...)
		case buzz.StreamEOSE:
			writeJSON(w, http.StatusOK, json.RawMessage(append(body, ']')))
			return
		case buzz.StreamClosed:
			refuse(w, m.Reason) // the read failed, or access ended while reading
			return
		}
	}
}

// stream sends the stored events ("event: event"), "event: eose", then the
// live events, until the client leaves or the relay ends the stream
// ("event: closed" with its reason).
func (f *frontend) stream(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	s := f.subscribe(w, req, tc)
	if s == nil {
		return
	}
	defer s.Close()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	send := func(event string, data []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := io.WriteString(w, "event: "+event+"\ndata: "+string(data)+"\n\n")
		return err == nil && rc.Flush() == nil
	}
	for {
		m, err := s.Next(req.Context())
		if err != nil {
			return // the client left
		}
		var ok bool
		switch m.Kind {
		case buzz.StreamEvent:
			ok = send("event", m.Event)
		case buzz.StreamEOSE:
			ok = send("eose", nil)
		case buzz.StreamClosed:
			if m.Reason != "" {
				send("closed", []byte(m.Reason))
			}
			return
		}
		if !ok {
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"error","message":"error: internal server error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// refuse answers a NIP-01 prefixed reason: {"error": prefix, "message":
// reason} with the status the prefix maps to.
func refuse(w http.ResponseWriter, reason string) {
	code, _, _ := strings.Cut(reason, ":")
	writeJSON(w, prefixStatus(reason), map[string]string{"error": code, "message": reason})
}

func prefixStatus(msg string) int {
	code, _, _ := strings.Cut(msg, ":")
	switch code {
	case "invalid", "pow":
		return http.StatusBadRequest
	case "restricted", "blocked":
		return http.StatusForbidden
	case "auth-required":
		return http.StatusUnauthorized
	case "rate-limited":
		return http.StatusTooManyRequests
	case "duplicate":
		return http.StatusOK
	}
	return http.StatusInternalServerError
}

var _ buzz.Feature = (*frontend)(nil)
