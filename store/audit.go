package store

import (
	"context"
	"unicode/utf8"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// AuditLog is a backend's per-community audit chains (package audit).
//
// Semantics (pinned by storetest):
//   - Each community has its own chain; seq starts at 1 and has no gaps, and
//     every entry links to the previous one by hash (audit.Link).
//   - The backend appends entries itself, in the same transaction as the
//     change they record, for every change it makes through its own calls:
//     channel commands (ApplyChannelCommand), community policy and
//     membership (SetCommunityAccess, Put/RemoveCommunityMember), operator
//     actions (CreateCommunity, SetArchived, TransferCommunity; the actor
//     comes from audit.WithActor) and stored NIP-09 deletion requests
//     (Save of kind 5). A change is never committed without its entry.
//   - Appends are batched per community: a backend may commit the record
//     with the change into a durable, ordered per-community outbox and link
//     it into the chain shortly after, one lock per community per batch;
//     AuditEntries and SyncAudit then first link what is pending, so a
//     reader sees every entry whose change committed before its call.
type AuditLog interface {
	// AppendAudit appends recs to c's chain, in order, atomically (all or
	// none). It is for changes that have no backend call of their own —
	// refusals such as rate limiting, and features built beside the store;
	// code that changes state in a backend records the entry inside that
	// backend's transaction instead. An invalid record
	// (audit.ErrInvalidRecord) appends nothing.
	AppendAudit(ctx context.Context, c tenant.CommunityID, recs ...audit.Record) error
	// AuditEntries returns up to limit entries of c's chain with seq >
	// afterSeq, in seq order. It never returns another community's entries.
	AuditEntries(ctx context.Context, c tenant.CommunityID, afterSeq int64, limit int) ([]audit.Entry, error)
	// AuditCommunities lists every community of the registry (whose chains
	// a verifier walks); a community without entries has an empty chain.
	AuditCommunities(ctx context.Context) ([]tenant.CommunityID, error)
	// SyncAudit links every entry whose change committed before the call
	// into its chain.
	SyncAudit(ctx context.Context) error
}

// MaxAuditPage bounds AuditEntries' limit; a larger limit is clamped.
const MaxAuditPage = 1000

// ChannelCommandAudit returns the audit record of an applied channel
// command (cmd, whose event is eventID). Both backends record it in the
// command's transaction.
func ChannelCommandAudit(cmd *channel.Command, eventID string) audit.Record {
	r := audit.Record{Actor: cmd.Actor, Object: cmd.Channel.String()}
	d := map[string]any{"event": eventID}
	switch cmd.Kind {
	case nostr.KindCreateChannel:
		r.Action = audit.ChannelCreated
		vis, typ := cmd.Visibility, cmd.Type
		if vis == "" {
			vis = channel.VisibilityOpen
		}
		if typ == "" {
			typ = channel.TypeStream
		}
		d["name"], d["visibility"], d["type"] = clip(deref(cmd.Name)), string(vis), string(typ)
	case nostr.KindEditMetadata:
		r.Action = audit.ChannelUpdated
		if cmd.Name != nil {
			d["name"] = clip(*cmd.Name)
		}
		if cmd.About != nil {
			d["about"] = clip(*cmd.About)
		}
		if cmd.Picture != nil {
			d["picture"] = clip(*cmd.Picture)
		}
		if cmd.Visibility != "" {
			d["visibility"] = string(cmd.Visibility)
		}
	case nostr.KindDeleteChannel:
		r.Action = audit.ChannelDeleted
	case nostr.KindJoinRequest:
		r.Action = audit.ChannelMemberJoined
		d["pubkey"] = cmd.Actor
		if cmd.Invited {
			d["invited"] = true
		}
	case nostr.KindLeaveRequest:
		r.Action = audit.ChannelMemberLeft
		d["pubkey"] = cmd.Actor
	case nostr.KindPutUser:
		r.Action = audit.ChannelMemberPut
		role := cmd.Role
		if role == "" {
			role = channel.RoleMember
		}
		d["pubkey"], d["role"] = cmd.Target, string(role)
	case nostr.KindRemoveUser:
		r.Action = audit.ChannelMemberRemoved
		d["pubkey"] = cmd.Target
	case nostr.KindDeleteEvent:
		r.Action = audit.ChannelEventDeleted
		d["deleted"] = cmd.EventID
	case nostr.KindCreateInvite:
		r.Action = audit.ChannelInviteCreated
	}
	r.Detail = d
	return r
}

// Bounds that keep a generated record within audit.MaxDetailLen whatever
// the client sent: strings are clipped, lists cut.
const (
	maxAuditString = 200
	maxAuditList   = 32
)

// clip shortens s to at most maxAuditString bytes, on a rune boundary.
func clip(s string) string {
	if len(s) <= maxAuditString {
		return s
	}
	n := maxAuditString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// DeletionAudit returns the audit record of a stored NIP-09 deletion
// request ev: the ids ("e") and addresses ("a") it names.
func DeletionAudit(ev *nostr.Event) audit.Record {
	events, addrs := []string{}, []string{}
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "e":
			if len(events) < maxAuditList {
				events = append(events, clip(t[1]))
			}
		case "a":
			if len(addrs) < maxAuditList {
				addrs = append(addrs, clip(t[1]))
			}
		}
	}
	return audit.Record{
		Action: audit.EventDeletionRequested, Actor: ev.PubKey, Object: ev.ID,
		Detail: map[string]any{"events": events, "addresses": addrs},
	}
}

// OperatorAudit returns the audit record of an operator action on
// community c (audit.CommunityProvisioned, …), the actor taken from ctx
// (audit.WithActor).
func OperatorAudit(ctx context.Context, action audit.Action, c Community, detail map[string]any) audit.Record {
	if detail == nil {
		detail = map[string]any{}
	}
	detail["host"], detail["owner"] = c.Host, c.OwnerPubKey
	return audit.Record{Action: action, Actor: audit.ActorFrom(ctx), Object: c.ID.String(), Detail: detail}
}

// AuditReport is the result of verifying one community's chain.
type AuditReport struct {
	Community tenant.CommunityID
	Entries   int64 // entries that verified (the whole chain when intact)
	// BrokenSeq is the first seq at which the chain is broken, 0 when it
	// is intact; Reason says why.
	BrokenSeq int64
	Reason    string
}

// VerifyAudit recomputes community c's chain from its first entry, page by
// page, and reports the first broken link. An error means the chain could
// not be read, not that it is broken.
func VerifyAudit(ctx context.Context, l AuditLog, c tenant.CommunityID) (AuditReport, error) {
	rep := AuditReport{Community: c}
	var v audit.Verifier
	var after int64
	for {
		page, err := l.AuditEntries(ctx, c, after, MaxAuditPage)
		if err != nil {
			return rep, err
		}
		for _, e := range page {
			if !v.Add(e) {
				rep.Entries = v.Verified()
				rep.BrokenSeq, rep.Reason = v.Broken()
				return rep, nil
			}
			after = e.Seq
		}
		if len(page) < MaxAuditPage {
			rep.Entries = v.Verified()
			return rep, nil
		}
	}
}
