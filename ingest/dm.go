package ingest

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// DM conversations (Buzz's 41010 open, 41011 add member, 41012 hide; see
// package channel for the model). The commands are authority events
// (they change who reads a conversation, and a participant's own state):
// accepted only from their authenticated author, fresh, applied once per
// community. They are executed, never stored nor published, so nothing
// of them is readable; the relay answers with Buzz's OK messages:
//
//	41010 → OK true `response:{"channel_id":"<id>","created":true|false}`
//	41011 → OK true `response:{"channel_id":"<id of the larger conversation>"}`
//	41012 → OK true `{}`
//
// A new conversation is narrated as Buzz does: its state events
// (39000–39003), the system message dm_created in it and a membership
// notification (44100) to every participant. Hiding, or opening a
// conversation that exists, republishes the author's visibility snapshot
// (30622), signed by the community's state key and readable by the author
// alone.

// IsDMCommand reports whether kind is a DM conversation command.
func IsDMCommand(kind int) bool {
	return kind == nostr.KindDMOpen || kind == nostr.KindDMAddMember || kind == nostr.KindDMHide
}

// msgNoDMs refuses DM commands on a relay whose store keeps no
// conversations.
const msgNoDMs = "restricted: DM conversations are not supported by this relay"

// applyDM executes a DM command that passed admission (its h, when it has
// one, names a channel its author may post in). ctx carries its
// authority mark.
func (p *Pipeline) applyDM(ctx context.Context, s Submission) Outcome {
	cs := p.cfg.Channels
	if cs == nil || cs.DMs == nil {
		return Outcome{Message: msgNoDMs}
	}
	ev, c := s.Event, s.Tenant.Community()
	var from channel.ID
	if ev.Kind != nostr.KindDMOpen {
		id, has, err := channel.OfEvent(ev)
		if err != nil || !has {
			return Outcome{Message: channel.MsgDMMissingH}
		}
		ch, err := cs.Access.Channel(ctx, c, id)
		switch {
		case errors.Is(err, channel.ErrNoChannel):
			return Outcome{Message: channel.MsgChannelDenied}
		case err != nil:
			p.cfg.Logger.ErrorContext(ctx, "ingest: dm channel", "community", c.String(), "err", err)
			return Outcome{Message: MsgInternal}
		case ch.Type != channel.TypeDM:
			return Outcome{Message: channel.MsgDMNotDM}
		}
		from = id
	}
	if ev.Kind == nostr.KindDMHide {
		return p.hideDM(ctx, c, from, ev.PubKey)
	}

	var participants []string
	if ev.Kind == nostr.KindDMOpen {
		var refusal string
		if participants, refusal = channel.DMOpenParticipants(ev); refusal != "" {
			return Outcome{Message: refusal}
		}
	} else {
		added, refusal := channel.DMCommandPubkeys(ev)
		if refusal != "" {
			return Outcome{Message: refusal}
		}
		if len(added) == 0 {
			return Outcome{Message: channel.MsgDMAddNone}
		}
		members, err := cs.Store.ChannelMembers(ctx, c, from)
		if err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: dm members", "community", c.String(), "err", err)
			return Outcome{Message: MsgInternal}
		}
		for _, m := range members {
			added = append(added, m.PubKey)
		}
		participants = channel.SortedParticipants(added)
		if len(participants) > channel.MaxDMParticipants {
			return Outcome{Message: channel.MsgDMTooLarge}
		}
	}
	// In a members-only community every participant must be a member.
	for _, pk := range participants {
		if pk == ev.PubKey {
			continue
		}
		if msg, err := p.admitParticipant(ctx, c, pk); err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: dm participant", "community", c.String(), "err", err)
			return Outcome{Message: MsgInternal}
		} else if msg != "" {
			return Outcome{Message: msg}
		}
	}

	ch, created, err := cs.DMs.OpenDM(ctx, c, ev.PubKey, participants, ev.CreatedAt)
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return Outcome{OK: true, Message: MsgDuplicate}
	case errors.Is(err, channel.ErrNoChannel):
		return Outcome{Message: channel.MsgDMNotFound}
	case err != nil:
		p.cfg.Logger.ErrorContext(ctx, "ingest: open dm", "community", c.String(), "err", err)
		return Outcome{Message: MsgInternal}
	}
	cs.Access.MembersChanged(c, ch.ID, participants)
	if created {
		change := channel.Change{Channel: ch, Metadata: true, Members: true, Added: participants}
		if cs.OnChange != nil {
			cs.OnChange(ctx, s.Tenant, change)
		}
		p.PublishChannelState(ctx, c, change)
		p.publishNotices(ctx, c, channel.DMNotices(ch, ev.PubKey, participants, ev.Kind == nostr.KindDMOpen))
	} else {
		// The author is (again) a member and sees the conversation.
		if cs.OnChange != nil {
			cs.OnChange(ctx, s.Tenant, channel.Change{Channel: ch, Members: true})
		}
		p.publishVisibility(ctx, c, ev.PubKey)
	}
	resp := struct {
		ChannelID string `json:"channel_id"`
		Created   *bool  `json:"created,omitempty"`
	}{ChannelID: ch.GroupID()}
	if ev.Kind == nostr.KindDMOpen {
		resp.Created = &created
	}
	b, _ := json.Marshal(resp) // a string and a bool: cannot fail
	return Outcome{OK: true, Message: "response:" + string(b)}
}

// hideDM executes a 41012 of viewer, its author, on conversation id of
// community c.
func (p *Pipeline) hideDM(ctx context.Context, c tenant.CommunityID, id channel.ID, viewer string) Outcome {
	switch err := p.cfg.Channels.DMs.HideDM(ctx, c, id, viewer); {
	case errors.Is(err, store.ErrDuplicate):
		return Outcome{OK: true, Message: MsgDuplicate}
	case errors.Is(err, channel.ErrNoChannel), errors.Is(err, channel.ErrNotMember):
		return Outcome{Message: channel.MsgChannelDenied}
	case err != nil:
		p.cfg.Logger.ErrorContext(ctx, "ingest: hide dm", "community", c.String(), "err", err)
		return Outcome{Message: MsgInternal}
	}
	p.publishVisibility(ctx, c, viewer)
	return Outcome{OK: true, Message: "{}"}
}

// publishNotices signs relay notices with the community's state key and
// stores and publishes them.
func (p *Pipeline) publishNotices(ctx context.Context, c tenant.CommunityID, evs []*nostr.Event) {
	cs := p.cfg.Channels
	if cs.StateKey == nil {
		return
	}
	key := cs.StateKey(c)
	for _, ev := range evs {
		ev.CreatedAt = p.cfg.Now().Unix()
		if err := ev.Sign(key); err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: sign relay notice", "kind", ev.Kind, "err", err)
			return
		}
		p.saveAndPublish(ctx, c, ev)
	}
}

// publishVisibility stores and publishes viewer's DM visibility snapshot
// (channel.VisibilitySnapshot), signed by the community's state key, one
// second after the newest stored one at least, so it replaces it.
// Failures are logged: the next hide or open republishes the whole set.
func (p *Pipeline) publishVisibility(ctx context.Context, c tenant.CommunityID, viewer string) {
	cs := p.cfg.Channels
	if cs.StateKey == nil {
		return
	}
	hidden, err := cs.DMs.HiddenDMs(ctx, c, viewer)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: hidden dms", "community", c.String(), "err", err)
		return
	}
	key := cs.StateKey(c)
	ev := channel.VisibilitySnapshot(viewer, hidden)
	ev.CreatedAt = p.cfg.Now().Unix()
	f := nostr.Filter{Kinds: []int{nostr.KindDMVisibility}, Authors: []string{key.PublicKey()},
		Tags: map[string][]string{"d": {viewer}}, Limit: 1, LimitSet: true}
	for rec, err := range cs.Store.QueryScoped(ctx, c, f, channel.Scope{}) {
		if err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: latest dm visibility", "community", c.String(), "err", err)
			break
		}
		if rec.CreatedAt >= ev.CreatedAt {
			ev.CreatedAt = rec.CreatedAt + 1
		}
	}
	if err := ev.Sign(key); err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: sign dm visibility", "err", err)
		return
	}
	p.saveAndPublish(ctx, c, ev)
}

// MsgDMNonMember refuses a conversation with someone who is not a member
// of a members-only community.
const MsgDMNonMember = "restricted: a participant of this DM is not a member of this community"

// admitParticipant is "" when pk may take part in a conversation in c: any
// key in an open community, a member in a members-only one.
func (p *Pipeline) admitParticipant(ctx context.Context, c tenant.CommunityID, pk string) (string, error) {
	a := p.cfg.Channels.Access
	pol, err := a.Policy(ctx, c)
	if err != nil || pol != channel.AccessMembers {
		return "", err
	}
	member, err := a.IsCommunityMember(ctx, c, pk)
	if err != nil || member {
		return "", err
	}
	return MsgDMNonMember, nil
}
