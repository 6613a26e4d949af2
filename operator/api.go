package operator

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Stable error codes of the API's JSON error bodies.
const (
	CodeNotFound          = "not_found"            // 404: no such path (or the API is disabled)
	CodeMethodNotAllowed  = "method_not_allowed"   // 405
	CodeAuthMissing       = "auth_missing"         // 401: no Authorization header
	CodeAuthInvalid       = "auth_invalid"         // 401: malformed header, wrong kind, bad id or signature
	CodeAuthStale         = "auth_stale"           // 401: created_at outside the window
	CodeAuthWrongURL      = "auth_wrong_url"       // 401: u tag is not the API origin + path (+query)
	CodeAuthWrongMethod   = "auth_wrong_method"    // 401: method tag mismatch
	CodeAuthPayload       = "auth_payload"         // 401: payload tag missing on POST, or not the body's hash
	CodeAuthReplayed      = "auth_replayed"        // 401: this event was already used
	CodeAuthUnavailable   = "auth_unavailable"     // 503: the replay guard could not decide; retry
	CodeNotOperator       = "not_operator"         // 403: valid signature, not an operator key
	CodeInvalidRequest    = "invalid_request"      // 400: malformed JSON, unknown or missing fields or parameters
	CodeInvalidHost       = "invalid_host"         // 400
	CodeInvalidPubKey     = "invalid_pubkey"       // 400
	CodeInvalidCommunity  = "invalid_community_id" // 400
	CodeBodyTooLarge      = "body_too_large"       // 413
	CodeCommunityNotFound = "community_not_found"  // 404
	CodeCommunityExists   = "community_exists"     // 409: create_only and the host is taken
	CodeOwnerConflict     = "owner_conflict"       // 409: the named owner is not the community's owner
	CodeLimitReached      = "limit_reached"        // 409: the owner's quota is used up
	CodeProtected         = "protected_community"  // 409: the deployment's own community cannot be archived
	CodePropagation       = "propagation_pending"  // 503: archived, but closing its connections was not confirmed; retry
	CodeInternal          = "internal"             // 500
)

const internalMessage = "error: internal server error"

// apiError is an error answer.
type apiError struct {
	status  int
	code    string
	message string
	extra   map[string]any
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, message string) *apiError {
	return &apiError{status: status, code: code, message: message}
}

// ServeHTTP serves the API; see the package documentation. It does not look
// at the Host header (Wrap does): the NIP-98 u tag binds every request to
// the API origin.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.enabled {
		writeError(w, errorf(http.StatusNotFound, CodeNotFound, "not found"))
		return
	}
	type route struct {
		method string
		fn     func(ctx context.Context, actor string, r *http.Request, body []byte) (int, any, error)
	}
	var rt route
	switch r.URL.Path {
	case "/operator/communities":
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			rt = route{http.MethodGet, h.list}
		default:
			rt = route{http.MethodPost, h.create}
		}
	case "/operator/communities/availability":
		rt = route{http.MethodGet, h.availability}
	case "/operator/communities/archive":
		rt = route{http.MethodPost, h.archive}
	case "/operator/communities/unarchive":
		rt = route{http.MethodPost, h.unarchive}
	case "/operator/communities/transfer":
		rt = route{http.MethodPost, h.transfer}
	case "/operator/communities/aliases", "/operator/communities/aliases/remove":
		rt = route{http.MethodPost, h.aliasRoute(r.URL.Path)} // aliases.go
	case "/operator/communities/profile", "/operator/communities/policy", "/operator/communities/kinds":
		switch {
		case h.settings == nil:
			writeError(w, errorf(http.StatusNotFound, CodeNotFound, "not found"))
			return
		case r.URL.Path == "/operator/communities/policy":
			rt = route{http.MethodPost, h.postPolicy}
		case r.URL.Path == "/operator/communities/kinds":
			rt = route{http.MethodPost, h.postKinds}
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			rt = route{http.MethodGet, h.getSettings}
		default:
			rt = route{http.MethodPost, h.postProfile}
		}
	default:
		writeError(w, errorf(http.StatusNotFound, CodeNotFound, "not found"))
		return
	}
	if r.Method != rt.method && !(rt.method == http.MethodGet && r.Method == http.MethodHead) {
		allow := rt.method
		if r.URL.Path == "/operator/communities" || r.URL.Path == "/operator/communities/profile" {
			allow = "GET, POST"
		}
		w.Header().Set("Allow", allow)
		writeError(w, errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed"))
		return
	}

	body, aerr := readBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	actor, aerr := h.authenticate(r, body)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	// Changes the store makes for this request name the operator as their
	// actor in the community's audit chain.
	status, resp, err := rt.fn(audit.WithActor(r.Context(), actor), actor, r, body)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			h.log.ErrorContext(r.Context(), "operator: request failed", "path", r.URL.Path, "operator", actor, "err", err)
			ae = errorf(http.StatusInternalServerError, CodeInternal, internalMessage)
		}
		writeError(w, ae)
		return
	}
	writeJSON(w, status, resp)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body exceeds 1 MiB")
		}
		return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "could not read the request body")
	}
	return body, nil
}

// authenticate verifies the NIP-98 header and that its signer is an
// operator, returning the signer's key.
func (h *Handler) authenticate(r *http.Request, body []byte) (string, *apiError) {
	pubkey, aerr := verifyNIP98(h.verifier, h.log, r, body, h.origin, nip98.OperatorScope())
	if aerr != nil {
		return "", aerr
	}
	if !h.operators[pubkey] {
		return "", errorf(http.StatusForbidden, CodeNotOperator, "actor not authorized: not a relay operator")
	}
	return pubkey, nil
}

// verifyNIP98 checks r's NIP-98 header against origin + r's path and
// query, with a payload tag required on POST, using the event once in
// scope; it returns the signer or the API error to answer.
func verifyNIP98(v *nip98.Verifier, log *slog.Logger, r *http.Request, body []byte, origin string, scope nip98.ReplayScope) (string, *apiError) {
	req := nip98.HTTPRequest(r, nip98.ExpectedURL(origin, r), body)
	req.RequirePayload = r.Method == http.MethodPost
	req.Scope = scope
	pubkey, err := v.Verify(r.Context(), req)
	if err != nil {
		var code string
		status := http.StatusUnauthorized
		switch {
		case errors.Is(err, nip98.ErrMissing):
			code = CodeAuthMissing
		case errors.Is(err, nip98.ErrStale):
			code = CodeAuthStale
		case errors.Is(err, nip98.ErrWrongURL):
			code = CodeAuthWrongURL
		case errors.Is(err, nip98.ErrWrongMethod):
			code = CodeAuthWrongMethod
		case errors.Is(err, nip98.ErrPayload), errors.Is(err, nip98.ErrPayloadRequired):
			code = CodeAuthPayload
		case errors.Is(err, nip98.ErrReplayed):
			code = CodeAuthReplayed
		case errors.Is(err, nip98.ErrReplayUnavailable):
			status, code = http.StatusServiceUnavailable, CodeAuthUnavailable
			log.ErrorContext(r.Context(), "operator: NIP-98 replay guard unavailable", "err", err)
		default:
			code = CodeAuthInvalid
		}
		return "", errorf(status, code, err.Error()) // nip98 texts are fixed and safe to show
	}
	return pubkey, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal","message":"error: internal server error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"error": e.code, "message": e.message}
	for k, v := range e.extra {
		body[k] = v
	}
	writeJSON(w, e.status, body)
}

// decode parses body as exactly one JSON object into dst, refusing unknown
// fields and trailing data.
func decode(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return errorf(http.StatusBadRequest, CodeInvalidRequest, "request body must be one JSON object with only the documented fields")
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, CodeInvalidRequest, "request body must be one JSON object with only the documented fields")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, CodeInvalidRequest, "request body must be one JSON object with only the documented fields")
	}
	return nil
}

// query returns the single value of the only allowed parameter name.
func query(r *http.Request, name string) (string, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", errorf(http.StatusBadRequest, CodeInvalidRequest, "malformed query string")
	}
	for k := range q {
		if k != name {
			return "", errorf(http.StatusBadRequest, CodeInvalidRequest, "unknown query parameter; only "+name+" is accepted")
		}
	}
	if len(q[name]) != 1 {
		return "", errorf(http.StatusBadRequest, CodeInvalidRequest, "query parameter "+name+" is required exactly once")
	}
	return q[name][0], nil
}

// candidateHost turns an operator-supplied host into the stored form: it
// must be a bare authority (no scheme, path, query, fragment, userinfo or
// whitespace), is normalized with tenant.NormalizeHost, and the result must
// pass tenant.ValidateHost.
func candidateHost(raw string) (string, error) {
	invalid := errorf(http.StatusBadRequest, CodeInvalidHost, "host must be a bare host name or IP literal with an optional port (no scheme, path, query, fragment, userinfo or whitespace)")
	if raw == "" || strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, "/?#@") {
		return "", invalid
	}
	host, err := tenant.NormalizeHost(raw)
	if err != nil || tenant.ValidateHost(host) != nil {
		return "", invalid
	}
	return host, nil
}

// pubKeyField validates a public key field: 64 lowercase hex characters.
func pubKeyField(name, v string) error {
	if !nostr.IsLowerHex(v, 64) {
		return errorf(http.StatusBadRequest, CodeInvalidPubKey, name+" must be 64 lowercase hex characters")
	}
	return nil
}

// storeError maps the store's sentinel errors to answers; anything else is
// internal.
func (h *Handler) storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrNoCommunity):
		return errorf(http.StatusNotFound, CodeCommunityNotFound, "community not found")
	case errors.Is(err, store.ErrCommunityExists):
		return errorf(http.StatusConflict, CodeCommunityExists, "community already exists")
	case errors.Is(err, store.ErrOwnerConflict):
		return errorf(http.StatusConflict, CodeOwnerConflict, "the community's owner is not the one named")
	case errors.Is(err, store.ErrCommunityLimit):
		e := errorf(http.StatusConflict, CodeLimitReached, "the owner already has the maximum number of active communities")
		e.extra = map[string]any{"max_communities_per_owner": h.maxOwned}
		return e
	case errors.Is(err, store.ErrInvalidHost):
		return errorf(http.StatusBadRequest, CodeInvalidHost, "invalid host")
	}
	return err
}

// hostsChanged makes a change of a community's mapping take effect at
// once: this process's host cache forgets m.Hosts (deduplicated, ""
// skipped), and every other process is told through the ControlPublisher.
// m.Archived must be the community's state after the change, or m.AliasOnly
// set when only aliases changed (the state is then not claimed: an archive
// fence must not be lifted by an alias change). The error is the
// publisher's: other processes may not have been told.
func (h *Handler) hostsChanged(ctx context.Context, id tenant.CommunityID, m control.HostsChanged) error {
	var uniq []string
	for _, host := range m.Hosts {
		if host != "" && !slices.Contains(uniq, host) {
			uniq = append(uniq, host)
		}
	}
	if h.invalidate != nil {
		for _, host := range uniq {
			h.invalidate(host)
		}
	}
	if h.publisher == nil || len(uniq) == 0 {
		return nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
	defer cancel()
	m.Hosts = uniq
	return h.publisher.PublishControl(pctx, id, m)
}

func formatTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

func optionalKey(k string) *string {
	if k == "" {
		return nil
	}
	return &k
}

// parseUUID parses the canonical 8-4-4-4-12 hex text of a UUID (either
// case).
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, false
	}
	return u, true
}
