package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// NIP-43 relay access metadata. A community is a "relay" to its clients,
// and its membership (9030–9032, or a member's 28936 leave request) is the
// relay membership NIP-43 describes. Every change of it is announced,
// signed by the community's state key (Channels.StateKey, the NIP-11
// "self" of the community's hosts), stored in the transaction of the
// change (store.MembershipAnnouncer), and then published live:
//
//   - 8000 (a member added) or 8001 (a member removed): tags ["-"] and
//     ["p", <member>];
//   - 13534, replaced at each change: ["-"] and one
//     ["member", <pubkey>, <role>] per member, the owner included, sorted
//     by pubkey.
//
// Each change of a community gets a created_at strictly after the previous
// one's (across processes sharing the store), so its announcements are
// totally ordered and the newest 13534 is the current list.
//
// 28936 is a member's request to leave (Buzz's rules): the authority rule
// applies (authenticated author, applied once), and in addition its
// created_at must be within LeaveWindow of the relay's clock, either way,
// and it must carry the NIP-70 ["-"] tag. It is never stored.

// LeaveWindow bounds how far a leave request's created_at may be from the
// relay's clock, either way (Buzz's ±120 s).
const LeaveWindow = 120 // seconds

// Messages of the leave request (Buzz's words).
const (
	MsgLeft               = "info: you have left this relay"
	MsgNotRelayMember     = "invalid: you are not a relay member"
	MsgOwnerCannotLeave   = "invalid: relay owner cannot leave"
	MsgLeaveUnprotected   = `invalid: leave request must include NIP-70 protected event tag ["-"]`
	msgLeaveOutOfWindow   = "invalid: leave request timestamp out of range (delta=%ds, max ±%ds)"
	MsgMembershipRelaySig = "restricted: relay membership events are relay-signed only"
)

// IsMembershipAnnouncement reports whether kind is one of the relay's
// NIP-43 announcements (8000, 8001, 13534), which clients never publish.
func IsMembershipAnnouncement(kind int) bool {
	return kind == nostr.KindMembershipAdded || kind == nostr.KindMembershipRemoved || kind == nostr.KindMembershipList
}

// MembershipEvents builds the unsigned announcements of a membership
// change (see above), created_at set to change.At.
func MembershipEvents(change store.MembershipChange) []*nostr.Event {
	var evs []*nostr.Event
	if change.Added || change.Removed {
		kind := nostr.KindMembershipAdded
		if change.Removed {
			kind = nostr.KindMembershipRemoved
		}
		evs = append(evs, &nostr.Event{Kind: kind, CreatedAt: change.At, Tags: nostr.Tags{{"-"}, {"p", change.Pubkey}}})
	}
	list := make(nostr.Tags, 0, len(change.Members)+1)
	list = append(list, nostr.Tag{"-"})
	for _, m := range change.Members {
		list = append(list, nostr.Tag{"member", m.PubKey, string(m.Role)})
	}
	return append(evs, &nostr.Event{Kind: nostr.KindMembershipList, CreatedAt: change.At, Tags: list})
}

// announcing returns ctx carrying the announcer of c's membership changes
// (nil announcements without a state key) and where it leaves the signed
// events of the change that committed, for publishAnnouncements.
func (p *Pipeline) announcing(ctx context.Context, c tenant.CommunityID) (context.Context, *[]*nostr.Event) {
	built := new([]*nostr.Event)
	cs := p.cfg.Channels
	if cs == nil || cs.StateKey == nil {
		return ctx, built
	}
	a := &store.MembershipAnnouncer{
		Now: func() int64 { return p.cfg.Now().Unix() },
		Build: func(change store.MembershipChange) ([]*nostr.Event, error) {
			if change.Community != c {
				return nil, errors.New("ingest: membership change of another community")
			}
			key := cs.StateKey(c)
			evs := MembershipEvents(change)
			for _, ev := range evs {
				if err := ev.Sign(key); err != nil {
					return nil, fmt.Errorf("ingest: sign membership announcement: %w", err)
				}
			}
			*built = evs // the last call's are the committed ones
			return evs, nil
		},
	}
	return store.WithMembershipAnnouncer(ctx, a), built
}

// publishAnnouncements publishes a committed change's announcements live
// (they are stored already).
func (p *Pipeline) publishAnnouncements(ctx context.Context, c tenant.CommunityID, evs []*nostr.Event) {
	for _, ev := range evs {
		msg := pubsub.Message{Community: c, Event: ev, Raw: ev.AppendJSON(nil)}
		if err := p.cfg.Broker.Publish(ctx, msg); err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: publish membership announcement", "kind", ev.Kind, "err", err)
		}
	}
}

// protected reports whether ev carries the NIP-70 ["-"] tag.
func protected(ev *nostr.Event) bool {
	for _, t := range ev.Tags {
		if len(t) >= 1 && t[0] == "-" {
			return true
		}
	}
	return false
}

// applyLeave executes a 28936 leave request: its author stops being a
// member of the bound community. ctx carries the request's authority mark.
func (p *Pipeline) applyLeave(ctx context.Context, s Submission) Outcome {
	cs := p.cfg.Channels
	if cs == nil {
		return Outcome{Message: msgCommunityDisabled}
	}
	ev, c := s.Event, s.Tenant.Community()
	if d := ev.CreatedAt - p.cfg.Now().Unix(); d > LeaveWindow || d < -LeaveWindow {
		return Outcome{Message: fmt.Sprintf(msgLeaveOutOfWindow, d, LeaveWindow)}
	}
	if !protected(ev) {
		return Outcome{Message: MsgLeaveUnprotected}
	}
	role, isMember, err := cs.Store.CommunityRole(ctx, c, ev.PubKey)
	switch {
	case err != nil:
		p.cfg.Logger.ErrorContext(ctx, "ingest: community role", "community", c.String(), "err", err)
		return Outcome{Message: MsgInternal}
	case !isMember:
		return Outcome{Message: MsgNotRelayMember}
	case role == channel.RoleOwner:
		return Outcome{Message: MsgOwnerCannotLeave}
	}
	actx, built := p.announcing(audit.WithActor(ctx, ev.PubKey), c)
	err = cs.Store.RemoveCommunityMember(actx, c, ev.PubKey)
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return Outcome{OK: true, Message: MsgDuplicate}
	case err != nil:
		p.cfg.Logger.ErrorContext(ctx, "ingest: leave", "community", c.String(), "err", err)
		return Outcome{Message: MsgInternal}
	}
	cs.Access.MemberChanged(c, ev.PubKey)
	if cs.StateKey != nil && len(*built) == 0 {
		// Another request removed the key between the lookup and the
		// write: it was no member by the time this one applied.
		return Outcome{Message: MsgNotRelayMember}
	}
	if cs.OnMemberRemoved != nil {
		cs.OnMemberRemoved(ctx, s.Tenant, ev.PubKey)
	}
	p.publishAnnouncements(ctx, c, *built)
	return Outcome{OK: true, Message: MsgLeft}
}
