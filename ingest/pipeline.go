// Package ingest is the admission pipeline of a relay: every EVENT a client
// sends goes through Pipeline.Ingest, one ordered sequence of checks followed
// by storage and publication, and comes out as exactly one Outcome — the
// relay's OK message.
//
// The order of the steps is a security decision (cheap structural refusals
// first, signature verification before any storage read, embedder policy
// before per-kind rules, acknowledgement only after a durable write) and is
// kept in one function so it can be read top to bottom.
//
// Events that change what someone may do (authority events: NIP-29 and
// community commands, moderation, every Config.Commands kind) follow one
// more rule, stated in authority.go: accepted only from a submission
// authenticated as their author, only while fresh, and applied at most
// once per community (their effect is written with a store.Authority mark).
//
// Package ingest owns admission: the order of the checks and the per-kind
// validators. It consumes stores, brokers and limiters through the interfaces
// of store, pubsub and ratelimit; it must not import the relay (package
// buzz), a store backend (store/embedded, store/postgres) or a Redis
// implementation (pubsub/redis, ratelimit/redislimit).
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/internal/ttlcache"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// EventPolicy is an embedder hook that may reject an event; see Reason for
// how its error becomes the OK message.
type EventPolicy func(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event) error

// CommandFunc executes an event kind the relay acts on (a workflow
// definition, a manual trigger) after every admission check has passed.
// It returns the OK outcome, and whether to go on storing (and publishing)
// the event as any other; then, once stored, the OK message is out.Message.
// A refusal (out.OK false) is returned as is and stores nothing.
type CommandFunc func(ctx context.Context, s Submission) (out Outcome, store bool)

// OnStored is an embedder hook called after an event was stored and published.
type OnStored func(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event)

// Config configures a Pipeline. Store, Broker and Verifier are required.
type Config struct {
	Store    store.EventStore
	Broker   pubsub.Broker
	Verifier *nostr.Verifier
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxFutureSkew: created_at may be at most this far ahead of Now.
	MaxFutureSkew time.Duration
	// MaxContentBytes: the largest content accepted, in bytes.
	MaxContentBytes int
	// AuthRequired: only connections authenticated (NIP-42) as the event's
	// author may publish.
	AuthRequired  bool
	EventPolicies []EventPolicy
	OnStored      []OnStored
	Logger        *slog.Logger
	// RateLimiter, when set, admits each event's author (step 8, class
	// ratelimit.ClassEvent); RateLimitTier picks the author's tier.
	RateLimiter   ratelimit.Limiter
	RateLimitTier TierFunc
	// OnRateLimited, when set, is told of every event the RateLimiter
	// refused over quota (not of refusals because it could not decide),
	// with the OK message sent. It runs on the ingest path: it must return
	// at once (the relay records refusals in the community's audit chain,
	// coalesced, off this path).
	OnRateLimited func(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event, reason string)
	// Commands maps event kinds to the functions that execute them (step
	// 9c), e.g. the workflow engine's 30620 and 46020. Every kind here is
	// an authority event (see the authority rule, authority.go): the ctx a
	// CommandFunc receives carries the event's store.Authority mark, so the
	// first store write of its effect records it, and a replay's write
	// returns store.ErrDuplicate.
	Commands map[int]CommandFunc
	// AuthorityKinds are further kinds the embedder treats as authority
	// events (the built-in set is IsAuthorityKind, plus Commands).
	AuthorityKinds []int
	// AuthorityWindow bounds how far behind Now an authority event's
	// created_at may be (0: DefaultAuthorityWindow; negative is refused).
	AuthorityWindow time.Duration
	// StoreLatency, when set, is told how long each write to the store
	// took (op "save": Save, ApplyChannelCommand).
	StoreLatency func(op string, d time.Duration)
	// Channels enables channels and community access policies (see
	// Channels); nil refuses every event that names a channel.
	Channels *Channels
	// Moderation enables community moderation: bans, timeouts, commands
	// 9040–9044 and the report queue (see Moderation). It needs Channels;
	// nil refuses moderation commands and reports.
	Moderation *Moderation
	// Feedback keeps product feedback (kind 42000, see queueFeedback);
	// nil refuses it.
	Feedback store.FeedbackStore
	// Kinds is the kind allow-list (step 7b): an event of a kind it does
	// not allow is refused with messaging.MsgUnknownKind. The zero value
	// allows every kind. It is the relay's list: a community with a
	// setting of its own in CommunityKinds uses that instead.
	Kinds messaging.Kinds
	// CommunityKinds, when set, holds each community's own kind
	// allow-list setting (see kindsFor), cached for a few seconds.
	CommunityKinds store.CommunityKindsStore
	// AgentOwners, when set, lets the owner of an agent edit (40003) the
	// agent's messages; without it only a message's author may.
	AgentOwners store.AgentOwnerStore
	// Reactions keeps one reaction per (author, target, emoji) of a
	// community (step 10b) for a store that does not keep the slots with
	// the events itself; nil leaves them to the store, whose Save refuses a
	// reaction for a held slot with store.ErrReactionHeld (the embedded
	// store), or stores every reaction (a store that keeps no slots).
	Reactions store.ReactionStore
	// ReactionGrace: how long a reaction slot whose event is not stored
	// stays claimed (0: DefaultReactionGrace; negative is refused).
	ReactionGrace time.Duration
	// MaxNotBeforeDelta bounds a reminder's not_before ahead of Now
	// (reminder.go; 0: one year, as Buzz).
	MaxNotBeforeDelta time.Duration
	// Reminders, when set, schedules stored reminders for due-time
	// delivery (reminder.go).
	Reminders store.ReminderStore
	// Projects keeps the revisioned state of projects, which project
	// changes (kind 47010, projectchange.go) compare-and-swap; nil refuses
	// them.
	Projects store.ProjectStore
	// RepoNames reserves the names of git repository announcements (kind
	// 30617, reponames.go): unique per community, at most MaxReposPerPubKey
	// per owner; nil reserves nothing.
	RepoNames store.RepoNameStore
	// MaxReposPerPubKey is the quota of repository names per owner per
	// community (0: DefaultMaxReposPerPubKey; negative is refused).
	MaxReposPerPubKey int
	// Threads, when set, checks thread replies against the threads the
	// store keeps (threads.go: parent in the channel, root, depth); nil
	// admits replies unchecked.
	Threads store.ThreadStore
}

// Pipeline admits events. It is safe for concurrent use.
type Pipeline struct {
	cfg Config
	// staged is cfg.Store when it stages its saves, else nil.
	staged stagedSaver
	// restrictions caches bans and timeouts (with Moderation only).
	restrictions *ttlcache.Cache[string, []store.Restriction]
	// communityKinds caches each community's kind allow-list (with
	// Config.CommunityKinds only; allowlist.go).
	communityKinds *ttlcache.Cache[string, communityKinds]

	clockMu sync.Mutex
	clock   map[any]int64 // last created_at of each relay-signed state event
}

// New validates cfg and returns a Pipeline.
func New(cfg Config) (*Pipeline, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("ingest: Config.Store is required")
	case cfg.Broker == nil:
		return nil, errors.New("ingest: Config.Broker is required")
	case cfg.Verifier == nil:
		return nil, errors.New("ingest: Config.Verifier is required")
	case cfg.MaxFutureSkew <= 0:
		return nil, errors.New("ingest: Config.MaxFutureSkew must be positive")
	case cfg.MaxContentBytes <= 0:
		return nil, errors.New("ingest: Config.MaxContentBytes must be positive")
	case cfg.AuthorityWindow < 0:
		return nil, errors.New("ingest: Config.AuthorityWindow must be positive (0: the default)")
	case cfg.ReactionGrace < 0:
		return nil, errors.New("ingest: Config.ReactionGrace must be positive (0: the default)")
	}
	if cfg.ReactionGrace == 0 {
		cfg.ReactionGrace = DefaultReactionGrace
	}
	switch {
	case cfg.MaxReposPerPubKey < 0:
		return nil, errors.New("ingest: Config.MaxReposPerPubKey must be positive (0: the default)")
	case cfg.MaxReposPerPubKey == 0:
		cfg.MaxReposPerPubKey = DefaultMaxReposPerPubKey
	}
	if cfg.AuthorityWindow == 0 {
		cfg.AuthorityWindow = DefaultAuthorityWindow
	}
	switch {
	case cfg.MaxNotBeforeDelta < 0:
		return nil, errors.New("ingest: Config.MaxNotBeforeDelta must not be negative (0: one year)")
	case cfg.MaxNotBeforeDelta == 0:
		cfg.MaxNotBeforeDelta = defaultMaxNotBeforeSpan
	}
	cfg.AuthorityKinds = slices.Clone(cfg.AuthorityKinds)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.EventPolicies = slices.Clone(cfg.EventPolicies)
	cfg.OnStored = slices.Clone(cfg.OnStored)
	if cfg.Moderation != nil && (cfg.Moderation.Store == nil || cfg.Channels == nil) {
		return nil, errors.New("ingest: Config.Moderation needs its Store and Config.Channels")
	}
	if cfg.Channels != nil && (cfg.Channels.Store == nil || cfg.Channels.Access == nil) {
		return nil, errors.New("ingest: Config.Channels needs its Store and Access")
	}
	p := &Pipeline{cfg: cfg}
	p.staged, _ = cfg.Store.(stagedSaver)
	if cfg.Moderation != nil {
		c, err := ttlcache.New[string, []store.Restriction](ttlcache.Config{MaxEntries: restrictionsEntries, TTL: restrictionsTTL, Now: cfg.Now})
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		p.restrictions = c
	}
	if cfg.CommunityKinds != nil {
		c, err := ttlcache.New[string, communityKinds](ttlcache.Config{MaxEntries: communityKindsEntries, TTL: communityKindsTTL, Now: cfg.Now})
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		p.communityKinds = c
	}
	return p, nil
}

// Close releases the pipeline's caches. The pipeline must not be used
// after.
func (p *Pipeline) Close() {
	if p.restrictions != nil {
		p.restrictions.Close()
	}
	if p.communityKinds != nil {
		p.communityKinds.Close()
	}
}

// Submission is one EVENT from one connection.
type Submission struct {
	// Tenant is the community the connection is bound to.
	Tenant tenant.TenantContext
	// Event has passed structural decoding (nostr.ParseEvent) and nothing else.
	Event *nostr.Event
	// AuthedAs reports whether the connection has authenticated (NIP-42) as
	// pubkey; nil means it has not authenticated at all.
	AuthedAs func(pubkey string) bool
	// Tracer, when set, receives the isolation conformance steps of this
	// event (see conformance/trace).
	Tracer trace.Tracer
	// Actor is the connection's first authenticated pubkey ("" before
	// AUTH), recorded with each traced step. A gift wrap (kind 1059) is
	// signed by a throwaway key: one whose signer the connection did not
	// authenticate as is admitted as Actor's (see giftwrap.go).
	Actor string
}

// Outcome is the answer to one Submission: the OK message to send.
type Outcome struct {
	// OK is the OK message's accepted flag.
	OK bool
	// Message is the OK message text: "" or a NIP-01 prefixed reason.
	Message string
	// RequestAuth is set when the event was refused for lack of
	// authentication: the connection should (re)send its AUTH challenge.
	RequestAuth bool
	// Stored reports that this call wrote the event to the store.
	Stored bool
}

// Messages of the pipeline's own refusals.
const (
	MsgAuthRequired  = "auth-required: this relay requires authentication (NIP-42) to publish"
	MsgNotAuthor     = channel.MsgNotAuthor
	MsgAuthAsEvent   = "invalid: AUTH events are not accepted as EVENT"
	MsgFuture        = "invalid: created_at too far in the future"
	MsgExpired       = "invalid: event has expired"
	MsgBadExpiration = "invalid: malformed expiration tag"
	MsgDuplicate     = "duplicate: already have this event"
	MsgSuperseded    = "invalid: a newer version of this event is already stored"
	MsgDeleted       = "blocked: this event was deleted by its author"
	MsgInternal      = "error: internal server error"
	// MsgNotificationRelaySigned refuses a client's 44100 or 44101 (Buzz's
	// words).
	MsgNotificationRelaySigned = "invalid: membership notifications are relay-signed only"
	msgContentTooLong          = "invalid: content too long (limit %d bytes)"
)

// Ingest runs ev through the admission steps, in this order, and returns the
// first refusal or the acceptance. It never panics on client input and every
// path returns exactly one Outcome.
//
// With a Tracer, the event is one armed seam ("ingest"): an accepted event
// records its write (insert, global insert, duplicate or ephemeral accept),
// a refused one its sanitized error, a channel decision its auth check; an
// acceptance that records nothing is reported as a coverage breach.
func (p *Pipeline) Ingest(ctx context.Context, s Submission) Outcome {
	if s.Tracer == nil {
		return p.ingest(ctx, s, trace.Noop{}, trace.State{})
	}
	st := trace.State{Tenant: s.Tenant, Actor: s.Actor}
	g := trace.Arm(s.Tracer, st, "ingest")
	defer g.Release(ctx)
	out := p.ingest(ctx, s, g, st)
	if !out.OK {
		g.SanitizedError(ctx, st, trace.ReasonOf(out.Message))
	}
	return out
}

func (p *Pipeline) ingest(ctx context.Context, s Submission, g trace.Tracer, st trace.State) Outcome {
	ev := s.Event
	// who is the key admission judges: the author, or for a gift wrap
	// from an authenticated connection, the connection's key (giftwrap.go).
	who := principal(s)

	// 1. Structure: done by the caller (nostr.ParseEvent decodes strictly).

	// 2. Authentication policy (NIP-42). Cheap, before any cryptography: an
	// unauthenticated connection on an AuthRequired relay is told to AUTH.
	if p.cfg.AuthRequired {
		if s.AuthedAs == nil {
			return Outcome{Message: MsgAuthRequired, RequestAuth: true}
		}
		if !s.AuthedAs(who) {
			return Outcome{Message: MsgNotAuthor}
		}
	}

	// 2b. Authority events (the authority rule, authority.go) are accepted
	// only from a submission authenticated as their author: a copy of
	// someone else's command, from anyone, in any community, acts nowhere.
	authority := p.IsAuthority(ev.Kind)
	if authority {
		if msg, reqAuth := authorityBound(s); msg != "" {
			return Outcome{Message: msg, RequestAuth: reqAuth}
		}
	}

	// 3. Kind 22242 belongs to the AUTH message, never to EVENT, and is
	// never stored.
	if ev.Kind == nostr.KindClientAuth {
		return Outcome{Message: MsgAuthAsEvent}
	}

	// 3b. A gift wrap names exactly one recipient (NIP-59).
	if ev.Kind == nostr.KindGiftWrap {
		if _, ok := giftWrapRecipient(ev); !ok {
			return Outcome{Message: MsgGiftWrapRecipient}
		}
	}

	// 4. Integrity: the id must be the hash of the canonical serialization,
	// and the signature must verify against the pubkey. Connections that
	// reach this point together share one batch verification.
	if err := p.cfg.Verifier.VerifyConcurrent(ev); err != nil {
		return Outcome{Message: Reason(err, "invalid: ")}
	}

	// 5. Time window: created_at may not be too far in the future.
	now := p.cfg.Now()
	if ev.CreatedAt > now.Add(p.cfg.MaxFutureSkew).Unix() {
		return Outcome{Message: MsgFuture}
	}
	// 5b. An authority event must be fresh (the authority rule).
	if authority {
		if msg := p.authorityFresh(ev, now); msg != "" {
			return Outcome{Message: msg}
		}
	}

	// 6. NIP-40: a malformed expiration is refused; an already expired event
	// is not accepted (nor delivered live). A moderation command's
	// expiration is the end of a ban or timeout, checked by its parser:
	// commands are never stored, so NIP-40 does not apply to them.
	if !IsModerationCommand(ev.Kind) {
		exp, hasExp := ev.Expiration()
		if !hasExp && ev.Tags.Find("expiration") != nil {
			return Outcome{Message: MsgBadExpiration}
		}
		if hasExp && exp <= now.Unix() {
			return Outcome{Message: MsgExpired}
		}
	}

	// 7. Size.
	if len(ev.Content) > p.cfg.MaxContentBytes {
		return Outcome{Message: fmt.Sprintf(msgContentTooLong, p.cfg.MaxContentBytes)}
	}

	// 7b. The kind allow-list, the community's or the relay's (off unless
	// configured; Buzz's refusal).
	kinds, err := p.kindsFor(ctx, s.Tenant.Community())
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: kind allow-list", "community", s.Tenant.Community().String(), "err", err)
		return Outcome{Message: MsgInternal}
	}
	if !kinds.Allows(ev.Kind) {
		return Outcome{Message: messaging.MsgUnknownKind}
	}

	// 8. Rate limit per (community, author), shared by every process when
	// the limiter is: after the cheap checks and the signature (so forged
	// events cost nobody's quota), before policies and storage. A limiter
	// that cannot decide refuses (see admit).
	if reason := p.admit(ctx, s, who); reason != "" {
		return Outcome{Message: reason}
	}

	// 8b. Embedder policy hooks, in the order they were configured.
	for _, fn := range p.cfg.EventPolicies {
		if err := fn(ctx, s.Tenant, ev); err != nil {
			return Outcome{Message: Reason(err, "blocked: ")}
		}
	}

	// 8c. Relay-signed channel state (39000–39003) and membership
	// notifications (44100, 44101) never come from clients.
	if channel.IsState(ev.Kind) {
		return Outcome{Message: channel.MsgRelaySigned}
	}
	if ev.Kind == nostr.KindMemberAdded || ev.Kind == nostr.KindMemberRemoved {
		return Outcome{Message: MsgNotificationRelaySigned}
	}
	if ev.Kind == nostr.KindDMVisibility {
		return Outcome{Message: channel.MsgDMVisibilityRelaySigned}
	}
	if IsMembershipAnnouncement(ev.Kind) {
		return Outcome{Message: MsgMembershipRelaySig}
	}

	// 8d. Bans and timeouts in this community, before membership; a store
	// that cannot answer refuses the event.
	if msg := p.admitRestricted(ctx, s, who); msg != "" {
		return Outcome{Message: msg}
	}

	// 8e. Community access policy (members-only communities).
	if msg, reqAuth, err := p.communityAdmits(ctx, s, who); err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: community access",
			"community", s.Tenant.Community().String(), "err", err)
		return Outcome{Message: MsgInternal}
	} else if msg != "" {
		return Outcome{Message: msg, RequestAuth: reqAuth}
	}
	// 8e'. A gift wrap's recipient must be admitted too.
	if msg, err := p.admitGiftWrapRecipient(ctx, s); err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: gift wrap recipient",
			"community", s.Tenant.Community().String(), "err", err)
		return Outcome{Message: MsgInternal}
	} else if msg != "" {
		return Outcome{Message: msg}
	}

	// 8f. Channel: h resolved inside the bound community only, then
	// membership. Before any storage read of the event itself, so a repeat
	// of an event naming a foreign channel is refused like any other.
	dec, refusal := p.admitChannel(ctx, s, g, st)
	if refusal != "" {
		return Outcome{Message: refusal}
	}

	// 9. Per-kind validators: first what the event says by itself, then
	// what needs a lookup (an edit's author, a reaction's target).
	if err := validateKind(ev); err != nil {
		return Outcome{Message: err.Error()}
	}
	if refusal := p.admitMessaging(ctx, s, dec); refusal != "" {
		return Outcome{Message: refusal}
	}
	if refusal := p.admitThread(ctx, s, dec); refusal != "" {
		return Outcome{Message: refusal}
	}
	// 9'. A reminder's public tags (NIP-ER), against the clock.
	if ev.Kind == nostr.KindReminder {
		if msg := validateReminder(ev, now, p.cfg.MaxNotBeforeDelta); msg != "" {
			return Outcome{Message: msg}
		}
	}

	// 9''. A project change (47010) is a compare-and-swap on the
	// project's revision, in the store's transaction; a repository
	// announcement (30617) reserves its name within its owner's quota.
	// Both before 9a: their store writes are not the event's authority
	// mark (the change keeps a receipt of its own).
	var (
		changeOK *Outcome
		repoName string
	)
	switch ev.Kind {
	case KindProjectChange:
		out, done := p.applyProjectChange(ctx, s)
		if done {
			if out.OK {
				g.AcceptEphemeral(ctx, st)
			}
			return out
		}
		changeOK = &out
	case nostr.KindRepository:
		name, msg := p.reserveRepoName(ctx, s)
		if msg != "" {
			return Outcome{Message: msg}
		}
		repoName = name
	}

	// 9a. From here on an authority event's effect is written with its
	// store.Authority mark (the authority rule): the first write of the
	// effect records it in its transaction, and the write of a replay
	// changes nothing and returns store.ErrDuplicate. Nothing before this
	// step writes with the mark (a refusal must not consume it).
	if authority {
		ctx = p.withAuthority(ctx, s)
	}

	// 9b. Kinds the relay executes and never stores nor publishes
	// (executor).
	if exec := p.executor(ev.Kind); exec != nil {
		out := exec(ctx, s)
		if out.OK {
			g.AcceptEphemeral(ctx, st)
		}
		return out
	}

	// 9c. Commands the embedder executes (Config.Commands).
	var cmdOut *Outcome
	if fn := p.cfg.Commands[ev.Kind]; fn != nil {
		out, keep := fn(ctx, s)
		if !out.OK || !keep {
			if out.OK {
				g.AcceptEphemeral(ctx, st)
			}
			return out
		}
		cmdOut = &out
	}

	raw := ev.AppendJSON(nil)
	msg := pubsub.Message{Community: s.Tenant.Community(), Event: ev, Raw: raw}

	// 10. Ephemeral kinds are published live and never stored.
	if nostr.IsEphemeral(ev.Kind) {
		if err := p.cfg.Broker.Publish(ctx, msg); err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: publish ephemeral event",
				"community", s.Tenant.Community().String(), "event", ev.ID, "err", err)
			return Outcome{Message: MsgInternal}
		}
		g.AcceptEphemeral(ctx, st)
		return Outcome{OK: true}
	}

	// 10b. A reaction claims its (author, target, emoji) slot before it is
	// written, when Reactions is set: a second identical reaction, from any
	// process, is refused. (A store keeping the slots itself refuses it in
	// step 11, with the write.)
	rkey, claimed, refusal := p.claimReaction(ctx, s)
	if refusal != "" {
		return Outcome{Message: refusal}
	}

	// 11. Durable write (a channel command is applied atomically with its
	// event). OK true is only ever returned after the write is durable. A
	// store that stages its saves has applied the event when storeEvent
	// returns, so live subscribers get it (step 12) while it is made
	// durable; the outcome waits for that.
	saveStart := time.Now()
	out, change, durable := p.storeEvent(ctx, s, dec, g, st)
	if !out.Stored {
		// A duplicate keeps what the stored event holds, whether or not
		// the state it was refused on then proves durable.
		if claimed && out.Message != MsgDuplicate {
			p.unclaimReaction(ctx, s.Tenant.Community(), rkey, ev.ID)
		}
		if repoName != "" && out.Message != MsgDuplicate {
			p.releaseRepoName(ctx, s, repoName)
		}
		if !p.settle(ctx, s.Tenant.Community(), ev, saveStart, durable) {
			return Outcome{Message: MsgInternal}
		}
		return out
	}
	// 11b. A deletion that removed reactions frees their slots.
	p.releaseReactions(ctx, s.Tenant.Community(), ev, dec.Command)
	if change != nil && p.cfg.Channels.OnChange != nil {
		p.cfg.Channels.OnChange(ctx, s.Tenant, *change)
	}
	// 11b. A reminder still ahead is scheduled for its due signal.
	p.scheduleReminder(ctx, s.Tenant.Community(), ev, now)

	// 12. Fan-out. The event is stored and will be acknowledged: a broker
	// failure only costs live delivery (subscribers find it by REQ), so it
	// is logged, not reported to the publisher.
	if err := p.cfg.Broker.Publish(ctx, msg); err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: publish stored event",
			"community", s.Tenant.Community().String(), "event", ev.ID, "err", err)
	}
	if !p.settle(ctx, s.Tenant.Community(), ev, saveStart, durable) {
		return Outcome{Message: MsgInternal}
	}
	if change != nil {
		p.publishState(ctx, s.Tenant, change, dec.Command)
	}

	// 13. Embedder hooks on stored events.
	for _, fn := range p.cfg.OnStored {
		fn(ctx, s.Tenant, ev)
	}
	if cmdOut != nil {
		return Outcome{OK: true, Stored: true, Message: cmdOut.Message}
	}
	if changeOK != nil {
		return Outcome{OK: true, Stored: true, Message: changeOK.Message}
	}
	return Outcome{OK: true, Stored: true}
}

// prefixes are the NIP-01 machine-readable reason prefixes.
var prefixes = [...]string{
	"invalid:", "duplicate:", "blocked:", "restricted:", "rate-limited:",
	"auth-required:", "pow:", "error:",
}

// HasPrefix reports whether msg starts with a NIP-01 reason prefix.
func HasPrefix(msg string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// Reason turns err into a client-facing reason: its text as is when it
// already starts with a NIP-01 prefix, otherwise defaultPrefix + text.
func Reason(err error, defaultPrefix string) string {
	msg := err.Error()
	if HasPrefix(msg) {
		return msg
	}
	return defaultPrefix + msg
}

// executor is how the relay executes an event of kind that is never
// stored as an event nor published, or nil for every other kind:
// moderation commands and reports (queued for moderators; moderation.go),
// DM conversation commands (dm.go), NIP-43 leave requests (membership.go)
// and workspace profiles (workspace.go), and product feedback, which goes
// to the operator's table so that no community read can return it
// (feedback.go).
func (p *Pipeline) executor(kind int) func(context.Context, Submission) Outcome {
	switch {
	case kind == nostr.KindReport:
		return p.queueReport
	case IsModerationCommand(kind):
		return p.applyModeration
	case IsDMCommand(kind):
		return p.applyDM
	case kind == nostr.KindLeaveRelay:
		return p.applyLeave
	case kind == nostr.KindWorkspaceProfile:
		return p.applyWorkspaceProfile
	case kind == nostr.KindProductFeedback:
		return p.queueFeedback
	}
	return nil
}
