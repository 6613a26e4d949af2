package buzz

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Feature is a part of a relay that mounts on it through the relay's seam,
// Host: HTTP routes on community hosts, event policies, hooks on stored
// events, NIPs to advertise. The features that ship with buzz (package
// nip05, …) and an embedder's own are peers: each mounts through the same
// Host and sees nothing else of the relay.
type Feature interface {
	// Mount attaches the feature to the relay h belongs to. New calls it
	// once, in the order of the WithFeature options, before the relay
	// serves; an error fails New. The feature keeps h for its handlers.
	Mount(h Host) error
}

// Host is the seam a relay offers to the features mounted on it (see
// Feature). Its methods are safe for concurrent use once New has returned;
// the Add and Handle methods may be called only from Mount.
type Host interface {
	// Store is the relay's store (WithStore). A feature type-asserts the
	// parts it needs (store.NameStore, …) and fails Mount without them.
	Store() store.EventStore
	// Logger is the relay's logger.
	Logger() *slog.Logger
	// Now is the relay's clock (WithClock).
	Now() time.Time
	// HandleCommunity mounts a route on every community host (see
	// Relay.HandleCommunity): the request's Host is bound to its community
	// first, and an unmapped host never reaches h.
	HandleCommunity(pattern string, h CommunityHandlerFunc)
	// HTTPAuth reports whether HTTP requests can be authenticated
	// (WithHTTPAPI gave a NIP-98 verifier, or WithAPITokens a token
	// service).
	HTTPAuth() bool
	// AuthenticateHTTP reads the request body (at most MaxHTTPBodyBytes)
	// and authenticates the request for tc's host: an API token of tc's
	// community ("Authorization: Bearer buzz_…", WithAPITokens), else its
	// NIP-98 authorization, each NIP-98 event accepted once per community.
	// A token must allow every scope of need — the route's, as the feature
	// declares it; a route that declares none accepts any token of the
	// community — and the caller then acts as the token's pubkey, which
	// HTTPCaller.Token and Allows expose for finer checks. On failure it
	// has answered the request itself (401, 400, 413, or 403 "restricted:
	// insufficient scope (need …)", the HTTP API's JSON errors; token
	// refusals are audited) and ok is false.
	AuthenticateHTTP(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, need ...apitoken.Scope) (caller HTTPCaller, ok bool)
	// Admitted returns why pubkey may not act in tc's community — a ban or
	// timeout, or not being a member of a members-only community, as a
	// NIP-01 prefixed message — or "" when it may.
	Admitted(ctx context.Context, tc tenant.TenantContext, pubkey string) (refusal string, err error)
	// CommunityRole is pubkey's role in tc's community; ok is false for a
	// non-member and when the store keeps no roles (store.ChannelStore).
	CommunityRole(ctx context.Context, tc tenant.TenantContext, pubkey string) (role channel.Role, ok bool, err error)
	// RelayURL is the WebSocket URL of tc's community, as clients reach it
	// through req (the scheme of WithRelayURL, else of req).
	RelayURL(req *http.Request, tc tenant.TenantContext) string
	// AddEventPolicy adds a policy every EVENT passes, after the embedder's
	// (WithEventPolicy) and before the per-kind rules; see EventPolicy.
	AddEventPolicy(p EventPolicy)
	// AddOnStored adds a hook called after an event was stored and
	// published; see OnStored.
	AddOnStored(h OnStored)
	// Advertise lists n in NIP-11's supported_nips and on the home page.
	Advertise(n NIP)
}

// WithFeature mounts f on the relay (see Feature). Features mount in the
// order given.
func WithFeature(f Feature) Option {
	return func(c *config) error {
		if f == nil {
			return errors.New("buzz: WithFeature: nil feature")
		}
		c.features = append(c.features, f)
		return nil
	}
}

// seam is the relay's Host. It is a separate type so that the seam's
// methods are what a feature sees, not the relay's.
type seam struct {
	r *Relay
	// mounting is true while Mount runs; the Add and Handle methods refuse
	// to change the relay after that.
	mounting bool
	policies []EventPolicy
	hooks    []OnStored
	nips     []NIP
}

// mountFeatures mounts every WithFeature feature on a new seam, which
// holds what they added.
func (r *Relay) mountFeatures() (*seam, error) {
	s := &seam{r: r, mounting: true}
	for _, f := range r.cfg.features {
		if err := f.Mount(s); err != nil {
			return nil, err
		}
	}
	s.mounting = false
	return s, nil
}

func (s *seam) Store() store.EventStore { return s.r.cfg.store }
func (s *seam) Logger() *slog.Logger    { return s.r.log }
func (s *seam) Now() time.Time          { return s.r.cfg.now() }

func (s *seam) HandleCommunity(pattern string, h CommunityHandlerFunc) {
	s.mustMount("HandleCommunity")
	s.r.HandleCommunity(pattern, h)
}

func (s *seam) HTTPAuth() bool { return s.r.cfg.httpAPI != nil || s.r.cfg.tokens != nil }

func (s *seam) AuthenticateHTTP(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, need ...apitoken.Scope) (HTTPCaller, bool) {
	return s.r.authorize(w, req, tc, need...)
}

func (s *seam) Admitted(ctx context.Context, tc tenant.TenantContext, pubkey string) (string, error) {
	reason, err := s.r.bannedReaders(ctx, tc.Community(), []string{pubkey})
	if err != nil || reason != "" {
		return reason, err
	}
	reason, _, err = s.r.membersOnlyRefusal(ctx, tc.Community(), []string{pubkey})
	return reason, err
}

func (s *seam) CommunityRole(ctx context.Context, tc tenant.TenantContext, pubkey string) (channel.Role, bool, error) {
	cs, ok := s.r.cfg.store.(store.ChannelStore)
	if !ok {
		return "", false, nil
	}
	return cs.CommunityRole(ctx, tc.Community(), pubkey)
}

func (s *seam) RelayURL(req *http.Request, tc tenant.TenantContext) string {
	return s.r.relayURL(req, tc)
}

func (s *seam) AddEventPolicy(p EventPolicy) {
	s.mustMount("AddEventPolicy")
	s.policies = append(s.policies, p)
}

func (s *seam) AddOnStored(h OnStored) {
	s.mustMount("AddOnStored")
	s.hooks = append(s.hooks, h)
}

func (s *seam) Advertise(n NIP) {
	s.mustMount("Advertise")
	if !slices.ContainsFunc(s.nips, func(m NIP) bool { return m.Number == n.Number }) {
		s.nips = append(s.nips, n)
	}
}

// mustMount panics when a mounting method is called after Mount returned:
// the relay's routes, policies and hooks are fixed once it serves.
func (s *seam) mustMount(what string) {
	if !s.mounting {
		panic("buzz: Host." + what + " called outside Feature.Mount")
	}
}

// relayURL is the community's own WebSocket URL.
func (r *Relay) relayURL(req *http.Request, tc tenant.TenantContext) string {
	scheme := r.cfg.relayScheme
	if scheme == "" {
		scheme = "ws"
		if req.TLS != nil {
			scheme = "wss"
		}
	}
	return scheme + "://" + tc.Host()
}
