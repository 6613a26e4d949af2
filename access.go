package buzz

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/relaykey"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Channel read access: the rules are package channel's (channel.Access,
// channel.Reader, see channel/read.go); this file applies them to the
// relay's WebSocket connections.
//
//   - REQ and COUNT: checkRead asks the connection's channel.Reader, whose
//     readable set is pushed into the store query (QueryScoped).
//   - Live fan-out: liveAllowed asks the Reader for each recipient.
//   - A channel command that revokes access (remove, leave, open→private,
//     delete) is applied to the affected connections before the command's
//     event is published (revokeChannel): their subscriptions naming the
//     channel in "#h" get CLOSED channel.MsgChannelRevoked; their other
//     subscriptions stop receiving the channel. The change is then published
//     on the control bus (control.MembershipChanged,
//     control.VisibilityChanged), and every other process applies it to its
//     connections the same way; were a message lost, a change made through
//     another process is still seen after at most channel.DefaultScopeTTL.
//   - Community access policy AccessMembers: only the community's members,
//     once authenticated, may read at all; a removed member's connections
//     get CLOSED channel.MsgCommunityRevoked (revokeMember).

// relayChannels is the relay's channel machinery, nil when channels are
// off.
type relayChannels struct {
	store  store.ChannelStore
	access *channel.Access // shared with the ingest pipeline (one cache)
}

// readers returns the pubkeys the connection authenticated as and reads
// as: a pubkey that authenticated with an API token only when the token
// allows messages:read.
func (c *conn) readers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.authed))
	for _, p := range c.authed {
		if g := c.grants[p]; g == nil || g.Allows(apitoken.MessagesRead) {
			out = append(out, p)
		}
	}
	return out
}

// actor is the trace's actor: the first authenticated pubkey, or "". It
// takes no lock (live delivery calls it under c.mu).
func (c *conn) actor() string {
	if p := c.actorPK.Load(); p != nil {
		return *p
	}
	return ""
}

// traceLive records a live event that reached the client: one row, labelled
// with the community the broker message belongs to.
func (c *conn) traceLive(subID string, m pubsub.Message) {
	traceLive(c.ctx, c.tracer, c.traceState(), m)
}

// traceLive records on g a live event that reached a client.
func traceLive(ctx context.Context, g trace.Tracer, st trace.State, m pubsub.Message) {
	rows := []tenant.CommunityID{m.Community}
	if id, has, err := channel.OfEvent(m.Event); err == nil && has {
		g.ReadMessageRows(ctx, st, id.String(), rows)
		return
	}
	g.ReadHostFeedRows(ctx, st, rows)
}

func (c *conn) traceState() trace.State { return trace.State{Tenant: c.tc, Actor: c.actor()} }

// liveAllowed reports whether a live event may be delivered to this
// connection: channel.Reader.Deliverable, which applies the channel and
// private-kind rules; without channels, community-wide events only, gift
// wraps to their recipient alone, author-only kinds to their author.
func (c *conn) liveAllowed(ev *nostr.Event) bool {
	if c.reader == nil {
		return liveAllowed(nil, c.readers(), ev)
	}
	return c.reader.Deliverable(ev)
}

// liveAllowed is the live delivery rule of a session reading through rd
// as readers (see conn.liveAllowed).
func liveAllowed(rd *channel.Reader, readers []string, ev *nostr.Event) bool {
	if rd == nil {
		_, has, err := channel.OfEvent(ev)
		return err == nil && !has && (!channel.IsPrivateKind(ev.Kind) || channel.GiftWrapVisible(ev, readers))
	}
	return rd.Deliverable(ev)
}

// checkRead decides a REQ or COUNT against bans, the community policy, the
// channel rules and the gift wrap rule (Relay.subscriptionAccess). It returns the scope to query
// with, or a CLOSED reason.
func (c *conn) checkRead(ctx context.Context, filters []nostr.Filter, g trace.Tracer) (scope channel.Scope, reason string, needAuth bool, err error) {
	checked := traceChecks(ctx, g, c.traceState(), c.tc.Community(), c.tracer != nil)
	return c.r.subscriptionAccess(ctx, c.tc.Community(), c.readers(), c.reader, filters, checked)
}

// traceChecks records each channel decision of a read of community on g
// (labelled with the channel only when tracing: formatting costs).
func traceChecks(ctx context.Context, g trace.Tracer, st trace.State, community tenant.CommunityID, tracing bool) func(id *channel.ID, ok bool) {
	label := func(id channel.ID) string {
		if !tracing {
			return ""
		}
		return id.String()
	}
	return func(id *channel.ID, ok bool) {
		switch {
		case id == nil:
			g.AuthCheck(ctx, st, "", tenant.CommunityID{}, false)
		case ok:
			g.AuthCheck(ctx, st, label(*id), community, true)
		default:
			g.AuthCheck(ctx, st, label(*id), tenant.CommunityID{}, false)
		}
	}
}

// subscriptionAccess is the read decision of a subscription (a REQ or
// COUNT on a connection, a seam stream): readAccess, then the gift wrap
// rule (asking for gift wraps only before authenticating is auth-required).
func (r *Relay) subscriptionAccess(ctx context.Context, community tenant.CommunityID, readers []string, rd *channel.Reader,
	filters []nostr.Filter, checked func(id *channel.ID, ok bool)) (scope channel.Scope, reason string, needAuth bool, err error) {
	scope, reason, needAuth, err = r.readAccess(ctx, community, readers, rd, filters, checked)
	if err == nil && reason == "" && channel.GiftWrapAuthNeeded(filters, readers) {
		return scope, channel.MsgGiftWrapAuth, true, nil
	}
	return scope, reason, needAuth, err
}

// readAccess is the one read decision of every client read — REQ and
// COUNT on a connection, /query and /count, the workflow routes: bans
// first (ingest.Pipeline.ReadBlocked; a store failure fails closed), then
// the community's access policy and the channel rule for readers (the
// pubkeys the client authenticated as) through rd, their channel.Reader
// (nil without channels: then no event has a channel, and a filter
// naming one reads nothing), and last the author-only rule on the
// filters alone (channel.AuthorOnlyRefusal). It returns the scope to query
// with, or the refusal (needAuth when authenticating could change it).
func (r *Relay) readAccess(ctx context.Context, community tenant.CommunityID, readers []string, rd *channel.Reader,
	filters []nostr.Filter, checked func(id *channel.ID, ok bool)) (scope channel.Scope, reason string, needAuth bool, err error) {
	if msg, err := r.bannedReaders(ctx, community, readers); err != nil {
		return channel.Scope{}, "", false, err
	} else if msg != "" {
		return channel.Scope{}, msg, false, nil
	}
	scope, reason, needAuth, err = r.channelAccess(ctx, readers, rd, filters, checked)
	if err == nil && reason == "" {
		reason, needAuth = channel.AuthorOnlyRefusal(filters, readers)
	}
	return scope, reason, needAuth, err
}

// channelAccess is readAccess's community policy and channel rule.
func (r *Relay) channelAccess(ctx context.Context, readers []string, rd *channel.Reader,
	filters []nostr.Filter, checked func(id *channel.ID, ok bool)) (scope channel.Scope, reason string, needAuth bool, err error) {
	if rd == nil {
		if !channel.Readable(filters, channel.Scope{}, checked) {
			if len(readers) == 0 {
				return channel.Scope{}, channel.MsgChannelAuth, true, nil
			}
			return channel.Scope{}, channel.MsgChannelDenied, false, nil
		}
		return channel.Scope{}, "", false, nil
	}
	return rd.Check(ctx, filters, checked)
}

// signerReader is the channel.Reader of one HTTP request signed by pubkey
// (NIP-98), nil without channels.
func (r *Relay) signerReader(ctx context.Context, community tenant.CommunityID, pubkey string) *channel.Reader {
	if r.channels == nil {
		return nil
	}
	rd := r.channels.access.Reader(ctx, community)
	rd.Authenticated(pubkey)
	return rd
}

// membersOnlyRefusal is the community access policy of a read by readers
// (the pubkeys the client authenticated as, by NIP-42 or NIP-98): in a
// members-only community, a reason when none of them is a member
// (needAuth when there are none).
func (r *Relay) membersOnlyRefusal(ctx context.Context, community tenant.CommunityID, readers []string) (reason string, needAuth bool, err error) {
	if r.channels == nil {
		return "", false, nil
	}
	return r.channels.access.MembersOnlyRefusal(ctx, community, readers)
}

// onChannelChange runs after a channel command committed (and the pipeline
// applied it to the shared channel.Access), before its event is published:
// it applies the change to this process's connections (revokeChannel) and
// then tells the other processes through the control bus, which apply it
// the same way (see accessChanged).
func (r *Relay) onChannelChange(ctx context.Context, tc tenant.TenantContext, ch channel.Change) {
	if r.channels == nil {
		return
	}
	id := ch.Channel.ID
	r.revokeChannel(ctx, tc.Community(), id, ch.Deleted || ch.BecamePrivate, ch.Revoked)
	for _, f := range r.features.channelHooks {
		f(ctx, tc.Community(), ch)
	}
	for _, m := range ingest.ControlMessages(ch) {
		r.announce(ctx, tc.Community(), m)
	}
}

// revokeChannel applies a change of channel id that may have taken access
// away (from everyone: deletion or a visibility change; else from the
// revoked pubkeys) to this process's sessions of community (its
// connections and seam streams, see session): each
// affected one recomputes its readable set (channel.Reader.Revoked) and,
// when it lost the channel, its subscriptions naming it get CLOSED
// channel.MsgChannelRevoked. The caller applied the change to the
// channel.Access first (ChannelChanged). It is the one place a channel
// change is applied to this process's connections, whether the command ran
// here or on another process.
func (r *Relay) revokeChannel(ctx context.Context, community tenant.CommunityID, id channel.ID, everyone bool, revoked []string) {
	if r.channels == nil || !everyone && len(revoked) == 0 {
		return
	}
	for _, s := range r.sessionsOf(community) {
		// Only a session that may currently read the channel (by its
		// cached set) or names it in a subscription can lose anything; one
		// without a valid set reads no channel until it computes a fresh one.
		if s.mayHold(id) && s.channelReader().Revoked(ctx, id, everyone, revoked) {
			s.closeSubsNaming(id, channel.MsgChannelRevoked)
		}
	}
}

// mayHold reports whether the connection's cached readable set holds
// channel id, or one of its subscriptions names it.
func (c *conn) mayHold(id channel.ID) bool {
	if c.reader == nil {
		return false
	}
	if c.reader.Holds(id) {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		if channel.Names(s.filters, id) {
			return true
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
// this process's sessions — connections and seam streams — (see
// onMemberRemoved), whether the command ran here or on another process.
func (r *Relay) revokeMember(ctx context.Context, community tenant.CommunityID, pubkey string) {
	if r.channels == nil {
		return
	}
	r.channels.access.MemberChanged(community, pubkey)
	for _, s := range r.sessionsOf(community) {
		lost, err := s.channelReader().LostCommunity(ctx, pubkey)
		if err != nil {
			r.log.ErrorContext(ctx, "buzz: community access after a member removal", "err", err)
		}
		if lost {
			s.failAllSubs(channel.MsgCommunityRevoked)
		}
	}
}

// closeSubsNaming closes, with CLOSED reason, the subscriptions that name
// channel id in an "#h" filter.
func (c *conn) closeSubsNaming(id channel.ID, reason string) {
	c.mu.Lock()
	var victims []*subscription
	for _, s := range c.subs {
		if channel.Names(s.filters, id) {
			victims = append(victims, s)
		}
	}
	c.mu.Unlock()
	for _, s := range victims {
		c.failSub(s, reason)
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
	if named, has := channel.NamedChannels(f); has && len(named) == 1 {
		g.ReadMessageRows(ctx, st, named[0].String(), rows)
		return
	}
	g.ReadHostFeedRows(ctx, st, rows)
}

// relayKeyStore is a store that keeps the deployment's relay master key
// (store/embedded in its data directory, store/postgres in its database):
// RelayKey stores candidate when no key is stored yet and returns the
// stored key, the same to every process of the deployment.
type relayKeyStore interface {
	RelayKey(ctx context.Context, candidate nostr.SecretKey) (nostr.SecretKey, error)
}

// relayKeyTimeout bounds reading (or first storing) the stored relay key.
const relayKeyTimeout = 30 * time.Second

// storedRelayKey is the relay master key the store keeps, stored from a new
// random candidate on the deployment's first start.
func storedRelayKey(ks relayKeyStore) (nostr.SecretKey, error) {
	candidate, err := nostr.GenerateSecretKey()
	if err != nil {
		return nostr.SecretKey{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), relayKeyTimeout)
	defer cancel()
	return ks.RelayKey(ctx, candidate)
}

// setupChannels enables channels when WithChannels asks for them, and the
// per-community signing keys of relay-signed events: from WithRelayKey,
// else from the key the store keeps, else (a store that keeps none) an
// ephemeral one.
func (r *Relay) setupChannels() error {
	if ks, ok := r.cfg.store.(relayKeyStore); ok && !r.cfg.hasRelayKey {
		sk, err := storedRelayKey(ks)
		if err != nil {
			return fmt.Errorf("buzz: the stored relay key: %w", err)
		}
		r.cfg.relayKey, r.cfg.hasRelayKey = sk, true
	}
	master := r.cfg.relayKey
	if !r.cfg.hasRelayKey {
		sk, err := nostr.GenerateSecretKey()
		if err != nil {
			return err
		}
		master = sk
	}
	keys, err := relaykey.New(master)
	if err != nil {
		return fmt.Errorf("buzz: community keys: %w", err)
	}
	r.keys = keys
	if !r.cfg.channels {
		if r.cfg.membersOnly {
			return errors.New("buzz: WithRelayMembershipRequired needs WithChannels (membership is kept with channels)")
		}
		return nil
	}
	cs, ok := r.cfg.store.(store.ChannelStore)
	if !ok {
		return errors.New("buzz: WithChannels: the store does not implement store.ChannelStore")
	}
	aopts := []channel.Option{channel.WithClock(r.cfg.now), channel.WithLogger(r.log)}
	if r.cfg.membersOnly {
		aopts = append(aopts, channel.WithMembershipRequired())
	}
	access, err := channel.NewAccess(cs, aopts...)
	if err != nil {
		return fmt.Errorf("buzz: WithChannels: %w", err)
	}
	r.channels = &relayChannels{store: cs, access: access}
	if !r.cfg.hasRelayKey {
		r.log.Warn("buzz: no relay key configured (WithRelayKey) and the store keeps none; channel state events are signed with an ephemeral key that changes at every start")
	}
	return nil
}

// ingestChannels is the pipeline's channel configuration.
func (r *Relay) ingestChannels() *ingest.Channels {
	if r.channels == nil {
		return nil
	}
	dms, _ := r.channels.store.(store.DMStore) // nil: DM commands are refused
	return &ingest.Channels{Access: r.channels.access, Store: r.channels.store, StateKey: r.keys.For, OnChange: r.onChannelChange,
		OnMemberRemoved: r.onMemberRemoved, MaxAge: r.cfg.limits.MaxGroupEventAge, DMs: dms}
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

// countScoped is queryScoped's COUNT, of each of sets (see CountBatcher).
func (r *Relay) countScoped(ctx context.Context, community tenant.CommunityID, sets [][]nostr.Filter, scope channel.Scope) ([]int64, error) {
	start := time.Now()
	defer func() { r.cfg.metrics.StoreLatency("count", time.Since(start)) }()
	if r.channels == nil {
		scope = channel.AllChannels()
	}
	if cb, ok := r.cfg.store.(CountBatcher); ok && len(sets) > 1 {
		ns, err := cb.CountEach(ctx, community, sets, scope)
		if err == nil && len(ns) != len(sets) {
			err = fmt.Errorf("buzz: CountEach answered %d counts for %d filter sets", len(ns), len(sets))
		}
		return ns, err
	}
	ns := make([]int64, len(sets))
	for i, fs := range sets {
		var err error
		if rc := r.channels; rc != nil {
			ns[i], err = rc.store.CountScoped(ctx, community, fs, scope)
		} else {
			ns[i], err = r.cfg.store.Count(ctx, community, fs)
		}
		if err != nil {
			return nil, err
		}
	}
	return ns, nil
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
// process: the cached policy is dropped at once, and when the community
// became members-only, the live subscriptions of every connection without
// a member among its authenticated pubkeys are closed (CLOSED
// channel.MsgCommunityRevoked), on its own goroutine.
func (r *Relay) policyChanged(community tenant.CommunityID, m control.PolicyChanged) {
	rc := r.channels
	if rc == nil {
		return
	}
	rc.access.PolicyChanged(community)
	if channel.AccessPolicy(m.Access) != channel.AccessMembers {
		return
	}
	r.cl.goAction(func(ctx context.Context) {
		for _, s := range r.sessionsOf(community) {
			lost, err := s.channelReader().LostCommunity(ctx, "")
			if err != nil {
				r.log.ErrorContext(ctx, "buzz: community access after a policy change", "err", err)
			}
			if lost {
				s.failAllSubs(channel.MsgCommunityRevoked)
			}
		}
	})
}
