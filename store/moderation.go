package store

import (
	"context"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Community moderation (Buzz's kinds 9040–9044 and NIP-56 reports).
//
// A community's owner, admins and moderators moderate it: they ban and
// time out pubkeys and resolve the reports its members file. Everything is
// keyed by community: a ban in one community means nothing in another, and
// a report id is looked up only in the community it was filed in.
//
//   - A ban refuses the pubkey's writes (and, in the relay, its reads) until
//     it is lifted or its optional end time passes; a timeout refuses its
//     writes until its end time. One pubkey holds at most one ban and one
//     timeout per community: a second ban or timeout replaces the first.
//   - A restriction whose end time has passed is no longer in force; it is
//     never returned and cannot be lifted (ErrNotRestricted).
//   - Reports are queued with status open; a moderator moves an open or
//     escalated report to resolved, dismissed or escalated. Resolved and
//     dismissed reports are closed (ErrReportClosed).
//   - Every applied action (ban, unban, timeout, untimeout, resolve) is
//     recorded, atomically with its effect, in the community's action log.

// RoleModerator is the community role that moderates (bans, timeouts,
// reports) but does not administer (membership, roles).
const RoleModerator channel.Role = "moderator"

// ValidCommunityRole reports whether r may be given to a community member
// with PutCommunityMember: admin, moderator or member.
func ValidCommunityRole(r channel.Role) bool {
	return r == channel.RoleAdmin || r == RoleModerator || r == channel.RoleMember
}

// Moderation actions, as recorded in the action log.
const (
	ActionBan           = "ban"
	ActionUnban         = "unban"
	ActionTimeout       = "timeout"
	ActionUntimeout     = "untimeout"
	ActionResolveReport = "resolve_report"
)

// RestrictionKind is what a restriction blocks.
type RestrictionKind string

// Restriction kinds.
const (
	RestrictionBan     RestrictionKind = "ban"
	RestrictionTimeout RestrictionKind = "timeout"
)

// Restriction is a ban or timeout in force.
type Restriction struct {
	PubKey string
	Kind   RestrictionKind
	// Until is when it ends; zero for a ban without end.
	Until     time.Time
	Reason    string
	Actor     string // who imposed it
	CreatedAt time.Time
}

// ReportStatus is where a report stands in the queue.
type ReportStatus string

// Report statuses.
const (
	ReportOpen      ReportStatus = "open"
	ReportResolved  ReportStatus = "resolved"
	ReportDismissed ReportStatus = "dismissed"
	ReportEscalated ReportStatus = "escalated"
)

// Valid reports whether s is a known status.
func (s ReportStatus) Valid() bool {
	switch s {
	case ReportOpen, ReportResolved, ReportDismissed, ReportEscalated:
		return true
	}
	return false
}

// Report is one queued NIP-56 report (kind 1984).
type Report struct {
	// Seq orders a community's reports (higher is newer); set by AddReport.
	Seq int64
	// ID is the report event's id (64 lowercase hex).
	ID       string
	Reporter string // the report's author
	// TargetPubKey is the reported pubkey (its p tag); TargetEvent the
	// reported event id, "" for a report about a pubkey only.
	TargetPubKey string
	TargetEvent  string
	Type         string // NIP-56 report type
	CreatedAt    int64  // the event's created_at
	Raw          []byte // the event's JSON, as received
	Status       ReportStatus
	ReceivedAt   time.Time
	ResolvedBy   string    // "" while open
	ResolvedAt   time.Time // zero while open
}

// ReportKeys are the keys of a Report decoded, as a store writes them.
type ReportKeys struct {
	ID, Reporter, TargetPubKey []byte
	TargetEvent                []byte // nil for a report about a pubkey only
}

// Keys checks r's shape as AddReport requires it (ID, Reporter and
// TargetPubKey 64 lowercase hex characters, TargetEvent "" or as those,
// Raw and Type not empty) and returns its keys decoded, or
// ErrInvalidModeration.
func (r *Report) Keys() (ReportKeys, error) {
	var k ReportKeys
	var ok1, ok2, ok3 bool
	k.ID, ok1 = nostr.DecodeHex32(r.ID)
	k.Reporter, ok2 = nostr.DecodeHex32(r.Reporter)
	k.TargetPubKey, ok3 = nostr.DecodeHex32(r.TargetPubKey)
	ok4 := true
	if r.TargetEvent != "" {
		k.TargetEvent, ok4 = nostr.DecodeHex32(r.TargetEvent)
	}
	if !ok1 || !ok2 || !ok3 || !ok4 || len(r.Raw) == 0 || r.Type == "" {
		return ReportKeys{}, ErrInvalidModeration
	}
	return k, nil
}

// ModerationAction is one entry of a community's action log, and the
// request to apply one (Moderate).
type ModerationAction struct {
	Seq    int64  // set by Moderate
	Action string // one of the Action* constants
	Actor  string // the moderator
	// Target is the pubkey acted on, or the report id for ActionResolveReport.
	Target string
	Reason string
	// Until ends a timeout (required) or a ban (optional).
	Until time.Time
	// Status is the new status of a resolved report.
	Status ReportStatus
	// EventID is the command event that asked for the action.
	EventID   string
	CreatedAt time.Time // set by Moderate
}

// ReportQuery selects reports, newest first.
type ReportQuery struct {
	Status   ReportStatus // "" = every status
	Reporter string       // "" = every reporter
	Before   int64        // only Seq < Before; 0 = no bound
	Since    int64        // only CreatedAt >= Since; 0 = no bound
	Until    int64        // only CreatedAt <= Until; 0 = no bound
	Limit    int          // required, 1..MaxModerationPage
}

// CommunityReport is a report with the community it was filed in, for the
// operator's view across communities.
type CommunityReport struct {
	Community tenant.CommunityID
	Host      string
	Report
}

// MaxModerationPage is the largest page the moderation reads return.
const MaxModerationPage = 500

// Errors of ModerationStore.Moderate.
var (
	// ErrNotRestricted: an unban or untimeout of a pubkey without such a
	// restriction in force.
	ErrNotRestricted = errors.New("store: no such restriction in force")
	// ErrNoReport: the community holds no report with this id.
	ErrNoReport = errors.New("store: no such report")
	// ErrReportClosed: the report was already resolved or dismissed.
	ErrReportClosed = errors.New("store: report already closed")
	// ErrInvalidModeration: a malformed action (unknown action, bad key,
	// missing end time, bad status).
	ErrInvalidModeration = errors.New("store: invalid moderation action")
)

// Validate checks an action's shape (independent of state).
func (a *ModerationAction) Validate() error {
	if !nostr.IsLowerHex(a.Actor, 64) || !nostr.IsLowerHex(a.Target, 64) {
		return ErrInvalidModeration
	}
	switch a.Action {
	case ActionBan, ActionUnban, ActionUntimeout:
	case ActionTimeout:
		if a.Until.IsZero() {
			return ErrInvalidModeration
		}
	case ActionResolveReport:
		if a.Status != ReportResolved && a.Status != ReportDismissed && a.Status != ReportEscalated {
			return ErrInvalidModeration
		}
	default:
		return ErrInvalidModeration
	}
	return nil
}

// ModerationStore keeps a community's restrictions, report queue and
// moderation log. Every call is scoped by community. Both backends
// implement it; storetest.RunModeration is its conformance suite.
type ModerationStore interface {
	// PubkeyRestrictions returns pubkey's restrictions in c in force at now
	// (none, a ban, a timeout or both).
	PubkeyRestrictions(ctx context.Context, c tenant.CommunityID, pubkey string, now time.Time) ([]Restriction, error)
	// Restrictions lists c's restrictions in force at now, ordered by
	// pubkey then kind, those with pubkey > after only, at most limit.
	Restrictions(ctx context.Context, c tenant.CommunityID, now time.Time, after string, limit int) ([]Restriction, error)
	// Moderate validates and applies a (a ban, unban, timeout, untimeout or
	// report resolution) at now and appends it to c's action log, all or
	// nothing. It returns the recorded action (Seq and CreatedAt set).
	// Lifting what is not in force is ErrNotRestricted; resolving an
	// unknown report ErrNoReport, a closed one ErrReportClosed.
	Moderate(ctx context.Context, c tenant.CommunityID, a ModerationAction, now time.Time) (ModerationAction, error)
	// ModerationActions lists c's action log newest first: Seq < before
	// (0: no bound), at most limit.
	ModerationActions(ctx context.Context, c tenant.CommunityID, before int64, limit int) ([]ModerationAction, error)

	// AddReport queues r with status open (Seq and ReceivedAt are set by the
	// store). A second report with the same id is ErrDuplicate.
	AddReport(ctx context.Context, c tenant.CommunityID, r Report) error
	// Reports returns c's reports matching q, newest first.
	Reports(ctx context.Context, c tenant.CommunityID, q ReportQuery) ([]Report, error)
	// OpenReports returns the newest open reports across every active
	// community, with each community's host, at most limit: the operator's
	// view, never reachable from a community's host.
	OpenReports(ctx context.Context, limit int) ([]CommunityReport, error)
}

// Audit actions of host aliases (operator actions; object the community
// id, detail "alias").
const (
	AuditAliasAdded   audit.Action = "community_alias_added"
	AuditAliasRemoved audit.Action = "community_alias_removed"
)

// ModerationAudit returns the audit record of an applied moderation
// action: action "moderation_" + a.Action (moderation_ban, …), object the
// target pubkey or report id. Both backends append it in the action's
// transaction.
func ModerationAudit(a ModerationAction) audit.Record {
	d := map[string]any{"seq": a.Seq}
	if a.Reason != "" {
		d["reason"] = a.Reason
	}
	if !a.Until.IsZero() {
		d["until"] = a.Until.Unix()
	}
	if a.Status != "" {
		d["status"] = string(a.Status)
	}
	if a.EventID != "" {
		d["event"] = a.EventID
	}
	return audit.Record{Action: audit.Action("moderation_" + a.Action), Actor: a.Actor, Object: a.Target, Detail: d, Time: a.CreatedAt}
}
