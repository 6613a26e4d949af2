// Package buzz is an embeddable, multi-tenant Nostr relay.
//
// A Relay is an http.Handler. It upgrades WebSocket requests and speaks
// NIP-01 (events, subscriptions), NIP-09 (deletion), NIP-40 (expiration),
// NIP-42 (authentication), NIP-45 (COUNT), NIP-50 (search, when the store
// searches), NIP-77 (negentropy) and NIP-17/59 (gift wraps readable by
// their recipient only); to a request that accepts application/nostr+json
// it serves the NIP-11 document (package nip11). Every request is bound,
// before anything else, to the community (tenant) its HTTP Host selects
// through a tenant.Directory; every store call, subscription and broker
// message it causes is scoped to that community, and an unmapped host gets
// HTTP 404 "relay: no community is configured for this host". Events are
// admitted by the ingest.Pipeline, stored in a store.EventStore and fanned
// out through a pubsub.Broker; an EVENT always gets exactly one OK, and OK
// true only after the store returned from a durable write.
//
// New builds a relay from options, each validated there (a bad one fails
// New with an error naming it). WithStore (the event store; the optional
// interfaces it may implement are listed on it) and WithDirectory (host →
// community) are required. Everything else is off until asked for:
// WithChannels (NIP-29 groups, community roles, moderation, NIP-56
// reports), WithRelayKey, WithAuth, WithLimits, WithInfo, WithHTTPAuth
// (NIP-98 and API-token authentication of the routes features mount), the
// embedder's hooks and policies (WithEventPolicy, WithFilterPolicy,
// WithOnConnect, WithOnAuth, WithOnStored, …; ConnFrom tells a hook which
// client it runs for) and the parts several processes share (WithBroker,
// WithControlBus, WithPresence, WithRateLimiter). The package links no
// storage driver and no Redis client: backends come in through options
// (store/embedded, store/postgres, pubsub/redis, cluster).
//
//	rel, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st),
//		buzz.WithFeature(nip05.New()))
//	...
//	srv := &http.Server{Addr: ":3000", Handler: rel}
//	go srv.ListenAndServe()
//	...
//	rel.Shutdown(ctx) // close 1012 to every socket, after draining
//	srv.Shutdown(ctx)
//
// The rest of a relay is features: packages that mount on it through one
// seam, WithFeature(f), which calls f.Mount with the relay's Host. Host
// gives a feature routes on community hosts (HandleCommunity, each request
// already bound to its community), NIP-98 and API-token authentication
// (AuthenticateHTTP, HTTPCaller), reads and writes with the rules of REQ,
// COUNT and EVENT (QueryHTTP, CountHTTP, IngestHTTP), the community's
// admission rules and roles, event policies, commands and hooks, the NIPs to
// advertise in NIP-11 (Advertise, Document, NIPs), readiness checks,
// background work from New until Shutdown, and publishing as the relay
// (Sign, SealDM, Publish). A feature sees nothing of the relay but Host.
// The features that ship with buzz mount exactly so: homepage, httpapi
// (/query, /count, /events), nip05, threads, modhttp, audit/audithttp,
// apitoken/tokenhttp and workflowhost.
//
// docs/embedding.md is the embedder's guide: options, communities, hooks,
// features, stores, several processes, the workflow engine and a map of
// the packages. examples/ holds runnable embedders (minimal, multihost,
// policies, cluster, workflows, and frontend, a frontend that is not this
// handler), each built from public packages only; cmd/buzzd is the
// reference server. The building blocks (nostr, tenant, store, pubsub,
// ingest, channel, nip11, …) never import this package; features and
// programs do.
package buzz

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/relaykey"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Relay is a Nostr relay serving every community of its directory. Create it
// with New; it is safe for concurrent use.
type Relay struct {
	cfg      config
	pipeline *ingest.Pipeline
	index    *pubsub.Index
	mux      *http.ServeMux
	upgrader websocket.Upgrader
	log      *slog.Logger
	nip11    []byte // the NIP-11 document, encoded once

	reads     *queryGate // the fair queue of store reads (read.go)
	readers   *workers   // the goroutines REQ replays and COUNTs run on (workers.go)
	ingesters *workers   // the goroutines EVENTs are ingested on (workers.go)
	admission admission  // open connections per address and community (admission.go)

	channels *relayChannels // nil when the store keeps no channels
	features *seam          // what the WithFeature features mounted (feature.go)
	// moderation is the store's moderation state, nil when it keeps none
	// (moderation.go).
	moderation store.ModerationStore
	keys       *relaykey.Keys // per-community signing keys of relay-signed events

	readBufs   sync.Pool        // *[]byte: a connection's buffer for one inbound message
	replayBufs sync.Pool        // *replayBuffers: one replay's frames and sent ids (handle.go)
	pageBufs   sync.Pool        // *[]store.Record: one replay's page of stored events (read.go)
	inflight   *pubsub.Inflight // EVENTs being ingested (see pubsub.Inflight)

	refusals     *refusalAudit // nil unless the store keeps audit chains
	oplog        *opLog        // summary and refusal lines (oplog.go)
	oplogDone    chan struct{} // closed when the summary loop ends; nil without one
	refusalsDone chan struct{}
	// remindersDone is closed when the reminder sweeper ends; nil without
	// one (reminders.go).
	remindersDone chan struct{}

	stopListen func()
	bgCancel   context.CancelFunc
	bgDone     chan struct{}

	mu         sync.Mutex
	conns      map[*conn]struct{}
	streams    map[*Stream]struct{} // open seam streams (Host.Subscribe)
	shutdown   bool
	connWG     sync.WaitGroup
	ownsVer    bool          // the verifier was created by New: Shutdown closes it
	ownsBroker bool          // the broker was created by New: Shutdown closes it
	cl         *clusterState // control bus, presence (cluster.go)
	closed     chan struct{} // closed once Shutdown has finished
}

// New returns a Relay configured by opts. WithStore and WithDirectory are
// required. New starts the relay's background work (the broker listener and
// the NIP-40 expiry sweeper), which Shutdown stops.
func New(opts ...Option) (*Relay, error) {
	cfg := config{
		limits:  DefaultLimits(),
		logger:  slog.Default(),
		now:     time.Now,
		metrics: noMetrics{},
	}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("buzz: nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.store == nil {
		return nil, errors.New("buzz: WithStore is required")
	}
	if cfg.directory == nil {
		return nil, errors.New("buzz: WithDirectory is required")
	}
	if !cfg.logSummarySet {
		cfg.logSummary = DefaultLogSummaryInterval
	}
	oplog := newOpLog(cfg.logger, cfg.now)
	cfg.metrics = summaryMetrics{next: cfg.metrics, o: oplog}
	r := &Relay{
		oplog:    oplog,
		cfg:      cfg,
		index:    pubsub.NewIndex(),
		mux:      http.NewServeMux(),
		log:      cfg.logger,
		conns:    make(map[*conn]struct{}),
		streams:  make(map[*Stream]struct{}),
		closed:   make(chan struct{}),
		inflight: pubsub.NewInflight(),
	}
	if r.cfg.broker == nil {
		b, err := pubsub.NewLocal(pubsub.WithLocalLogger(cfg.logger))
		if err != nil {
			return nil, err
		}
		r.cfg.broker = b
		r.ownsBroker = true
	}
	if r.cfg.verifier == nil {
		v, err := nostr.NewVerifier()
		if err != nil {
			return nil, err
		}
		r.cfg.verifier = v
		r.ownsVer = true
	}
	if err := r.setupChannels(); err != nil {
		return nil, err
	}
	r.setupModeration()
	policies := make([]ingest.EventPolicy, len(cfg.eventPolicies))
	for i, p := range cfg.eventPolicies {
		policies[i] = p
	}
	hooks := make([]ingest.OnStored, len(cfg.onStored))
	for i, h := range cfg.onStored {
		hooks[i] = h
	}
	feats, err := r.mountFeatures()
	if err != nil {
		return nil, err
	}
	r.features = feats
	for _, p := range feats.policies {
		policies = append(policies, p)
	}
	for _, h := range feats.hooks {
		hooks = append(hooks, h)
	}
	p, err := ingest.New(ingest.Config{
		Store:           cfg.store,
		Broker:          r.cfg.broker,
		Verifier:        r.cfg.verifier,
		Now:             cfg.now,
		MaxFutureSkew:   cfg.limits.MaxFutureSkew,
		MaxContentBytes: cfg.limits.MaxContentBytes,
		AuthRequired:    cfg.auth == AuthRequired,
		EventPolicies:   policies,
		OnStored:        hooks,
		Logger:          cfg.logger,
		Channels:        r.ingestChannels(),
		Commands:        feats.commands,
		Moderation:      r.ingestModeration(),
		Feedback:        feedbackStore(r.cfg.store),
		Kinds:           cfg.kinds,
		CommunityKinds:  communityKindsStore(cfg.store),
		AgentOwners:     agentOwnerStore(cfg.store),
		Reactions:       reactionStore(cfg.store),
		RateLimiter:     cfg.cluster.limiter,
		RateLimitTier:   cfg.cluster.tier,
		OnRateLimited:   r.refusalHook(),
		StoreLatency:    cfg.metrics.StoreLatency,

		MaxNotBeforeDelta: cfg.limits.MaxNotBeforeDelta,
		Reminders:         reminderStore(cfg.store),
		Projects:          projectStore(cfg.store),
		RepoNames:         repoNameStore(cfg.store),
		MaxReposPerPubKey: cfg.limits.MaxReposPerPubKey,
		Threads:           threadStore(cfg.store),
	})
	if err != nil {
		return nil, err
	}
	r.pipeline = p
	r.nip11, err = r.encodeNIP11()
	if err != nil {
		return nil, err
	}
	r.reads = newReadGate(cfg.limits, cfg.store)
	r.readers = newWorkers(r.reads.slots)
	r.ingesters = newWorkers(idleIngesters)
	// Idle connections are cheap: the read buffer is small (a larger
	// message is read straight into the message buffer) and write buffers
	// are only held while a message is being written.
	r.upgrader = websocket.Upgrader{
		ReadBufferSize:  1024,
		WriteBufferSize: 4096,
		WriteBufferPool: &sync.Pool{},
		// Nostr clients connect from any origin (browsers included); the
		// protocol carries no ambient credentials.
		CheckOrigin: func(*http.Request) bool { return true },
	}

	if r.cfg.profiles == nil {
		r.cfg.profiles, _ = cfg.store.(CommunityProfiles)
	}

	r.stopListen = r.cfg.broker.Listen(r.onMessage)
	r.startCluster()
	bg, cancel := context.WithCancel(context.Background())
	r.bgCancel = cancel
	r.bgDone = make(chan struct{})
	go r.sweep(bg)
	if reminderStore(cfg.store) != nil {
		r.remindersDone = make(chan struct{})
		go r.sweepReminders(bg, r.remindersDone)
	}
	if cfg.logSummary > 0 {
		r.oplogDone = make(chan struct{})
		go r.oplog.run(bg, cfg.logSummary, r.oplogDone)
	}
	if r.refusals != nil {
		r.refusalsDone = make(chan struct{})
		go r.refusals.run(bg, r.refusalsDone)
	}
	r.features.startBackground()
	return r, nil
}

// Mux returns the ServeMux that receives every HTTP request that is neither
// a WebSocket upgrade nor a NIP-11 request. Register REST routes on it; such
// handlers are not bound to a community — call Relay.Bind when they need one.
func (r *Relay) Mux() *http.ServeMux { return r.mux }

// Bind resolves the community of an HTTP request from its Host header, the
// same way WebSocket upgrades are bound. Every failure wraps
// tenant.ErrUnmappedHost.
func (r *Relay) Bind(req *http.Request) (tenant.TenantContext, error) {
	return tenant.Bind(req.Context(), r.cfg.directory, req.Host)
}

// ServeHTTP serves NIP-11 documents (Accept: application/nostr+json, for any
// host), WebSocket upgrades (bound to the Host's community, 404 when none is
// configured, 503 once Shutdown began) and hands anything else to Mux.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case websocket.IsWebSocketUpgrade(req):
		r.serveWebSocket(w, req)
	case nip11.Requested(req.Header):
		r.serveNIP11(w, req)
	default:
		if _, pattern := r.mux.Handler(req); pattern == "" {
			// No route: an unmapped host gets the same fixed 404 as on
			// every route, a mapped one the mux's plain 404.
			if _, err := r.Bind(req); err != nil {
				http.Error(w, tenant.ErrUnmappedHost.Error(), http.StatusNotFound)
				return
			}
		}
		r.mux.ServeHTTP(w, req)
	}
}

func (r *Relay) serveWebSocket(w http.ResponseWriter, req *http.Request) {
	tc, err := tenant.Bind(req.Context(), r.cfg.directory, req.Host)
	if err != nil {
		r.log.DebugContext(req.Context(), "buzz: upgrade refused: host not bound", "host", req.Host, "err", err)
		r.oplog.connRefused(req.Context(), "unmapped_host")
		http.Error(w, tenant.ErrUnmappedHost.Error(), http.StatusNotFound)
		return
	}
	addr := r.ClientAddr(req)
	if len(r.cfg.onConnect) > 0 {
		ctx := withConn(req.Context(), Conn{addr: addr})
		for _, fn := range r.cfg.onConnect {
			if err := fn(ctx, tc); err != nil {
				r.oplog.connRefused(req.Context(), "blocked", "host", tc.Host())
				http.Error(w, ingest.Reason(err, "blocked: "), http.StatusForbidden)
				return
			}
		}
	}
	r.mu.Lock()
	if r.shutdown {
		r.mu.Unlock()
		http.Error(w, "relay: shutting down", http.StatusServiceUnavailable)
		return
	}
	r.connWG.Add(1)
	r.mu.Unlock()
	if err := r.admission.admit(&r.cfg.limits, addr, tc.Community()); err != nil {
		r.connWG.Done()
		r.log.DebugContext(req.Context(), "buzz: upgrade refused", "addr", addr, "host", tc.Host(), "err", err)
		r.oplog.connRefused(req.Context(), admissionReason(err), "host", tc.Host())
		refuseUpgrade(w, err)
		return
	}

	hc := &hijackCapture{ResponseWriter: w}
	ws, err := r.upgrader.Upgrade(hc, req, nil)
	if err != nil {
		r.admission.leave(addr, tc.Community())
		r.connWG.Done()
		return // the upgrader has answered the request
	}
	c := newConn(r, ws, hc.conn, tc)
	c.addr = addr
	c.ctx = withConn(c.ctx, Conn{ws: c, addr: addr}) // for hooks (ConnFrom); c.cancel still ends it
	if r.cfg.tracer != nil {
		c.tracer = r.cfg.tracer(tc)
	}
	r.mu.Lock()
	if r.shutdown {
		r.mu.Unlock()
		c.closeNow(websocket.CloseServiceRestart, "relay restarting")
		r.admission.leave(addr, tc.Community())
		r.connWG.Done()
		return
	}
	r.conns[c] = struct{}{}
	r.mu.Unlock()
	r.cfg.metrics.ConnOpened(tc)

	// The connection is served on its own goroutine and ServeHTTP returns,
	// so the HTTP server's per-connection state (its buffers, the request)
	// is released instead of being held for the life of the socket.
	go func() {
		defer r.connWG.Done()
		r.runConn(c)
	}()
}

// runConn serves c until it is closed, then forgets it. A panic while
// serving (which net/http recovered when connections were served on its
// goroutine) is recovered and logged, and closes only that connection.
func (r *Relay) runConn(c *conn) {
	defer func() {
		if p := recover(); p != nil {
			c.panicked(p)
		}
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
		r.cfg.metrics.ConnClosed(c.tc)
		r.admission.leave(c.addr, c.tc.Community())
		r.connClosed(c)
		if len(r.cfg.onDisconnect) > 0 {
			ctx := context.WithoutCancel(c.ctx)
			for _, fn := range r.cfg.onDisconnect {
				fn(ctx, c.tc)
			}
		}
	}()
	c.serve()
}

// panicked logs a panic recovered while serving c and closes c with 1011:
// runConn's recovery on the connection's goroutine, and the onPanic of what
// the connection runs on the relay's workers (an EVENT's ingest, a REQ's
// replay, a COUNT, a NEG-OPEN). A panic (in an embedder's hook, say) so
// closes that connection only; the worker and the relay carry on.
func (c *conn) panicked(p any) {
	c.r.log.Error("buzz: panic serving a connection", "panic", p, "stack", string(debug.Stack()))
	c.cancel()
	c.closeNow(websocket.CloseInternalServerErr, "")
}

// Shutdown stops the relay gracefully: new upgrades get HTTP 503; every
// connection stops reading, finishes the EVENTs it is processing (so every
// event already acknowledged, or being stored, gets its OK), sends what is
// queued and is closed with code 1012 "relay restarting"; the broker
// listener and the expiry sweeper stop. If ctx ends first, the remaining
// connections are closed at once and ctx's error is returned. Shutdown does
// not close the store, the directory or a broker given with WithBroker:
// their owner does (the default broker and verifier, created by New, are
// closed here).
// It is idempotent; later calls wait for the first to finish.
func (r *Relay) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	first := !r.shutdown
	r.shutdown = true
	conns := make([]*conn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	streams := make([]*Stream, 0, len(r.streams))
	for s := range r.streams {
		streams = append(streams, s)
	}
	r.mu.Unlock()
	if !first {
		select {
		case <-r.closed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer close(r.closed)

	// The features' background work (a workflow engine handing its runs
	// back) stops first, while everything it uses still works.
	r.features.stopBackground(ctx)
	for _, s := range streams {
		s.end(msgStreamShutdown)
	}
	for _, c := range conns {
		c.beginClose(websocket.CloseServiceRestart, "relay restarting")
	}
	done := make(chan struct{})
	go func() {
		r.connWG.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		r.mu.Lock()
		for c := range r.conns {
			go c.closeNow(websocket.CloseServiceRestart, "relay restarting")
		}
		r.mu.Unlock()
	}
	r.announceLeaving(ctx)
	r.stopListen()
	r.stopCluster()
	r.bgCancel()
	r.readers.close()
	r.ingesters.close()
	<-r.bgDone
	if r.remindersDone != nil {
		<-r.remindersDone
	}
	r.pipeline.Close()
	if r.channels != nil {
		r.channels.access.Close()
	}
	r.keys.Close()
	if r.refusalsDone != nil {
		<-r.refusalsDone
	}
	if r.oplogDone != nil {
		<-r.oplogDone
	}
	if r.ownsBroker {
		_ = r.cfg.broker.Close()
	}
	if r.ownsVer {
		r.cfg.verifier.Close()
	}
	return err
}

// sweep periodically removes expired events (NIP-40) until ctx ends.
func (r *Relay) sweep(ctx context.Context) {
	defer close(r.bgDone)
	t := time.NewTicker(r.cfg.limits.ExpirySweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := r.cfg.store.DeleteExpired(ctx, r.cfg.now())
			switch {
			case err != nil && ctx.Err() == nil:
				r.log.ErrorContext(ctx, "buzz: expiry sweep", "err", err)
			case n > 0:
				r.log.DebugContext(ctx, "buzz: expiry sweep", "deleted", n)
			}
		}
	}
}

// onMessage fans one live event out to the matching local subscriptions. It
// never blocks: a connection whose queue is full is disconnected.
func (r *Relay) onMessage(msg pubsub.Message) {
	if exp, ok := msg.Event.Expiration(); ok && exp <= r.cfg.now().Unix() {
		return // NIP-40: never deliver an expired event
	}
	r.index.Match(msg.Community, msg.Event, func(s *pubsub.Subscription) {
		switch o := s.Owner.(type) {
		case *conn:
			o.deliverLive(s, msg)
		case *Stream:
			o.deliverLive(msg)
		}
	})
}
