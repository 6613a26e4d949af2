package buzz

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/nip77"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// NIP-77 negentropy on the relay's connections. The protocol is package
// nip77's; this file decides what a reader reconciles over and bounds it:
//
//   - NEG-OPEN is checked as a REQ of its one filter is (subscription id
//     length, authentication, FilterPolicy, bans, the community's access
//     policy, channel scope, gift wraps only to their recipient), and its
//     set is read through the same scoped, paged, fair-queued and
//     deadline-bound store reads as a REQ's stored events (negItems): a
//     reader reconciles over exactly the events a REQ would show them,
//     never more.
//   - The set holds at most Limits.MaxNegentropyItems events (NEG-ERR
//     "blocked: ..." beyond), a connection runs at most
//     Limits.MaxNegentropySessions at once, and the relay's messages are
//     no larger than the frames it accepts (Limits.MaxFrameBytes).
//   - NEG-MSG is answered on the reader goroutine, in order; NEG-CLOSE ends
//     a session without reply, as does the connection closing.

// Client-facing texts of negentropy refusals.
const (
	msgNegTooMany     = "blocked: too many events to reconcile (limit %d); narrow the filter"
	msgNegSessions    = "blocked: too many negentropy sessions on this connection (limit %d); close one first"
	msgNegSearch      = "invalid: negentropy filters cannot search"
	msgNegUnknown     = "closed: no negentropy session of this id is open"
	msgNegNotReady    = "invalid: NEG-MSG before the relay answered NEG-OPEN"
	negPageRecords    = 2000 // events per store read of a set
	negRateLimitedFmt = msgRateLimited
)

// errNegTooMany is a set beyond Limits.MaxNegentropyItems.
var errNegTooMany = errors.New("buzz: negentropy set too large")

// negSession is one NEG-OPEN of a connection. srv is nil while its set is
// read; mu orders the messages answered on it.
type negSession struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	srv    *nip77.Server
	failed bool
}

// handleNeg dispatches one NEG-OPEN, NEG-MSG or NEG-CLOSE (data is known to
// carry one of those labels).
func (c *conn) handleNeg(data []byte) {
	msg, err := nip77.ParseClientMessage(data, c.limits.filterLimits())
	if err != nil {
		var pe *nip77.ParseError
		if errors.As(err, &pe) {
			c.reply(nip77.AppendErr(nil, pe.SubID, err.Error()))
			return
		}
		c.reply(nostr.AppendNotice(nil, err.Error()))
		return
	}
	if !c.rate.Allow() {
		if cl, ok := msg.(*nip77.Close); ok {
			c.closeNeg(cl.SubID) // closing costs the relay nothing
			return
		}
		c.closeNeg(negSubID(msg)) // NEG-ERR ends the session, as any refusal does
		c.reply(nip77.AppendErr(nil, negSubID(msg), fmt.Sprintf(negRateLimitedFmt, c.limits.MessageRate)))
		return
	}
	switch m := msg.(type) {
	case *nip77.Open:
		c.negOpen(m)
	case *nip77.Msg:
		c.negMsg(m)
	case *nip77.Close:
		c.closeNeg(m.SubID)
	}
}

func negSubID(msg any) string {
	switch m := msg.(type) {
	case *nip77.Open:
		return m.SubID
	case *nip77.Msg:
		return m.SubID
	case *nip77.Close:
		return m.SubID
	}
	return ""
}

// closeNeg ends session subID, if open. No reply.
func (c *conn) closeNeg(subID string) {
	c.mu.Lock()
	s := c.negs[subID]
	delete(c.negs, subID)
	c.mu.Unlock()
	if s != nil {
		s.cancel()
	}
}

// negFail ends session s (if still the open one of subID) with NEG-ERR.
func (c *conn) negFail(subID string, s *negSession, reason string) {
	c.mu.Lock()
	open := c.negs[subID] == s
	if open {
		delete(c.negs, subID)
	}
	c.mu.Unlock()
	if !open {
		return
	}
	s.cancel()
	c.reply(nip77.AppendErr(nil, subID, reason))
}

// negOpen opens (or replaces) a session: the read checks of a REQ, then the
// set is read on a query slot and the initial message answered.
func (c *conn) negOpen(m *nip77.Open) {
	c.closeNeg(m.SubID) // a NEG-OPEN of an open id replaces it
	refuse := func(reason string, needAuth bool) {
		if needAuth {
			c.reply(nostr.AppendAuthChallenge(nil, c.challenge))
		}
		c.reply(nip77.AppendErr(nil, m.SubID, reason))
	}
	if m.Filter.Search != "" {
		refuse(msgNegSearch, false)
		return
	}
	filters := []nostr.Filter{m.Filter}
	if reason, needAuth := c.checkFilters(m.SubID, filters); reason != "" {
		refuse(reason, needAuth)
		return
	}
	scope, reason, needAuth, live := c.readAccess(filters, trace.Noop{})
	if !live {
		return
	}
	if reason != "" {
		refuse(reason, needAuth)
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	s := &negSession{cancel: cancel}
	c.mu.Lock()
	if len(c.negs) >= c.limits.MaxNegentropySessions {
		c.mu.Unlock()
		cancel()
		refuse(fmt.Sprintf(msgNegSessions, c.limits.MaxNegentropySessions), false)
		return
	}
	if c.negs == nil {
		c.negs = make(map[string]*negSession)
	}
	c.negs[m.SubID] = s
	c.mu.Unlock()
	s.mu.Lock() // held until the set is read: a NEG-MSG meanwhile is refused
	if !c.acquireQuery() {
		s.mu.Unlock()
		cancel()
		return
	}
	c.tasks.Add(1)
	c.r.readers.do(func() {
		defer c.tasks.Done()
		defer c.releaseQuery()
		out, reason := c.negStart(ctx, s, m, scope)
		// Unlocked before the reply goes out: the client's next NEG-MSG,
		// sent once it has the reply, finds the session ready.
		s.mu.Unlock()
		switch {
		case reason != "":
			c.negFail(m.SubID, s, reason)
		case ctx.Err() == nil:
			c.replyCtx(ctx, nip77.AppendMsg(nil, m.SubID, out))
		}
	}, c.panicked)
}

// negStart reads the set of session s and answers the NEG-OPEN's initial
// message: the reply, or the NEG-ERR reason ("" with out "" when ctx ended:
// nothing to answer). s.mu is held.
func (c *conn) negStart(ctx context.Context, s *negSession, m *nip77.Open, scope channel.Scope) (out, reason string) {
	items, err := c.r.negItems(ctx, c.tc.Community(), c, m.Filter, scope, c.readers())
	if err != nil {
		s.failed = true
		switch {
		case ctx.Err() != nil:
			return "", "" // closed, replaced, or the connection is gone
		case errors.Is(err, errNegTooMany):
			return "", fmt.Sprintf(msgNegTooMany, c.limits.MaxNegentropyItems)
		case errors.Is(err, errQueryTimeout):
			c.log.InfoContext(ctx, "buzz: negentropy read timed out", "err", err)
			return "", c.timeoutReason()
		default:
			c.log.ErrorContext(ctx, "buzz: negentropy read", "err", err)
			return "", msgInternal
		}
	}
	srv, err := nip77.NewServer(items, nip77.FrameBytes(c.limits.MaxFrameBytes))
	if err != nil {
		s.failed = true
		c.log.ErrorContext(ctx, "buzz: negentropy set", "err", err)
		return "", msgInternal
	}
	out, err = srv.Reconcile(m.Message)
	if err != nil {
		s.failed = true
		return "", err.Error()
	}
	s.srv = srv
	return out, ""
}

// negMsg answers one NEG-MSG of an open session.
func (c *conn) negMsg(m *nip77.Msg) {
	c.mu.Lock()
	s := c.negs[m.SubID]
	c.mu.Unlock()
	if s == nil {
		c.reply(nip77.AppendErr(nil, m.SubID, msgNegUnknown))
		return
	}
	if !s.mu.TryLock() {
		c.negFail(m.SubID, s, msgNegNotReady)
		return
	}
	defer s.mu.Unlock()
	if s.failed || s.srv == nil {
		c.negFail(m.SubID, s, msgNegNotReady)
		return
	}
	out, err := s.srv.Reconcile(m.Message)
	if err != nil {
		c.negFail(m.SubID, s, err.Error())
		return
	}
	c.reply(nip77.AppendMsg(nil, m.SubID, out))
}

// dropNegs ends every session of a closing connection.
func (c *conn) dropNegs() {
	c.mu.Lock()
	negs := c.negs
	c.negs = nil
	c.mu.Unlock()
	for _, s := range negs {
		s.cancel()
	}
}

// negItems reads the set of a negentropy session: the (created_at, id) of
// every stored event of community matching f (up to f's limit, when it
// has one) that readers may read under scope, gift wraps only to their
// recipient — what a REQ of f would return, without MaxLimit. It reads a
// page of negPageRecords at a time, each page one bounded read (the fair
// queue, Limits.QueryTimeout), and fails with errNegTooMany beyond
// Limits.MaxNegentropyItems.
func (r *Relay) negItems(ctx context.Context, community tenant.CommunityID, owner any, f nostr.Filter, scope channel.Scope, readers []string) ([]nip77.Item, error) {
	capN := r.cfg.limits.MaxNegentropyItems
	want := capN + 1 // one more tells a set too large
	if f.LimitSet && f.Limit <= capN {
		want = f.Limit
	}
	q, gated, ok := channel.GiftWrapQuery(f, readers)
	if !ok || want == 0 {
		return nil, nil
	}
	var (
		items  []nip77.Item
		cursor int64  // created_at of the last event the store returned
		lastID string // its id: the store orders one second's events by id
		ties   int    // events the store returned whose created_at is cursor
		first  = true
	)
	for len(items) < want {
		pf := q
		if !first {
			pf.Until = &cursor
		}
		// Events of the cursor's second already read come again first: ask
		// for enough to get past them, skipped by id below.
		pf.Limit, pf.LimitSet = negPageRecords+ties, true
		more := false
		err := r.bounded(ctx, community, owner, func(ctx context.Context) error {
			read := 0
			for rec, err := range r.queryScoped(ctx, community, pf, scope) {
				if err != nil {
					return err
				}
				read++
				if !first && rec.CreatedAt == cursor && rec.ID <= lastID {
					continue // read on an earlier page
				}
				if rec.CreatedAt != cursor {
					ties = 0
				}
				cursor, lastID = rec.CreatedAt, rec.ID
				ties++
				if gated && !channel.GiftWrapVisibleRaw(rec.Raw, readers) {
					continue
				}
				// A session keeps its items while it lasts; the copy keeps
				// 64 bytes an event rather than the event (store.Record.ID
				// may share the raw JSON's memory).
				items = append(items, nip77.Item{CreatedAt: rec.CreatedAt, ID: strings.Clone(rec.ID)})
				if len(items) >= want {
					return nil
				}
			}
			more = read == pf.Limit
			return nil
		})
		if err != nil {
			return nil, err
		}
		first = false
		if !more {
			break
		}
	}
	if len(items) > capN {
		return nil, fmt.Errorf("%w: more than %d events", errNegTooMany, capN)
	}
	return items, nil
}

// NegentropyItems returns the set a NIP-77 reconciliation of f in
// community runs over for a reader that has not authenticated — what such
// a reader's NEG-OPEN of f would reconcile: the community's events a REQ of
// f would show them (channel scope, access policy; no gift wraps), read
// through the relay's fair read queue and deadline, at most
// Limits.MaxNegentropyItems of them (an error beyond). Tools that
// reconcile a relay's store with another relay (buzzd sync) use it for
// their side of the set.
func (r *Relay) NegentropyItems(ctx context.Context, community tenant.CommunityID, f nostr.Filter) ([]nip77.Item, error) {
	if f.Search != "" {
		return nil, errors.New(msgNegSearch)
	}
	filters := []nostr.Filter{f}
	var rd *channel.Reader
	if r.channels != nil {
		rd = r.channels.access.Reader(ctx, community)
	}
	scope, reason, _, err := r.readAccess(ctx, community, nil, rd, filters, func(*channel.ID, bool) {})
	if err != nil {
		return nil, fmt.Errorf("buzz: negentropy read access: %w", err)
	}
	if reason == "" && channel.GiftWrapAuthNeeded(filters, nil) {
		reason = channel.MsgGiftWrapAuth
	}
	if reason != "" {
		return nil, fmt.Errorf("buzz: negentropy read refused: %s", reason)
	}
	owner := new(byte) // a client of its own in the fair queue
	items, err := r.negItems(ctx, community, owner, f, scope, nil)
	if errors.Is(err, errNegTooMany) {
		return nil, fmt.Errorf("%s: %w", fmt.Sprintf(msgNegTooMany, r.cfg.limits.MaxNegentropyItems), err)
	}
	return items, err
}
