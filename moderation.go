package buzz

import (
	"context"
	"slices"
	"strings"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Community moderation in the relay (the commands themselves are executed
// by the ingest pipeline; see ingest.Moderation).
//
//   - A banned pubkey's EVENTs are refused (ingest), its AUTH is refused
//     with OK false "blocked: …", and a REQ or COUNT of a connection
//     authenticated as it gets CLOSED "blocked: …". A ban closes, on every
//     process, the subscriptions of the community's connections
//     authenticated as the pubkey (control.RestrictionChanged). A timeout
//     blocks writes only.
//   - Reports (kind 1984) are never stored as events nor published; a REQ
//     whose filter names kind 1984 also returns, from the report queue, the
//     reports of the connection's authenticated pubkeys — every report of
//     the community when one of them is its owner, an admin or a
//     moderator. Nobody else, and no other community, ever sees them. They
//     are not delivered live and COUNT does not count them.
//   - Owners, admins and moderators read the queue, the action log and
//     the restrictions in force over HTTP (moderation_http.go).
//
// Moderation is on when the store implements store.ModerationStore (both
// backends do) and keeps channels.

// msgBannedGeneric closes the subscriptions of a pubkey banned elsewhere
// when its ban cannot be read back.
const msgBannedGeneric = "blocked: you are banned from this community"

// setupModeration enables moderation when the store keeps it.
func (r *Relay) setupModeration() {
	if r.channels == nil {
		return
	}
	if ms, ok := r.cfg.store.(store.ModerationStore); ok {
		r.moderation = ms
	}
}

// ingestModeration is the pipeline's moderation configuration.
func (r *Relay) ingestModeration() *ingest.Moderation {
	if r.moderation == nil {
		return nil
	}
	return &ingest.Moderation{Store: r.moderation, OnAction: r.onModerationAction}
}

// onModerationAction runs after a moderation action committed (with its
// audit entry): every process is told, so that cached restrictions are
// dropped and a ban closes the pubkey's subscriptions there.
func (r *Relay) onModerationAction(ctx context.Context, tc tenant.TenantContext, a store.ModerationAction) {
	// The store appended a to the community's audit chain in the action's
	// own transaction (store.ModerationAudit).
	r.log.InfoContext(ctx, "buzz: moderation action", "community", tc.Community().String(),
		"action", a.Action, "actor", a.Actor, "target", a.Target, "seq", a.Seq)
	if a.Action == store.ActionResolveReport {
		return
	}
	m := control.RestrictionChanged{PubKey: a.Target, Banned: a.Action == store.ActionBan}
	if err := r.cl.bus.PublishControl(context.WithoutCancel(ctx), tc.Community(), m); err != nil {
		r.log.WarnContext(ctx, "buzz: publish moderation change", "community", tc.Community().String(), "err", err)
	}
}

// restrictionChanged applies a control.RestrictionChanged on this process.
func (r *Relay) restrictionChanged(community tenant.CommunityID, m control.RestrictionChanged) {
	if r.pipeline == nil || !nostr.IsLowerHex(m.PubKey, 64) {
		return
	}
	r.pipeline.ForgetRestrictions(community, m.PubKey)
	if !m.Banned {
		return
	}
	r.cl.goAction(func(ctx context.Context) {
		reason := msgBannedGeneric
		if rs, err := r.pipeline.Restrictions(ctx, community, m.PubKey); err == nil {
			if msg := ingest.BlockedMessage(rs, false); msg != "" {
				reason = msg
			}
		}
		for _, s := range r.sessionsOf(community) {
			if s.isAuthed(m.PubKey) {
				s.failAllSubs(reason)
			}
		}
	})
}

// bannedReaders returns the "blocked: …" refusal when one of readers (the
// pubkeys a client authenticated as) is banned from community; a store
// failure is returned as an error (the caller fails closed):
// ingest.Pipeline.ReadBlocked. Every read asks it through readAccess.
func (r *Relay) bannedReaders(ctx context.Context, community tenant.CommunityID, readers []string) (string, error) {
	if r.moderation == nil {
		return "", nil
	}
	return r.pipeline.ReadBlocked(ctx, community, readers)
}

// authBlocked returns why an otherwise valid AUTH as pubkey is refused
// because of a ban, or "".
func (c *conn) authBlocked(pubkey string) string {
	if c.r.moderation == nil {
		return ""
	}
	rs, err := c.r.pipeline.Restrictions(c.ctx, c.tc.Community(), pubkey)
	if err != nil {
		c.log.ErrorContext(c.ctx, "buzz: moderation restrictions at AUTH", "err", err)
		return ingest.MsgModerationInternal
	}
	return ingest.BlockedMessage(rs, false)
}

// isModerator reports whether pubkey moderates community c.
func (r *Relay) isModerator(ctx context.Context, c tenant.CommunityID, pubkey string) (bool, error) {
	role, ok, err := r.channels.store.CommunityRole(ctx, c, pubkey)
	if err != nil {
		return false, err
	}
	return ok && (role == channel.RoleOwner || role == channel.RoleAdmin || role == store.RoleModerator), nil
}

// reportRecords returns the queued reports a subscription's filter f may
// return to readers (the pubkeys its client authenticated as) in
// community, newest first, at most f's (clamped) limit: none unless f
// names kind 1984 and the client authenticated; every report of the
// community for a moderator, else the readers' own.
func (r *Relay) reportRecords(ctx context.Context, community tenant.CommunityID, readers []string, f *nostr.Filter) ([]store.Record, error) {
	if r.moderation == nil || !slices.Contains(f.Kinds, nostr.KindReport) {
		return nil, nil
	}
	if len(readers) == 0 {
		return nil, nil
	}
	q := store.ReportQuery{Limit: store.MaxModerationPage}
	if f.Since != nil {
		q.Since = max(*f.Since, 1)
	}
	if f.Until != nil {
		if *f.Until < 1 {
			return nil, nil
		}
		q.Until = *f.Until
	}
	var reporters []string
	for _, pk := range readers {
		mod, err := r.isModerator(ctx, community, pk)
		if err != nil {
			return nil, err
		}
		if mod {
			reporters = []string{""}
			break
		}
		reporters = append(reporters, pk)
	}
	var out []store.Record
	for _, rep := range reporters {
		q.Reporter = rep
		rs, err := r.moderation.Reports(ctx, community, q)
		if err != nil {
			return nil, err
		}
		for _, rep := range rs {
			ev, err := nostr.ParseEvent(rep.Raw)
			if err != nil || !search.Matches(f, ev) {
				continue
			}
			out = append(out, store.Record{ID: rep.ID, CreatedAt: rep.CreatedAt, Raw: rep.Raw, Community: community})
		}
	}
	slices.SortFunc(out, func(a, b store.Record) int {
		if a.CreatedAt != b.CreatedAt {
			if a.CreatedAt > b.CreatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if lim := r.clamp(*f).Limit; len(out) > lim {
		out = out[:lim]
	}
	return out, nil
}

// feedbackStore returns the store's product-feedback table, or nil when it
// keeps none (then kind 42000 is refused): product feedback is never stored
// as an event (ingest.Config.Feedback).
func feedbackStore(s store.EventStore) store.FeedbackStore {
	fs, _ := s.(store.FeedbackStore)
	return fs
}
