package buzz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip17"
	"github.com/buzzrelay/buzz/pubsub"
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
	// (WithHTTPAuth gave a NIP-98 verifier, or WithAPITokens a token
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
	// Advertise lists n in NIP-11's supported_nips (and so on the home
	// page).
	Advertise(n nip11.NIP)
	// Document is the NIP-11 document the relay serves for tc's host: the
	// relay's, with the community's own profile and keys in place.
	Document(ctx context.Context, tc tenant.TenantContext) nip11.Document
	// NIPs are the NIPs the relay implements with their titles, in the
	// order of NIP-11's supported_nips (see Relay.NIPs). Call it once the
	// relay serves: features mounted later advertise theirs in Mount.
	NIPs() []nip11.NIP

	// Channels is the relay's channel store, nil without WithChannels.
	Channels() store.ChannelStore
	// AddCommand makes kind a command: an EVENT of that kind, once every
	// admission check has passed, is handed to f instead of being stored
	// (unless f says to store it too), and it is an authority event (see
	// ingest.CommandFunc). A kind may have one command.
	AddCommand(kind int, f ingest.CommandFunc)
	// AddOnChannelChange adds a hook called after a channel command
	// committed on this process (and the relay applied it to its
	// connections), before the command's event is published.
	AddOnChannelChange(f func(ctx context.Context, c tenant.CommunityID, change channel.Change))
	// AddReadyCheck adds a dependency to the readiness check
	// (Relay.ReadyzHandler): name is reported "ok", or "unavailable"
	// when check fails within ReadyTimeout.
	AddReadyCheck(name string, check func(ctx context.Context) error)
	// Go runs f on its own goroutine from the end of New until Shutdown:
	// Shutdown cancels ctx before it closes anything and waits for f to
	// return (as long as its own context allows).
	Go(f func(ctx context.Context))
	// Metrics is the relay's Metrics (WithMetrics). It also implements
	// the workflow and webhook counters (WorkflowRunStarted,
	// WorkflowRunFinished, WorkflowStepFinished, WebhookDelivered), each
	// passed on when the embedder's Metrics implements it; a finished run
	// is counted in the summary log line (WithLogSummary).
	Metrics() Metrics
	// Sign signs ev with community c's relay key (WithRelayKey), the key
	// of the relay-signed events of c.
	Sign(c tenant.CommunityID, ev *nostr.Event) error
	// SealDM returns a NIP-17 direct message from community c's relay key
	// to the pubkey to, gift-wrapped (readable by to only).
	SealDM(c tenant.CommunityID, to, text string) (*nostr.Event, error)
	// Publish stores ev in community c and delivers it live, as the relay
	// stores its own events: no admission (the caller vouches for ev), the
	// in-flight count Shutdown drains, the isolation trace (WithTracer)
	// with c's relay key as actor. An event already stored is not an error
	// and is not delivered again. A failed live delivery is logged.
	Publish(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error
	// PublishChannelState stores and publishes the relay-signed state
	// events (NIP-29 39000–39003) a change of channel made through the
	// channel store calls for.
	PublishChannelState(ctx context.Context, c tenant.CommunityID, change channel.Change)
	// CommunityOrigin is the HTTP origin of community c outside any
	// request: its primary host, with http when WithRelayURL names a ws://
	// URL and https otherwise. It needs a store that finds communities by
	// id (both backends do).
	CommunityOrigin(ctx context.Context, c tenant.CommunityID) (string, error)
	// ReadHTTP begins the read of an HTTP request on tc's host that
	// pubkey signed (AuthenticateHTTP), traced under seam (WithTracer)
	// like a REQ on a connection. Every read ends with Refused or
	// Returned.
	ReadHTTP(tc tenant.TenantContext, pubkey, seam string) HTTPRead
	// FilterLimits bounds the filters of one read as a REQ's are bounded
	// (Limits.MaxFilters, MaxFilterValues, MaxSubscriptionBytes): filters
	// parsed from a request by nostr.ParseFiltersLimited with these are
	// refused exactly when a REQ of them would be, with its message.
	FilterLimits() nostr.FilterLimits
	// QueryHTTP reads tc's community for pubkey, the caller of req
	// (AuthenticateHTTP), under the rules of a REQ by pubkey alone: the
	// embedder's filter policies (ConnFrom gives them req's Conn), bans,
	// the members-only policy, channel scope (community-wide events and
	// the channels pubkey may read; a filter whose "#h" names no readable
	// channel is refused) and the gift wrap rule. Each filter gives at
	// most its limit, clamped to Limits.MaxLimit, of its events after cur;
	// each is read in turn in the relay's fair queue, req's client address
	// standing for a connection, under Limits.QueryTimeout. The events are
	// each once, newest first (created_at descending, then id ascending).
	// A refusal, a read past the timeout included, is a NIP-01 prefixed
	// reason with no events and a nil error; err is a failure of the store
	// or the end of ctx. The read is traced (WithTracer) as a REQ.
	QueryHTTP(ctx context.Context, req *http.Request, tc tenant.TenantContext, pubkey string, filters []nostr.Filter, cur Cursor) (events []store.Record, refusal string, err error)
	// CountHTTP counts the events of filters, without their limits, that
	// QueryHTTP would let pubkey read (NIP-45), under the same rules,
	// queue and timeout, each event once; traced as a COUNT. Its refusal
	// and err are QueryHTTP's.
	CountHTTP(ctx context.Context, req *http.Request, tc tenant.TenantContext, pubkey string, filters []nostr.Filter) (n int64, refusal string, err error)
	// IngestHTTP is Submit for the caller of an HTTP request, req's
	// (AuthenticateHTTP), authenticated as caller.PubKey alone: an API token must
	// allow apitoken.ScopeForEvent(ev) (a refusal is audited), the
	// embedder's event policies see req's Conn, and a presence
	// announcement is refused (it belongs to a connection). It returns the
	// OK answer: whether ev was accepted, and the message, "" or NIP-01
	// prefixed. Shutdown waits for it; it is counted (Metrics) and traced
	// (WithTracer) as an EVENT.
	IngestHTTP(ctx context.Context, req *http.Request, tc tenant.TenantContext, caller HTTPCaller, ev *nostr.Event) (ok bool, message string)

	// Subscribe opens a live read of filters in tc's community for a
	// client that authenticated as readers (none: anonymous; the feature
	// authenticates them, e.g. with NIP-98), as a REQ on a connection of
	// tc's host would be: the same admission (Limits.MaxFilters,
	// AuthRequired, the embedder's filter policies, bans, the community
	// policy, the channel rules, the gift wrap and author-only rules), the
	// same fair read queue for the stored events, the same live delivery
	// rules. A refused read is a *Refusal (its Reason is the CLOSED
	// message); another error is a bad argument or ctx's.
	//
	// The Stream delivers the stored events, StreamEOSE, then live events,
	// and ends with the relay's reason when access is revoked — the
	// channel deleted or made private, a reader removed from it or from a
	// members-only community, a ban, a disconnect, the community archived —
	// whether the change was made on this process or, with a control bus,
	// on another. It is closed when ctx ends or by Stream.Close.
	Subscribe(ctx context.Context, tc tenant.TenantContext, readers []string, filters []nostr.Filter) (*Stream, error)
	// Submit admits ev into tc's community as an EVENT from a client that
	// authenticated as signers (none: anonymous), through the relay's whole
	// write path — verification, every admission rule, storage, live
	// delivery, channel and moderation commands with the revocations they
	// cause — and returns the OK the relay would send: accepted, and the
	// message ("" or NIP-01 prefixed). Presence (kind 20001) is delivered
	// but not recorded: that needs a connection.
	Submit(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event, signers []string) (accepted bool, message string)
}

// HTTPRead is one read of an HTTP request by its NIP-98 signer (see
// Host.ReadHTTP).
type HTTPRead interface {
	// MayReadChannel reports whether the signer may read channel id,
	// which exists: the decision of a REQ whose filter is {"#h": [id]}
	// (not banned, a member of a members-only community, a member of a
	// private channel). Any refusal is false, never a reason.
	MayReadChannel(ctx context.Context, id channel.ID) (bool, error)
	// Refused ends the read with the refusal reason (a NIP-01 prefixed
	// message).
	Refused(ctx context.Context, reason string)
	// Returned ends the read with the rows it returned, each labelled
	// with the community it belongs to.
	Returned(ctx context.Context, rows []tenant.CommunityID)
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
	nips     []nip11.NIP

	commands      map[int]ingest.CommandFunc
	channelHooks  []func(ctx context.Context, c tenant.CommunityID, change channel.Change)
	readyChecks   []readyCheck
	background    []func(ctx context.Context)
	stopBG        context.CancelFunc // cancels the background's context; nil before start
	backgroundWG  sync.WaitGroup
	traceMu       sync.Mutex
	publishTraces map[tenant.CommunityID]publishTrace // with WithTracer only
}

type readyCheck struct {
	name  string
	check func(ctx context.Context) error
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

func (s *seam) HTTPAuth() bool { return s.r.cfg.httpAuth != nil || s.r.cfg.tokens != nil }

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

func (s *seam) Advertise(n nip11.NIP) {
	s.mustMount("Advertise")
	if !slices.ContainsFunc(s.nips, func(m nip11.NIP) bool { return m.Number == n.Number }) {
		s.nips = append(s.nips, n)
	}
}

func (s *seam) Document(ctx context.Context, tc tenant.TenantContext) nip11.Document {
	return s.r.documentFor(ctx, tc)
}

func (s *seam) NIPs() []nip11.NIP { return s.r.NIPs() }

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

func (s *seam) Channels() store.ChannelStore {
	if s.r.channels == nil {
		return nil
	}
	return s.r.channels.store
}

func (s *seam) AddCommand(kind int, f ingest.CommandFunc) {
	s.mustMount("AddCommand")
	if _, dup := s.commands[kind]; dup {
		panic("buzz: Host.AddCommand: kind " + strconv.Itoa(kind) + " already has a command")
	}
	if s.commands == nil {
		s.commands = map[int]ingest.CommandFunc{}
	}
	s.commands[kind] = f
}

func (s *seam) AddOnChannelChange(f func(ctx context.Context, c tenant.CommunityID, change channel.Change)) {
	s.mustMount("AddOnChannelChange")
	s.channelHooks = append(s.channelHooks, f)
}

func (s *seam) AddReadyCheck(name string, check func(ctx context.Context) error) {
	s.mustMount("AddReadyCheck")
	s.readyChecks = append(s.readyChecks, readyCheck{name, check})
}

func (s *seam) Go(f func(ctx context.Context)) {
	s.mustMount("Go")
	s.background = append(s.background, f)
}

// startBackground starts what the features asked to run (Host.Go); New
// calls it last.
func (s *seam) startBackground() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopBG = cancel
	for _, f := range s.background {
		s.backgroundWG.Add(1)
		go func() {
			defer s.backgroundWG.Done()
			f(ctx)
		}()
	}
}

// stopBackground cancels the features' background work and waits for it
// until ctx ends.
func (s *seam) stopBackground(ctx context.Context) {
	if s.stopBG == nil {
		return
	}
	s.stopBG()
	done := make(chan struct{})
	go func() {
		s.backgroundWG.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (s *seam) Metrics() Metrics { return s.r.cfg.metrics }

func (s *seam) Sign(c tenant.CommunityID, ev *nostr.Event) error {
	return ev.Sign(s.r.keys.For(c))
}

func (s *seam) SealDM(c tenant.CommunityID, to, text string) (*nostr.Event, error) {
	return nip17.Message(s.r.keys.For(c), to, text)
}

func (s *seam) Publish(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	r := s.r
	ticket := r.inflight.Begin()
	defer r.inflight.End(ticket)
	err := r.cfg.store.Save(ctx, c, ev)
	if errors.Is(err, store.ErrDuplicate) {
		if pt, ok := s.publishTrace(ctx, c); ok {
			pt.t.WriteDuplicate(ctx, pt.st, ev.ID)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if pt, ok := s.publishTrace(ctx, c); ok {
		if ch, has, _ := channel.OfEvent(ev); has {
			pt.t.WriteInsert(ctx, pt.st, ev.ID, ch.String(), c)
		} else {
			pt.t.WriteInsertGlobal(ctx, pt.st, ev.ID)
		}
	}
	if err := r.cfg.broker.Publish(ctx, pubsub.Message{Community: c, Event: ev, Raw: ev.AppendJSON(nil)}); err != nil {
		r.log.ErrorContext(ctx, "buzz: publish a relay event", "community", c.String(), "event", ev.ID, "err", err)
	}
	return nil
}

// publishTrace is where the conformance steps of what features publish in
// one community go (Host.Publish): a trace bound, like a connection,
// through the community's primary host, whose actor is the community's
// relay key.
type publishTrace struct {
	t  trace.Tracer
	st trace.State
}

// publishTrace returns the trace of what is published in community c,
// opening it on first use by binding the community's primary host through
// the relay's directory (so its steps carry a real TenantContext, as a
// connection's do). It reports false when tracing is off, or when c has no
// host that binds to it; the publish goes ahead untraced then.
func (s *seam) publishTrace(ctx context.Context, c tenant.CommunityID) (publishTrace, bool) {
	r := s.r
	if r.cfg.tracer == nil {
		return publishTrace{}, false
	}
	s.traceMu.Lock()
	defer s.traceMu.Unlock()
	if pt, ok := s.publishTraces[c]; ok {
		return pt, true
	}
	host, err := r.communityHost(ctx, c)
	if err != nil {
		r.log.WarnContext(ctx, "buzz: publish trace", "community", c.String(), "err", err)
		return publishTrace{}, false
	}
	tc, err := tenant.Bind(ctx, r.cfg.directory, host)
	if err != nil || tc.Community() != c {
		return publishTrace{}, false
	}
	if s.publishTraces == nil {
		s.publishTraces = map[tenant.CommunityID]publishTrace{}
	}
	pt := publishTrace{t: r.cfg.tracer(tc), st: trace.State{Tenant: tc, Actor: r.keys.For(c).PublicKey()}}
	s.publishTraces[c] = pt
	return pt, true
}

// communityFinder may be implemented by a store: it finds a community,
// with its primary host, by id (both backends do).
type communityFinder interface {
	CommunityByID(ctx context.Context, id tenant.CommunityID) (store.Community, error)
}

// communityHost returns community c's primary host, for what is done
// outside any request. It needs a store that finds communities by id
// (communityFinder).
func (r *Relay) communityHost(ctx context.Context, c tenant.CommunityID) (string, error) {
	finder, ok := r.cfg.store.(communityFinder)
	if !ok {
		return "", errors.New("the store does not find communities by id")
	}
	cm, err := finder.CommunityByID(ctx, c)
	if err != nil {
		return "", err
	}
	if cm.Host == "" {
		return "", errors.New("the community has no host")
	}
	return cm.Host, nil
}

func (s *seam) PublishChannelState(ctx context.Context, c tenant.CommunityID, change channel.Change) {
	s.r.pipeline.PublishChannelState(ctx, c, change)
}

func (s *seam) CommunityOrigin(ctx context.Context, c tenant.CommunityID) (string, error) {
	host, err := s.r.communityHost(ctx, c)
	if err != nil {
		return "", fmt.Errorf("buzz: community origin: %w", err)
	}
	scheme := "https"
	if s.r.cfg.relayScheme == "ws" {
		scheme = "http"
	}
	return scheme + "://" + host, nil
}

func (s *seam) ReadHTTP(tc tenant.TenantContext, pubkey, seam string) HTTPRead {
	return seamRead{r: s.r, tc: tc, pubkey: pubkey, rt: s.r.armHTTPRead(tc, pubkey, seam)}
}

// seamRead is the relay's HTTPRead.
type seamRead struct {
	r      *Relay
	tc     tenant.TenantContext
	pubkey string
	rt     readTrace
}

func (h seamRead) MayReadChannel(ctx context.Context, id channel.ID) (bool, error) {
	r, c := h.r, h.tc.Community()
	filters := []nostr.Filter{{Tags: map[string][]string{"h": {id.String()}}}}
	_, reason, _, err := r.readAccess(ctx, c, []string{h.pubkey}, r.signerReader(ctx, c, h.pubkey), filters, h.rt.channelCheck(ctx, h.tc))
	if err != nil || reason != "" || r.channels == nil {
		return false, err
	}
	_, err = r.channels.store.Channel(ctx, c, id)
	if errors.Is(err, channel.ErrNoChannel) {
		return false, nil
	}
	return err == nil, err
}

func (h seamRead) Refused(ctx context.Context, reason string) { h.rt.refuse(ctx, reason) }

func (h seamRead) Returned(ctx context.Context, rows []tenant.CommunityID) {
	if h.rt.g == nil {
		return
	}
	h.rt.g.ReadByIDRows(ctx, h.rt.st, rows)
	h.rt.done(ctx)
}

func (s *seam) FilterLimits() nostr.FilterLimits { return s.r.cfg.limits.filterLimits() }

func (s *seam) QueryHTTP(ctx context.Context, req *http.Request, tc tenant.TenantContext, pubkey string, filters []nostr.Filter, cur Cursor) ([]store.Record, string, error) {
	return s.r.queryHTTP(ctx, req, tc, pubkey, filters, cur)
}

func (s *seam) CountHTTP(ctx context.Context, req *http.Request, tc tenant.TenantContext, pubkey string, filters []nostr.Filter) (int64, string, error) {
	return s.r.countHTTP(ctx, req, tc, pubkey, filters)
}

func (s *seam) IngestHTTP(ctx context.Context, req *http.Request, tc tenant.TenantContext, caller HTTPCaller, ev *nostr.Event) (bool, string) {
	return s.r.ingestHTTP(ctx, req, tc, caller, ev)
}

func (s *seam) Subscribe(ctx context.Context, tc tenant.TenantContext, readers []string, filters []nostr.Filter) (*Stream, error) {
	return s.r.subscribe(ctx, tc, readers, filters)
}

func (s *seam) Submit(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event, signers []string) (bool, string) {
	return s.r.submit(ctx, tc, ev, signers)
}
