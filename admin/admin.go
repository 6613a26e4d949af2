// Package admin is the operator's read-only console host: one exact
// authority (buzzd's BUZZ_ADMIN_HOST), cut off from the relay before any
// public route, where operators read across communities.
//
// Wrap sends every request whose Host, normalized with tenant.NormalizeHost,
// is the admin host to the console — no WebSocket upgrade, no NIP-11, no
// community route, the health probes neither — and everything else to the
// relay. The console serves:
//
//	GET /reports?limit=   the newest open reports of every active community,
//	                      each with its community's id and host (1..500,
//	                      default 100)
//	GET /feedback?limit=  the newest product feedback (kind 42000) of every
//	                      community, newest received first, each with its
//	                      community's id and host (1..500, default 100)
//
// and answers anything else 404.
//
// Every request is authenticated with NIP-98 by an operator key: the u tag
// names the admin origin (scheme://admin-host) plus path and query, the
// method tag GET, and each event is usable once (nip98.OperatorScope). A
// browser's Origin header, when present, must be the admin origin (403
// otherwise): pages of other origins cannot read the console even with a
// token in hand. Requests without Origin (curl, same-origin GETs) pass on
// NIP-98 alone. Errors are {"error": "<code>", "message": "<text>"}: 401
// (NIP-98), 403 (not an operator, foreign Origin), 400, 404, 405, 500.
//
// Without a host (no WithHost) the Handler is disabled: Wrap returns the
// relay itself, so every admin route is the relay's plain 404.
//
// Package admin owns the console host only. It depends on nip98, store and
// tenant; it must not import the relay (package buzz), a store backend or a
// Redis client.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Paths of the console.
const (
	ReportsPath  = "/reports"  // open reports
	FeedbackPath = "/feedback" // product feedback
)

// Store is what the console reads. store/embedded and store/postgres
// implement it (store.ModerationStore, store.FeedbackStore).
type Store interface {
	OpenReports(ctx context.Context, limit int) ([]store.CommunityReport, error)
	RecentFeedback(ctx context.Context, limit int) ([]store.Feedback, error)
}

// Handler serves the admin host. Create it with New.
type Handler struct {
	host      string // normalized
	origin    string // scheme://host
	operators map[string]bool
	store     Store
	verifier  *nip98.Verifier
	log       *slog.Logger
}

type config struct {
	host, scheme string
	operators    []string
	store        Store
	verifier     *nip98.Verifier
	log          *slog.Logger
}

// Option configures New.
type Option func(*config) error

// WithHost sets the admin host: one authority (host and optional port, no
// scheme, path or user info), normalized with tenant.NormalizeHost. Without
// it the Handler is disabled.
func WithHost(host string) Option {
	return func(c *config) error {
		h, err := NormalizeHost(host)
		if err != nil {
			return err
		}
		c.host = h
		return nil
	}
}

// NormalizeHost validates an admin host and returns its normalized form.
func NormalizeHost(raw string) (string, error) {
	bad := errors.New("admin: the admin host must be a bare host name or IP literal with an optional port (no scheme, path, query, fragment, userinfo or whitespace)")
	if raw == "" || strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, "/?#@") {
		return "", bad
	}
	h, err := tenant.NormalizeHost(raw)
	if err != nil || tenant.ValidateHost(h) != nil {
		return "", bad
	}
	return h, nil
}

// WithScheme sets the scheme of the admin origin, "https" (default) or
// "http": the NIP-98 u tag and the Origin header must use it.
func WithScheme(scheme string) Option {
	return func(c *config) error {
		if scheme != "http" && scheme != "https" {
			return fmt.Errorf("admin: scheme must be http or https, not %q", scheme)
		}
		c.scheme = scheme
		return nil
	}
}

// WithOperators sets the public keys (64 lowercase hex) allowed to read the
// console; they accumulate. Required with a host.
func WithOperators(pubkeys ...string) Option {
	return func(c *config) error {
		for _, k := range pubkeys {
			if !nostr.IsLowerHex(k, 64) {
				return errors.New("admin: an operator key is not 64 lowercase hex characters")
			}
		}
		c.operators = append(c.operators, pubkeys...)
		return nil
	}
}

// WithStore sets what the console reads. Required with a host.
func WithStore(s Store) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("admin: nil Store")
		}
		c.store = s
		return nil
	}
}

// WithVerifier sets the NIP-98 verifier and its replay guard (share a
// redisreplay.Guard between processes). Default: an in-process guard.
func WithVerifier(v *nip98.Verifier) Option {
	return func(c *config) error {
		if v == nil {
			return errors.New("admin: nil Verifier")
		}
		c.verifier = v
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("admin: nil logger")
		}
		c.log = l
		return nil
	}
}

// New returns a Handler. Without WithHost it is disabled and the other
// options may be omitted; with a host, operators and a store are required.
func New(opts ...Option) (*Handler, error) {
	cfg := config{scheme: "https", log: slog.Default()}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("admin: nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	h := &Handler{host: cfg.host, operators: map[string]bool{}, store: cfg.store, verifier: cfg.verifier, log: cfg.log}
	if h.host == "" {
		return h, nil
	}
	if len(cfg.operators) == 0 {
		return nil, errors.New("admin: an admin host needs operator keys (WithOperators)")
	}
	if h.store == nil {
		return nil, errors.New("admin: WithStore is required with an admin host")
	}
	for _, k := range cfg.operators {
		h.operators[k] = true
	}
	h.origin = cfg.scheme + "://" + h.host
	if h.verifier == nil {
		v, err := nip98.NewVerifier()
		if err != nil {
			return nil, fmt.Errorf("admin: %w", err)
		}
		h.verifier = v
	}
	return h, nil
}

// Enabled reports whether an admin host is configured.
func (h *Handler) Enabled() bool { return h.host != "" }

// Host returns the normalized admin host ("" when disabled).
func (h *Handler) Host() string { return h.host }

// Wrap returns a handler sending requests for the admin host to the
// console and everything else to next; a disabled Handler returns next.
func (h *Handler) Wrap(next http.Handler) http.Handler {
	if !h.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, err := tenant.NormalizeHost(r.Host); err == nil && host == h.host {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the console (see the package documentation). It does not
// look at Host: Wrap routes by it, and the NIP-98 u tag binds every request
// to the admin origin.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.Enabled() || (r.URL.Path != ReportsPath && r.URL.Path != FeedbackPath) {
		writeError(w, http.StatusNotFound, "not_found", "not found")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed")
		return
	}
	if o := r.Header.Values("Origin"); len(o) > 0 && (len(o) > 1 || !h.sameOrigin(o[0])) {
		writeError(w, http.StatusForbidden, "origin_forbidden", "the Origin is not the admin host")
		return
	}
	req := nip98.HTTPRequest(r, nip98.ExpectedURL(h.origin, r), nil)
	req.Scope = nip98.OperatorScope()
	pubkey, err := h.verifier.Verify(r.Context(), req)
	if err != nil {
		status, code := http.StatusUnauthorized, "unauthorized"
		if errors.Is(err, nip98.ErrReplayUnavailable) {
			status, code = http.StatusServiceUnavailable, "auth_unavailable"
		}
		w.Header().Set("WWW-Authenticate", nip98.Scheme)
		writeError(w, status, code, err.Error())
		return
	}
	if !h.operators[pubkey] {
		writeError(w, http.StatusForbidden, "not_operator", "actor not authorized: not a relay operator")
		return
	}
	limit, ok := pageLimit(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request", "the only query parameter is limit, 1 to 500")
		return
	}
	if r.URL.Path == FeedbackPath {
		h.feedback(w, r, pubkey, limit)
		return
	}
	h.reports(w, r, pubkey, limit)
}

// pageLimit reads the only query parameter, limit (1..500, default 100).
func pageLimit(r *http.Request) (int, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return 0, false
	}
	for k, v := range q {
		if k != "limit" || len(v) != 1 {
			return 0, false
		}
	}
	if !q.Has("limit") {
		return 100, true
	}
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit < 1 || limit > store.MaxModerationPage {
		return 0, false
	}
	return limit, true
}

// sameOrigin reports whether an Origin header names the admin origin.
func (h *Handler) sameOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.User != nil || u.RawQuery != "" {
		return false
	}
	host, err := tenant.NormalizeHost(u.Host)
	return err == nil && strings.ToLower(u.Scheme)+"://"+host == h.origin
}

// ReportJSON is one report of GET /reports.
type ReportJSON struct {
	CommunityID  string          `json:"community_id"`
	Host         string          `json:"host"`
	ID           string          `json:"id"`
	Reporter     string          `json:"reporter"`
	TargetPubKey string          `json:"target_pubkey"`
	TargetEvent  string          `json:"target_event,omitempty"`
	Type         string          `json:"type"`
	CreatedAt    int64           `json:"created_at"`
	ReceivedAt   string          `json:"received_at"`
	Event        json.RawMessage `json:"event"`
}

func (h *Handler) reports(w http.ResponseWriter, r *http.Request, operator string, limit int) {
	rs, err := h.store.OpenReports(r.Context(), limit)
	if err != nil {
		h.log.ErrorContext(r.Context(), "admin: open reports", "operator", operator, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "error: internal server error")
		return
	}
	out := make([]ReportJSON, 0, len(rs))
	for _, x := range rs {
		out = append(out, ReportJSON{CommunityID: x.Community.String(), Host: x.Host, ID: x.ID, Reporter: x.Reporter,
			TargetPubKey: x.TargetPubKey, TargetEvent: x.TargetEvent, Type: x.Type, CreatedAt: x.CreatedAt,
			ReceivedAt: x.ReceivedAt.UTC().Format(time.RFC3339), Event: x.Raw})
	}
	writeJSON(w, http.StatusOK, map[string]any{"reports": out})
}

// FeedbackJSON is one product feedback of GET /feedback.
type FeedbackJSON struct {
	ID          string          `json:"id"`
	CommunityID string          `json:"community_id"`
	Host        string          `json:"host"`
	PubKey      string          `json:"pubkey"`
	Content     string          `json:"content"`
	Tags        json.RawMessage `json:"tags"`
	CreatedAt   int64           `json:"created_at"`
	ReceivedAt  string          `json:"received_at"`
}

func (h *Handler) feedback(w http.ResponseWriter, r *http.Request, operator string, limit int) {
	fs, err := h.store.RecentFeedback(r.Context(), limit)
	if err != nil {
		h.log.ErrorContext(r.Context(), "admin: product feedback", "operator", operator, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "error: internal server error")
		return
	}
	out := make([]FeedbackJSON, 0, len(fs))
	for _, f := range fs {
		tags := json.RawMessage(f.Tags)
		if !json.Valid(tags) {
			tags = json.RawMessage("[]")
		}
		out = append(out, FeedbackJSON{ID: f.ID, CommunityID: f.Community.String(), Host: f.Host, PubKey: f.PubKey,
			Content: f.Content, Tags: tags, CreatedAt: f.CreatedAt, ReceivedAt: f.ReceivedAt.UTC().Format(time.RFC3339)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"feedback": out})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal","message":"error: internal server error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": code, "message": msg})
}
