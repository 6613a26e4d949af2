package buzz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/nip77"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Client-facing texts of the relay's own refusals.
const (
	msgInternal       = apijson.MsgInternal
	msgTooManySubs    = "error: too many subscriptions (limit %d)"
	msgReqAuth        = "auth-required: this relay requires authentication (NIP-42) to read"
	msgNoFilters      = "invalid: at least one filter is required"
	msgSubIDTooLong   = "invalid: subscription id too long (limit %d)"
	msgTooManyFilters = "invalid: too many filters (limit %d)"
	msgConnFilters    = "restricted: this connection's subscriptions hold too many filter bytes (limit %d); close some first"
	msgQueryTimeout   = "error: query took too long (limit %s); narrow the filter"
	msgRateLimited    = "rate-limited: too many messages on this connection (limit %d per second)"
)

// handle dispatches one client message. It runs on the reader goroutine:
// whatever it does synchronously (CLOSE, AUTH, subscription registration)
// is ordered with the client's later messages.
//
// Filters are bounded while they are parsed (Limits.MaxFilters,
// MaxFilterValues, MaxSubscriptionBytes), and a message beyond the
// connection's rate (Limits.MessageRate) is refused unprocessed.
func (c *conn) handle(data []byte) {
	if nip77.IsClientMessage(data) {
		c.handleNeg(data) // NIP-77 negentropy: negentropy.go
		return
	}
	msg, err := nostr.ParseClientMessageLimited(data, c.limits.filterLimits())
	if err != nil {
		c.refuseMessage(err)
		return
	}
	if !c.rate.Allow() {
		c.refuseRate(msg)
		return
	}
	switch m := msg.(type) {
	case *nostr.EventEnvelope:
		c.handleEvent(m.Event)
	case *nostr.ReqEnvelope:
		c.handleReq(m.SubID, m.Filters, filterCharge(len(data), m.Filters))
	case *nostr.CountEnvelope:
		c.handleCount(m.SubID, m.Filters)
	case *nostr.CloseEnvelope:
		c.handleClose(m.SubID)
	case *nostr.AuthEnvelope:
		c.handleAuth(m.Event)
	default:
		c.reply(nostr.AppendNotice(nil, "invalid: unsupported message type"))
	}
}

// valueCharge is what one listed filter value costs a connection beyond
// its JSON bytes: about what it takes in memory once parsed, matched
// through a set and posted in the live index, so a kind written in two
// bytes is charged like the memory it holds.
const valueCharge = 64

// filterCharge is the charge of a REQ of size bytes with filters against
// Limits.MaxConnFilterBytes: its size plus valueCharge per listed value.
func filterCharge(size int, filters []nostr.Filter) int {
	n := 0
	for i := range filters {
		f := &filters[i]
		n += len(f.IDs) + len(f.Authors) + len(f.Kinds)
		for _, v := range f.Tags {
			n += len(v)
		}
	}
	return size + valueCharge*n
}

// refuseRate answers a message refused for the connection's message rate:
// OK false for an EVENT or AUTH, CLOSED for a REQ or COUNT, NOTICE for a
// CLOSE (which is still honoured: closing costs the relay nothing).
func (c *conn) refuseRate(msg nostr.ClientMessage) {
	reason := fmt.Sprintf(msgRateLimited, c.limits.MessageRate)
	switch m := msg.(type) {
	case *nostr.EventEnvelope:
		c.r.cfg.metrics.EventIngested(c.tc, false, false, reason)
		c.reply(nostr.AppendOK(nil, m.Event.ID, false, reason))
	case *nostr.AuthEnvelope:
		c.reply(nostr.AppendOK(nil, m.Event.ID, false, reason))
	case *nostr.ReqEnvelope:
		c.handleClose(m.SubID) // a replaced subscription ends, as with any refused REQ
		c.reply(nostr.AppendClosed(nil, m.SubID, reason))
	case *nostr.CountEnvelope:
		c.reply(nostr.AppendClosed(nil, m.SubID, reason))
	case *nostr.CloseEnvelope:
		c.handleClose(m.SubID)
	default:
		c.reply(nostr.AppendNotice(nil, reason))
	}
}

// refuseMessage answers a message that did not parse: with OK false when it
// was an EVENT whose id could be read, CLOSED when it was a REQ or COUNT
// whose subscription id could be read, and NOTICE otherwise.
func (c *conn) refuseMessage(err error) {
	reason := ingest.Reason(err, "invalid: ")
	var ee *nostr.EnvelopeError
	if errors.As(err, &ee) {
		switch {
		case (ee.Label == nostr.LabelEvent || ee.Label == nostr.LabelAuth) && ee.EventID != "":
			c.reply(nostr.AppendOK(nil, ee.EventID, false, reason))
			return
		case (ee.Label == nostr.LabelReq || ee.Label == nostr.LabelCount) && ee.SubID != "":
			c.reply(nostr.AppendClosed(nil, ee.SubID, reason))
			return
		}
	}
	c.reply(nostr.AppendNotice(nil, reason))
}

// handleEvent runs the ingest pipeline on its own goroutine (at most
// EventConcurrency per connection) and replies with exactly one OK.
func (c *conn) handleEvent(ev *nostr.Event) {
	select {
	case c.eventSem <- struct{}{}:
	case <-c.ctx.Done():
		return
	}
	var authedAs func(string) bool
	if c.authenticated() {
		authedAs = c.isAuthed
	}
	c.tasks.Add(1)
	c.r.ingesters.do(func() {
		defer func() {
			<-c.eventSem
			c.tasks.Done()
		}()
		if reason := c.checkScope(ev.PubKey, apitoken.ScopeForEvent(ev)); reason != "" {
			c.reply(nostr.AppendOK(nil, ev.ID, false, reason))
			return
		}
		if !c.admitPresence(ev) {
			c.reply(nostr.AppendOK(nil, ev.ID, false, msgEphemeralTooFast))
			return
		}
		if !c.admitTyping(ev) {
			c.reply(nostr.AppendOK(nil, ev.ID, false, msgTypingTooSoon))
			return
		}
		ticket := c.r.inflight.Begin()
		sub := ingest.Submission{Tenant: c.tc, Event: ev, AuthedAs: authedAs, Actor: c.actor()}
		if c.tracer != nil {
			sub.Tracer = c.tracer
		}
		out := c.r.pipeline.Ingest(c.ctx, sub)
		c.r.inflight.End(ticket)
		c.r.cfg.metrics.EventIngested(c.tc, out.OK, out.Stored, out.Message)
		if !out.OK {
			c.releaseTyping(ev)
		}
		c.r.afterIngest(c, ev, out)
		if out.RequestAuth {
			c.reply(nostr.AppendAuthChallenge(nil, c.challenge))
		}
		c.reply(nostr.AppendOK(nil, ev.ID, out.OK, out.Message))
	}, c.panicked)
}

// checkFilters applies the REQ/COUNT rules shared by both: subscription id
// length, then admitFilters. It returns the CLOSED reason, or "".
func (c *conn) checkFilters(subID string, filters []nostr.Filter) (reason string, needAuth bool) {
	if len(subID) > c.limits.MaxSubIDLength {
		return fmt.Sprintf(msgSubIDTooLong, c.limits.MaxSubIDLength), false
	}
	ctx := c.ctx
	if len(c.r.cfg.filterPolicy) > 0 {
		ctx = withSubID(ctx, subID)
	}
	return c.r.admitFilters(ctx, c.tc, filters, c.authenticated, c.readScope)
}

// admitFilters applies the rules of a subscription's filters that come
// before access (a REQ or COUNT on a connection, a seam stream): a search
// that parses (search.CheckFilters), the filter count, authentication
// (AuthRequired), the read scope of the client's API tokens (readScope,
// nil for none) and the embedder's filter policies, run with ctx. It returns the refusal, or "".
func (r *Relay) admitFilters(ctx context.Context, tc tenant.TenantContext, filters []nostr.Filter,
	authenticated func() bool, readScope func() string) (reason string, needAuth bool) {
	if err := search.CheckFilters(filters); err != nil {
		return ingest.Reason(err, "invalid: "), false
	}
	switch {
	case len(filters) == 0:
		return msgNoFilters, false
	case len(filters) > r.cfg.limits.MaxFilters:
		return fmt.Sprintf(msgTooManyFilters, r.cfg.limits.MaxFilters), false
	case r.cfg.auth == AuthRequired && !authenticated():
		return msgReqAuth, true
	}
	if readScope != nil {
		if reason := readScope(); reason != "" {
			return reason, false
		}
	}
	return r.filterPolicyRefusal(ctx, tc, filters), false
}

// filterPolicyRefusal runs the embedder's filter policies on each filter,
// with ctx, and returns the first refusal ("blocked: " unless the policy's
// error names its prefix), or "".
func (r *Relay) filterPolicyRefusal(ctx context.Context, tc tenant.TenantContext, filters []nostr.Filter) string {
	for _, f := range filters {
		for _, fn := range r.cfg.filterPolicy {
			if err := fn(ctx, tc, f); err != nil {
				return ingest.Reason(err, "blocked: ")
			}
		}
	}
	return ""
}

// refuseRead ends a REQ or COUNT with CLOSED: it traces the sanitized
// reason, releases the read seam's guard and, when the reason asks for
// authentication, sends the AUTH challenge first.
func (c *conn) refuseRead(guard *trace.Guard, g trace.Tracer, st trace.State, subID, reason string, needAuth bool) {
	if needAuth {
		c.reply(nostr.AppendAuthChallenge(nil, c.challenge))
	}
	g.SanitizedError(c.ctx, st, trace.ReasonOf(reason))
	guard.Release(c.ctx)
	c.reply(nostr.AppendClosed(nil, subID, reason))
}

// readAccess is checkRead for a REQ or COUNT on this connection: a store
// failure becomes the internal-error reason (logged, never sent), and live
// is false when the connection itself has ended, in which case nothing is
// to be answered.
func (c *conn) readAccess(filters []nostr.Filter, g trace.Tracer) (scope channel.Scope, reason string, needAuth, live bool) {
	scope, reason, needAuth, err := c.checkRead(c.ctx, filters, g)
	if err != nil {
		if c.ctx.Err() != nil {
			return scope, "", false, false
		}
		c.log.ErrorContext(c.ctx, "buzz: channel access", "err", err)
		return scope, msgInternal, false, true
	}
	return scope, reason, needAuth, true
}

// handleReq opens (or replaces) a subscription. The subscription is
// registered for live events before the stored events are queried, and live
// events are held back until EOSE, so an event accepted at any moment is
// delivered exactly once: from the query, or live after EOSE.
//
// size is what the subscription is charged against the connection's
// Limits.MaxConnFilterBytes while it is open (see filterCharge).
func (c *conn) handleReq(subID string, filters []nostr.Filter, size int) {
	c.r.cfg.metrics.Req(c.tc)
	guard, g, st := c.armRead("req")
	refuse := func(reason string, needAuth bool) {
		c.refuseRead(guard, g, st, subID, reason, needAuth)
	}
	if reason, needAuth := c.checkFilters(subID, filters); reason != "" {
		refuse(reason, needAuth)
		return
	}
	// Channel access, decided before the subscription exists: the scope
	// the stored events are read with, or CLOSED.
	scope, reason, needAuth, live := c.readAccess(filters, g)
	if !live {
		return
	}
	if reason != "" {
		// A replaced subscription of the same id ends too.
		c.mu.Lock()
		old := c.takeSubLocked(subID)
		c.mu.Unlock()
		if old != nil {
			old.cancel()
			c.r.index.Remove(c.tc.Community(), c, subID)
		}
		refuse(reason, needAuth)
		return
	}

	ctx, cancel := context.WithCancel(c.ctx)
	indexed := &pubsub.Subscription{Owner: c, ID: subID, Filters: filters}
	sub := &subscription{id: subID, prefix: nostr.AppendEventMessagePrefix(nil, subID), filters: filters, live: indexed, cancel: cancel, replaying: true, bytes: size}
	c.mu.Lock()
	old := c.subs[subID]
	held := c.filterBytes
	if old != nil {
		held -= old.bytes
	}
	if old == nil && len(c.subs) >= c.limits.MaxSubscriptions || held+size > c.limits.MaxConnFilterBytes {
		reason := fmt.Sprintf(msgTooManySubs, c.limits.MaxSubscriptions)
		if held+size > c.limits.MaxConnFilterBytes {
			reason = fmt.Sprintf(msgConnFilters, c.limits.MaxConnFilterBytes)
		}
		if old != nil {
			c.takeSubLocked(subID)
		}
		c.mu.Unlock()
		cancel()
		if old != nil {
			old.cancel()
			c.r.index.Remove(c.tc.Community(), c, subID)
		}
		refuse(reason, false)
		return
	}
	c.subs[subID] = sub
	c.filterBytes = held + size
	c.mu.Unlock()
	if old != nil {
		old.cancel()
	}
	c.r.index.Add(c.tc.Community(), indexed)

	if !c.acquireQuery() {
		cancel()
		return
	}
	c.tasks.Add(1)
	c.r.readers.do(func() {
		defer c.tasks.Done()
		defer c.releaseQuery()
		defer guard.Release(ctx)
		c.replay(ctx, sub, scope, g, st)
	}, c.panicked)
}

// acquireQuery takes one of the connection's query slots
// (Limits.QueryConcurrency), waiting on the reader: a client with that many
// queries running is not read from until one ends. Relay-wide, each store
// read then waits its turn in the relay's fair queue (see read.go).
func (c *conn) acquireQuery() bool {
	select {
	case c.querySem <- struct{}{}:
		return true
	case <-c.ctx.Done():
		return false
	}
}

func (c *conn) releaseQuery() {
	<-c.querySem
}

func (c *conn) timeoutReason() string {
	return c.r.timeoutReason()
}

// timeoutReason is the CLOSED reason of a read that ran past
// Limits.QueryTimeout.
func (r *Relay) timeoutReason() string {
	return fmt.Sprintf(msgQueryTimeout, r.cfg.limits.QueryTimeout)
}

// clamp returns f with its limit bounded by MaxLimit (MaxLimit when absent).
func (c *conn) clamp(f nostr.Filter) nostr.Filter { return c.r.clamp(f) }

// clamp returns f with its limit bounded by MaxLimit (MaxLimit when absent)
// and, when f names ids, by their number: an id names one event, so no
// more can match, and a read sized by the limit would reserve room for
// MaxLimit events to return a handful.
func (r *Relay) clamp(f nostr.Filter) nostr.Filter {
	if lim := r.cfg.limits.MaxLimit; !f.LimitSet || f.Limit > lim {
		f.Limit, f.LimitSet = lim, true
	}
	if f.IDs != nil && len(f.IDs) < f.Limit {
		f.Limit = len(f.IDs)
	}
	return f
}

// replay streams the stored events of sub's filters (replayStored), then
// EOSE, then the live events held back meanwhile, and switches the
// subscription to live delivery.
func (c *conn) replay(ctx context.Context, sub *subscription, scope channel.Scope, g trace.Tracer, st trace.State) {
	bufs := c.r.getReplayBuffers(sub.filters)
	defer c.r.putReplayBuffers(bufs)
	sent := bufs.sent
	// The stored events go to the writer in batches (with the EOSE after
	// the last), each reaching the socket in one write: queued one by one,
	// each would wake the writer for a write of its own.
	batchBytes := 0
	flush := func() bool {
		ok := c.replyAllCtx(ctx, bufs.frames)
		clear(bufs.frames)
		bufs.frames, batchBytes = bufs.frames[:0], 0
		return ok
	}
	complete, failure := c.r.replayStored(ctx, c.tc.Community(), c, c.readers(), sub.filters, scope, sent, g, st, c.tracer != nil, c.log,
		func(rec store.Record) bool {
			f := eventFrame(sub.prefix, rec.Raw)
			bufs.frames, batchBytes = append(bufs.frames, f), batchBytes+f.size()
			return len(bufs.frames) < pageRecords && batchBytes < pageBytes || flush()
		})
	if failure != "" {
		flush() // what was found before, then CLOSED
		c.failSub(sub, failure)
		return
	}
	if !complete {
		return
	}
	bufs.frames = append(bufs.frames, frame{msg: nostr.AppendEOSE(nil, sub.id)})
	if !flush() {
		return
	}
	// Events the query returned may still be on their way to the broker;
	// once every ingest begun before now has published, each of them is in
	// pending (or was never going to be delivered live here). See pubsub.Inflight.
	if c.r.inflight.WaitBegun(ctx) != nil {
		return
	}
	// Flush the live events that arrived during the replay, skipping those
	// the query already returned, until none is pending; then go live.
	for {
		c.mu.Lock()
		if c.subs[sub.id] != sub {
			c.mu.Unlock()
			return
		}
		pending := sub.pending
		c.pendingBytes -= sub.pendingBytes
		sub.pending, sub.pendingBytes = nil, 0
		if len(pending) == 0 {
			sub.replaying = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		for _, m := range pending {
			if _, dup := sent[m.Event.ID]; dup {
				continue
			}
			sent[m.Event.ID] = struct{}{}
			if !c.replyAllCtx(ctx, []frame{eventFrame(sub.prefix, m.Raw)}) {
				return
			}
		}
	}
}

// replayBuffers are the buffers of one replay on a connection: the frames
// of its stored events on their way to the writer, and the ids it sent.
// They come from the relay's replayBufs, so a relay serving many REQs does
// not allocate them for each (they were the largest share of what serving
// REQs allocated, and so of the garbage collections that hold up reads on
// one core).
type replayBuffers struct {
	frames []frame
	sent   map[string]struct{}
}

// getReplayBuffers returns empty buffers for a replay of filters: reused
// ones, or new ones sized by replaySize.
func (r *Relay) getReplayBuffers(filters []nostr.Filter) *replayBuffers {
	if b, ok := r.replayBufs.Get().(*replayBuffers); ok {
		return b
	}
	n := r.replaySize(filters)
	return &replayBuffers{frames: make([]frame, 0, n+1), sent: make(map[string]struct{}, n)}
}

// putReplayBuffers empties b and keeps it for another replay, unless a
// large replay grew it beyond what most need (the garbage collector takes
// it then: a map never shrinks).
func (r *Relay) putReplayBuffers(b *replayBuffers) {
	if cap(b.frames) > pageRecords+1 || len(b.sent) > 4*replayPresize {
		return
	}
	clear(b.frames[:cap(b.frames)]) // no event held past its replay (nor a frame an early return left)
	b.frames = b.frames[:0]
	clear(b.sent)
	r.replayBufs.Put(b)
}

// replaySize is what a replay of filters first sizes its buffers for: the
// most stored events it can return, up to replayPresize. A limit is an
// upper bound a read may fall far short of (a client asks for 500 and gets
// a dozen), so replays larger than that grow their buffers as they fill.
func (r *Relay) replaySize(filters []nostr.Filter) int {
	n := 0
	for i := range filters {
		n += r.clamp(filters[i]).Limit
		if n >= replayPresize {
			return replayPresize
		}
	}
	return n
}

// replayStored reads the stored events of a subscription's filters (a REQ
// on a connection, a seam stream) for readers in community, under scope:
// per filter, newest first, at most its limit clamped to Limits.MaxLimit
// ("limit": 0 reads none), each event once across the filters (sent, which
// it fills), gift wraps only to their recipient, and the queued reports
// readers may read merged in (moderation.go). The store is read a page at
// a time through the relay's fair read queue for owner, the page's rows
// closed before any of it is delivered (read.go). deliver gets each event
// and returns false to stop. With tracing, each filter's rows are recorded
// on g.
//
// complete is true when every filter was read; failure is the reason to
// close the subscription with when a read failed (logged and traced), ""
// when it completed or stopped (deliver returned false, ctx ended).
func (r *Relay) replayStored(ctx context.Context, community tenant.CommunityID, owner any, readers []string, filters []nostr.Filter,
	scope channel.Scope, sent map[string]struct{}, g trace.Tracer, st trace.State, tracing bool, log *slog.Logger,
	deliver func(store.Record) bool) (complete bool, failure string) {
	var rows []tenant.CommunityID
	for i := range filters {
		f := &filters[i]
		rows = rows[:0]
		if f.LimitSet && f.Limit == 0 {
			traceRows(ctx, g, st, f, nil)
			continue // "limit": 0 — live events only
		}
		// Gift wraps only: the store is asked for the reader's alone;
		// otherwise, when gated, others' wraps are dropped one by one.
		q, gated, ok := channel.GiftWrapQuery(r.clamp(*f), readers)
		if !ok {
			traceRows(ctx, g, st, f, nil)
			continue
		}
		// Queued reports readers may read, merged into the filter's
		// newest-first order.
		reports, err := r.reportRecords(ctx, community, readers, f)
		if err != nil {
			if ctx.Err() != nil {
				return false, ""
			}
			log.ErrorContext(ctx, "buzz: reports query", "err", err)
			g.SanitizedError(ctx, st, trace.ReasonServerError)
			return false, msgInternal
		}
		limit, n := r.clamp(*f).Limit, 0
		delivered := true
		send := func(rec store.Record) bool {
			if _, dup := sent[rec.ID]; dup {
				return true
			}
			sent[rec.ID] = struct{}{}
			n++
			if !deliver(rec) {
				delivered = false
				return false
			}
			if tracing {
				rows = append(rows, rec.Community)
			}
			return true
		}
		// Stored events come a page at a time (read.go): the store is free
		// again before any of a page is sent.
		err = r.queryPaged(ctx, community, owner, q, scope, func(page []store.Record) bool {
			for _, rec := range page {
				for len(reports) > 0 && n < limit && (reports[0].CreatedAt > rec.CreatedAt ||
					reports[0].CreatedAt == rec.CreatedAt && reports[0].ID < rec.ID) {
					if !send(reports[0]) {
						return false
					}
					reports = reports[1:]
				}
				if n >= limit {
					return false
				}
				if gated && !channel.GiftWrapVisibleRaw(rec.Raw, readers) {
					continue
				}
				if !send(rec) {
					return false
				}
			}
			return true
		})
		if err == nil && delivered {
			for _, rec := range reports {
				if n >= limit || !send(rec) {
					break
				}
			}
		}
		if tracing {
			traceRows(ctx, g, st, f, rows)
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, ""
			}
			g.SanitizedError(ctx, st, trace.ReasonServerError)
			if errors.Is(err, errQueryTimeout) {
				log.InfoContext(ctx, "buzz: query timed out", "err", err)
				return false, r.timeoutReason()
			}
			log.ErrorContext(ctx, "buzz: query", "err", err)
			return false, msgInternal
		}
		if !delivered {
			return false, ""
		}
	}
	return true, ""
}

// failAllSubs ends every subscription open on c with CLOSED reason.
func (c *conn) failAllSubs(reason string) {
	c.mu.Lock()
	subs := make([]*subscription, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		c.failSub(s, reason)
	}
}

// failSub ends sub with CLOSED reason (if it is still the open one).
func (c *conn) failSub(sub *subscription, reason string) {
	c.mu.Lock()
	open := c.subs[sub.id] == sub
	if open {
		c.takeSubLocked(sub.id)
	}
	c.mu.Unlock()
	if !open {
		return
	}
	sub.cancel()
	c.r.index.Remove(c.tc.Community(), c, sub.id)
	c.reply(nostr.AppendClosed(nil, sub.id, reason))
}

// deliverLive queues a live event for the subscription the index matched.
// Called by the broker listener: it never blocks.
//
// An event of a channel is delivered only if the connection may read the
// channel (see access.go); a gift wrap only to its recipient (giftwrap.go).
func (c *conn) deliverLive(matched *pubsub.Subscription, m pubsub.Message) {
	if !c.liveAllowed(m.Event) {
		return
	}
	if !c.deliverLiveLocked(matched, m) {
		return
	}
	c.r.cfg.metrics.LiveDelivered(c.tc)
	if c.tracer != nil {
		c.traceLive(matched.ID, m)
	}
}

// deliverLiveLocked queues m for the subscription the index matched under
// c.mu and reports whether it was queued (or held until EOSE).
func (c *conn) deliverLiveLocked(matched *pubsub.Subscription, m pubsub.Message) bool {
	subID := matched.ID
	c.mu.Lock()
	defer c.mu.Unlock()
	sub := c.subs[subID]
	if sub == nil {
		return false // closed
	}
	if sub.live != matched && !sub.matches(m.Event) {
		return false // replaced by a REQ whose filters do not match
	}
	if sub.replaying {
		if len(sub.pending) >= c.limits.SendQueue || c.pendingBytes+len(m.Raw) > c.limits.SendQueueBytes {
			c.cutOff()
			return false
		}
		sub.pending = append(sub.pending, m)
		sub.pendingBytes += len(m.Raw)
		c.pendingBytes += len(m.Raw)
		return true
	}
	c.tryQueue(eventFrame(sub.prefix, m.Raw))
	return true
}

// matches reports whether ev matches one of sub's filters.
func (sub *subscription) matches(ev *nostr.Event) bool {
	for i := range sub.filters {
		if search.Matches(&sub.filters[i], ev) {
			return true
		}
	}
	return false
}

// takeSubLocked removes subscription subID, if open, and returns it. c.mu
// held.
func (c *conn) takeSubLocked(subID string) *subscription {
	sub := c.subs[subID]
	if sub != nil {
		delete(c.subs, subID)
		c.filterBytes -= sub.bytes
		c.pendingBytes -= sub.pendingBytes
	}
	return sub
}

// handleClose ends a subscription, and cancels a COUNT of that id still
// running; an unknown id is ignored. No reply.
func (c *conn) handleClose(subID string) {
	c.mu.Lock()
	sub := c.takeSubLocked(subID)
	count := c.counts[subID]
	delete(c.counts, subID)
	c.mu.Unlock()
	if count != nil {
		count.cancel() // a COUNT of that id still running ends too
	}
	if sub == nil {
		return
	}
	sub.cancel()
	c.r.index.Remove(c.tc.Community(), c, subID)
}

// dropAllSubs ends every subscription of a closing connection.
func (c *conn) dropAllSubs() {
	c.mu.Lock()
	subs := c.subs
	c.subs = make(map[string]*subscription)
	c.filterBytes, c.pendingBytes = 0, 0
	counts := c.counts
	c.counts = nil
	c.mu.Unlock()
	for _, s := range subs {
		s.cancel()
	}
	for _, run := range counts {
		run.cancel()
	}
	c.r.index.RemoveOwner(c.tc.Community(), c)
}

// handleCount answers a NIP-45 COUNT with one count over all its filters.
func (c *conn) handleCount(subID string, filters []nostr.Filter) {
	guard, g, st := c.armRead("count")
	refuse := func(reason string, needAuth bool) {
		c.refuseRead(guard, g, st, subID, reason, needAuth)
	}
	if reason, needAuth := c.checkFilters(subID, filters); reason != "" {
		refuse(reason, needAuth)
		return
	}
	scope, reason, needAuth, live := c.readAccess(filters, g)
	if !live {
		return
	}
	if reason != "" {
		refuse(reason, needAuth)
		return
	}
	if !c.acquireQuery() {
		return
	}
	// The count runs on its own context, cancelled (in the store too) by a
	// CLOSE of its id, a later COUNT of the same id, or the connection
	// going away.
	ctx, cancel := context.WithCancel(c.ctx)
	run := &countRun{cancel: cancel}
	c.mu.Lock()
	if c.counts == nil {
		c.counts = make(map[string]*countRun)
	}
	prev := c.counts[subID]
	c.counts[subID] = run
	c.mu.Unlock()
	if prev != nil {
		prev.cancel()
	}
	c.tasks.Add(1)
	c.r.readers.do(func() {
		defer c.tasks.Done()
		defer c.releaseQuery()
		defer guard.Release(ctx)
		defer func() {
			c.mu.Lock()
			if c.counts[subID] == run {
				delete(c.counts, subID)
			}
			c.mu.Unlock()
			cancel()
		}()
		n, err := c.countVisible(ctx, filters, scope)
		if err != nil {
			if ctx.Err() != nil {
				return // closed, replaced, or the connection is gone: nothing to answer
			}
			g.SanitizedError(ctx, st, trace.ReasonServerError)
			reason := msgInternal
			if errors.Is(err, errQueryTimeout) {
				c.log.InfoContext(ctx, "buzz: count timed out", "err", err)
				reason = c.timeoutReason()
			} else {
				c.log.ErrorContext(ctx, "buzz: count", "err", err)
			}
			c.reply(nostr.AppendClosed(nil, subID, reason))
			return
		}
		// A count carries no rows; each filter's read is recorded empty.
		for i := range filters {
			traceRows(ctx, g, st, &filters[i], nil)
		}
		c.replyCtx(ctx, nostr.AppendCountResult(nil, subID, n))
	}, c.panicked)
}
