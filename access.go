package buzz

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Channel read access.
//
// A connection reads the community-wide events of its community plus the
// channels its readers may read (channel.MayRead: open channels for anyone
// the community admits, private ones for their members). Its readers are
// the pubkeys it authenticated as (NIP-42); before AUTH it reads open
// channels only, so reading a private channel requires AUTH.
//
//   - REQ and COUNT: the readable set is computed (and cached on the
//     connection for accessTTL) and pushed into the store query
//     (store.ChannelStore.QueryScoped), so limits count only readable
//     events. A filter whose "#h" names no readable channel — unknown,
//     another community's, or private without membership, all alike —
//     closes the subscription with CLOSED "restricted: not a channel
//     member" (or "auth-required: …" before AUTH).
//   - Live fan-out checks each recipient: an event of a channel is
//     delivered only to connections whose readable set holds the channel.
//   - A channel command that revokes access (remove, leave, open→private,
//     delete) recomputes the access of the affected connections before the
//     command's event is published, and closes their subscriptions that
//     name the channel in "#h" with CLOSED "restricted: channel access
//     revoked"; their other subscriptions stop receiving the channel.
//     Other changes mark every connection's set stale; it is recomputed on
//     the next read and, for live delivery, in the background. The change
//     is then published on the control bus (control.MembershipChanged,
//     control.VisibilityChanged), and every other process applies it to its
//     connections the same way; were a message lost, a change made through
//     another process is still seen after at most accessTTL.
//
// Community access policy AccessMembers: only the community's members, once
// authenticated, may read at all (CLOSED "auth-required: …" before AUTH,
// "restricted: …" for non-members).

const (
	accessTTL           = 10 * time.Second
	msgChannelRevoked   = "restricted: channel access revoked"
	msgCommunityRevoked = "restricted: community access revoked"
	msgChannelAuth      = "auth-required: authenticate (NIP-42) to read this channel"
	msgMembersOnlyReq   = "restricted: this community is open to its members only"
	msgMembersAuthReq   = "auth-required: this community is open to its members only; authenticate (NIP-42)"
)

// relayChannels is the relay's channel machinery, nil when the store keeps
// no channels.
type relayChannels struct {
	store    store.ChannelStore
	mu       sync.Mutex
	gens     map[tenant.CommunityID]*atomic.Uint64 // bumped on every channel change
	policies map[tenant.CommunityID]cachedPolicy
}

type cachedPolicy struct {
	p   channel.AccessPolicy
	exp time.Time
}

// policyTTL bounds how long a community's access policy is reused.
const policyTTL = 2 * time.Second

// policy returns c's access policy, cached for policyTTL.
func (rc *relayChannels) policy(ctx context.Context, c tenant.CommunityID) (channel.AccessPolicy, error) {
	now := time.Now()
	rc.mu.Lock()
	cp, ok := rc.policies[c]
	rc.mu.Unlock()
	if ok && now.Before(cp.exp) {
		return cp.p, nil
	}
	p, err := rc.store.CommunityAccess(ctx, c)
	if err != nil {
		return "", err
	}
	rc.mu.Lock()
	if rc.policies == nil || len(rc.policies) >= 100_000 {
		rc.policies = make(map[tenant.CommunityID]cachedPolicy)
	}
	rc.policies[c] = cachedPolicy{p, now.Add(policyTTL)}
	rc.mu.Unlock()
	return p, nil
}

func (rc *relayChannels) gen(c tenant.CommunityID) *atomic.Uint64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	g := rc.gens[c]
	if g == nil {
		g = new(atomic.Uint64)
		rc.gens[c] = g
	}
	return g
}

// connAccess is a connection's cached readable set.
type connAccess struct {
	mu         sync.Mutex
	valid      bool
	scope      channel.Scope
	gen        uint64
	at         time.Time
	refreshing bool
	gen0       *atomic.Uint64 // the community's generation counter

	actor atomic.Pointer[string] // first authenticated pubkey (traces)
}

// readers returns the pubkeys the connection authenticated as.
func (c *conn) readers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.authed...)
}

// actor is the trace's actor: the first authenticated pubkey, or "". It
// takes no lock (live delivery calls it under c.mu).
func (c *conn) actor() string {
	if p := c.access.actor.Load(); p != nil {
		return *p
	}
	return ""
}

// traceLive records a live event that reached the client: one row, labelled
// with the community the broker message belongs to.
func (c *conn) traceLive(subID string, m pubsub.Message) {
	st := c.traceState()
	rows := []tenant.CommunityID{m.Community}
	if id, has, err := channel.OfEvent(m.Event); err == nil && has {
		c.tracer.ReadMessageRows(c.ctx, st, id.String(), rows)
		return
	}
	c.tracer.ReadHostFeedRows(c.ctx, st, rows)
}

func (c *conn) traceState() trace.State { return trace.State{Tenant: c.tc, Actor: c.actor()} }

// readScope returns the connection's readable scope, computing it when
// missing, stale or older than accessTTL.
func (c *conn) readScope(ctx context.Context) (channel.Scope, error) {
	rc := c.r.channels
	if rc == nil {
		return channel.Scope{}, nil
	}
	a := &c.access
	a.mu.Lock()
	if a.gen0 == nil {
		a.gen0 = rc.gen(c.tc.Community())
	}
	g := a.gen0.Load()
	if a.valid && a.gen == g && time.Since(a.at) < accessTTL {
		s := a.scope
		a.mu.Unlock()
		return s, nil
	}
	a.mu.Unlock()
	return c.refreshScope(ctx)
}

// refreshScope recomputes the readable scope from the store.
func (c *conn) refreshScope(ctx context.Context) (channel.Scope, error) {
	rc := c.r.channels
	a := &c.access
	a.mu.Lock()
	if a.gen0 == nil {
		a.gen0 = rc.gen(c.tc.Community())
	}
	g := a.gen0.Load()
	a.mu.Unlock()
	ids, err := rc.store.ReadableChannels(ctx, c.tc.Community(), c.readers())
	if err != nil {
		return channel.Scope{}, err
	}
	s := channel.ScopeOf(ids...)
	a.mu.Lock()
	// Never replace a set computed after a newer change with this one (a
	// slow background refresh racing a revocation).
	if !a.valid || g >= a.gen {
		a.valid, a.scope, a.gen, a.at = true, s, g, time.Now()
	}
	a.mu.Unlock()
	return s, nil
}

// invalidateScope forgets the cached scope (after AUTH added a reader).
func (c *conn) invalidateScope() {
	c.access.mu.Lock()
	c.access.valid = false
	c.access.mu.Unlock()
}

// liveAllowed reports whether a live event may be delivered to this
// connection: community-wide events always; channel events when the
// channel is in the cached readable set. A stale set is refreshed in the
// background (the event is judged by the set as it is).
func (c *conn) liveAllowed(ev *nostr.Event) bool {
	id, has, err := channel.OfEvent(ev)
	if err != nil {
		return false
	}
	if !has {
		return true
	}
	rc := c.r.channels
	if rc == nil {
		return false
	}
	a := &c.access
	a.mu.Lock()
	if a.gen0 == nil {
		a.gen0 = rc.gen(c.tc.Community())
	}
	ok := a.valid && a.scope.Contains(id)
	stale := !a.valid || a.gen != a.gen0.Load() || time.Since(a.at) >= accessTTL
	start := stale && !a.refreshing
	if start {
		a.refreshing = true
	}
	a.mu.Unlock()
	if start {
		go func() {
			ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
			defer cancel()
			if _, err := c.refreshScope(ctx); err != nil && c.ctx.Err() == nil {
				c.log.Error("buzz: refresh channel access", "err", err)
			}
			a.mu.Lock()
			a.refreshing = false
			a.mu.Unlock()
		}()
	}
	return ok
}

// namedChannels returns the channels a filter's "#h" names (valid ids
// only), and whether it has an "#h" condition at all.
func namedChannels(f *nostr.Filter) ([]channel.ID, bool) {
	vals, has := f.Tags["h"]
	if !has || vals == nil {
		return nil, false
	}
	var out []channel.ID
	for _, v := range vals {
		if id, ok := channel.ParseID(v); ok {
			out = append(out, id)
		}
	}
	return out, true
}

// checkRead decides a REQ or COUNT against the community policy and the
// channel rules. It returns the scope to query with, or a CLOSED reason.
func (c *conn) checkRead(ctx context.Context, filters []nostr.Filter, g trace.Tracer) (scope channel.Scope, reason string, needAuth bool, err error) {
	// Bans first, before membership: a store failure fails closed.
	if msg, err := c.bannedReader(ctx); err != nil {
		return channel.Scope{}, "", false, err
	} else if msg != "" {
		return channel.Scope{}, msg, false, nil
	}
	if reason, needAuth, err := c.r.membersOnlyRefusal(ctx, c.tc.Community(), c.readers()); err != nil || reason != "" {
		return channel.Scope{}, reason, needAuth, err
	}
	scope, err = c.readScope(ctx)
	if err != nil {
		return channel.Scope{}, "", false, err
	}
	st := c.traceState()
	readable := channelsReadable(filters, scope, func(id *channel.ID, ok bool) {
		switch {
		case id == nil:
			g.AuthCheck(ctx, st, "", tenant.CommunityID{}, false)
		case ok:
			g.AuthCheck(ctx, st, c.traceLabel(*id), c.tc.Community(), true)
		default:
			g.AuthCheck(ctx, st, c.traceLabel(*id), tenant.CommunityID{}, false)
		}
	})
	if !readable {
		if !c.authenticated() {
			return channel.Scope{}, msgChannelAuth, true, nil
		}
		return channel.Scope{}, ingest.MsgChannelDenied, false, nil
	}
	return scope, "", false, nil
}

// membersOnlyRefusal is the community access policy of a read by readers
// (the pubkeys the client authenticated as, by NIP-42 or NIP-98): in a
// members-only community, a reason when none of them is a member
// (needAuth when there are none).
func (r *Relay) membersOnlyRefusal(ctx context.Context, community tenant.CommunityID, readers []string) (reason string, needAuth bool, err error) {
	rc := r.channels
	if rc == nil {
		return "", false, nil
	}
	pol, err := rc.policy(ctx, community)
	if err != nil || pol != channel.AccessMembers {
		return "", false, err
	}
	if len(readers) == 0 {
		return msgMembersAuthReq, true, nil
	}
	for _, pk := range readers {
		_, ok, err := rc.store.CommunityRole(ctx, community, pk)
		if err != nil {
			return "", false, err
		}
		if ok {
			return "", false, nil
		}
	}
	return msgMembersOnlyReq, false, nil
}

// channelsReadable reports whether every filter with an "#h" condition
// names at least one channel of scope (the one channel rule of REQ, COUNT
// and the HTTP reads). checked, when not nil, sees each named channel with
// its verdict, and nil for an "#h" that names no valid channel id.
func channelsReadable(filters []nostr.Filter, scope channel.Scope, checked func(id *channel.ID, ok bool)) bool {
	for i := range filters {
		named, has := namedChannels(&filters[i])
		if !has {
			continue
		}
		readable := false
		for _, id := range named {
			ok := scope.Contains(id)
			readable = readable || ok
			if checked != nil {
				checked(&id, ok)
			}
		}
		if !readable {
			if len(named) == 0 && checked != nil {
				checked(nil, false)
			}
			return false
		}
	}
	return true
}

// onChannelChange runs after a channel command committed, before its event
// is published: it applies the change to this process's connections
// (revokeChannel) and then tells the other processes through the control
// bus, which apply it the same way (see applyAccessMessage).
func (r *Relay) onChannelChange(ctx context.Context, tc tenant.TenantContext, ch channel.Change) {
	if r.channels == nil {
		return
	}
	id := ch.Channel.ID
	r.revokeChannel(ctx, tc.Community(), id, ch.Deleted || ch.BecamePrivate, ch.Revoked)
	if r.wf != nil {
		r.wf.onChannelChange(ctx, tc.Community(), ch)
	}
	for _, m := range channelMessages(ch) {
		r.announce(ctx, tc.Community(), m)
	}
}

// channelMessages are the control messages that tell other processes about
// ch: VisibilityChanged when everyone may have lost access (deletion, open →
// private), MembershipChanged per user who lost membership, and otherwise,
// when access may only have widened (members or roles changed, an open
// channel's metadata changed, perhaps private → open), one
// MembershipChanged without pubkey, which only drops cached access.
func channelMessages(ch channel.Change) []control.Message {
	id := ch.Channel.ID.String()
	var out []control.Message
	if ch.Deleted || ch.BecamePrivate {
		out = append(out, control.VisibilityChanged{Channel: id})
	}
	for _, pk := range ch.Revoked {
		out = append(out, control.MembershipChanged{Channel: id, PubKey: pk})
	}
	widened := ch.Members || (ch.Metadata && ch.Channel.Visibility != channel.VisibilityPrivate)
	if len(out) == 0 && widened {
		out = append(out, control.MembershipChanged{Channel: id})
	}
	return out
}

// revokeChannel marks every connection's readable set of community stale
// and, when access may have been lost (everyone: deletion or a visibility
// change; else the revoked pubkeys), recomputes the affected connections'
// sets and closes their subscriptions naming the channel with CLOSED
// "restricted: channel access revoked". It is the one place a channel
// change is applied to this process's connections, whether the command
// ran here or on another process.
func (r *Relay) revokeChannel(ctx context.Context, community tenant.CommunityID, id channel.ID, everyone bool, revoked []string) {
	rc := r.channels
	if rc == nil {
		return
	}
	rc.gen(community).Add(1)
	if !everyone && len(revoked) == 0 {
		return
	}
	r.mu.Lock()
	conns := make([]*conn, 0, len(r.conns))
	for c := range r.conns {
		if c.tc.Community() == community {
			conns = append(conns, c)
		}
	}
	r.mu.Unlock()
	isRevoked := make(map[string]bool, len(revoked))
	for _, pk := range revoked {
		isRevoked[pk] = true
	}
	for _, c := range conns {
		// Only a connection that may currently read the channel (by its
		// cached set) or names it in a subscription can lose anything; one
		// without a valid set reads no channel until it computes a fresh one.
		if !c.mayHold(id) {
			continue
		}
		affected := everyone
		if !affected {
			for _, pk := range c.readers() {
				if isRevoked[pk] {
					affected = true
					break
				}
			}
		}
		if !affected {
			continue
		}
		scope, err := c.refreshScope(ctx)
		if err != nil {
			// Fail closed: without a fresh set, the connection reads no channel.
			c.access.mu.Lock()
			c.access.valid, c.access.scope = true, channel.Scope{}
			c.access.mu.Unlock()
			c.log.ErrorContext(ctx, "buzz: recompute channel access", "err", err)
		}
		if err == nil && scope.Contains(id) {
			continue
		}
		c.closeSubsNaming(id, msgChannelRevoked)
	}
}

// traceLabel is a channel's trace label, formatted only when tracing.
func (c *conn) traceLabel(id channel.ID) string {
	if c.tracer == nil {
		return ""
	}
	return id.String()
}

// mayHold reports whether the connection's cached readable set holds
// channel id, or one of its subscriptions names it.
func (c *conn) mayHold(id channel.ID) bool {
	c.access.mu.Lock()
	held := c.access.valid && c.access.scope.Contains(id)
	c.access.mu.Unlock()
	if held {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		for i := range s.filters {
			named, _ := namedChannels(&s.filters[i])
			for _, n := range named {
				if n == id {
					return true
				}
			}
		}
	}
	return false
}

// onMemberRemoved ends the reads of a key removed from a members-only
// community: every connection of the community authenticated as pubkey and
// as no other member gets CLOSED "restricted: community access revoked" on
// each of its subscriptions (a new REQ is refused by checkRead). Other
// processes are told through the control bus.
func (r *Relay) onMemberRemoved(ctx context.Context, tc tenant.TenantContext, pubkey string) {
	if r.channels == nil {
		return
	}
	r.revokeMember(ctx, tc.Community(), pubkey)
	r.announce(ctx, tc.Community(), control.MembershipChanged{PubKey: pubkey})
}

// revokeMember applies the removal of pubkey from community's members to
// this process's connections (see onMemberRemoved), whether the command ran
// here or on another process.
func (r *Relay) revokeMember(ctx context.Context, community tenant.CommunityID, pubkey string) {
	rc := r.channels
	if rc == nil {
		return
	}
	pol, err := rc.store.CommunityAccess(ctx, community)
	if err != nil {
		r.log.ErrorContext(ctx, "buzz: community access after a member removal", "err", err)
	} else if pol != channel.AccessMembers {
		return
	}
	for _, c := range r.connsOf(community, nil) {
		readers := c.readers()
		if !slices.Contains(readers, pubkey) || rc.anyMember(ctx, community, readers, pubkey) {
			continue
		}
		c.failAllSubs(msgCommunityRevoked)
	}
}

// anyMember reports whether one of pubkeys other than except is a member of
// community (a lookup error counts as not a member: access fails closed).
func (rc *relayChannels) anyMember(ctx context.Context, community tenant.CommunityID, pubkeys []string, except string) bool {
	for _, pk := range pubkeys {
		if pk == except {
			continue
		}
		if _, ok, err := rc.store.CommunityRole(ctx, community, pk); err == nil && ok {
			return true
		}
	}
	return false
}

// closeSubsNaming closes, with CLOSED reason, the subscriptions that name
// channel id in an "#h" filter.
func (c *conn) closeSubsNaming(id channel.ID, reason string) {
	c.mu.Lock()
	var victims []*subscription
	for _, s := range c.subs {
		for i := range s.filters {
			named, _ := namedChannels(&s.filters[i])
			for _, n := range named {
				if n == id {
					victims = append(victims, s)
					break
				}
			}
		}
	}
	c.mu.Unlock()
	seen := map[*subscription]bool{}
	for _, s := range victims {
		if !seen[s] {
			seen[s] = true
			c.failSub(s, reason)
		}
	}
}

// traceRows records a filter's rows at the seam they belong to: by id (ids or
// #e), one channel's messages (#h naming exactly one channel), or the
// host's feed.
func traceRows(ctx context.Context, g trace.Tracer, st trace.State, f *nostr.Filter, rows []tenant.CommunityID) {
	if _, noop := g.(trace.Noop); noop {
		return
	}
	if len(f.IDs) > 0 || f.Tags["e"] != nil {
		g.ReadByIDRows(ctx, st, rows)
		return
	}
	if named, has := namedChannels(f); has && len(named) == 1 {
		g.ReadMessageRows(ctx, st, named[0].String(), rows)
		return
	}
	g.ReadHostFeedRows(ctx, st, rows)
}

// setupChannels enables channels when WithChannels asks for them, and the
// per-community signing keys of relay-signed events.
func (r *Relay) setupChannels() error {
	master := r.cfg.relayKey
	if !r.cfg.hasRelayKey {
		sk, err := nostr.GenerateSecretKey()
		if err != nil {
			return err
		}
		master = sk
	}
	r.keys = newCommunityKeys(master)
	if !r.cfg.channels {
		return nil
	}
	cs, ok := r.cfg.store.(store.ChannelStore)
	if !ok {
		return errors.New("buzz: WithChannels: the store does not implement store.ChannelStore")
	}
	r.channels = &relayChannels{store: cs, gens: make(map[tenant.CommunityID]*atomic.Uint64)}
	if !r.cfg.hasRelayKey {
		r.log.Warn("buzz: no relay key configured (WithRelayKey); channel state events are signed with an ephemeral key that changes at every start")
	}
	return nil
}

// ingestChannels is the pipeline's channel configuration.
func (r *Relay) ingestChannels() *ingest.Channels {
	if r.channels == nil {
		return nil
	}
	return &ingest.Channels{Store: r.channels.store, StateKey: r.keys.key, OnChange: r.onChannelChange,
		OnMemberRemoved: r.onMemberRemoved, MaxAge: r.cfg.limits.MaxGroupEventAge}
}

// queryScoped reads one filter of community under scope (the plain query when the store
// keeps no channels: then no event has a channel). Every client read
// (REQ, COUNT, the HTTP API) calls it through Relay.bounded (read.go).
func (r *Relay) queryScoped(ctx context.Context, community tenant.CommunityID, f nostr.Filter, scope channel.Scope) iter.Seq2[store.Record, error] {
	if rc := r.channels; rc != nil {
		return r.observeQuery(rc.store.QueryScoped(ctx, community, f, scope))
	}
	return r.observeQuery(r.cfg.store.Query(ctx, community, f))
}

// countScoped is queryScoped's COUNT.
func (r *Relay) countScoped(ctx context.Context, community tenant.CommunityID, filters []nostr.Filter, scope channel.Scope) (int64, error) {
	start := time.Now()
	defer func() { r.cfg.metrics.StoreLatency("count", time.Since(start)) }()
	if rc := r.channels; rc != nil {
		return rc.store.CountScoped(ctx, community, filters, scope)
	}
	return r.cfg.store.Count(ctx, community, filters)
}

// sanitizeReason reduces a client-visible message to the conformance
// error alphabet.
func sanitizeReason(msg string) trace.Reason {
	switch {
	case strings.HasPrefix(msg, "error:"):
		return trace.ReasonServerError
	case strings.HasPrefix(msg, "invalid:"), strings.HasPrefix(msg, "pow:"):
		return trace.ReasonInvalid
	}
	return trace.ReasonRestricted
}

// armRead arms the read seam of one REQ or COUNT: with no tracer it
// returns the no-op (no allocation).
func (c *conn) armRead(seam string) (*trace.Guard, trace.Tracer, trace.State) {
	if c.tracer == nil {
		return nil, trace.Noop{}, trace.State{}
	}
	st := c.traceState()
	g := trace.Arm(c.tracer, st, seam)
	return g, g, st
}

// policyChanged applies a change of community's access policy to this
// process: cached policies are dropped at once, and when the community
// became members-only, the live subscriptions of every connection without
// a member among its authenticated pubkeys are closed (CLOSED
// "restricted: community access revoked"), on its own goroutine.
func (r *Relay) policyChanged(community tenant.CommunityID, m control.PolicyChanged) {
	r.pipeline.ForgetPolicy(community)
	rc := r.channels
	if rc == nil {
		return
	}
	rc.mu.Lock()
	delete(rc.policies, community)
	rc.mu.Unlock()
	if channel.AccessPolicy(m.Access) != channel.AccessMembers {
		return
	}
	r.cl.goAction(func(ctx context.Context) {
		for _, c := range r.connsOf(community, nil) {
			if !rc.anyMember(ctx, community, c.readers(), "") {
				c.failAllSubs(msgCommunityRevoked)
			}
		}
	})
}
