package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// CommandWindow bounds how far a moderation command's created_at may be
// from the relay's clock, either way.
const CommandWindow = 120 * time.Second

// ReportTypes are the NIP-56 report types accepted.
var ReportTypes = []string{"nudity", "malware", "profanity", "illegal", "spam", "impersonation", "other"}

// Community moderation, as Buzz's clients send it.
//
// Commands are executed and never stored or published (OK true once the
// store committed the action). Each carries the target in one "p" tag (the
// report's id in one "e" tag for 9044), an optional "reason", and no "h":
//
//   - 9040 ban: refuses the target's events (and, in the relay, its reads
//     and AUTH) until unbanned or until the optional "expiration" tag's
//     time;
//   - 9041 unban;
//   - 9042 timeout: refuses the target's events until the required
//     "expiration" tag's time (a write block; a timed-out moderator still
//     sends moderation and membership commands);
//   - 9043 untimeout;
//   - 9044 resolve report: "e" = the report's event id, "status" =
//     resolved | dismissed | escalated.
//
// The "expiration" of a command is the end of the ban or timeout, not a
// NIP-40 expiry: commands skip the NIP-40 step, and an end time that has
// already passed is refused as invalid. A command's created_at must be
// within CommandWindow of the relay's clock (commands are not stored, so
// this bounds replays).
//
// Who may moderate: the community's owner, admins and moderators
// (store.RoleModerator), each only over lower roles — the owner over
// everyone else, an admin over moderators, members and non-members, a
// moderator over members and non-members — and nobody over itself.
//
// Reports (kind 1984, NIP-56) from anyone the community admits are queued
// (store.ModerationStore.AddReport) with status open and are never stored
// as events nor published: no subscription, COUNT or other read of events
// can return them. A report names exactly one reported pubkey ("p") and at
// most one event of this community ("e"); the NIP-56 type is the third
// element of the "e" tag, else of the "p" tag.
//
// The kinds are nostr.KindChangeCommunityRole (9032), nostr.KindBan,
// nostr.KindUnban, nostr.KindTimeout, nostr.KindUntimeout,
// nostr.KindResolveReport (9040–9044) and nostr.KindReport (1984).
//
// Moderation configures community moderation (Config.Moderation). It needs
// Config.Channels, whose store holds the community roles.
type Moderation struct {
	// Store keeps restrictions, the action log and the report queue.
	Store store.ModerationStore
	// OnAction is called after an action committed, before the OK: the
	// relay tells its processes (a ban closes the pubkey's subscriptions)
	// and appends the action to the community's audit chain.
	OnAction func(ctx context.Context, tc tenant.TenantContext, a store.ModerationAction)
}

// Messages of moderation.
const (
	MsgModerationRole     = "restricted: your community role does not allow moderating this pubkey"
	MsgModerationDisabled = "restricted: this relay does not moderate communities"
	MsgCommandStale       = "invalid: a moderation command's created_at must be within 120 seconds of the relay's clock"
	MsgNotBanned          = "invalid: this pubkey is not banned"
	MsgNotTimedOut        = "invalid: this pubkey is not timed out"
	MsgNoReport           = "invalid: this community has no such report"
	MsgReportClosed       = "invalid: this report is already resolved or dismissed"
	MsgReportTarget       = "invalid: the reported event is not in this community"
	MsgModerationInternal = "error: could not check moderation restrictions"
)

// IsModerationCommand reports whether kind is one of 9040–9044.
func IsModerationCommand(kind int) bool {
	return kind >= nostr.KindBan && kind <= nostr.KindResolveReport
}

// ModerationCommand is a parsed 9040–9044 event.
type ModerationCommand struct {
	Action string // store.Action*
	Target string // pubkey, or report id for 9044
	Reason string
	Until  time.Time          // end of a ban (optional) or timeout (required)
	Status store.ReportStatus // for 9044
}

// ParseModerationCommand reads a 9040–9044 event. now is the relay's
// clock: an end time at or before it is refused. Every error starts with
// "invalid: ".
func ParseModerationCommand(ev *nostr.Event, now time.Time) (ModerationCommand, error) {
	var cmd ModerationCommand
	switch ev.Kind {
	case nostr.KindBan:
		cmd.Action = store.ActionBan
	case nostr.KindUnban:
		cmd.Action = store.ActionUnban
	case nostr.KindTimeout:
		cmd.Action = store.ActionTimeout
	case nostr.KindUntimeout:
		cmd.Action = store.ActionUntimeout
	case nostr.KindResolveReport:
		cmd.Action = store.ActionResolveReport
	default:
		return cmd, errors.New("invalid: not a moderation command")
	}
	if ev.Tags.Find("h") != nil {
		return cmd, errors.New("invalid: a moderation command belongs to the community and takes no h tag")
	}
	one := func(name string, required bool) (string, error) {
		all := ev.Tags.All(name)
		switch {
		case len(all) > 1:
			return "", fmt.Errorf("invalid: at most one %s tag", name)
		case len(all) == 0 && required:
			return "", fmt.Errorf("invalid: a %s tag is required", name)
		case len(all) == 0:
			return "", nil
		}
		return all[0][1], nil
	}
	reason, err := one("reason", false)
	if err != nil {
		return cmd, err
	}
	if len(reason) > 1024 {
		return cmd, errors.New("invalid: reason longer than 1024 bytes")
	}
	cmd.Reason = reason
	if cmd.Action == store.ActionResolveReport {
		if cmd.Target, err = one("e", true); err != nil {
			return cmd, err
		}
		if !nostr.IsLowerHex(cmd.Target, 64) {
			return cmd, errors.New("invalid: the e tag must be the report's 64-hex event id")
		}
		st, err := one("status", true)
		if err != nil {
			return cmd, err
		}
		cmd.Status = store.ReportStatus(st)
		if cmd.Status != store.ReportResolved && cmd.Status != store.ReportDismissed && cmd.Status != store.ReportEscalated {
			return cmd, errors.New("invalid: status must be resolved, dismissed or escalated")
		}
		return cmd, nil
	}
	if cmd.Target, err = one("p", true); err != nil {
		return cmd, err
	}
	if !nostr.IsLowerHex(cmd.Target, 64) {
		return cmd, errors.New("invalid: the p tag must be a 64-hex pubkey")
	}
	if cmd.Action != store.ActionBan && cmd.Action != store.ActionTimeout {
		return cmd, nil
	}
	exp, err := one("expiration", cmd.Action == store.ActionTimeout)
	if err != nil {
		return cmd, err
	}
	if exp == "" && ev.Tags.Find("expiration") == nil {
		return cmd, nil
	}
	ts, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || ts <= 0 || exp[0] == '+' || exp[0] == '0' {
		return cmd, errors.New("invalid: expiration must be a unix time in seconds")
	}
	if ts <= now.Unix() {
		return cmd, errors.New("invalid: expiration (the end of the restriction) has already passed")
	}
	if ts > now.Unix()+100*365*24*3600 {
		return cmd, errors.New("invalid: expiration is too far in the future")
	}
	cmd.Until = time.Unix(ts, 0).UTC()
	return cmd, nil
}

// ParsedReport is a parsed kind 1984 event.
type ParsedReport struct {
	TargetPubKey string
	TargetEvent  string // "" for a report about a pubkey
	Type         string
}

// ParseReport reads a kind 1984 report (NIP-56). Every error starts with
// "invalid: ".
func ParseReport(ev *nostr.Event) (ParsedReport, error) {
	var r ParsedReport
	ps := ev.Tags.All("p")
	if len(ps) != 1 {
		return r, errors.New("invalid: a report names exactly one reported pubkey in a p tag")
	}
	if !nostr.IsLowerHex(ps[0][1], 64) {
		return r, errors.New("invalid: the report's p tag must be a 64-hex pubkey")
	}
	r.TargetPubKey = ps[0][1]
	typeOf := func(t nostr.Tag) string {
		if len(t) >= 3 {
			return t[2]
		}
		return ""
	}
	r.Type = typeOf(ps[0])
	es := ev.Tags.All("e")
	switch {
	case len(es) > 1:
		return r, errors.New("invalid: a report names at most one event")
	case len(es) == 1:
		if !nostr.IsLowerHex(es[0][1], 64) {
			return r, errors.New("invalid: the report's e tag must be a 64-hex event id")
		}
		r.TargetEvent = es[0][1]
		if t := typeOf(es[0]); t != "" {
			r.Type = t
		}
	}
	for _, t := range ReportTypes {
		if r.Type == t {
			return r, nil
		}
	}
	return r, errors.New("invalid: report type must be one of nudity, malware, profanity, illegal, spam, impersonation, other")
}

// roleRank orders community roles by moderation power.
func roleRank(r channel.Role, member bool) int {
	if !member {
		return 0
	}
	switch r {
	case channel.RoleOwner:
		return 4
	case channel.RoleAdmin:
		return 3
	case store.RoleModerator:
		return 2
	}
	return 1
}

// MayModerate reports whether a member of role actor may act on a target
// of role target (targetMember false: not a member at all).
func MayModerate(actor channel.Role, actorMember bool, target channel.Role, targetMember bool) bool {
	a := roleRank(actor, actorMember)
	return a >= 2 && roleRank(target, targetMember) < a
}

// restrictionsTTL bounds how long a pubkey's restrictions are reused.
const restrictionsTTL = 2 * time.Second

// restrictionsEntries bounds the (community, pubkey) pairs whose
// restrictions are cached at once. Within restrictionsTTL that is 16,000
// distinct authors a second, more than a process verifies. (What an entry
// costs unused: ttlcache.Config.MaxEntries.)
const restrictionsEntries = 32_768

// restrictKey is the cache key of a pubkey's restrictions in community c.
func restrictKey(c tenant.CommunityID, pubkey string) string {
	u := c.UUID()
	return string(u[:]) + pubkey
}

// Restrictions returns pubkey's bans and timeouts in community c in force
// now, cached briefly (until the earliest end, at most restrictionsTTL).
// Moderation commands through this pipeline drop the entry at once;
// ForgetRestrictions drops it for a change made elsewhere. Without
// moderation it returns none.
func (p *Pipeline) Restrictions(ctx context.Context, c tenant.CommunityID, pubkey string) ([]store.Restriction, error) {
	if p.cfg.Moderation == nil {
		return nil, nil
	}
	now := p.cfg.Now()
	k := restrictKey(c, pubkey)
	if rs, ok := p.restrictions.Get(k); ok {
		if !anyEnded(rs, now) {
			return rs, nil
		}
	}
	rs, err := p.cfg.Moderation.Store.PubkeyRestrictions(ctx, c, pubkey, now)
	if err != nil {
		return nil, err
	}
	p.restrictions.Set(k, rs)
	return rs, nil
}

func anyEnded(rs []store.Restriction, now time.Time) bool {
	for _, r := range rs {
		if !r.Until.IsZero() && !now.Before(r.Until) {
			return true
		}
	}
	return false
}

// ForgetRestrictions drops the cached restrictions of pubkey in c (a
// moderation action was applied by another process).
func (p *Pipeline) ForgetRestrictions(c tenant.CommunityID, pubkey string) {
	if p.restrictions != nil {
		p.restrictions.Del(restrictKey(c, pubkey))
	}
}

// ReadBlocked returns the refusal of a read in community c by readers
// (the pubkeys the client authenticated as): the BlockedMessage of the
// first of them banned from c, or "" (timeouts block writes only). A store
// failure is returned as an error: the caller refuses the read (fails
// closed). Without moderation it returns "".
func (p *Pipeline) ReadBlocked(ctx context.Context, c tenant.CommunityID, readers []string) (string, error) {
	if p.cfg.Moderation == nil {
		return "", nil
	}
	for _, pk := range readers {
		rs, err := p.Restrictions(ctx, c, pk)
		if err != nil {
			return "", err
		}
		if msg := BlockedMessage(rs, false); msg != "" {
			return msg, nil
		}
	}
	return "", nil
}

// BlockedMessage is the "blocked: …" refusal for restrictions rs, saying
// which restriction and until when; "" when rs blocks nothing. With
// writeOnly false (reads, AUTH), only a ban blocks.
func BlockedMessage(rs []store.Restriction, writeOnly bool) string {
	for _, r := range rs {
		if r.Kind == store.RestrictionBan {
			if r.Until.IsZero() {
				return "blocked: you are banned from this community"
			}
			return "blocked: you are banned from this community until " + r.Until.UTC().Format(time.RFC3339)
		}
	}
	if !writeOnly {
		return ""
	}
	for _, r := range rs {
		if r.Kind == store.RestrictionTimeout {
			return "blocked: you are timed out in this community until " + r.Until.UTC().Format(time.RFC3339)
		}
	}
	return ""
}

// admitRestricted is the ban and timeout check of every EVENT, of who
// (its author, or for a gift wrap the connection's key), before
// membership. A store failure refuses the event (fail closed).
func (p *Pipeline) admitRestricted(ctx context.Context, s Submission, who string) string {
	if p.cfg.Moderation == nil {
		return ""
	}
	c := s.Tenant.Community()
	rs, err := p.Restrictions(ctx, c, who)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: moderation restrictions", "community", c.String(), "err", err)
		return MsgModerationInternal
	}
	// A timeout blocks content, not the administration of the community.
	admin := IsModerationCommand(s.Event.Kind) || isCommunityCommand(s.Event.Kind)
	return BlockedMessage(rs, !admin)
}

// applyModeration executes a 9040–9044 command (it is never stored) and
// returns its outcome.
func (p *Pipeline) applyModeration(ctx context.Context, s Submission) Outcome {
	m, cs := p.cfg.Moderation, p.cfg.Channels
	if m == nil || cs == nil {
		return Outcome{Message: MsgModerationDisabled}
	}
	ev, c := s.Event, s.Tenant.Community()
	now := p.cfg.Now()
	if d := now.Sub(time.Unix(ev.CreatedAt, 0)); d > CommandWindow || d < -CommandWindow {
		return Outcome{Message: MsgCommandStale}
	}
	cmd, err := ParseModerationCommand(ev, now)
	if err != nil {
		return Outcome{Message: err.Error()}
	}
	actor, actorMember, err := cs.Store.CommunityRole(ctx, c, ev.PubKey)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: community role", "community", c.String(), "err", err)
		return Outcome{Message: MsgInternal}
	}
	if cmd.Action == store.ActionResolveReport {
		if roleRank(actor, actorMember) < 2 {
			return Outcome{Message: MsgModerationRole}
		}
	} else {
		target, targetMember, err := cs.Store.CommunityRole(ctx, c, cmd.Target)
		if err != nil {
			p.cfg.Logger.ErrorContext(ctx, "ingest: community role", "community", c.String(), "err", err)
			return Outcome{Message: MsgInternal}
		}
		if cmd.Target == ev.PubKey || !MayModerate(actor, actorMember, target, targetMember) {
			return Outcome{Message: MsgModerationRole}
		}
	}
	rec, err := m.Store.Moderate(ctx, c, store.ModerationAction{
		Action: cmd.Action, Actor: ev.PubKey, Target: cmd.Target, Reason: cmd.Reason,
		Until: cmd.Until, Status: cmd.Status, EventID: ev.ID,
	}, now)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrDuplicate): // already applied (the authority rule)
		return Outcome{OK: true, Message: MsgDuplicate}
	case errors.Is(err, store.ErrNotRestricted):
		if cmd.Action == store.ActionUnban {
			return Outcome{Message: MsgNotBanned}
		}
		return Outcome{Message: MsgNotTimedOut}
	case errors.Is(err, store.ErrNoReport):
		return Outcome{Message: MsgNoReport}
	case errors.Is(err, store.ErrReportClosed):
		return Outcome{Message: MsgReportClosed}
	default:
		p.cfg.Logger.ErrorContext(ctx, "ingest: moderate", "community", c.String(), "err", err)
		return Outcome{Message: MsgInternal}
	}
	if cmd.Action != store.ActionResolveReport {
		p.ForgetRestrictions(c, cmd.Target)
	}
	if m.OnAction != nil {
		m.OnAction(ctx, s.Tenant, rec)
	}
	return Outcome{OK: true}
}

// queueReport validates a kind 1984 report and queues it; it is never
// stored as an event nor published.
func (p *Pipeline) queueReport(ctx context.Context, s Submission) Outcome {
	m := p.cfg.Moderation
	if m == nil {
		return Outcome{Message: MsgModerationDisabled}
	}
	ev, c := s.Event, s.Tenant.Community()
	r, err := ParseReport(ev)
	if err != nil {
		return Outcome{Message: err.Error()}
	}
	if r.TargetEvent != "" {
		found := false
		for _, err := range p.cfg.Store.Query(ctx, c, nostr.Filter{IDs: []string{r.TargetEvent}, Limit: 1, LimitSet: true}) {
			if err != nil {
				p.cfg.Logger.ErrorContext(ctx, "ingest: report target", "community", c.String(), "err", err)
				return Outcome{Message: MsgInternal}
			}
			found = true
		}
		if !found {
			return Outcome{Message: MsgReportTarget}
		}
	}
	err = m.Store.AddReport(ctx, c, store.Report{
		ID: ev.ID, Reporter: ev.PubKey, TargetPubKey: r.TargetPubKey, TargetEvent: r.TargetEvent,
		Type: r.Type, CreatedAt: ev.CreatedAt, Raw: ev.AppendJSON(nil),
	})
	switch {
	case err == nil:
		return Outcome{OK: true}
	case errors.Is(err, store.ErrDuplicate):
		return Outcome{OK: true, Message: MsgDuplicate}
	}
	p.cfg.Logger.ErrorContext(ctx, "ingest: queue report", "community", c.String(), "err", err)
	return Outcome{Message: MsgInternal}
}
