package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Channels configures channel admission (Config.Channels).
//
// The h tag is adversarial input. It is resolved only inside the community
// the connection is bound to: a channel of another community is, here,
// simply a channel that does not exist, and gets exactly the refusal an
// unknown channel gets (channel.MsgChannelDenied) — on every path, the duplicate
// path included, because the channel is checked before the store is asked
// whether it already holds the event. Events without h are community-wide.
//
// Without Channels (nil), every event naming a channel is refused as naming
// an unknown one.
type Channels struct {
	// Access decides who may post (channel.Access.Admit) and write in a
	// members-only community (CommunityWrite); its cache is the one the
	// relay's reads share. Commands through this pipeline invalidate the
	// entries they change at once (Access.ChannelChanged, MemberChanged).
	Access *channel.Access
	// Store holds channels, members and the community access policy.
	Store store.ChannelStore
	// StateKey returns the key that signs a community's relay-signed state
	// events (39000–39003). Nil: no state events are published.
	StateKey func(tenant.CommunityID) nostr.SecretKey
	// OnChange is called after a channel command committed (and was applied
	// to Access), before its event and the new state events are published
	// (the relay recomputes access and evicts subscriptions that lost it,
	// then announces ControlMessages(change) on its control bus).
	// It must not block for long.
	OnChange func(ctx context.Context, tc tenant.TenantContext, change channel.Change)
	// OnMemberRemoved is called after a community membership command
	// removed pubkey from the community's members (the relay ends that
	// key's reads in a members-only community). It must not block for long.
	OnMemberRemoved func(ctx context.Context, tc tenant.TenantContext, pubkey string)
	// DMs keeps DM conversations (41010–41012, see dm.go); nil refuses
	// those commands.
	DMs store.DMStore
	// MaxAge bounds how far behind the pipeline's clock the created_at of
	// an event naming a group (h) may be; 0: unbounded.
	MaxAge time.Duration
}

// admitChannel resolves the event's h tag inside the bound community and
// checks that the author may post there (channel.Access.Admit; commands
// are authorized by the store, atomically), then checks a join's invite
// code and the NIP-29 "previous" tags. It returns the decision, or a
// refusal message.
func (p *Pipeline) admitChannel(ctx context.Context, s Submission, g trace.Tracer, st trace.State) (channel.Admission, string) {
	ev, c, cs := s.Event, s.Tenant.Community(), p.cfg.Channels
	id, has, err := channel.OfEvent(ev)
	if err == nil && has {
		if IsModerationCommand(ev.Kind) || isCommunityCommand(ev.Kind) || ev.Kind == nostr.KindLeaveRelay || ev.Kind == nostr.KindWorkspaceProfile {
			// Community-level commands never name a group (any h is refused
			// before it is resolved).
			return channel.Admission{}, channel.MsgCommunityCommandH
		}
		if cs != nil && cs.MaxAge > 0 && p.cfg.Now().Add(-cs.MaxAge).Unix() > ev.CreatedAt {
			return channel.Admission{}, channel.LateMessage(cs.MaxAge)
		}
	}
	deny := func() (channel.Admission, string) {
		// The claim is recorded as resolved: nothing, whatever community
		// may hold a channel with this id.
		g.AuthCheck(ctx, st, traceLabel(g, id), tenant.CommunityID{}, false)
		return channel.Admission{}, channel.MsgChannelDenied
	}
	if cs == nil && err == nil && has {
		return deny()
	}
	var d channel.Admission
	var refusal string
	if cs != nil {
		d, refusal, err = cs.Access.Admit(ctx, c, ev)
	} else {
		d, refusal, err = channel.Admission{}, noChannels(ev), nil
	}
	switch {
	case err != nil:
		p.cfg.Logger.ErrorContext(ctx, "ingest: channel lookup", "community", c.String(), "err", err)
		return channel.Admission{}, MsgInternal
	case refusal == channel.MsgChannelDenied:
		return deny()
	case refusal != "" || !d.InChannel:
		return d, refusal
	}
	if cmd := d.Command; cmd != nil && ev.Kind == nostr.KindJoinRequest && cmd.Code != "" {
		ok, err := p.inviteValid(ctx, c, id, cmd.GroupID, cmd.Code)
		if err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: invite lookup", "community", c.String(), "err", err)
			return channel.Admission{}, MsgInternal
		}
		cmd.Invited = ok
	}
	if ev.Kind != nostr.KindCreateChannel {
		if msg := p.checkPrevious(ctx, c, id, ev); msg != "" {
			return channel.Admission{}, msg
		}
	}
	// A create claims an id in the bound community; every other event
	// names a channel found there. A command's roles are judged by the
	// store.
	g.AuthCheck(ctx, st, traceLabel(g, id), c, true)
	return d, ""
}

// communityAdmits reports whether who (the author, or for a gift wrap the
// connection's key) may write in the community
// under its access policy; "" when it may, else the refusal.
func (p *Pipeline) communityAdmits(ctx context.Context, s Submission, who string) (msg string, requestAuth bool, err error) {
	if p.cfg.Channels == nil {
		return "", false, nil
	}
	return p.cfg.Channels.Access.CommunityWrite(ctx, s.Tenant.Community(), who, s.AuthedAs)
}

// noChannels is admission without channels for an event naming none: a
// malformed h tag or a kind that requires a channel is refused.
func noChannels(ev *nostr.Event) string {
	if _, _, err := channel.OfEvent(ev); err != nil {
		return channel.MsgBadChannelTag
	}
	if channel.RequiresChannel(ev.Kind) {
		return fmt.Sprintf("invalid: kind %d requires an h tag naming its channel", ev.Kind)
	}
	return ""
}

// checkPrevious checks the event's NIP-29 "previous" tags against the
// latest events of its group (channel.PreviousRefs, channel.PreviousKnown):
// "" when it passes (or cites nothing), else the refusal.
func (p *Pipeline) checkPrevious(ctx context.Context, c tenant.CommunityID, id channel.ID, ev *nostr.Event) string {
	refs, refusal := channel.PreviousRefs(ev)
	if refusal != "" || len(refs) == 0 {
		return refusal
	}
	var recent []string
	for rec, err := range p.cfg.Channels.Store.QueryScoped(ctx, c, channel.PreviousFilter(ev), channel.ScopeOf(id)) {
		if err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: previous lookup", "community", c.String(), "err", err)
			return MsgInternal
		}
		recent = append(recent, rec.ID)
	}
	if !channel.PreviousKnown(refs, recent) {
		return channel.MsgUnknownPrevious
	}
	return ""
}

// inviteValid reports whether code is the code of an invite (9009) stored
// in channel id of community c (see channel.InviteFilter): an invite is
// valid while its event is stored, for any number of joins.
func (p *Pipeline) inviteValid(ctx context.Context, c tenant.CommunityID, id channel.ID, gid, code string) (bool, error) {
	for rec, err := range p.cfg.Channels.Store.QueryScoped(ctx, c, channel.InviteFilter(gid), channel.ScopeOf(id)) {
		if err != nil {
			return false, err
		}
		ev, err := nostr.ParseEvent(rec.Raw)
		if err != nil {
			continue
		}
		if channel.IsInvite(ev, code) {
			return true, nil
		}
	}
	return false, nil
}

// commandMessage maps a command verdict to its OK message.
func commandMessage(err error) (msg string, ok bool) {
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return MsgDuplicate, true
	case errors.Is(err, store.ErrDeleted):
		return MsgDeleted, false
	}
	return channel.CommandMessage(err), false
}

// storeEvent is step 11 (durable write) with channel awareness: commands go
// through ApplyChannelCommand, other events through Save. It traces the
// write and returns the outcome, and the change of a command.
//
// With a store that stages its saves (stagedSaver), the event is applied
// but may not be durable yet: durable, when not nil, returns once it is,
// and the outcome may be acknowledged only after it returned nil.
func (p *Pipeline) storeEvent(ctx context.Context, s Submission, d channel.Admission, g trace.Tracer, st trace.State) (_ Outcome, _ *channel.Change, durable func() error) {
	ev, c := s.Event, s.Tenant.Community()
	var err error
	var change *channel.Change
	if d.Command != nil {
		var ch channel.Change
		ch, err = p.cfg.Channels.Store.ApplyChannelCommand(ctx, c, *d.Command, ev)
		if err == nil {
			change = &ch
			p.cfg.Channels.Access.ChannelChanged(c, d.Channel, d.Command)
		} else if msg, ok := commandMessage(err); msg != "" {
			if ok {
				g.WriteDuplicate(ctx, st, ev.ID)
			}
			return Outcome{OK: ok, Message: msg}, nil, nil
		}
	} else {
		if isCommunityCommand(ev.Kind) {
			if msg, ok := p.applyCommunityCommand(ctx, s); msg != "" {
				if ok {
					g.WriteDuplicate(ctx, st, ev.ID)
				}
				return Outcome{OK: ok, Message: msg}, nil, nil
			}
		}
		if p.staged != nil {
			durable, err = p.staged.SaveStaged(ctx, c, ev)
		} else {
			err = p.cfg.Store.Save(ctx, c, ev)
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, store.ErrDuplicate):
		g.WriteDuplicate(ctx, st, ev.ID)
		return Outcome{OK: true, Message: MsgDuplicate}, nil, durable
	case errors.Is(err, store.ErrSuperseded):
		return Outcome{Message: MsgSuperseded}, nil, durable
	case errors.Is(err, store.ErrDeleted):
		return Outcome{Message: MsgDeleted}, nil, durable
	case errors.Is(err, store.ErrReactionHeld):
		return Outcome{Message: messaging.MsgReactionExists}, nil, durable
	case errors.Is(err, channel.ErrInvalidTag):
		return Outcome{Message: channel.MsgBadChannelTag}, nil, durable
	default:
		p.cfg.Logger.ErrorContext(ctx, "ingest: save event",
			"community", c.String(), "event", ev.ID, "err", err)
		return Outcome{Message: MsgInternal}, nil, nil
	}
	if d.InChannel {
		g.WriteInsert(ctx, st, ev.ID, traceLabel(g, d.Channel), c)
	} else {
		g.WriteInsertGlobal(ctx, st, ev.ID)
	}
	return Outcome{OK: true, Stored: true}, change, durable
}

// stagedSaver is a store whose saves can be applied and made durable in
// two steps (store/embedded's SaveStaged): SaveStaged decides and applies
// as Save does, returning before the outcome is on disk, with durable,
// nil when there is nothing to wait for, which returns once it is.
type stagedSaver interface {
	SaveStaged(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) (durable func() error, err error)
}

// settle waits for a staged save to be durable (durable not nil) and
// reports the save's latency from start; a failure is logged, and the
// outcome may then not be acknowledged: settle reports false.
func (p *Pipeline) settle(ctx context.Context, c tenant.CommunityID, ev *nostr.Event, start time.Time, durable func() error) bool {
	var err error
	if durable != nil {
		err = durable()
	}
	if obs := p.cfg.StoreLatency; obs != nil {
		obs("save", time.Since(start))
	}
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: save event",
			"community", c.String(), "event", ev.ID, "err", err)
		return false
	}
	return true
}

// publishState stores and publishes the channel's relay-signed state
// events after a command, and, after a join (9021) or a leave (9022), the
// relay's own put-user (9000) or remove-user (9001) for the author, signed
// by the state key: NIP-29 clients follow membership through the latest
// 9000/9001 of a user. Failures are logged: the command itself committed,
// and the next change republishes the whole state.
func (p *Pipeline) publishState(ctx context.Context, tc tenant.TenantContext, change *channel.Change, cmd *channel.Command) {
	c := tc.Community()
	p.PublishChannelState(ctx, c, *change)
	cs := p.cfg.Channels
	if cs == nil || cs.StateKey == nil || cmd == nil || change.Deleted {
		return
	}
	if ev := channel.MembershipEvent(*change, cmd); ev != nil {
		kind := ev.Kind
		ev.CreatedAt = p.membershipClock(ctx, c, change.Channel, cmd.Actor)
		if err := ev.Sign(cs.StateKey(c)); err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: sign relay membership event", "kind", kind, "err", err)
			return
		}
		p.saveAndPublish(ctx, c, ev)
	}
	// Buzz's notices: system messages in the channel, membership
	// notifications to the user added or removed (channel.Notices).
	for _, ev := range channel.Notices(*change, cmd) {
		ev.CreatedAt = p.cfg.Now().Unix()
		if err := ev.Sign(cs.StateKey(c)); err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: sign relay notice", "kind", ev.Kind, "err", err)
			return
		}
		p.saveAndPublish(ctx, c, ev)
	}
}

// saveAndPublish stores a relay-signed event and fans it out; failures are
// logged.
func (p *Pipeline) saveAndPublish(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) {
	if err := p.cfg.Store.Save(ctx, c, ev); err != nil && !errors.Is(err, store.ErrDuplicate) {
		p.cfg.Logger.ErrorContext(ctx, "ingest: save relay-signed event", "kind", ev.Kind, "err", err)
		return
	}
	msg := pubsub.Message{Community: c, Event: ev, Raw: ev.AppendJSON(nil)}
	if err := p.cfg.Broker.Publish(ctx, msg); err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: publish relay-signed event", "kind", ev.Kind, "err", err)
	}
}

// PublishChannelState stores and publishes the relay-signed state events
// (39000–39003) that change calls for, as after a channel command; the
// relay calls it for changes it makes itself (a workflow's
// set_channel_topic). Without channels or a state key it does nothing.
func (p *Pipeline) PublishChannelState(ctx context.Context, c tenant.CommunityID, ch channel.Change) {
	cs := p.cfg.Channels
	change := &ch
	if cs == nil || cs.StateKey == nil || change.Deleted {
		return
	}
	if change.Metadata && change.Channel.Visibility == channel.VisibilityPrivate {
		// Whether state events carry h (are read under the channel's rules)
		// depends on the flags: a metadata change of a private channel
		// republishes 39001–39003 too, so they follow 39000.
		change.Members = true
	}
	var members []channel.Member
	if change.Members {
		var err error
		members, err = cs.Store.ChannelMembers(ctx, c, change.Channel.ID)
		if err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: channel members for state events", "err", err)
			return
		}
	}
	for _, ev := range p.stateEvents(c, change, members) {
		p.saveAndPublish(ctx, c, ev)
	}
}

// stateEvents signs the relay-signed NIP-29 state events a change calls
// for (channel.StateEvents), each with its state clock's created_at.
func (p *Pipeline) stateEvents(c tenant.CommunityID, change *channel.Change, members []channel.Member) []*nostr.Event {
	key := p.cfg.Channels.StateKey(c)
	var evs []*nostr.Event
	for _, ev := range channel.StateEvents(*change, members) {
		ev.CreatedAt = p.stateClock(c, change.Channel.ID, ev.Kind)
		if err := ev.Sign(key); err != nil {
			p.cfg.Logger.Error("ingest: sign channel state event", "kind", ev.Kind, "err", err)
			continue
		}
		evs = append(evs, ev)
	}
	return evs
}

// maxStateClocks bounds the state clocks a pipeline remembers (a crude
// bound: a forgotten clock restarts from now, and the store keeps the
// newest state event anyway).
const maxStateClocks = 100_000

// stateClock returns a created_at for a state event of (c, channel, kind)
// that is now, or one second after the previous one this pipeline signed,
// so a newer state always replaces the older (addressable kinds keep the
// newest created_at).
func (p *Pipeline) stateClock(c tenant.CommunityID, id channel.ID, kind int) int64 {
	type k struct {
		c    tenant.CommunityID
		id   channel.ID
		kind int
	}
	now := p.cfg.Now().Unix()
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	if p.clock == nil {
		p.clock = make(map[any]int64)
	}
	key := k{c, id, kind}
	if last := p.clock[key]; now <= last {
		now = last + 1
	}
	if len(p.clock) >= maxStateClocks {
		clear(p.clock)
	}
	p.clock[key] = now
	return now
}

// membershipClock returns the created_at of the relay's own 9000 or 9001
// for member in channel ch: now, or one second after the newest 9000/9001
// naming member in the group (the relay's or an admin's, stored), and after
// the previous one this pipeline signed for member there. NIP-29 clients
// decide membership by the latest 9000/9001 naming them, so a put and a
// remove within one second must not share a created_at.
func (p *Pipeline) membershipClock(ctx context.Context, c tenant.CommunityID, ch channel.Channel, member string) int64 {
	type k struct {
		c      tenant.CommunityID
		id     channel.ID
		member string
	}
	floor := p.cfg.Now().Unix()
	f := nostr.Filter{
		Kinds: []int{nostr.KindPutUser, nostr.KindRemoveUser},
		Tags:  map[string][]string{"h": {ch.GroupID()}, "p": {member}},
		Limit: 1, LimitSet: true,
	}
	for rec, err := range p.cfg.Channels.Store.QueryScoped(ctx, c, f, channel.ScopeOf(ch.ID)) {
		if err != nil {
			// The local clock below still orders this pipeline's own.
			p.cfg.Logger.ErrorContext(ctx, "ingest: latest membership event", "community", c.String(), "err", err)
			break
		}
		if rec.CreatedAt >= floor {
			floor = rec.CreatedAt + 1
		}
	}
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	if p.clock == nil {
		p.clock = make(map[any]int64)
	}
	key := k{c, ch.ID, member}
	if last := p.clock[key]; floor <= last {
		floor = last + 1
	}
	if len(p.clock) >= maxStateClocks {
		clear(p.clock)
	}
	p.clock[key] = floor
	return floor
}

// traceLabel is a channel's label in a trace step: "" for the no-op tracer,
// so production never formats it.
func traceLabel(g trace.Tracer, id channel.ID) string {
	if _, noop := g.(trace.Noop); noop {
		return ""
	}
	return id.String()
}
