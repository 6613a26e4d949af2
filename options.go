package buzz

import (
	"context"
	"errors"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/messaging"
	"log/slog"
	"net/netip"
	"net/url"
	"time"

	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Option configures a Relay. Options are validated by New, which returns the
// first problem as an error.
type Option func(*config) error

// AuthPolicy says what a connection may do before it authenticates (NIP-42).
type AuthPolicy int

const (
	// AuthOptional leaves reads and writes open; AUTH is still accepted and
	// its pubkeys recorded on the connection. It is the default.
	AuthOptional AuthPolicy = iota
	// AuthRequired refuses EVENT, REQ and COUNT until the connection has
	// authenticated: EVENT gets OK false "auth-required: ...", REQ and COUNT
	// get CLOSED "auth-required: ...", and the challenge is sent again. Once
	// authenticated, an EVENT is accepted only from an authenticated pubkey
	// (otherwise OK false "restricted: ...").
	AuthRequired
)

// EventPolicy is an embedder's hook that may reject an event. It runs after
// the relay's own checks (id, signature, time, size) and before per-kind
// validation and storage. A non-nil error rejects the event with OK false:
// if the error text starts with a NIP-01 prefix ("invalid:", "blocked:",
// "restricted:", "rate-limited:", "pow:", "duplicate:", "auth-required:",
// "error:") it is sent as is, otherwise it is sent as "blocked: " + text.
type EventPolicy = func(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event) error

// FilterPolicy is an embedder's hook that may refuse one filter of a REQ or
// COUNT. A non-nil error closes the subscription with CLOSED, its text
// prefixed as for EventPolicy (default prefix "blocked: ").
type FilterPolicy = func(ctx context.Context, tc tenant.TenantContext, f nostr.Filter) error

// OnStored is called after an event was durably stored, acknowledged and
// published. It runs on the connection's handler goroutine and should not
// block for long.
type OnStored = func(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event)

type config struct {
	store          store.EventStore
	channels       bool // WithChannels
	membersOnly    bool // WithRelayMembershipRequired
	directory      tenant.Directory
	profiles       CommunityProfiles
	broker         pubsub.Broker
	relayScheme    string // "" = ws or wss
	auth           AuthPolicy
	limits         Limits
	info           Info
	logger         *slog.Logger
	verifier       *nostr.Verifier
	eventPolicies  []EventPolicy
	features       []Feature
	filterPolicy   []FilterPolicy
	onStored       []OnStored
	onConnect      []OnConnect
	onDisconnect   []OnDisconnect
	onAuth         []OnAuth
	now            func() time.Time
	tracer         trace.Factory   // nil: no conformance tracing
	relayKey       nostr.SecretKey // master key of relay-signed events
	hasRelayKey    bool
	cluster        clusterConfig     // multi-process options (cluster.go)
	httpAuth       *nip98.Verifier   // nil: no NIP-98 HTTP authentication (httpauth.go)
	tokens         *apitoken.Service // nil: no API tokens (tokens.go)
	trustedProxies []netip.Prefix    // whose X-Forwarded-For is believed (admission.go)
	metrics        Metrics           // noMetrics unless WithMetrics (metrics_hook.go)
	logSummary     time.Duration     // WithLogSummary (oplog.go)
	logSummarySet  bool
	kinds          messaging.Kinds // WithKindAllowList (options_messaging.go)
}

// WithStore sets the event store. Required.
//
// Beyond store.EventStore, the relay uses what else the store may
// implement (store/embedded and store/postgres implement all of them):
//   - Pinger: the store's readiness check (/readyz, Relay.Ready);
//   - ReadCapacity: the size of the fair read queue;
//   - CommunityProfiles: each community's NIP-11 profile (and so its home page, package homepage),
//     unless WithCommunityProfiles names another source;
//   - store.AuditLog: audit chains of refusals and moderation (served by
//     the audit/audithttp feature).
//   - store.ReactionStore: one reaction per (author, target, emoji) in a
//     community (NIP-25), claimed before the write (store/postgres; the
//     embedded store keeps the slots with the events and refuses a second
//     reaction in Save with store.ErrReactionHeld).
//
// Channels (store.ChannelStore), and what rests on them (community roles and
// access policy, moderation through store.ModerationStore, workflows), are
// used only with WithChannels: a store that keeps them does not switch them
// on by itself.
func WithStore(s store.EventStore) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("buzz: WithStore: nil store")
		}
		c.store = s
		return nil
	}
}

// WithChannels turns on channels (NIP-29 groups and Buzz's channel kinds),
// kept by the store given to WithStore, which must implement
// store.ChannelStore (New fails otherwise). With channels come community
// roles and access policy, moderation (when the store implements
// store.ModerationStore), channel-scoped reads and relay-signed group
// state; the workflow host (package workflowhost) needs them. Without WithChannels, an event naming a
// channel (an "h" tag) is refused and reads see no channel events.
func WithChannels() Option {
	return func(c *config) error {
		c.channels = true
		return nil
	}
}

// WithRelayMembershipRequired requires NIP-43 relay membership to read and
// write: every community served is members-only, whatever its own access
// policy, so only its owner and members (9030–9032), authenticated, may
// read or write anything (Buzz's BUZZ_REQUIRE_RELAY_MEMBERSHIP). A client
// that has not authenticated is answered auth-required (with an AUTH
// challenge); an authenticated non-member "restricted: not a relay
// member". NIP-11 then lists NIP-43 when the relay key is stable (given
// with WithRelayKey or kept by the store). It needs WithChannels (New
// fails otherwise).
func WithRelayMembershipRequired() Option {
	return func(c *config) error {
		c.membersOnly = true
		return nil
	}
}

// WithDirectory sets the host → community directory. Required.
//
// A directory that caches (one with an Invalidate(host string) method, such
// as *tenant.CachingDirectory) is told to forget a community's hosts
// whenever a control.HostsChanged arrives on the control bus, from this
// process or another: provisioning, archiving and unarchiving take effect
// at once on every process instead of when the cache entry expires.
func WithDirectory(d tenant.Directory) Option {
	return func(c *config) error {
		if d == nil {
			return errors.New("buzz: WithDirectory: nil directory")
		}
		c.directory = d
		return nil
	}
}

// WithBroker sets the live-event broker. The default is pubsub.NewLocal().
// The Relay listens to the broker but does not close it: its owner does.
func WithBroker(b pubsub.Broker) Option {
	return func(c *config) error {
		if b == nil {
			return errors.New("buzz: WithBroker: nil broker")
		}
		c.broker = b
		return nil
	}
}

// WithCommunityProfiles sets where each community's own name, description,
// icon and contact are read (served in NIP-11 and on the home page for the
// community's hosts only). Default: the store, when it implements
// CommunityProfiles (store/embedded and store/postgres do).
func WithCommunityProfiles(p CommunityProfiles) Option {
	return func(c *config) error {
		if p == nil {
			return errors.New("buzz: WithCommunityProfiles: nil source")
		}
		c.profiles = p
		return nil
	}
}

// WithRelayURL sets the relay's public URL, e.g. "wss://relay.example.com".
// Its scheme (ws or wss) is the one an AUTH event's relay tag must use; the
// host of that tag must always equal the host the connection was bound to,
// so one URL serves every community. Without it, ws and wss are both
// accepted.
func WithRelayURL(u string) Option {
	return func(c *config) error {
		p, err := url.Parse(u)
		if err != nil {
			return errors.New("buzz: WithRelayURL: malformed URL")
		}
		if p.Scheme != "ws" && p.Scheme != "wss" {
			return errors.New("buzz: WithRelayURL: the scheme must be ws or wss")
		}
		if p.Host == "" {
			return errors.New("buzz: WithRelayURL: the URL has no host")
		}
		c.relayScheme = p.Scheme
		return nil
	}
}

// WithAuth sets the NIP-42 policy (default AuthOptional).
func WithAuth(p AuthPolicy) Option {
	return func(c *config) error {
		if p != AuthOptional && p != AuthRequired {
			return errors.New("buzz: WithAuth: unknown policy")
		}
		c.auth = p
		return nil
	}
}

// WithLimits sets the limits. Zero fields take their defaults; negative or
// unusable values make New fail.
func WithLimits(l Limits) Option {
	return func(c *config) error {
		v, err := l.withDefaults()
		if err != nil {
			return err
		}
		c.limits = v
		return nil
	}
}

// WithInfo sets the NIP-11 relay information. A Pubkey that is not 64
// lowercase hex characters is an error; an empty one is omitted from the
// document.
func WithInfo(i Info) Option {
	return func(c *config) error {
		if i.PubKey != "" && !nostr.IsLowerHex(i.PubKey, 64) {
			return errors.New("buzz: WithInfo: pubkey must be 64 lowercase hex characters")
		}
		c.info = i
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("buzz: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithVerifier sets the signature verifier (default nostr.NewVerifier()).
func WithVerifier(v *nostr.Verifier) Option {
	return func(c *config) error {
		if v == nil {
			return errors.New("buzz: WithVerifier: nil verifier")
		}
		c.verifier = v
		return nil
	}
}

// WithEventPolicy adds a hook that may reject events. It may be given several
// times: all hooks run, in order, until one rejects.
func WithEventPolicy(fn EventPolicy) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("buzz: WithEventPolicy: nil func")
		}
		c.eventPolicies = append(c.eventPolicies, fn)
		return nil
	}
}

// WithFilterPolicy adds a hook that may refuse filters of REQ and COUNT. It
// may be given several times: all hooks run, in order, until one refuses.
func WithFilterPolicy(fn FilterPolicy) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("buzz: WithFilterPolicy: nil func")
		}
		c.filterPolicy = append(c.filterPolicy, fn)
		return nil
	}
}

// WithOnStored adds a hook called after each stored event. It may be given
// several times; hooks run in order.
func WithOnStored(fn OnStored) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("buzz: WithOnStored: nil func")
		}
		c.onStored = append(c.onStored, fn)
		return nil
	}
}

// WithClock sets the clock used for created_at, NIP-40 and NIP-42 checks
// (default time.Now). For tests.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return errors.New("buzz: WithClock: nil func")
		}
		c.now = now
		return nil
	}
}
