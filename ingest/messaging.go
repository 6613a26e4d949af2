package ingest

import (
	"context"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// DefaultReactionGrace is how long a reaction slot claimed by an event the
// store does not hold (a write in flight, or one that never finished)
// stays claimed before a new reaction may take it over.
const DefaultReactionGrace = time.Minute

// maxRelease bounds the ids one ReleaseReactions call carries.
const maxRelease = 500

// admitMessaging applies the rules of Buzz's messaging kinds that need a
// lookup (step 9'): an edit (40003) names a message of its own channel by
// the same author, or by an agent the editor owns; a forum vote (45002)
// names a forum post or comment of its own channel; a reaction (7) in a
// channel (with h) names an event of that channel. A reaction without h is a NIP-25 reaction as any relay
// takes it — its target may be stored elsewhere — and is not looked up:
// accepting it whatever it names tells nothing of what is stored here
// (a private channel's message, a gift wrap, another community's event).
// It returns "" or the refusal.
func (p *Pipeline) admitMessaging(ctx context.Context, s Submission, d channel.Admission) string {
	ev, c := s.Event, s.Tenant.Community()
	switch ev.Kind {
	case messaging.KindEdit:
		id, _ := messaging.EditTarget(ev) // checked by messaging.Validate
		target, found, err := p.lookup(ctx, c, id, d)
		switch {
		case err != nil:
			p.cfg.Logger.ErrorContext(ctx, "ingest: edit target lookup", "community", c.String(), "err", err)
			return MsgInternal
		case !found:
			return messaging.MsgEditNotFound
		}
		if tid, has, _ := channel.OfEvent(target); !has || !d.InChannel || tid != d.Channel {
			return messaging.MsgEditNoChannel
		}
		if target.PubKey != ev.PubKey {
			return p.admitOwnerEdit(ctx, c, target.PubKey, ev.PubKey)
		}
	case messaging.KindForumVote:
		id, _ := messaging.VoteTarget(ev) // checked by messaging.Validate
		target, found, err := p.lookup(ctx, c, id, d)
		switch {
		case err != nil:
			p.cfg.Logger.ErrorContext(ctx, "ingest: vote target lookup", "community", c.String(), "err", err)
			return MsgInternal
		case !found:
			return messaging.MsgVoteNotFound
		case !messaging.IsVoteTarget(target.Kind):
			return messaging.MsgVoteNotForum
		}
		if tid, has, _ := channel.OfEvent(target); !has || tid != d.Channel {
			return messaging.MsgVoteNoChannel
		}
	case messaging.KindReaction:
		if !d.InChannel {
			return ""
		}
		r, _ := messaging.ParseReaction(ev) // checked by messaging.Validate
		_, found, err := p.lookup(ctx, c, r.Target, d)
		switch {
		case err != nil:
			p.cfg.Logger.ErrorContext(ctx, "ingest: reaction target lookup", "community", c.String(), "err", err)
			return MsgInternal
		case !found:
			return messaging.MsgReactionNotFound
		}
	}
	return ""
}

// admitOwnerEdit admits an edit by editor of a message by author only when
// editor owns the agent author in community c (Buzz's exception: the owner
// of a bot may edit its messages); "" or the refusal.
func (p *Pipeline) admitOwnerEdit(ctx context.Context, c tenant.CommunityID, author, editor string) string {
	if p.cfg.AgentOwners == nil {
		return messaging.MsgEditNotAuthor
	}
	o, ok, err := p.cfg.AgentOwners.AgentOwnerOf(ctx, c, author)
	switch {
	case err != nil:
		p.cfg.Logger.ErrorContext(ctx, "ingest: agent owner lookup", "community", c.String(), "err", err)
		return MsgInternal
	case !ok || o.Owner != editor:
		return messaging.MsgEditNotAuthor
	}
	return ""
}

// lookup finds event id in community c as an event admitted as d may see
// it: in d's channel or community-wide. A gift wrap is never found: it
// exists for its recipient only, and a reaction or an edit naming it would
// tell anyone who knows an id whether it is stored.
func (p *Pipeline) lookup(ctx context.Context, c tenant.CommunityID, id string, d channel.Admission) (*nostr.Event, bool, error) {
	f := nostr.Filter{IDs: []string{id}, Limit: 1, LimitSet: true}
	var seq func(yield func(store.Record, error) bool)
	if cs := p.cfg.Channels; cs != nil {
		scope := channel.ScopeOf()
		if d.InChannel {
			scope = channel.ScopeOf(d.Channel)
		}
		seq = cs.Store.QueryScoped(ctx, c, f, scope)
	} else {
		seq = p.cfg.Store.Query(ctx, c, f)
	}
	for rec, err := range seq {
		if err != nil {
			return nil, false, err
		}
		ev, err := nostr.ParseEvent(rec.Raw)
		if err != nil {
			return nil, false, err
		}
		return ev, ev.Kind != nostr.KindGiftWrap, nil
	}
	return nil, false, nil
}

// claimReaction takes the reaction's slot (store.ReactionStore) before it
// is stored: claimed reports whether this call took it (the caller frees
// it if the write then fails); a refusal is the OK message. The repeat of
// an event holding its own slot goes on to the store, which answers it as
// a duplicate event.
func (p *Pipeline) claimReaction(ctx context.Context, s Submission) (k store.ReactionKey, claimed bool, refusal string) {
	rs := p.cfg.Reactions
	ev, c := s.Event, s.Tenant.Community()
	if rs == nil || ev.Kind != messaging.KindReaction {
		return k, false, ""
	}
	r, _ := messaging.ParseReaction(ev)
	k = store.ReactionKey{PubKey: ev.PubKey, Target: r.Target, Emoji: r.Emoji}
	now := p.cfg.Now()
	fail := func(err error) (store.ReactionKey, bool, string) {
		p.cfg.Logger.ErrorContext(ctx, "ingest: reaction slot", "community", c.String(), "err", err)
		return k, false, MsgInternal
	}
	h, ok, err := rs.ClaimReaction(ctx, c, k, ev.ID, now)
	if err != nil {
		return fail(err)
	}
	if ok {
		return k, true, ""
	}
	if h.EventID == ev.ID {
		return k, false, ""
	}
	// Another reaction holds the slot: it stands while its event is stored,
	// and while its write may still be in flight.
	if now.Sub(h.ClaimedAt) < p.cfg.ReactionGrace {
		return k, false, messaging.MsgReactionExists
	}
	live := false
	for _, err := range p.cfg.Store.Query(ctx, c, nostr.Filter{IDs: []string{h.EventID}, Limit: 1, LimitSet: true}) {
		if err != nil {
			return fail(err)
		}
		live = true
	}
	if live {
		return k, false, messaging.MsgReactionExists
	}
	ok, err = rs.ReplaceReaction(ctx, c, k, h.EventID, ev.ID, now)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return k, false, messaging.MsgReactionExists
	}
	return k, true, ""
}

// releaseReactions frees the reaction slots an accepted deletion emptied:
// a NIP-09 request (kind 5) frees its author's reactions it names by e; a
// NIP-29 delete-event (9005) the one event it deletes. Failures are
// logged: a slot whose event is gone is taken over after the grace
// period anyway.
func (p *Pipeline) releaseReactions(ctx context.Context, c tenant.CommunityID, ev *nostr.Event, cmd *channel.Command) {
	rs := p.cfg.Reactions
	if rs == nil {
		return
	}
	var pubkey string
	var ids []string
	switch {
	case ev.Kind == nostr.KindDeletion:
		pubkey = ev.PubKey
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == "e" && nostr.IsLowerHex(t[1], 64) {
				ids = append(ids, t[1])
			}
		}
	case cmd != nil && cmd.Kind == nostr.KindDeleteEvent:
		ids = []string{cmd.EventID}
	default:
		return
	}
	for len(ids) > 0 {
		n := min(len(ids), maxRelease)
		if err := rs.ReleaseReactions(ctx, c, pubkey, ids[:n]); err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: release reactions", "community", c.String(), "err", err)
			return
		}
		ids = ids[n:]
	}
}

// unclaimReaction frees a slot this submission claimed when its write
// failed, even when the submission's context has ended meanwhile (a slot
// left claimed is only taken over after the grace period).
func (p *Pipeline) unclaimReaction(ctx context.Context, c tenant.CommunityID, k store.ReactionKey, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := p.cfg.Reactions.ReleaseReactions(ctx, c, k.PubKey, []string{id}); err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: free reaction slot", "community", c.String(), "err", err)
	}
}
