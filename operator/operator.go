// Package operator is the operator API: an HTTP plane, separate from the
// Nostr relay, through which the relay's operators provision communities by
// host, list them by owner, check host availability, archive and unarchive
// them and transfer their ownership.
//
// Every request is authenticated with NIP-98: the event must be signed by
// one of the configured operator keys, its u tag must name the configured
// API origin followed by the request's path and query (whatever Host the
// request arrived on), POST requests must carry a payload tag (SHA-256 of
// the body), and each event is usable once (replay scope
// nip98.OperatorScope). Without operator keys the API is disabled: every
// path answers 404.
//
// Routes (JSON in and out; unknown fields and query parameters are refused):
//
//	GET  /operator/communities?owner_pubkey=…       list an owner's communities
//	POST /operator/communities                      {host, initial_owner_pubkey?, create_only?}
//	GET  /operator/communities/availability?host=…  is a host free to provision?
//	POST /operator/communities/archive              {host, owner_pubkey}
//	POST /operator/communities/unarchive            {host, owner_pubkey}
//	POST /operator/communities/transfer             {community_id, new_owner_pubkey, expected_owner_pubkey}
//	POST /operator/communities/aliases              {community_id, alias} (aliases.go)
//	POST /operator/communities/aliases/remove       {alias}
//	GET  /operator/communities/profile?host=…       a community's profile and access policy
//	POST /operator/communities/profile              {host, name, description, icon, contact}
//	POST /operator/communities/policy               {host, access: "open"|"members"}
//	POST /operator/communities/kinds                {host, kinds: "off"|"buzz"|"buzz,30023,…"|"" (the relay's)}
//
// The profile and policy routes need WithSettingsStore; a community's owner
// changes the same settings on the community's own host (OwnerAPI).
//
// Errors are {"error": "<code>", "message": "<text>"} with a stable code
// (the Code* constants). Statuses: 400 bad input, 401 a missing, malformed,
// stale, replayed or wrong-URL NIP-98 header, 403 a valid signer who is not
// an operator, 404 unknown community or path, 405 wrong method, 409
// conflicts, 413 body over 1 MiB, 500 internal (no details), 503 retryable
// (replay guard unavailable, disconnect not confirmed).
//
// Package operator owns these APIs and the Store contract they need. It
// depends on audit, channel, nip98, pubsub/control, store and tenant, and
// reaches the relay through small interfaces (Disconnector,
// ControlPublisher); it must not import the relay (package buzz), a store
// backend or a Redis client.
package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/tenant"
)

// DefaultMaxCommunitiesPerOwner is the per-owner quota when none is set.
const DefaultMaxCommunitiesPerOwner = 10

// MaxBodyBytes is the largest request body accepted.
const MaxBodyBytes = 1 << 20

// DefaultDisconnectTimeout bounds how long archive waits for the archived
// community's sockets to close before answering 503.
const DefaultDisconnectTimeout = 10 * time.Second

// Disconnector closes every live connection bound to a community; archive
// calls it after the community stopped resolving. buzz.Relay implements it.
type Disconnector interface {
	DisconnectCommunity(ctx context.Context, c tenant.CommunityID) error
}

// ControlPublisher tells every relay process of the deployment about a
// change; buzz.Relay implements it. The API publishes control.HostsChanged
// after provisioning, archiving and unarchiving, so every process's host
// cache forgets the hosts at once.
type ControlPublisher interface {
	PublishControl(ctx context.Context, community tenant.CommunityID, m control.Message) error
}

// Handler serves the operator API. Create it with New; it is safe for
// concurrent use.
type Handler struct {
	enabled    bool
	operators  map[string]bool
	origin     string // scheme://normalized-host
	originHost string // normalized host of origin
	store      Store
	verifier   *nip98.Verifier
	maxOwned   int
	protected  map[tenant.CommunityID]bool
	disconnect Disconnector
	invalidate func(host string)
	publisher  ControlPublisher
	settings   SettingsStore
	timeout    time.Duration
	log        *slog.Logger
}

type config struct {
	operators  []string
	origin     string
	store      Store
	verifier   *nip98.Verifier
	maxOwned   int
	protected  []tenant.CommunityID
	disconnect Disconnector
	invalidate func(string)
	publisher  ControlPublisher
	settings   SettingsStore
	timeout    time.Duration
	log        *slog.Logger
}

// Option configures New.
type Option func(*config) error

// WithOperators sets the public keys (64 hex characters each) allowed to
// use the API; they accumulate over several calls. An invalid key is an
// error. No keys at all disables the API.
func WithOperators(pubkeys ...string) Option {
	return func(c *config) error {
		for _, k := range pubkeys {
			if !nostr.IsLowerHex(strings.ToLower(k), 64) {
				return errors.New("operator: an operator key is not 64 hex characters")
			}
			c.operators = append(c.operators, strings.ToLower(k))
		}
		return nil
	}
}

// WithAPIOrigin sets the API's canonical origin, a bare http(s) origin such
// as "https://ops.example" (no path, query, fragment or userinfo). Every
// NIP-98 u tag is checked against it, and Wrap routes requests for its host
// to the API. Required when operators are configured.
func WithAPIOrigin(origin string) Option {
	return func(c *config) error {
		if _, _, err := ParseOrigin(origin); err != nil {
			return err
		}
		c.origin = origin
		return nil
	}
}

// WithStore sets the community registry. Required when operators are
// configured.
func WithStore(s Store) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("operator: nil Store")
		}
		c.store = s
		return nil
	}
}

// WithVerifier sets the NIP-98 verifier, and with it the replay guard (a
// redisreplay.Guard when several processes serve the API). Default: a
// verifier with an in-process guard.
func WithVerifier(v *nip98.Verifier) Option {
	return func(c *config) error {
		if v == nil {
			return errors.New("operator: nil Verifier")
		}
		c.verifier = v
		return nil
	}
}

// WithMaxCommunitiesPerOwner sets how many non-archived communities one
// owner may hold (default DefaultMaxCommunitiesPerOwner; at least 1).
func WithMaxCommunitiesPerOwner(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1_000_000 {
			return fmt.Errorf("operator: max communities per owner %d out of range 1..1000000", n)
		}
		c.maxOwned = n
		return nil
	}
}

// WithProtectedCommunities names communities that cannot be archived (409),
// such as the deployment's own community; they accumulate.
func WithProtectedCommunities(ids ...tenant.CommunityID) Option {
	return func(c *config) error {
		for _, id := range ids {
			if id.IsZero() {
				return errors.New("operator: zero protected community")
			}
		}
		c.protected = append(c.protected, ids...)
		return nil
	}
}

// WithDisconnector sets who closes an archived community's connections.
// Without one, archiving only stops new connections.
func WithDisconnector(d Disconnector) Option {
	return func(c *config) error {
		if d == nil {
			return errors.New("operator: nil Disconnector")
		}
		c.disconnect = d
		return nil
	}
}

// WithHostInvalidator sets a function called with every host whose mapping
// changed (created, archived, unarchived), typically
// (*tenant.CachingDirectory).Invalidate.
func WithHostInvalidator(f func(host string)) Option {
	return func(c *config) error {
		if f == nil {
			return errors.New("operator: nil host invalidator")
		}
		c.invalidate = f
		return nil
	}
}

// WithControlPublisher sets who tells the other relay processes that a
// community's hosts changed (control.HostsChanged). Without one, only the
// host invalidator of this process is called, and other processes see the
// change when their cache entries expire.
func WithControlPublisher(p ControlPublisher) Option {
	return func(c *config) error {
		if p == nil {
			return errors.New("operator: nil ControlPublisher")
		}
		c.publisher = p
		return nil
	}
}

// WithDisconnectTimeout bounds how long archive waits for the Disconnector
// (default DefaultDisconnectTimeout).
func WithDisconnectTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 || d > 5*time.Minute {
			return fmt.Errorf("operator: disconnect timeout %v out of range (0, 5m]", d)
		}
		c.timeout = d
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()). Every change an
// operator makes is logged at Info with the operator's key.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("operator: nil logger")
		}
		c.log = l
		return nil
	}
}

// New returns a Handler configured by opts. Without operator keys the
// Handler is disabled (Enabled reports false) and every other option may be
// omitted; with keys, WithAPIOrigin and WithStore are required.
func New(opts ...Option) (*Handler, error) {
	cfg := config{maxOwned: DefaultMaxCommunitiesPerOwner, timeout: DefaultDisconnectTimeout, log: slog.Default()}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("operator: nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	h := &Handler{
		operators:  make(map[string]bool, len(cfg.operators)),
		store:      cfg.store,
		verifier:   cfg.verifier,
		maxOwned:   cfg.maxOwned,
		protected:  make(map[tenant.CommunityID]bool, len(cfg.protected)),
		disconnect: cfg.disconnect,
		invalidate: cfg.invalidate,
		publisher:  cfg.publisher,
		settings:   cfg.settings,
		timeout:    cfg.timeout,
		log:        cfg.log,
	}
	for _, k := range cfg.operators {
		h.operators[k] = true
	}
	for _, id := range cfg.protected {
		h.protected[id] = true
	}
	if cfg.origin != "" {
		h.origin, h.originHost, _ = ParseOrigin(cfg.origin) // validated by the option
	}
	if len(h.operators) == 0 {
		return h, nil // disabled
	}
	if h.origin == "" {
		return nil, errors.New("operator: WithAPIOrigin is required when operators are configured")
	}
	if h.store == nil {
		return nil, errors.New("operator: WithStore is required when operators are configured")
	}
	if h.verifier == nil {
		v, err := nip98.NewVerifier()
		if err != nil {
			return nil, fmt.Errorf("operator: %w", err)
		}
		h.verifier = v
	}
	h.enabled = true
	return h, nil
}

// Enabled reports whether the API is on (operator keys are configured).
func (h *Handler) Enabled() bool { return h.enabled }

// Origin returns the normalized API origin ("" when none was set).
func (h *Handler) Origin() string { return h.origin }

// Wrap returns a handler that sends requests for the API origin's host
// (after tenant.NormalizeHost) whose path is /operator or under /operator/
// to the API, and everything else — every community host included — to
// next. The API thus answers on its host whether or not a community is
// mapped to it. A disabled Handler returns next itself.
func (h *Handler) Wrap(next http.Handler) http.Handler {
	if !h.enabled {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAPIPath(r.URL.Path) {
			if host, err := tenant.NormalizeHost(r.Host); err == nil && host == h.originHost {
				h.ServeHTTP(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func isAPIPath(p string) bool { return p == "/operator" || strings.HasPrefix(p, "/operator/") }

// ParseOrigin validates a bare http(s) origin ("https://ops.example",
// "http://localhost:8080"; a trailing "/" is allowed) and returns it as
// scheme://host with the host normalized by tenant.NormalizeHost, and that
// host alone.
func ParseOrigin(raw string) (origin, host string, err error) {
	bad := errors.New("operator: API origin must be a bare http(s) origin such as https://ops.example (no path, query, fragment or userinfo)")
	u, perr := url.Parse(raw)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" ||
		strings.Contains(raw, "#") {
		return "", "", bad
	}
	host, herr := tenant.NormalizeHost(u.Host)
	if herr != nil {
		return "", "", bad
	}
	return u.Scheme + "://" + host, host, nil
}
