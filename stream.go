package buzz

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Refusal is a read or write the relay refused as it refuses it on a
// WebSocket connection: Reason is the NIP-01 prefixed message a client
// gets (the CLOSED or OK message), and AuthRequired is set when
// authenticating could change the answer.
type Refusal struct {
	Reason       string
	AuthRequired bool
}

func (e *Refusal) Error() string { return e.Reason }

// StreamMessageKind says what a StreamMessage carries.
type StreamMessageKind int

const (
	// StreamEvent is one event, stored or live.
	StreamEvent StreamMessageKind = iota + 1
	// StreamEOSE ends the stored events: every later event is live.
	StreamEOSE
	// StreamClosed is a stream's last message: it ended, for Reason.
	StreamClosed
)

// StreamMessage is what a Stream delivers next (see Stream.Next).
type StreamMessage struct {
	Kind StreamMessageKind
	// Event is the event as stored (its JSON object), for StreamEvent.
	Event json.RawMessage
	// Reason, for StreamClosed, is why the stream ended: the CLOSED reason
	// a subscription on a connection gets ("restricted: channel access
	// revoked", channel.MsgChannelRevoked; "restricted: community access
	// revoked", channel.MsgCommunityRevoked; the ban's "blocked: …"; a
	// failed read's "error: …"), the reason of a control.DisconnectPubkey
	// or control.DisconnectCommunity, CloseCommunityGoneText after
	// DisconnectCommunity, "relay restarting" at Shutdown, or "" after
	// Close.
	Reason string
}

// Messages of a stream's own ends.
const (
	msgStreamTooSlow   = "error: the stream fell too far behind"
	msgStreamShutdown  = "relay restarting"
	msgStreamsDisabled = "error: the relay is shutting down"
)

// Stream is a live read opened through Host.Subscribe: the relay's REQ,
// without a connection. It delivers the stored events of its filters,
// then StreamEOSE, then every live event of its community that matches
// them and that its readers may read, each event once, until it ends;
// its last message is StreamClosed. Access changes reach it as they reach
// a connection's subscriptions, on every process of a deployment with a
// control bus. Its methods are safe for concurrent use.
type Stream struct {
	r       *Relay
	tc      tenant.TenantContext
	readers []string // the pubkeys its client authenticated as
	filters []nostr.Filter
	reader  *channel.Reader // nil without channels
	live    *pubsub.Subscription
	tracer  trace.Tracer // nil unless WithTracer
	st      trace.State

	ctx       context.Context // ends when the stream ends: stops the replay
	cancel    context.CancelFunc
	closeOnce sync.Once

	mu           sync.Mutex
	stopAfter    func() bool     // stops closing the stream when the caller's context ends
	queue        []StreamMessage // what Next returns next, oldest first
	queueBytes   int
	room         chan struct{}    // closed when the queue has room again; nil unless someone waits
	wake         chan struct{}    // (cap 1) something was queued, or the stream ended
	replaying    bool             // the stored events are still being delivered
	liveNow      chan struct{}    // closed when replaying ends and live delivery begins
	pending      []pubsub.Message // live events that arrived during the replay
	pendingBytes int
	ended        bool
	reason       string
}

// streamSubID is a stream's subscription id in the relay's live index (a
// stream has one subscription; the owner tells streams apart).
const streamSubID = "stream"

// subscribe opens a Stream (Host.Subscribe).
func (r *Relay) subscribe(ctx context.Context, tc tenant.TenantContext, readers []string, filters []nostr.Filter) (*Stream, error) {
	for _, pk := range readers {
		if !nostr.IsLowerHex(pk, 64) {
			return nil, fmt.Errorf("buzz: Subscribe: reader %q is not a 64-character lowercase hex public key", pk)
		}
	}
	community := tc.Community()
	s := &Stream{r: r, tc: tc, readers: slices.Clone(readers), filters: slices.Clone(filters),
		wake: make(chan struct{}, 1), liveNow: make(chan struct{})}
	s.st = trace.State{Tenant: tc, Actor: firstOf(s.readers)}
	s.live = &pubsub.Subscription{Owner: s, ID: streamSubID, Filters: s.filters}
	r.cfg.metrics.Req(tc)
	var (
		guard *trace.Guard
		g     trace.Tracer = trace.Noop{}
	)
	if r.cfg.tracer != nil {
		s.tracer = r.cfg.tracer(tc)
		guard = trace.Arm(s.tracer, s.st, "req")
		g = guard
	}
	refuse := func(reason string, needAuth bool) (*Stream, error) {
		g.SanitizedError(ctx, s.st, trace.ReasonOf(reason))
		guard.Release(ctx)
		return nil, &Refusal{Reason: reason, AuthRequired: needAuth}
	}
	if reason, needAuth := r.admitFilters(ctx, tc, s.filters, func() bool { return len(s.readers) > 0 }, nil); reason != "" {
		return refuse(reason, needAuth)
	}
	// Registered before access is decided, as a connection is before its
	// REQ: every access change from now on reaches it.
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if r.channels != nil {
		s.reader = r.channels.access.Reader(s.ctx, community)
		for _, pk := range s.readers {
			s.reader.Authenticated(pk)
		}
	}
	r.mu.Lock()
	if r.shutdown {
		r.mu.Unlock()
		s.cancel()
		return refuse(msgStreamsDisabled, false)
	}
	r.streams[s] = struct{}{}
	r.mu.Unlock()
	r.cfg.broker.Retain(pubsub.Topic{Community: community})
	stop := context.AfterFunc(ctx, s.Close)
	s.mu.Lock()
	s.stopAfter = stop
	s.mu.Unlock()

	scope, reason, needAuth, err := r.subscriptionAccess(ctx, community, s.readers, s.reader, s.filters,
		traceChecks(ctx, g, s.st, community, s.tracer != nil))
	if err != nil {
		s.Close()
		if ctx.Err() != nil {
			guard.Release(ctx)
			return nil, ctx.Err()
		}
		r.log.ErrorContext(ctx, "buzz: channel access", "community", community.String(), "err", err)
		return refuse(msgInternal, false)
	}
	if reason != "" {
		s.Close()
		return refuse(reason, needAuth)
	}
	s.mu.Lock()
	s.replaying = true
	s.mu.Unlock()
	r.index.Add(community, s.live)
	r.readers.do(func() {
		defer guard.Release(s.ctx)
		s.replay(scope, g)
	}, s.panicked)
	return s, nil
}

// firstOf is the first of pks, or "".
func firstOf(pks []string) string {
	if len(pks) == 0 {
		return ""
	}
	return pks[0]
}

// Next returns the stream's next message, waiting until there is one or
// ctx ends (then ctx's error): the stored events, StreamEOSE, the live
// events, and last StreamClosed, which every later call returns again.
// Messages queued before the stream ended are returned before
// StreamClosed.
func (s *Stream) Next(ctx context.Context) (StreamMessage, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			m := s.queue[0]
			s.queue[0] = StreamMessage{}
			s.queue = s.queue[1:]
			s.queueBytes -= len(m.Event)
			if s.room != nil {
				close(s.room)
				s.room = nil
			}
			s.mu.Unlock()
			return m, nil
		}
		if s.ended {
			reason := s.reason
			s.mu.Unlock()
			return StreamMessage{Kind: StreamClosed, Reason: reason}, nil
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return StreamMessage{}, ctx.Err()
		}
	}
}

// Close ends the stream (reason "") and frees what it holds. The stream
// is closed too when the context given to Subscribe ends. Closing again
// does nothing.
func (s *Stream) Close() {
	s.closeOnce.Do(func() {
		s.end("")
		s.mu.Lock()
		stop := s.stopAfter
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
		s.r.mu.Lock()
		delete(s.r.streams, s)
		s.r.mu.Unlock()
		s.r.cfg.broker.Release(pubsub.Topic{Community: s.tc.Community()})
	})
}

// panicked logs a panic recovered from the stream's replay on a worker and
// ends the stream with msgInternal instead of the process.
func (s *Stream) panicked(p any) {
	s.r.log.Error("buzz: panic serving a stream", "community", s.tc.Community().String(), "panic", p, "stack", string(debug.Stack()))
	s.end(msgInternal)
}

// end ends the stream with reason; only the first call counts. Nothing is
// queued after it.
func (s *Stream) end(reason string) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended, s.reason = true, reason
	s.pending, s.pendingBytes = nil, 0
	if s.room != nil {
		close(s.room)
		s.room = nil
	}
	s.mu.Unlock()
	s.cancel()
	s.r.index.Remove(s.tc.Community(), s, streamSubID)
	s.signal()
}

func (s *Stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default: // Next is already due to look
	}
}

// roomLocked reports whether the queue has room for an event of n bytes:
// it holds fewer than Limits.SendQueue messages and the event fits in
// Limits.SendQueueBytes (an empty queue takes any). s.mu held.
func (s *Stream) roomLocked(n int) bool {
	l := &s.r.cfg.limits
	return len(s.queue) < l.SendQueue && (len(s.queue) == 0 || s.queueBytes+n <= l.SendQueueBytes)
}

// push queues m, waiting for room (backpressure on the replay) until ctx
// ends; false when the stream ended or ctx did.
func (s *Stream) push(ctx context.Context, m StreamMessage) bool {
	for {
		s.mu.Lock()
		if s.ended {
			s.mu.Unlock()
			return false
		}
		if s.roomLocked(len(m.Event)) {
			s.queue = append(s.queue, m)
			s.queueBytes += len(m.Event)
			s.mu.Unlock()
			s.signal()
			return true
		}
		if s.room == nil {
			s.room = make(chan struct{})
		}
		room := s.room
		s.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return false
		}
	}
}

// replay delivers the stored events (Relay.replayStored, as a REQ's),
// then StreamEOSE, then the live events held back meanwhile, and switches
// the stream to live delivery.
func (s *Stream) replay(scope channel.Scope, g trace.Tracer) {
	ctx, r := s.ctx, s.r
	sent := make(map[string]struct{}, s.r.replaySize(s.filters))
	complete, failure := r.replayStored(ctx, s.tc.Community(), s, s.readers, s.filters, scope, sent, g, s.st, s.tracer != nil,
		r.log.With("community", s.tc.Community().String()),
		func(rec store.Record) bool {
			return s.push(ctx, StreamMessage{Kind: StreamEvent, Event: slices.Clone(rec.Raw)})
		})
	if failure != "" {
		s.end(failure)
		return
	}
	if !complete || !s.push(ctx, StreamMessage{Kind: StreamEOSE}) {
		return
	}
	// The stored-to-live handoff, as a REQ's (see conn.replay).
	if r.inflight.WaitBegun(ctx) != nil {
		return
	}
	for {
		s.mu.Lock()
		if s.ended {
			s.mu.Unlock()
			return
		}
		pending := s.pending
		s.pending, s.pendingBytes = nil, 0
		if len(pending) == 0 {
			s.replaying = false
			close(s.liveNow)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for _, m := range pending {
			if _, dup := sent[m.Event.ID]; dup {
				continue
			}
			sent[m.Event.ID] = struct{}{}
			if !s.push(ctx, StreamMessage{Kind: StreamEvent, Event: m.Raw}) {
				return
			}
		}
	}
}

// deliverLive queues a live event the index matched for the stream. Called
// by the broker listener: it never blocks; a stream that does not keep up
// ends (msgStreamTooSlow), as a connection that does not is cut off.
func (s *Stream) deliverLive(m pubsub.Message) {
	if !liveAllowed(s.reader, s.readers, m.Event) {
		return
	}
	l := &s.r.cfg.limits
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	queued := true
	switch {
	case s.replaying:
		if len(s.pending) >= l.SendQueue || s.pendingBytes+len(m.Raw) > l.SendQueueBytes {
			queued = false
			break
		}
		s.pending = append(s.pending, m)
		s.pendingBytes += len(m.Raw)
	case s.roomLocked(len(m.Raw)):
		s.queue = append(s.queue, StreamMessage{Kind: StreamEvent, Event: m.Raw})
		s.queueBytes += len(m.Raw)
	default:
		queued = false
	}
	s.mu.Unlock()
	if !queued {
		s.r.cfg.metrics.SlowReaderDisconnected(s.tc)
		s.end(msgStreamTooSlow)
		return
	}
	s.signal()
	s.r.cfg.metrics.LiveDelivered(s.tc)
	if s.tracer != nil {
		traceLive(s.ctx, s.tracer, s.st, m)
	}
}

// The stream is a session: access changes reach it (see session).

func (s *Stream) community() tenant.CommunityID  { return s.tc.Community() }
func (s *Stream) host() string                   { return s.tc.Host() }
func (s *Stream) channelReader() *channel.Reader { return s.reader }
func (s *Stream) failAllSubs(reason string)      { s.end(reason) }
func (s *Stream) disconnect(_ int, reason string) {
	s.end(reason)
}
func (s *Stream) isAuthed(pubkey string) bool { return slices.Contains(s.readers, pubkey) }

func (s *Stream) mayHold(id channel.ID) bool {
	return s.reader != nil && (s.reader.Holds(id) || channel.Names(s.filters, id))
}

func (s *Stream) closeSubsNaming(id channel.ID, reason string) {
	if channel.Names(s.filters, id) {
		s.end(reason)
	}
}

// submit admits ev as an EVENT (Host.Submit).
func (r *Relay) submit(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event, signers []string) (bool, string) {
	signers = slices.Clone(signers)
	sub := ingest.Submission{Tenant: tc, Event: ev, Actor: firstOf(signers)}
	if len(signers) > 0 {
		sub.AuthedAs = func(pk string) bool { return slices.Contains(signers, pk) }
	}
	if r.cfg.tracer != nil {
		sub.Tracer = r.cfg.tracer(tc)
	}
	ticket := r.inflight.Begin()
	out := r.pipeline.Ingest(ctx, sub)
	r.inflight.End(ticket)
	r.cfg.metrics.EventIngested(tc, out.OK, out.Stored, out.Message)
	return out.OK, out.Message
}
