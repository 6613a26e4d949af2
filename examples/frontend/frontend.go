package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/relaykey"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Store is what the frontend keeps: events, and channels with their members
// and the community access policy (store/sqlite and store/postgres).
type Store interface {
	store.EventStore
	store.ChannelStore
}

// Config is what a frontend is made of. Store, Directory and Broker are
// required.
type Config struct {
	Store Store
	// Directory maps hosts to communities (a tenant.CachingDirectory in
	// front of the store).
	Directory tenant.Directory
	// Broker carries live events (pubsub.Local in one process).
	Broker pubsub.Broker
	// Moderation, when set, enables community moderation as the relay has
	// it (bans and timeouts 9040–9043, reports): a ban refuses the pubkey's
	// writes and reads in its community and ends its open streams there.
	Moderation store.ModerationStore
	// Control, when set, is the control bus of a deployment of several
	// processes (pubsub/control; the Redis broker implements it): changes
	// another process announces — channel membership and visibility, a
	// member's removal, bans, policy changes, disconnects — apply to this
	// frontend's streams at once. Without it they are seen within the
	// cache TTLs (channel.DefaultCacheTTL, channel.DefaultScopeTTL).
	Control control.Bus
	// RelayKey is the relay's master key: each community's channel state
	// (NIP-29 39000–39003) is signed with the key relaykey derives from it
	// for that community, as the relay signs it. Zero: no state events are
	// published.
	RelayKey nostr.SecretKey
	// Scheme is the scheme NIP-98 u tags name: "http" (default), or
	// "https" behind TLS.
	Scheme string
	// Tracer, when set, records every request's isolation conformance
	// trace (tests).
	Tracer trace.Factory
	Logger *slog.Logger
}

// Bounds of one read and of one request body.
const (
	maxLimit     = 500 // stored events per read
	queryTimeout = 10 * time.Second
	maxBody      = 1 << 20
	streamQueue  = 256 // live events a stream may fall behind by
	writeTimeout = 10 * time.Second
)

// frontend serves the HTTP API. It is safe for concurrent use.
type frontend struct {
	cfg      Config
	pipeline *ingest.Pipeline
	access   *channel.Access  // who may read what (the relay's read rules)
	keys     *relaykey.Keys   // per-community signing keys of channel state; nil without Config.RelayKey
	inflight *pubsub.Inflight // the stored-to-live handoff
	sigs     *nostr.Verifier
	auth     *nip98.Verifier
	unlisten func()
	stopCtl  func() // stops listening on Config.Control

	mu      sync.Mutex
	streams map[tenant.CommunityID]map[*stream]struct{} // open streams, by community
}

func newFrontend(cfg Config) (*frontend, error) {
	if cfg.Store == nil || cfg.Directory == nil || cfg.Broker == nil {
		return nil, errors.New("frontend: Config.Store, Directory and Broker are required")
	}
	if cfg.Scheme == "" {
		cfg.Scheme = "http"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := &frontend{cfg: cfg, inflight: pubsub.NewInflight(), streams: make(map[tenant.CommunityID]map[*stream]struct{})}
	var err error
	if f.access, err = channel.NewAccess(cfg.Store, channel.WithLogger(cfg.Logger)); err != nil {
		return nil, err
	}
	if f.sigs, err = nostr.NewVerifier(); err != nil {
		return nil, err
	}
	if f.auth, err = nip98.NewVerifier(nip98.WithSignatureVerifier(f.sigs)); err != nil {
		return nil, err
	}
	// The relay's write path, whole: verification, channel admission,
	// storage, publication. Channel and membership changes come back here,
	// before the command's event is published, to revoke what streams lost.
	channels := &ingest.Channels{Access: f.access, Store: cfg.Store, OnChange: f.channelChanged, OnMemberRemoved: f.memberRemoved}
	if cfg.RelayKey != (nostr.SecretKey{}) {
		// After each command, the pipeline publishes the channel state the
		// relay would, signed with the same per-community key.
		if f.keys, err = relaykey.New(cfg.RelayKey); err != nil {
			return nil, err
		}
		channels.StateKey = f.keys.For
	}
	var moderation *ingest.Moderation
	if cfg.Moderation != nil {
		moderation = &ingest.Moderation{Store: cfg.Moderation, OnAction: f.moderated}
	}
	f.pipeline, err = ingest.New(ingest.Config{
		Store: cfg.Store, Broker: cfg.Broker, Verifier: f.sigs, Logger: cfg.Logger,
		MaxFutureSkew: 15 * time.Minute, MaxContentBytes: 64 << 10,
		Channels: channels, Moderation: moderation,
	})
	if err != nil {
		return nil, err
	}
	f.unlisten = cfg.Broker.Listen(f.deliver)
	f.stopCtl = func() {}
	if cfg.Control != nil {
		f.stopCtl = cfg.Control.ListenControl(f.onControl)
	}
	return f, nil
}

// Close stops live delivery.
func (f *frontend) Close() {
	f.stopCtl()
	f.unlisten()
	f.pipeline.Close()
	f.access.Close()
	f.sigs.Close()
	if f.keys != nil {
		f.keys.Close()
	}
}

// ServeHTTP binds the request's Host to its community first: an unmapped,
// malformed or failing host gets the relay's one fixed 404, so no
// community's existence shows on another host.
func (f *frontend) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	tc, err := tenant.Bind(req.Context(), f.cfg.Directory, req.Host)
	if err != nil {
		http.Error(w, tenant.ErrUnmappedHost.Error(), http.StatusNotFound)
		return
	}
	switch req.Method + " " + req.URL.Path {
	case "POST /events":
		f.publish(w, req, tc)
	case "GET /timeline":
		f.read(w, req, tc, false)
	case "GET /stream":
		f.read(w, req, tc, true)
	default:
		http.NotFound(w, req)
	}
}

// signer verifies the request's NIP-98 Authorization for tc's host, when
// it has one, and returns the pubkeys the request acts as (none without).
// A header that does not verify is answered 401 (ok false).
func (f *frontend) signer(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, body []byte) (pubkeys []string, ok bool) {
	if req.Header.Get("Authorization") == "" {
		return nil, true
	}
	hr := nip98.HTTPRequest(req, nip98.ExpectedURL(f.cfg.Scheme+"://"+tc.Host(), req), body)
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

// publish admits one event through the ingest pipeline, as the relay
// admits an EVENT, and answers with its OK message.
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
	sub := ingest.Submission{Tenant: tc, Event: ev}
	if len(signers) > 0 {
		sub.AuthedAs = func(pk string) bool { return slices.Contains(signers, pk) }
	}
	if f.cfg.Tracer != nil {
		sub.Tracer, sub.Actor = f.cfg.Tracer(tc), actor(signers)
	}
	ticket := f.inflight.Begin()
	out := f.pipeline.Ingest(req.Context(), sub)
	f.inflight.End(ticket)
	status := http.StatusOK
	if !out.OK {
		status = prefixStatus(out.Message)
	}
	writeJSON(w, status, map[string]any{"event_id": ev.ID, "accepted": out.OK, "message": out.Message})
}

// stream is one open /stream: the live events of its community that
// match its filter are queued for it.
type stream struct {
	reader  *channel.Reader
	readers []string // the pubkeys the request authenticated as
	filter  nostr.Filter
	queue   chan pubsub.Message
	done    chan struct{} // closed by end
	once    sync.Once
	reason  string // why it ended, set before done is closed
}

// end ends the stream with a reason ("event: closed"); only the first call
// counts.
func (s *stream) end(reason string) {
	s.once.Do(func() { s.reason = reason; close(s.done) })
}

// deliver is the broker listener: it queues each live event for the
// matching streams of the event's own community. It never blocks: a
// stream whose queue is full ends.
func (f *frontend) deliver(m pubsub.Message) {
	for _, s := range f.streamsOf(m.Community) {
		if search.Matches(&s.filter, m.Event) {
			select {
			case s.queue <- m:
			default:
				s.end("error: the stream fell too far behind")
			}
		}
	}
}

func (f *frontend) streamsOf(c tenant.CommunityID) []*stream {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*stream, 0, len(f.streams[c]))
	for s := range f.streams[c] {
		out = append(out, s)
	}
	return out
}

// channelChanged applies a committed channel command before its event is
// published (ingest.Channels.OnChange).
func (f *frontend) channelChanged(ctx context.Context, tc tenant.TenantContext, ch channel.Change) {
	f.revokeChannel(ctx, tc.Community(), ch.Channel.ID, ch.Deleted || ch.BecamePrivate, ch.Revoked)
	for _, m := range ingest.ControlMessages(ch) {
		f.announce(ctx, tc.Community(), m)
	}
}

// announce tells the other processes on Config.Control about a committed
// change of community c, as the relay announces its own (this frontend
// applies its own message again when the bus delivers it back, which is
// harmless).
func (f *frontend) announce(ctx context.Context, c tenant.CommunityID, m control.Message) {
	if f.cfg.Control == nil {
		return
	}
	// The change is committed: tell the others even if the client left.
	if err := f.cfg.Control.PublishControl(context.WithoutCancel(ctx), c, m); err != nil {
		f.cfg.Logger.WarnContext(ctx, "frontend: announce access change", "community", c.String(), "type", m.Type(), "err", err)
	}
}

// revokeChannel applies a change of channel id: readers that lost the
// channel — everyone's, or the revoked pubkeys' — stop receiving it at
// once, and streams naming it in "#h" end, as the relay closes such
// subscriptions.
func (f *frontend) revokeChannel(ctx context.Context, c tenant.CommunityID, id channel.ID, everyone bool, revoked []string) {
	var cmd *channel.Command // the revoked pubkey's cached role goes too
	if len(revoked) == 1 {
		cmd = &channel.Command{Channel: id, Target: revoked[0]}
	}
	f.access.ChannelChanged(c, id, cmd)
	filters := make([]nostr.Filter, 1)
	for _, s := range f.streamsOf(c) {
		filters[0] = s.filter
		named := channel.Names(filters, id)
		if !named && !s.reader.Holds(id) {
			continue // it reads nothing of the channel: nothing to lose
		}
		// An affected reader's set is recomputed here: from now on
		// Deliverable refuses the channel's events.
		if lost := s.reader.Revoked(ctx, id, everyone, revoked); lost && named {
			s.end(channel.MsgChannelRevoked)
		}
	}
}

// memberRemoved ends the streams that may no longer read a members-only
// community after pubkey's removal (ingest.Channels.OnMemberRemoved).
func (f *frontend) memberRemoved(ctx context.Context, tc tenant.TenantContext, pubkey string) {
	f.revokeMember(ctx, tc.Community(), pubkey)
	f.announce(ctx, tc.Community(), control.MembershipChanged{PubKey: pubkey})
}

// revokeMember ends the streams of community c that may no longer read it
// after pubkey's removal from its members ("" for a policy change).
func (f *frontend) revokeMember(ctx context.Context, c tenant.CommunityID, pubkey string) {
	if pubkey != "" {
		f.access.MemberChanged(c, pubkey)
	}
	for _, s := range f.streamsOf(c) {
		if lost, _ := s.reader.LostCommunity(ctx, pubkey); lost {
			s.end(channel.MsgCommunityRevoked)
		}
	}
}

// moderated applies a committed moderation action: a ban ends the
// banned pubkey's open streams in its community with the ban's refusal;
// every action but a report's resolution is announced on Config.Control.
func (f *frontend) moderated(ctx context.Context, tc tenant.TenantContext, a store.ModerationAction) {
	if a.Action == store.ActionBan {
		f.endBanned(ctx, tc.Community(), a.Target)
	}
	if a.Action != store.ActionResolveReport {
		// Other processes drop their cached restrictions (and a ban ends
		// the pubkey's streams there), as for the relay's own actions.
		f.announce(ctx, tc.Community(), control.RestrictionChanged{PubKey: a.Target, Banned: a.Action == store.ActionBan})
	}
}

// endBanned ends pubkey's streams of community c if it is banned there.
func (f *frontend) endBanned(ctx context.Context, c tenant.CommunityID, pubkey string) {
	reason, err := f.pipeline.ReadBlocked(ctx, c, []string{pubkey})
	if err != nil {
		reason = ingest.MsgModerationInternal // fail closed
	}
	f.endStreams(c, pubkey, reason)
}

// endStreams ends the streams of community c — those authenticated as
// pubkey, or all when pubkey is "" — with reason (none when it is "").
func (f *frontend) endStreams(c tenant.CommunityID, pubkey, reason string) {
	if reason == "" {
		return
	}
	for _, s := range f.streamsOf(c) {
		if pubkey == "" || slices.Contains(s.readers, pubkey) {
			s.end(reason)
		}
	}
}

// onControl applies a change another process announced on Config.Control
// (this process's own changes were applied when they were made; applying
// one again is harmless). It must not block: the work runs on its own
// goroutine.
func (f *frontend) onControl(c tenant.CommunityID, m control.Message) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
		defer cancel()
		switch m := m.(type) {
		case control.MembershipChanged:
			id, ok := channel.ParseID(m.Channel)
			switch {
			case m.Channel == "":
				f.revokeMember(ctx, c, m.PubKey)
			case ok && m.PubKey != "":
				f.revokeChannel(ctx, c, id, false, []string{m.PubKey})
			case ok:
				f.access.ChannelChanged(c, id, nil) // nobody lost access
			}
		case control.VisibilityChanged:
			if id, ok := channel.ParseID(m.Channel); ok {
				f.revokeChannel(ctx, c, id, true, nil)
			}
		case control.PolicyChanged:
			f.access.PolicyChanged(c)
			f.revokeMember(ctx, c, "")
		case control.RestrictionChanged:
			f.pipeline.ForgetRestrictions(c, m.PubKey)
			if m.Banned {
				f.endBanned(ctx, c, m.PubKey)
			}
		case control.DisconnectPubkey:
			f.endStreams(c, m.PubKey, cmp.Or(m.Reason, msgDisconnected))
		case control.DisconnectCommunity:
			f.endStreams(c, "", cmp.Or(m.Reason, msgDisconnected))
		}
	}()
}

// msgDisconnected ends a stream another process asked to close without a
// reason.
const msgDisconnected = "restricted: disconnected by the relay"

// read serves /timeline and (live) /stream for one filter.
func (f *frontend) read(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, live bool) {
	readers, ok := f.signer(w, req, tc, nil)
	if !ok {
		return
	}
	ctx := req.Context()
	rt := f.arm(tc, readers)
	defer rt.g.Release(ctx)
	q := req.URL.Query().Get("filter")
	if q == "" {
		q = "{}"
	}
	flt, err := nostr.ParseFilter([]byte(q))
	if err == nil {
		_, err = search.FromFilter(&flt)
	}
	if err != nil {
		rt.refuse(ctx, w, ingest.Reason(err, "invalid: "))
		return
	}
	// The request's read access: the relay's rules for the pubkeys it
	// authenticated as.
	s := &stream{reader: f.access.Reader(ctx, tc.Community()), readers: readers, filter: flt,
		queue: make(chan pubsub.Message, streamQueue), done: make(chan struct{})}
	for _, pk := range readers {
		s.reader.Authenticated(pk)
	}
	if live {
		// Registered before access is decided and the store is read: every
		// live event and access change from now on reaches it.
		f.cfg.Broker.Retain(pubsub.Topic{Community: tc.Community()})
		defer f.cfg.Broker.Release(pubsub.Topic{Community: tc.Community()})
		f.mu.Lock()
		if f.streams[tc.Community()] == nil {
			f.streams[tc.Community()] = make(map[*stream]struct{})
		}
		f.streams[tc.Community()][s] = struct{}{}
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.streams[tc.Community()], s)
			f.mu.Unlock()
		}()
	}
	// Bans first (moderation), then the channel rules, then gift wraps.
	reason, err := f.pipeline.ReadBlocked(ctx, tc.Community(), readers)
	var scope channel.Scope
	var needAuth bool
	if err == nil && reason == "" {
		scope, reason, needAuth, err = s.reader.Check(ctx, []nostr.Filter{flt}, rt.checked)
	}
	if err == nil && reason == "" && channel.GiftWrapAuthNeeded([]nostr.Filter{flt}, readers) {
		reason, needAuth = channel.MsgGiftWrapAuth, true
	}
	if err == nil && reason == "" {
		reason, needAuth = channel.AuthorOnlyRefusal([]nostr.Filter{flt}, readers)
	}
	if err == nil && reason == "" {
		var recs []store.Record
		if recs, err = f.stored(ctx, tc, flt, scope, readers, rt); err == nil {
			if live {
				f.follow(ctx, w, s, recs, rt)
				return
			}
			writeJSON(w, http.StatusOK, rawArray(recs))
			return
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		f.cfg.Logger.ErrorContext(ctx, "frontend: read", "err", err)
		reason = ingest.MsgInternal
	}
	if needAuth {
		w.Header().Set("WWW-Authenticate", nip98.Scheme)
	}
	rt.refuse(ctx, w, reason)
}

// stored reads the stored events of flt under scope, newest first, at most
// maxLimit of them; gift wraps only when addressed to one of readers.
func (f *frontend) stored(ctx context.Context, tc tenant.TenantContext, flt nostr.Filter, scope channel.Scope, readers []string, rt readTrace) ([]store.Record, error) {
	q, checkWraps, ok := channel.GiftWrapQuery(flt, readers)
	if !ok || flt.LimitSet && flt.Limit == 0 {
		rt.rows(ctx, &flt, nil)
		return nil, nil // nothing readable stored, or live events only
	}
	if !q.LimitSet || q.Limit > maxLimit {
		q.Limit, q.LimitSet = maxLimit, true
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var recs []store.Record
	var rows []tenant.CommunityID
	for rec, err := range f.cfg.Store.QueryScoped(ctx, tc.Community(), q, scope) {
		if err != nil {
			return nil, err
		}
		if checkWraps && !channel.GiftWrapVisibleRaw(rec.Raw, readers) {
			continue
		}
		recs = append(recs, rec)
		rows = append(rows, rec.Community)
	}
	rt.rows(ctx, &flt, rows)
	return recs, nil
}

// follow sends a stream: the stored events, "eose", then the live events
// its reader may read, in order and each once, until the client leaves or
// the stream ends.
func (f *frontend) follow(ctx context.Context, w http.ResponseWriter, s *stream, recs []store.Record, rt readTrace) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	send := func(event string, data []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := io.WriteString(w, "event: "+event+"\ndata: "+string(data)+"\n\n")
		return err == nil && rc.Flush() == nil
	}
	sent := make(map[string]bool, len(recs))
	for _, rec := range recs {
		sent[rec.ID] = true
		if !send("event", rec.Raw) {
			return
		}
	}
	if !send("eose", nil) {
		return
	}
	// The stored-to-live handoff: an event the store returned may still be
	// on its way to the broker. Once every ingest begun by now has
	// published, such an event is among those queued so far; anything
	// queued later is new.
	if f.inflight.WaitBegun(ctx) != nil {
		return
	}
	maybeSent := len(s.queue)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			send("closed", []byte(s.reason))
			return
		case m := <-s.queue:
			if maybeSent > 0 {
				maybeSent--
				if sent[m.Event.ID] {
					continue
				}
			}
			if !s.reader.Deliverable(m.Event) { // channel and gift wrap rules
				continue
			}
			if !send("event", m.Raw) {
				return
			}
			rt.live(ctx, m)
		}
	}
}

// actor is the trace's actor: the first pubkey, or "".
func actor(pubkeys []string) string {
	if len(pubkeys) == 0 {
		return ""
	}
	return pubkeys[0]
}

// rawArray is the JSON array of recs' events, as stored.
func rawArray(recs []store.Record) json.RawMessage {
	b := []byte{'['}
	for i, rec := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, rec.Raw...)
	}
	return append(b, ']')
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
