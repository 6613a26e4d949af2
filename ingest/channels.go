package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
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
// unknown channel gets (MsgChannelDenied) — on every path, the duplicate
// path included, because the channel is checked before the store is asked
// whether it already holds the event. Events without h are community-wide.
//
// Without Channels (nil), every event naming a channel is refused as naming
// an unknown one.
type Channels struct {
	// Store holds channels, members and the community access policy.
	Store store.ChannelStore
	// StateKey returns the key that signs a community's relay-signed state
	// events (39000–39003). Nil: no state events are published.
	StateKey func(tenant.CommunityID) nostr.SecretKey
	// OnChange is called after a channel command committed, before its
	// event and the new state events are published (the relay recomputes
	// access and evicts subscriptions that lost it). It must not block for
	// long.
	OnChange func(ctx context.Context, tc tenant.TenantContext, change channel.Change)
	// OnMemberRemoved is called after a community membership command
	// removed pubkey from the community's members (the relay ends that
	// key's reads in a members-only community). It must not block for long.
	OnMemberRemoved func(ctx context.Context, tc tenant.TenantContext, pubkey string)
	// MaxAge bounds how far behind the pipeline's clock the created_at of
	// an event naming a group (h) may be; 0: unbounded.
	MaxAge time.Duration
	// CacheTTL bounds how long a channel, role or community policy looked up
	// for admission is reused (default 2s). Commands through this pipeline
	// invalidate the entries they change at once; a change made by another
	// process is seen after at most CacheTTL.
	CacheTTL time.Duration
}

// Messages of channel admission.
const (
	// MsgChannelDenied answers every refused channel write that is not a
	// command verdict: unknown channel, another community's channel, a
	// private channel of which the author is no member, a guest posting.
	MsgChannelDenied   = "restricted: not a channel member"
	MsgRelaySigned     = "restricted: relay-signed kinds cannot be published"
	MsgBadChannelTag   = "invalid: h tag must name exactly one group id (a-z0-9-_)"
	msgMissingChannel  = "invalid: kind %d requires an h tag naming its channel"
	msgLateGroupEvent  = "invalid: a group event's created_at may be at most %s in the past (NIP-29 late publication)"
	MsgMembersOnly     = "restricted: this community is open to its members only"
	MsgMembersOnlyAuth = "auth-required: this community is open to its members only; authenticate (NIP-42)"
	MsgNotPermitted    = "restricted: your channel role does not allow this"
	MsgChannelExists   = "restricted: a channel with this id already exists"
	MsgNoSuchEvent     = "invalid: the channel holds no such event"
	MsgBadCommand      = "invalid: malformed channel command"
	// MsgCommunityCommandH answers a community-level command (moderation,
	// community membership) that names a group.
	MsgCommunityCommandH = "invalid: a community command takes no h tag"
	// MsgBadPrevious answers a malformed NIP-29 "previous" tag.
	MsgBadPrevious = "invalid: a previous tag holds 8 to 64 lowercase hex characters of an event id"
	// MsgUnknownPrevious answers a "previous" tag naming no recent event of
	// the group.
	MsgUnknownPrevious = "invalid: a previous tag names no recent event of this group"
	// MsgStaleEdit answers a 9002 older than the group's current metadata.
	MsgStaleEdit = "invalid: this edit is older than the group's current metadata"
	// MsgPublicInvite answers a 9009 in a group that is not private.
	MsgPublicInvite = "restricted: invite codes are kept secret in private groups only on this relay"
	// MsgAlreadyMember answers a member's repeated join (NIP-29).
	MsgAlreadyMember = "duplicate: already a member of this group"
	// MsgUnsupportedFlags answers a 9007 or 9002 asking for a combination
	// of NIP-29 flags this relay cannot honour.
	MsgUnsupportedFlags = "restricted: a hidden group must also be private on this relay"
)

// RequiresChannel reports whether events of kind must name a channel: chat
// messages (9) and the channel commands.
func RequiresChannel(kind int) bool {
	return kind == nostr.KindChatMessage || channel.IsCommand(kind)
}

// channelDecision is what channel admission decided for one event.
type channelDecision struct {
	inChannel bool
	channel   channel.ID
	cmd       *channel.Command
}

// channelState caches admission lookups with a short TTL.
type channelState struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[any]cacheEntry
}

type cacheEntry struct {
	val any
	exp time.Time
}

type (
	policyKey struct{ c tenant.CommunityID }
	commKey   struct {
		c  tenant.CommunityID
		pk string
	}
	channelKey struct {
		c  tenant.CommunityID
		id channel.ID
	}
	roleKey struct {
		c  tenant.CommunityID
		id channel.ID
		pk string
	}
	roleVal struct {
		role channel.Role
		ok   bool
	}
)

const maxCacheEntries = 100_000

func (s *channelState) get(k any, now time.Time) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[k]
	if !ok || now.After(e.exp) {
		return nil, false
	}
	return e.val, true
}

func (s *channelState) put(k, v any, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= maxCacheEntries {
		clear(s.m) // crude bound; entries are cheap to look up again
	}
	s.m[k] = cacheEntry{val: v, exp: now.Add(s.ttl)}
}

// forget drops one cached entry.
func (s *channelState) forget(k any) {
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

// forgetChannel drops every cached entry of one channel.
func (s *channelState) forgetChannel(c tenant.CommunityID, id channel.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		switch k := k.(type) {
		case channelKey:
			if k.c == c && k.id == id {
				delete(s.m, k)
			}
		case roleKey:
			if k.c == c && k.id == id {
				delete(s.m, k)
			}
		}
	}
}

func (p *Pipeline) lookupChannel(ctx context.Context, c tenant.CommunityID, id channel.ID) (channel.Channel, error) {
	now := time.Now()
	k := channelKey{c, id}
	if v, ok := p.chans.get(k, now); ok {
		if v == nil {
			return channel.Channel{}, channel.ErrNoChannel
		}
		return v.(channel.Channel), nil
	}
	ch, err := p.cfg.Channels.Store.Channel(ctx, c, id)
	switch {
	case errors.Is(err, channel.ErrNoChannel):
		p.chans.put(k, nil, now)
	case err == nil:
		p.chans.put(k, ch, now)
	}
	return ch, err
}

func (p *Pipeline) lookupRole(ctx context.Context, c tenant.CommunityID, id channel.ID, pk string) (channel.Role, bool, error) {
	now := time.Now()
	k := roleKey{c, id, pk}
	if v, ok := p.chans.get(k, now); ok {
		r := v.(roleVal)
		return r.role, r.ok, nil
	}
	role, ok, err := p.cfg.Channels.Store.ChannelRole(ctx, c, id, pk)
	if err == nil {
		p.chans.put(k, roleVal{role, ok}, now)
	}
	return role, ok, err
}

// communityAdmits reports whether the author may write in the community
// under its access policy; "" when it may, else the refusal.
func (p *Pipeline) communityAdmits(ctx context.Context, s Submission) (msg string, requestAuth bool, err error) {
	if p.cfg.Channels == nil {
		return "", false, nil
	}
	c, now := s.Tenant.Community(), time.Now()
	var pol channel.AccessPolicy
	if v, ok := p.chans.get(policyKey{c}, now); ok {
		pol = v.(channel.AccessPolicy)
	} else {
		pol, err = p.cfg.Channels.Store.CommunityAccess(ctx, c)
		if err != nil {
			return "", false, err
		}
		p.chans.put(policyKey{c}, pol, now)
	}
	if pol != channel.AccessMembers {
		return "", false, nil
	}
	if s.AuthedAs == nil {
		return MsgMembersOnlyAuth, true, nil
	}
	if !s.AuthedAs(s.Event.PubKey) {
		return MsgNotAuthor, false, nil
	}
	ok, err := p.isCommunityMember(ctx, c, s.Event.PubKey)
	if err != nil {
		return "", false, err
	}
	if !ok {
		return MsgMembersOnly, false, nil
	}
	return "", false, nil
}

func (p *Pipeline) isCommunityMember(ctx context.Context, c tenant.CommunityID, pk string) (bool, error) {
	now := time.Now()
	if v, ok := p.chans.get(commKey{c, pk}, now); ok {
		return v.(bool), nil
	}
	_, ok, err := p.cfg.Channels.Store.CommunityRole(ctx, c, pk)
	if err != nil {
		return false, err
	}
	p.chans.put(commKey{c, pk}, ok, now)
	return ok, nil
}

// admitChannel resolves the event's h tag inside the bound community and
// checks that the author may post there (commands are authorized by the
// store, atomically). It returns the decision, or a refusal message.
func (p *Pipeline) admitChannel(ctx context.Context, s Submission, g trace.Tracer, st trace.State) (channelDecision, string) {
	ev := s.Event
	id, has, err := channel.OfEvent(ev)
	if err != nil {
		return channelDecision{}, MsgBadChannelTag
	}
	if !has {
		if RequiresChannel(ev.Kind) {
			return channelDecision{}, fmt.Sprintf(msgMissingChannel, ev.Kind)
		}
		return channelDecision{}, ""
	}
	if IsModerationCommand(ev.Kind) || isCommunityCommand(ev.Kind) {
		// Community-level commands never name a group (any h is refused
		// before it is resolved).
		return channelDecision{}, MsgCommunityCommandH
	}
	if cs := p.cfg.Channels; cs != nil && cs.MaxAge > 0 && p.cfg.Now().Add(-cs.MaxAge).Unix() > ev.CreatedAt {
		return channelDecision{}, fmt.Sprintf(msgLateGroupEvent, cs.MaxAge)
	}
	c := s.Tenant.Community()
	deny := func() (channelDecision, string) {
		// The claim is recorded as resolved: nothing, whatever community
		// may hold a channel with this id.
		g.AuthCheck(ctx, st, traceLabel(g, id), tenant.CommunityID{}, false)
		return channelDecision{}, MsgChannelDenied
	}
	if p.cfg.Channels == nil {
		return deny()
	}
	d := channelDecision{inChannel: true, channel: id}
	if channel.IsCommand(ev.Kind) {
		cmd, err := ParseChannelCommand(ev, id)
		if err != nil {
			return channelDecision{}, MsgBadCommand
		}
		d.cmd = &cmd
		if ev.Kind != nostr.KindCreateChannel {
			if ch, err := p.lookupChannel(ctx, c, id); errors.Is(err, channel.ErrNoChannel) || err == nil && ch.GroupID() != cmd.GroupID {
				return deny()
			} else if err != nil {
				p.cfg.Logger.ErrorContext(ctx, "ingest: channel lookup", "community", c.String(), "err", err)
				return channelDecision{}, MsgInternal
			}
		}
		if ev.Kind == nostr.KindJoinRequest && cmd.Code != "" {
			ok, err := p.inviteValid(ctx, c, id, cmd.GroupID, cmd.Code)
			if err != nil {
				p.cfg.Logger.ErrorContext(ctx, "ingest: invite lookup", "community", c.String(), "err", err)
				return channelDecision{}, MsgInternal
			}
			cmd.Invited = ok
		}
		if ev.Kind != nostr.KindCreateChannel {
			if msg := p.checkPrevious(ctx, c, id, ev); msg != "" {
				return channelDecision{}, msg
			}
		}
		// A create claims an id in the bound community; every other command
		// names a channel found there. Roles are judged by the store.
		g.AuthCheck(ctx, st, traceLabel(g, id), c, true)
		return d, ""
	}
	ch, err := p.lookupChannel(ctx, c, id)
	if errors.Is(err, channel.ErrNoChannel) || err == nil && ch.GroupID() != channel.GroupIDOf(ev) {
		return deny()
	}
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: channel lookup", "community", c.String(), "err", err)
		return channelDecision{}, MsgInternal
	}
	role, member, err := p.lookupRole(ctx, c, id, ev.PubKey)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: channel role", "community", c.String(), "err", err)
		return channelDecision{}, MsgInternal
	}
	if !channel.MayPost(ch, role, member) {
		return deny()
	}
	if msg := p.checkPrevious(ctx, c, id, ev); msg != "" {
		return channelDecision{}, msg
	}
	g.AuthCheck(ctx, st, traceLabel(g, id), c, true)
	return d, ""
}

// previousWindow is how many of a group's latest events NIP-29 "previous"
// references are checked against (NIP-29 has clients cite ids among the
// last 50 events they saw; the margin covers events racing them).
const previousWindow = 250

// checkPrevious checks the event's NIP-29 "previous" tags (each value the
// first 8 or more hex characters of an event id; at most 100): every one must name one of the
// latest previousWindow events of the group (the author's view of the
// timeline), else the event is refused — it was written against another
// relay's copy of the group or replayed from one. "" when it passes (or
// cites nothing).
func (p *Pipeline) checkPrevious(ctx context.Context, c tenant.CommunityID, id channel.ID, ev *nostr.Event) string {
	var refs []string
	for _, t := range ev.Tags {
		if len(t) >= 1 && t[0] == "previous" {
			// NIP-29 clients put every reference in one tag.
			if len(t) < 2 || len(t) > 101 {
				return MsgBadPrevious
			}
			for _, ref := range t[1:] {
				if len(ref) < 8 || len(ref) > 64 || !nostr.IsLowerHex(ref, len(ref)) {
					return MsgBadPrevious
				}
				refs = append(refs, ref)
			}
		}
	}
	if len(refs) == 0 {
		return ""
	}
	f := nostr.Filter{Tags: map[string][]string{"h": {channel.GroupIDOf(ev)}}, Limit: previousWindow, LimitSet: true}
	var recent []string
	for rec, err := range p.cfg.Channels.Store.QueryScoped(ctx, c, f, channel.ScopeOf(id)) {
		if err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: previous lookup", "community", c.String(), "err", err)
			return MsgInternal
		}
		recent = append(recent, rec.ID)
	}
	for _, ref := range refs {
		if !slices.ContainsFunc(recent, func(id string) bool { return strings.HasPrefix(id, ref) }) {
			return MsgUnknownPrevious
		}
	}
	return ""
}

// maxInvites bounds the invites of one channel a join's code is compared
// with (the newest first).
const maxInvites = 1000

// inviteValid reports whether code is the "code" of an invite (9009) stored
// in channel id of community c: an invite is valid while its event is
// stored, for any number of joins.
func (p *Pipeline) inviteValid(ctx context.Context, c tenant.CommunityID, id channel.ID, gid, code string) (bool, error) {
	f := nostr.Filter{Kinds: []int{nostr.KindCreateInvite}, Tags: map[string][]string{"h": {gid}}, Limit: maxInvites, LimitSet: true}
	for rec, err := range p.cfg.Channels.Store.QueryScoped(ctx, c, f, channel.ScopeOf(id)) {
		if err != nil {
			return false, err
		}
		ev, err := nostr.ParseEvent(rec.Raw)
		if err != nil {
			continue
		}
		if t := ev.Tags.Find("code"); t != nil && t[1] == code {
			return true, nil
		}
	}
	return false, nil
}

// ParseChannelCommand reads a command event of channel id into a
// channel.Command. Tags: 9007 and 9002 "name", "about", "picture",
// "visibility" (open|private) and the NIP-29 flags (single-element tags):
// "private"/"public", "closed"/"open", "restricted"/"unrestricted",
// "hidden"/"visible" — with at least one of them and no "visibility",
// the flags left out are off (the whole set is stated); 9007
// "channel_type"; 9000 "p" = [p, pubkey, role?];
// 9001 "p"; 9005 "e"; 9009 "code" (required), 9021 "code" (optional). Buzz's "visibility" private stands for private,
// closed, restricted and hidden, open for none of them; an explicit flag
// tag overrides what visibility implies for that flag. A tag given twice,
// contradicting flags, a missing required tag or an unknown value is an
// error.
func ParseChannelCommand(ev *nostr.Event, id channel.ID) (channel.Command, error) {
	cmd := channel.Command{Kind: ev.Kind, Actor: ev.PubKey, Channel: id, GroupID: channel.GroupIDOf(ev)}
	bad := errors.New("malformed channel command")
	seen := map[string]bool{}
	one := func(t nostr.Tag) (string, error) {
		if seen[t[0]] || len(t) < 2 {
			return "", bad
		}
		seen[t[0]] = true
		return t[1], nil
	}
	meta := ev.Kind == nostr.KindCreateChannel || ev.Kind == nostr.KindEditMetadata
	// Explicit NIP-29 flags: index 0 private, 1 closed, 2 restricted, 3 hidden.
	var explicit [4]*bool
	flag := func(i int, v bool) error {
		if explicit[i] != nil && *explicit[i] != v {
			return bad
		}
		explicit[i] = &v
		return nil
	}
	for _, t := range ev.Tags {
		if len(t) == 0 {
			continue
		}
		if meta {
			if i, v, ok := flagTag(t[0]); ok {
				if err := flag(i, v); err != nil {
					return cmd, err
				}
				continue
			}
		}
		switch {
		case meta && (t[0] == "name" || t[0] == "about" || t[0] == "picture"):
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			switch t[0] {
			case "name":
				cmd.Name = &v
			case "about":
				cmd.About = &v
			case "picture":
				cmd.Picture = &v
			}
		case meta && t[0] == "visibility":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.Visibility = channel.Visibility(v)
		case ev.Kind == nostr.KindCreateChannel && t[0] == "channel_type":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.Type = channel.Type(v)
		case (ev.Kind == nostr.KindPutUser || ev.Kind == nostr.KindRemoveUser) && t[0] == "p":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.Target = v
			if ev.Kind == nostr.KindPutUser && len(t) >= 3 && t[2] != "" {
				cmd.Role = channel.Role(t[2])
			}
		case (ev.Kind == nostr.KindCreateInvite || ev.Kind == nostr.KindJoinRequest) && t[0] == "code":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.Code = v
		case ev.Kind == nostr.KindDeleteEvent && t[0] == "e":
			v, err := one(t)
			if err != nil {
				return cmd, err
			}
			cmd.EventID = v
		}
	}
	if meta {
		// A NIP-29 client states the whole flag set (nostr-tools sends the
		// flags that are on): once one flag tag is given without Buzz's
		// visibility, every flag it leaves out is off.
		if cmd.Visibility == "" && slices.ContainsFunc(explicit[:], func(b *bool) bool { return b != nil }) {
			for i := range explicit {
				if explicit[i] == nil {
					explicit[i] = new(bool)
				}
			}
		}
		cmd.Private, cmd.Closed, cmd.Restricted, cmd.Hidden = explicit[0], explicit[1], explicit[2], explicit[3]
	}
	if err := cmd.Validate(); err != nil {
		return cmd, bad
	}
	return cmd, nil
}

// flagTag maps a NIP-29 flag tag name to its index (0 private, 1 closed, 2
// restricted, 3 hidden) and value.
func flagTag(name string) (i int, v, ok bool) {
	switch name {
	case "private":
		return 0, true, true
	case "public":
		return 0, false, true
	case "closed":
		return 1, true, true
	case "open":
		return 1, false, true
	case "restricted":
		return 2, true, true
	case "unrestricted":
		return 2, false, true
	case "hidden":
		return 3, true, true
	case "visible":
		return 3, false, true
	}
	return 0, false, false
}

// commandMessage maps a command verdict to its OK message.
func commandMessage(err error) (msg string, ok bool) {
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return MsgDuplicate, true
	case errors.Is(err, store.ErrDeleted):
		return MsgDeleted, false
	case errors.Is(err, channel.ErrNoChannel), errors.Is(err, channel.ErrNotMember):
		return MsgChannelDenied, false
	case errors.Is(err, channel.ErrNotPermitted):
		return MsgNotPermitted, false
	case errors.Is(err, channel.ErrChannelExists):
		return MsgChannelExists, false
	case errors.Is(err, channel.ErrNoEvent):
		return MsgNoSuchEvent, false
	case errors.Is(err, channel.ErrInvalidCommand):
		return MsgBadCommand, false
	case errors.Is(err, channel.ErrStaleEdit):
		return MsgStaleEdit, false
	case errors.Is(err, channel.ErrPublicInvite):
		return MsgPublicInvite, false
	case errors.Is(err, channel.ErrAlreadyMember):
		return MsgAlreadyMember, false
	case errors.Is(err, channel.ErrUnsupportedFlags):
		return MsgUnsupportedFlags, false
	}
	return "", false
}

// storeEvent is step 11 (durable write) with channel awareness: commands go
// through ApplyChannelCommand, other events through Save. It traces the
// write and returns the outcome, and the change of a command.
func (p *Pipeline) storeEvent(ctx context.Context, s Submission, d channelDecision, g trace.Tracer, st trace.State) (Outcome, *channel.Change) {
	ev, c := s.Event, s.Tenant.Community()
	var err error
	var change *channel.Change
	if obs := p.cfg.StoreLatency; obs != nil {
		start := time.Now()
		defer func() { obs("save", time.Since(start)) }()
	}
	if d.cmd != nil {
		var ch channel.Change
		ch, err = p.cfg.Channels.Store.ApplyChannelCommand(ctx, c, *d.cmd, ev)
		if err == nil {
			change = &ch
			p.chans.forgetChannel(c, d.channel)
		} else if msg, ok := commandMessage(err); msg != "" {
			if ok {
				g.WriteDuplicate(ctx, st, ev.ID)
			}
			return Outcome{OK: ok, Message: msg}, nil
		}
	} else {
		if isCommunityCommand(ev.Kind) {
			if msg := p.applyCommunityCommand(ctx, s); msg != "" {
				return Outcome{Message: msg}, nil
			}
		}
		err = p.cfg.Store.Save(ctx, c, ev)
	}
	switch {
	case err == nil:
	case errors.Is(err, store.ErrDuplicate):
		g.WriteDuplicate(ctx, st, ev.ID)
		return Outcome{OK: true, Message: MsgDuplicate}, nil
	case errors.Is(err, store.ErrSuperseded):
		return Outcome{Message: MsgSuperseded}, nil
	case errors.Is(err, store.ErrDeleted):
		return Outcome{Message: MsgDeleted}, nil
	case errors.Is(err, channel.ErrInvalidTag):
		return Outcome{Message: MsgBadChannelTag}, nil
	default:
		p.cfg.Logger.ErrorContext(ctx, "ingest: save event",
			"community", c.String(), "event", ev.ID, "err", err)
		return Outcome{Message: MsgInternal}, nil
	}
	if d.inChannel {
		g.WriteInsert(ctx, st, ev.ID, traceLabel(g, d.channel), c)
	} else {
		g.WriteInsertGlobal(ctx, st, ev.ID)
	}
	return Outcome{OK: true, Stored: true}, change
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
	var kind int
	tags := nostr.Tags{{"h", change.Channel.GroupID()}, {"p", cmd.Actor}}
	switch cmd.Kind {
	case nostr.KindJoinRequest:
		kind = nostr.KindPutUser
		tags[1] = append(tags[1], string(channel.RoleMember))
	case nostr.KindLeaveRequest:
		kind = nostr.KindRemoveUser
	default:
		return
	}
	ev := &nostr.Event{Kind: kind, CreatedAt: p.stateClock(c, change.Channel.ID, kind), Tags: tags, Content: ""}
	if err := ev.Sign(cs.StateKey(c)); err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: sign relay membership event", "kind", kind, "err", err)
		return
	}
	p.saveAndPublish(ctx, c, ev)
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

// roleDescriptions is the content of 39003.
var roleDescriptions = []struct {
	role channel.Role
	desc string
}{
	{channel.RoleOwner, "everything, including role changes and deleting the channel"},
	{channel.RoleAdmin, "add and remove members, edit metadata, delete messages"},
	{channel.RoleMember, "read and post"},
	{channel.RoleBot, "read and post (automation)"},
	{channel.RoleGuest, "read only"},
}

// stateEvents builds the relay-signed NIP-29 state events a change calls
// for: 39000 on metadata changes; 39001, 39002 and 39003 on membership
// changes. Every one carries d = h = the channel id, so it is stored in the
// channel and read under the channel's access rules.
func (p *Pipeline) stateEvents(c tenant.CommunityID, change *channel.Change, members []channel.Member) []*nostr.Event {
	key := p.cfg.Channels.StateKey(c)
	ch := change.Channel
	id := ch.GroupID()
	base := nostr.Tags{{"d", id}}
	if ch.Visibility != channel.VisibilityPrivate || ch.Hidden {
		// Stored in the channel, read under its rules; a private group that
		// is not hidden has its state stored community-wide, so
		// non-members can find it (NIP-29).
		base = append(base, nostr.Tag{"h", id})
	}
	var evs []*nostr.Event
	add := func(kind int, tags nostr.Tags) {
		ev := &nostr.Event{Kind: kind, CreatedAt: p.stateClock(c, ch.ID, kind), Tags: tags, Content: ""}
		if err := ev.Sign(key); err != nil {
			p.cfg.Logger.Error("ingest: sign channel state event", "kind", kind, "err", err)
			return
		}
		evs = append(evs, ev)
	}
	if change.Metadata {
		tags := append(nostr.Tags{}, base...)
		if ch.Name != "" {
			tags = append(tags, nostr.Tag{"name", ch.Name})
		}
		if ch.About != "" {
			tags = append(tags, nostr.Tag{"about", ch.About})
		}
		if ch.Picture != "" {
			tags = append(tags, nostr.Tag{"picture", ch.Picture})
		}
		// NIP-29 flags; "public" and "open" for clients of its older text.
		if ch.Visibility == channel.VisibilityPrivate {
			tags = append(tags, nostr.Tag{"private"})
		} else {
			tags = append(tags, nostr.Tag{"public"})
		}
		if ch.Closed {
			tags = append(tags, nostr.Tag{"closed"})
		} else {
			tags = append(tags, nostr.Tag{"open"})
		}
		if ch.Restricted || ch.Visibility == channel.VisibilityPrivate {
			tags = append(tags, nostr.Tag{"restricted"})
		}
		if ch.Hidden {
			tags = append(tags, nostr.Tag{"hidden"})
		}
		tags = append(tags, nostr.Tag{"visibility", string(ch.Visibility)}, nostr.Tag{"channel_type", string(ch.Type)})
		add(nostr.KindChannelMetadata, tags)
	}
	if change.Members {
		admins := append(nostr.Tags{}, base...)
		all := append(nostr.Tags{}, base...)
		for _, m := range members {
			if m.Role == channel.RoleOwner || m.Role == channel.RoleAdmin {
				admins = append(admins, nostr.Tag{"p", m.PubKey, string(m.Role)})
			}
			all = append(all, nostr.Tag{"p", m.PubKey, string(m.Role)})
		}
		add(nostr.KindChannelAdmins, admins)
		add(nostr.KindChannelMembers, all)
		roles := append(nostr.Tags{}, base...)
		for _, r := range roleDescriptions {
			roles = append(roles, nostr.Tag{"role", string(r.role), r.desc})
		}
		// Roles Buzz does not know, as members hold them (sorted).
		var custom []string
		for _, m := range members {
			if !m.Role.Valid() && !slices.Contains(custom, string(m.Role)) {
				custom = append(custom, string(m.Role))
			}
		}
		slices.Sort(custom)
		for _, r := range custom {
			roles = append(roles, nostr.Tag{"role", r, "read and post (a role named by a client)"})
		}
		add(nostr.KindChannelRoles, roles)
	}
	return evs
}

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
	if len(p.clock) >= maxCacheEntries {
		clear(p.clock)
	}
	p.clock[key] = now
	return now
}

// traceLabel is a channel's label in a trace step: "" for the no-op tracer,
// so production never formats it.
func traceLabel(g trace.Tracer, id channel.ID) string {
	if _, noop := g.(trace.Noop); noop {
		return ""
	}
	return id.String()
}

// sanitize reduces an OK message to the conformance error alphabet.
func sanitize(msg string) trace.Reason {
	switch {
	case strings.HasPrefix(msg, "error:"):
		return trace.ReasonServerError
	case strings.HasPrefix(msg, "invalid:"), strings.HasPrefix(msg, "pow:"):
		return trace.ReasonInvalid
	}
	return trace.ReasonRestricted
}

// ForgetPolicy drops the cached access policy of c (it was changed, here or
// by another process).
func (p *Pipeline) ForgetPolicy(c tenant.CommunityID) {
	p.chans.forget(policyKey{c})
}
