package ingest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// The authority rule.
//
// Nostr events are public: anyone who can read a signed event can send it
// again, to any relay and any community. An authority event is one that
// changes what someone may do:
//
//   - NIP-29 group commands 9000–9009 and join/leave requests 9021/9022;
//   - community membership 9030–9033 and the NIP-43 leave request 28936;
//   - moderation 9040–9044;
//   - project changes 47010 (NIP-PC; their own receipt makes them applied
//     once, see projectchange.go);
//   - DM conversation commands 41010–41012;
//   - every kind the relay executes (Config.Commands: the workflow engine's
//     30620 definitions, 46020 manual triggers, 46030/46031 approval
//     decisions);
//   - every kind the embedder lists in Config.AuthorityKinds.
//
// The pipeline accepts an authority event only when all three hold:
//
//  1. Bound to its author: the submission is authenticated as the event's
//     pubkey — NIP-42 on the WebSocket connection (connections are bound to
//     one community's host) or NIP-98 on the HTTP API (Submission.AuthedAs).
//     Not authenticated at all: MsgAuthorityAuth with Outcome.RequestAuth,
//     so standard clients authenticate and retry; authenticated as someone
//     else: MsgAuthorityNotAuthor. Checked before the signature.
//  2. Fresh: created_at is at most Config.AuthorityWindow (default
//     DefaultAuthorityWindow) behind the relay's clock, else
//     MsgAuthorityStale (MaxFutureSkew bounds the other side).
//  3. Applied at most once per community: its effect is written with a
//     store.Authority mark (community, event id), which the store records
//     in the transaction of the effect and refuses to record twice, on
//     every backend and across processes sharing one. A second submission
//     of the same event in the same community changes nothing and answers
//     OK true with MsgDuplicate, whether the event is stored or executed
//     and never stored. The mark is kept until the event could no longer
//     pass rule 2.
//
// Events the relay signs and stores itself (state events, its own
// 9000/9001 after a join) do not go through Ingest and so not through
// this rule.

// DefaultAuthorityWindow is Config.AuthorityWindow's default: how far
// behind the relay's clock an authority event's created_at may be.
const DefaultAuthorityWindow = 15 * time.Minute

// Messages of the authority rule.
const (
	MsgAuthorityAuth      = "auth-required: this event changes what someone may do: authenticate (NIP-42, or NIP-98 over HTTP) as its author to submit it"
	MsgAuthorityNotAuthor = "restricted: this event changes what someone may do: only its author, authenticated, may submit it"
	msgAuthorityStale     = "invalid: this event changes what someone may do and is older than %s: sign it again"
)

// IsAuthorityKind reports whether kind is in the built-in set of authority
// kinds (a pipeline adds its Config.Commands and Config.AuthorityKinds).
func IsAuthorityKind(kind int) bool {
	switch {
	case kind >= nostr.KindPutUser && kind <= 9009, // NIP-29 group commands
		kind == nostr.KindJoinRequest, kind == nostr.KindLeaveRequest, // NIP-29 join and leave
		kind >= nostr.KindAddCommunityMember && kind <= 9033, // community membership
		kind == nostr.KindLeaveRelay,                         // NIP-43 leave
		kind >= nostr.KindBan && kind <= 9044,                // moderation
		kind == KindProjectChange,                            // NIP-PC project change
		IsDMCommand(kind):                                    // DM conversations
		return true
	}
	return false
}

// IsAuthority reports whether the pipeline treats kind as an authority
// event (see the rule above).
func (p *Pipeline) IsAuthority(kind int) bool {
	return IsAuthorityKind(kind) || p.cfg.Commands[kind] != nil || slices.Contains(p.cfg.AuthorityKinds, kind)
}

// authorityBound is rule 1: "" when s is authenticated as its event's
// author, else the refusal (and whether to ask for AUTH).
func authorityBound(s Submission) (msg string, requestAuth bool) {
	switch {
	case s.AuthedAs == nil:
		return MsgAuthorityAuth, true
	case !s.AuthedAs(s.Event.PubKey):
		return MsgAuthorityNotAuthor, false
	}
	return "", false
}

// authorityFresh is rule 2: "" when ev is recent enough, else the refusal.
func (p *Pipeline) authorityFresh(ev *nostr.Event, now time.Time) string {
	if ev.CreatedAt < now.Add(-p.cfg.AuthorityWindow).Unix() {
		return fmt.Sprintf(msgAuthorityStale, p.cfg.AuthorityWindow)
	}
	return ""
}

// withAuthority is rule 3: ctx marked so that the first write of the
// event's effect records it (store.WithAuthority). The mark is kept while
// the event could pass rule 2 on any process (MaxFutureSkew covers clocks
// that differ).
func (p *Pipeline) withAuthority(ctx context.Context, s Submission) context.Context {
	ev := s.Event
	until := time.Unix(ev.CreatedAt, 0).Add(p.cfg.AuthorityWindow + p.cfg.MaxFutureSkew)
	return store.WithAuthority(ctx, store.Authority{Community: s.Tenant.Community(), Event: ev.ID, Until: until})
}
