package transfer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// EventDestination stores restored events: Save's semantics, except that
// a deletion request appends no audit entry (its entry arrives with the
// audit chain). store/embedded and store/postgres implement it.
type EventDestination interface {
	RestoreEvent(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error
}

// EventBatchDestination is an EventDestination that stores a batch of
// events of one community at once: results[i] is what RestoreEvent would
// have returned for evs[i], the events restored in their order, as one
// write (one transaction, one sync). err is a failure of the store; then
// results is nil. It returns errors.ErrUnsupported, having written
// nothing, when it cannot store a batch at once (Import then stores the
// events one by one). store/embedded and store/postgres implement it.
type EventBatchDestination interface {
	RestoreEvents(ctx context.Context, c tenant.CommunityID, evs []*nostr.Event) (results []error, err error)
}

// CommunityDestination creates a community with the id, hosts and
// settings of an export, or finds it (created false).
type CommunityDestination interface {
	RestoreCommunity(ctx context.Context, st store.CommunityState) (created bool, err error)
}

// Destination is what Import needs of a backend. A Destination may also
// implement MemberDestination, ChannelDestination, NameDestination,
// ModerationDestination and AuditDestination; an export holding records
// of a kind the destination cannot keep is refused at the first such line.
type Destination interface {
	EventDestination
	CommunityDestination
}

// MemberDestination adds community members.
type MemberDestination interface {
	RestoreMember(ctx context.Context, c tenant.CommunityID, m store.MemberState) (bool, error)
}

// ChannelDestination adds channels and channel members.
type ChannelDestination interface {
	RestoreChannel(ctx context.Context, c tenant.CommunityID, ch store.ChannelState) (bool, error)
	RestoreChannelMember(ctx context.Context, c tenant.CommunityID, m store.ChannelMemberState) (bool, error)
}

// NameDestination adds NIP-05 names.
type NameDestination interface {
	RestoreName(ctx context.Context, c tenant.CommunityID, n store.NameState) (bool, error)
}

// ModerationDestination adds moderation state.
type ModerationDestination interface {
	RestoreRestriction(ctx context.Context, c tenant.CommunityID, r store.Restriction) (bool, error)
	RestoreReport(ctx context.Context, c tenant.CommunityID, r store.Report) (bool, error)
	RestoreModerationAction(ctx context.Context, c tenant.CommunityID, a store.ModerationAction) (bool, error)
}

// AuditDestination appends verified audit entries verbatim.
type AuditDestination interface {
	RestoreAudit(ctx context.Context, c tenant.CommunityID, entries []audit.Entry) (int, error)
}

// Defaults of ImportOptions.
const (
	DefaultMaxLineBytes = 16 << 20
	DefaultBatch        = 512
	DefaultWorkers      = 16
)

// maxBatchBytes bounds the lines of one batch of events, whatever Batch
// says, so memory stays bounded with large events.
const maxBatchBytes = 32 << 20

// ImportOptions tunes Import.
type ImportOptions struct {
	// MaxLineBytes bounds one line (DefaultMaxLineBytes when 0).
	MaxLineBytes int
	// Batch is how many events are read before they are stored; Workers
	// goroutines verify them, and store them one by one when the
	// destination is no EventBatchDestination (DefaultBatch,
	// DefaultWorkers when 0).
	Batch, Workers int
	// KeepGoing makes a refused line (malformed, a bad id or signature, a
	// record the destination refuses) count as refused and the import go
	// on; OnRefused, when set, is told of each. Without it the first
	// refused line stops the import with a *LineError.
	KeepGoing bool
	OnRefused func(*LineError)
	// Progress, when set, is called about every ProgressEvery lines with
	// the stats so far.
	Progress      func(ImportStats)
	ProgressEvery int
}

// ImportStats says what Import did.
type ImportStats struct {
	Lines int64
	Bytes int64
	// Events read; of those New were stored, Duplicate were already there,
	// Obsolete lost to what the destination holds (a newer replaceable
	// version, deleted there by their author, or a reaction whose slot
	// another reaction holds there) and Refused were bad.
	Events, New, Duplicate, Obsolete, Refused int64
	// Read and Added count the state records by type (events excluded).
	Read, Added Counts
	// Complete: the end record was read and its counts matched.
	Complete bool
	Elapsed  time.Duration
}

// LineError is a refused line: its number (1-based) and why.
type LineError struct {
	Line int64
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ErrTruncated: the input ended without the end record, or the end
// record's counts disagree with the lines read.
var ErrTruncated = errors.New("transfer: the export is incomplete")

// pendingEvent is a verified event waiting for its batch.
type pendingEvent struct {
	line int64
	c    tenant.CommunityID
	ev   *nostr.Event
}

// importer is one run of Import.
type importer struct {
	ctx   context.Context
	dst   Destination
	opts  ImportOptions
	v     *nostr.Verifier
	stats ImportStats
	// hosts maps each community record's host to its community.
	hosts map[string]tenant.CommunityID
	// audits holds each community's chain verifier (entries must start at
	// seq 1 and link) and its entries not yet stored.
	chains map[string]*audit.Verifier
	auditQ []audit.Entry
	auditC tenant.CommunityID
	auditH string
	events []pendingEvent
	// eventBytes is the size of the pending events' lines.
	eventBytes int
	records    int64 // records read, end record excluded
	// oneByOne: the destination cannot store a batch of events at once.
	oneByOne bool
}

// Import reads an export from r into dst. Every line is checked before it
// changes anything: a community's records must follow its community
// record; every event's id and signature must verify; audit entries must
// hash and link. Nothing already in dst is changed or removed: rows it
// holds are kept, so a second import of the same export adds nothing. It
// reads line by line in constant memory (one line, one batch of events).
//
// A refused line changes nothing and, unless opts.KeepGoing, stops the
// import with a *LineError; what the lines before it added stays. An
// input without its end record returns ErrTruncated after importing what
// it holds.
func Import(ctx context.Context, r io.Reader, dst Destination, opts ImportOptions) (ImportStats, error) {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 10000
	}
	v, err := nostr.NewVerifier()
	if err != nil {
		return ImportStats{}, err
	}
	defer v.Close()
	im := &importer{ctx: ctx, dst: dst, opts: opts, v: v, hosts: map[string]tenant.CommunityID{},
		chains: map[string]*audit.Verifier{}, stats: ImportStats{Read: Counts{}, Added: Counts{}}}
	start := time.Now()
	err = im.run(r)
	if ferr := im.flush(); err == nil {
		err = ferr
	}
	im.stats.Elapsed = time.Since(start)
	return im.stats, err
}

func (im *importer) run(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), im.opts.MaxLineBytes)
	var n int64
	ended := false
	for sc.Scan() {
		if err := im.ctx.Err(); err != nil {
			return err
		}
		n++
		line := sc.Bytes()
		im.stats.Lines, im.stats.Bytes = n, im.stats.Bytes+int64(len(line))+1
		if n == 1 {
			if err := checkHeader(line); err != nil {
				return &LineError{Line: 1, Err: err}
			}
			continue
		}
		if ended {
			return &LineError{Line: n, Err: errors.New("data after the end record")}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		end, err := im.line(n, line)
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || !im.opts.KeepGoing {
				return err
			}
			if im.opts.OnRefused != nil {
				im.opts.OnRefused(le)
			}
		}
		if end != nil {
			if err := im.flush(); err != nil {
				return err
			}
			if end.Events != im.stats.Events || end.Records != im.records {
				return fmt.Errorf("%w: the end record counts %d events and %d records, the file holds %d and %d",
					ErrTruncated, end.Events, end.Records, im.stats.Events, im.records)
			}
			ended = true
		}
		if im.opts.Progress != nil && n%int64(im.opts.ProgressEvery) == 0 {
			im.opts.Progress(im.stats)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &LineError{Line: n + 1, Err: fmt.Errorf("longer than %d bytes", im.opts.MaxLineBytes)}
		}
		return fmt.Errorf("transfer: import: read: %w", err)
	}
	if n == 0 {
		return &LineError{Line: 1, Err: errors.New("empty input: want the header {\"buzz_export\":1}")}
	}
	if !ended {
		return fmt.Errorf("%w: no end record after line %d", ErrTruncated, n)
	}
	im.stats.Complete = true
	return nil
}

// checkHeader accepts the header line of a version this package reads.
func checkHeader(line []byte) error {
	var h struct {
		V *int `json:"buzz_export"`
	}
	if json.Unmarshal(line, &h) != nil || h.V == nil {
		return errors.New(`not a buzz export: want the header {"buzz_export":1}`)
	}
	if *h.V < 1 || *h.V > Version {
		return fmt.Errorf("export format version %d: this build reads version %d", *h.V, Version)
	}
	return nil
}

// ParseLine decodes one record line (not the header) and checks its
// shape: the record's type and host, and for an event line the event (its
// JSON; its id and signature are not verified here). It is the parser
// Import uses.
func ParseLine(line []byte) (typ, host string, ev *nostr.Event, err error) {
	var env envelope
	if err := strict(line, &env); err != nil {
		return "", "", nil, err
	}
	switch env.Type {
	case TypeEvent:
		if len(env.Event) == 0 {
			return "", "", nil, errors.New(`event record without "event"`)
		}
		ev, err = nostr.ParseEvent(env.Event)
		if err != nil {
			return "", "", nil, fmt.Errorf("event: %w", err)
		}
	case TypeEnd:
		return env.Type, "", nil, nil
	case TypeRelayKey:
		return env.Type, "", nil, nil
	case TypeCommunity, TypeMember, TypeChannel, TypeChannelMember, TypeName, TypeRestriction, TypeReport, TypeModerationAction, TypeAudit,
		TypeWorkflow, TypeWorkflowRun, TypeApproval, TypeScheduleFire:
	case "":
		return "", "", nil, errors.New(`no "type"`)
	default:
		return "", "", nil, fmt.Errorf("unknown record type %q", env.Type)
	}
	if env.Host == "" {
		return "", "", nil, errors.New(`no "host"`)
	}
	return env.Type, env.Host, ev, nil
}

// line handles one record line; it returns the end record when line is
// one.
func (im *importer) line(n int64, line []byte) (*endJSON, error) {
	refuse := func(err error) (*endJSON, error) {
		if err == nil {
			return nil, nil
		}
		var le *LineError
		if errors.As(err, &le) || !isRefusal(err) {
			return nil, err
		}
		return nil, &LineError{Line: n, Err: err}
	}
	typ, host, ev, err := ParseLine(line)
	if err != nil {
		im.records++
		if eventish(line) {
			im.stats.Events++
			im.stats.Refused++
		}
		return refuse(refusal{err})
	}
	if typ == TypeEnd {
		var e endJSON
		if err := strict(line, &e); err != nil {
			return refuse(refusal{err})
		}
		return &e, nil
	}
	im.records++
	if typ == TypeRelayKey {
		return refuse(im.relayKey(line))
	}
	if typ == TypeCommunity {
		return refuse(im.community(line))
	}
	c, ok := im.hosts[host]
	if !ok {
		if typ == TypeEvent {
			im.stats.Events++
			im.stats.Refused++
		}
		return refuse(refusal{fmt.Errorf("host %q has no community record before this line", host)})
	}
	if typ != TypeAudit {
		if err := im.flushAudit(); err != nil {
			return refuse(err)
		}
	}
	if typ == TypeEvent {
		im.stats.Events++
		im.events = append(im.events, pendingEvent{line: n, c: c, ev: ev})
		im.eventBytes += len(line)
		if len(im.events) >= im.opts.Batch || im.eventBytes >= maxBatchBytes {
			return refuse(im.flushEvents())
		}
		return nil, nil
	}
	if err := im.flushEvents(); err != nil {
		return refuse(err)
	}
	im.stats.Read[typ]++
	return refuse(im.state(typ, host, c, line))
}

// eventish reports whether a refused line looks like an event record.
func eventish(line []byte) bool { return bytes.Contains(line, []byte(`"type":"event"`)) }

// refusal marks an error that refuses one line (as opposed to a failure of
// the destination).
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

func isRefusal(err error) bool {
	var r refusal
	return errors.As(err, &r)
}

// verdicts a destination returns for a refused record.
var refusedBy = []error{store.ErrCommunityExists, store.ErrInvalidHost, store.ErrNameTaken, store.ErrInvalidName,
	store.ErrInvalidModeration, store.ErrAuditConflict, store.ErrNoCommunity, workflow.ErrNotFound}

// asRefusal turns a destination's verdict on a record into a refusal.
func asRefusal(err error) error {
	for _, v := range refusedBy {
		if errors.Is(err, v) {
			return refusal{err}
		}
	}
	return err
}

func (im *importer) community(line []byte) error {
	var r communityJSON
	if err := strict(line, &r); err != nil {
		return refusal{err}
	}
	st, err := r.state()
	if err != nil {
		return refusal{err}
	}
	if err := im.flush(); err != nil {
		return err
	}
	if prev, ok := im.hosts[st.Host]; ok && prev != st.ID {
		return refusal{fmt.Errorf("host %q names two communities in this export", st.Host)}
	}
	im.stats.Read[TypeCommunity]++
	created, err := im.dst.RestoreCommunity(im.ctx, st)
	if err != nil {
		if errors.Is(err, store.ErrCommunityExists) {
			return refusal{fmt.Errorf("community %s (%s): a host of it belongs to another community of the destination", st.ID, st.Host)}
		}
		return asRefusal(err)
	}
	if created {
		im.stats.Added[TypeCommunity]++
	}
	im.hosts[st.Host] = st.ID
	return nil
}

// state restores one state record of community c.
func (im *importer) state(typ, host string, c tenant.CommunityID, line []byte) error {
	ctx := im.ctx
	var (
		added bool
		err   error
	)
	lacks := func(what string) error {
		return refusal{fmt.Errorf("the destination keeps no %s", what)}
	}
	switch typ {
	case TypeMember:
		var r memberJSON
		if err := strict(line, &r); err != nil {
			return refusal{err}
		}
		d, ok := im.dst.(MemberDestination)
		if !ok {
			return lacks("community members")
		}
		if !isKey(r.PubKey) || !store.ValidCommunityRole(channel.Role(r.Role)) {
			return refusal{errors.New("member: want a 64-hex pubkey and role admin, moderator or member")}
		}
		added, err = d.RestoreMember(ctx, c, store.MemberState{PubKey: r.PubKey, Role: channel.Role(r.Role), AddedAt: time.Unix(r.AddedAt, 0).UTC()})
	case TypeChannel, TypeChannelMember:
		d, ok := im.dst.(ChannelDestination)
		if !ok {
			return lacks("channels")
		}
		if typ == TypeChannel {
			var r channelJSON
			if err := strict(line, &r); err != nil {
				return refusal{err}
			}
			u, ok := parseUUID(r.ID)
			ch := channel.Channel{ID: channel.ID(u), Slug: r.Slug, Name: r.Name, About: r.About, Picture: r.Picture,
				Visibility: channel.Visibility(r.Visibility), Type: channel.Type(r.ChannelType), CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
				Deleted: r.DeletedAt != 0, Closed: r.Closed, Restricted: r.Restricted, Hidden: r.Hidden}
			if !ok || !ch.Visibility.Valid() || !ch.Type.Valid() || !isKey(ch.CreatedBy) {
				return refusal{errors.New("channel: want a UUID id, a known visibility and type, and a 64-hex created_by")}
			}
			added, err = d.RestoreChannel(ctx, c, store.ChannelState{Channel: ch, DeletedAt: fromUnix(r.DeletedAt)})
		} else {
			var r channelMemberJSON
			if err := strict(line, &r); err != nil {
				return refusal{err}
			}
			u, ok := parseUUID(r.Channel)
			if !ok || !isKey(r.PubKey) || !optKey(r.AddedBy) || !channel.ValidRole(channel.Role(r.Role)) {
				return refusal{errors.New("channel member: want a channel UUID, 64-hex keys and a valid role")}
			}
			added, err = d.RestoreChannelMember(ctx, c, store.ChannelMemberState{Channel: channel.ID(u), PubKey: r.PubKey,
				Role: channel.Role(r.Role), JoinedAt: time.Unix(r.JoinedAt, 0).UTC(), AddedBy: r.AddedBy})
		}
	case TypeName:
		var r nameJSON
		if err := strict(line, &r); err != nil {
			return refusal{err}
		}
		d, ok := im.dst.(NameDestination)
		if !ok {
			return lacks("NIP-05 names")
		}
		if !isKey(r.PubKey) {
			return refusal{errors.New("name: want a 64-hex pubkey")}
		}
		added, err = d.RestoreName(ctx, c, store.NameState{PubKey: r.PubKey, Name: r.Name, UpdatedAt: time.Unix(r.UpdatedAt, 0).UTC()})
	case TypeRestriction, TypeReport, TypeModerationAction:
		d, ok := im.dst.(ModerationDestination)
		if !ok {
			return lacks("moderation state")
		}
		switch typ {
		case TypeRestriction:
			var r restrictionJSON
			if err := strict(line, &r); err != nil {
				return refusal{err}
			}
			added, err = d.RestoreRestriction(ctx, c, store.Restriction{PubKey: r.PubKey, Kind: store.RestrictionKind(r.Kind),
				Until: fromUnix(r.Until), Reason: r.Reason, Actor: r.Actor, CreatedAt: time.Unix(r.CreatedAt, 0).UTC()})
		case TypeReport:
			var r reportJSON
			if err := strict(line, &r); err != nil {
				return refusal{err}
			}
			added, err = d.RestoreReport(ctx, c, store.Report{ID: r.ID, Reporter: r.Reporter, TargetPubKey: r.TargetPubKey,
				TargetEvent: r.TargetEvent, Type: r.ReportType, CreatedAt: r.CreatedAt, Raw: []byte(r.Event), Status: store.ReportStatus(r.Status),
				ReceivedAt: time.Unix(r.ReceivedAt, 0).UTC(), ResolvedBy: r.ResolvedBy, ResolvedAt: fromUnix(r.ResolvedAt)})
		default:
			var r actionJSON
			if err := strict(line, &r); err != nil {
				return refusal{err}
			}
			added, err = d.RestoreModerationAction(ctx, c, store.ModerationAction{Action: r.Action, Actor: r.Actor, Target: r.Target,
				Reason: r.Reason, Until: fromUnix(r.Until), Status: store.ReportStatus(r.Status), EventID: r.EventID,
				CreatedAt: time.Unix(r.CreatedAt, 0).UTC()})
		}
	case TypeWorkflow, TypeWorkflowRun, TypeApproval, TypeScheduleFire:
		d, ok := im.dst.(WorkflowDestination)
		if !ok {
			return lacks("workflows")
		}
		added, err = restoreWorkflowRecord(ctx, d, typ, c, line)
		if errors.Is(err, workflow.ErrNotFound) {
			err = refusal{fmt.Errorf("%s: its workflow or run is not in the destination (it comes after them in an export)", typ)}
		}
	case TypeAudit:
		var r auditJSON
		if err := strict(line, &r); err != nil {
			return refusal{err}
		}
		if _, ok := im.dst.(AuditDestination); !ok {
			return lacks("audit chains")
		}
		e, err := r.entry(c)
		if err != nil {
			return refusal{err}
		}
		v := im.chains[host]
		if v == nil {
			v = &audit.Verifier{}
			im.chains[host] = v
		}
		if !v.Add(e) {
			_, why := v.Broken()
			return refusal{fmt.Errorf("audit entry seq %d does not continue the chain: %s", e.Seq, why)}
		}
		if im.auditH != host {
			if err := im.flushAudit(); err != nil {
				return err
			}
			im.auditH, im.auditC = host, c
		}
		im.auditQ = append(im.auditQ, e)
		if len(im.auditQ) >= store.MaxAuditPage {
			return im.flushAudit()
		}
		return nil
	}
	if err != nil {
		return asRefusal(err)
	}
	if added {
		im.stats.Added[typ]++
	}
	return nil
}

// flush stores what is pending.
func (im *importer) flush() error {
	if err := im.flushAudit(); err != nil {
		return err
	}
	return im.flushEvents()
}

func (im *importer) flushAudit() error {
	if len(im.auditQ) == 0 {
		return nil
	}
	d := im.dst.(AuditDestination)
	n, err := d.RestoreAudit(im.ctx, im.auditC, im.auditQ)
	im.auditQ = im.auditQ[:0]
	if err != nil {
		return asRefusal(fmt.Errorf("audit chain of %s: %w", im.auditH, err))
	}
	im.stats.Added[TypeAudit] += int64(n)
	return nil
}

// flushEvents verifies the pending batch with Workers goroutines (batch
// verification, 64 signatures at a time) and stores it: through the
// destination's RestoreEvents when it has one (one write per run of events
// of one community), else by Workers concurrent RestoreEvents. Without KeepGoing, the first refused event (a bad id or
// signature, or a malformed h tag) stops the import: the events before it
// are stored, none after it.
func (im *importer) flushEvents() error {
	if len(im.events) == 0 {
		return nil
	}
	batch := im.events
	im.events, im.eventBytes = im.events[:0:0], 0
	results := make([]error, len(batch))
	// Signatures are checked in chunks, each in one batch verification.
	const chunk = 64
	im.parallel((len(batch)+chunk-1)/chunk, func(c int) {
		part := batch[c*chunk : min((c+1)*chunk, len(batch))]
		events := make([]*nostr.Event, len(part))
		for i := range part {
			events[i] = part[i].ev
		}
		for i, err := range im.v.VerifyBatch(events) {
			ev := events[i]
			if err != nil {
				results[c*chunk+i] = refusal{fmt.Errorf("event %s: %w", ev.ID, err)}
			} else if _, _, err := channel.OfEvent(ev); err != nil {
				// What either store refuses; checked here so that the
				// events after it are not stored either.
				results[c*chunk+i] = refusal{fmt.Errorf("event %s: %w", ev.ID, err)}
			}
		}
	})
	cut := len(batch)
	if !im.opts.KeepGoing {
		for i, err := range results {
			if err != nil {
				cut = i
				break
			}
		}
	}
	if err := im.store(batch[:cut], results); err != nil {
		return err
	}
	for i, err := range results {
		if i > cut || (i == cut && err == nil) {
			break
		}
		switch {
		case err == nil:
			im.stats.New++
		case errors.Is(err, store.ErrDuplicate):
			im.stats.Duplicate++
		case store.IsOutcome(err):
			im.stats.Obsolete++
		case isRefusal(err), errors.Is(err, channel.ErrInvalidTag):
			im.stats.Refused++
			if !isRefusal(err) {
				err = fmt.Errorf("event %s: %w", batch[i].ev.ID, err)
			}
			le := &LineError{Line: batch[i].line, Err: err}
			if !im.opts.KeepGoing {
				return le
			}
			if im.opts.OnRefused != nil {
				im.opts.OnRefused(le)
			}
		default:
			return fmt.Errorf("transfer: import: line %d: store event %s: %w", batch[i].line, batch[i].ev.ID, err)
		}
	}
	return nil
}

// store restores the events of batch not yet refused in results, setting
// each one's outcome there.
func (im *importer) store(batch []pendingEvent, results []error) error {
	if bd, ok := im.dst.(EventBatchDestination); ok && !im.oneByOne {
		evs := make([]*nostr.Event, 0, len(batch))
		at := make([]int, 0, len(batch))
		for i := 0; i < len(batch); {
			c := batch[i].c
			evs, at = evs[:0], at[:0]
			for ; i < len(batch) && batch[i].c == c; i++ {
				if results[i] == nil {
					evs, at = append(evs, batch[i].ev), append(at, i)
				}
			}
			if len(evs) == 0 {
				continue
			}
			out, err := bd.RestoreEvents(im.ctx, c, evs)
			if errors.Is(err, errors.ErrUnsupported) {
				im.oneByOne = true
				return im.store(batch[at[0]:], results[at[0]:])
			}
			if err != nil {
				return fmt.Errorf("transfer: import: lines %d to %d: store events: %w", batch[at[0]].line, batch[at[len(at)-1]].line, err)
			}
			for j, r := range out {
				results[at[j]] = r
			}
		}
		return nil
	}
	im.parallel(len(batch), func(i int) {
		if results[i] == nil {
			results[i] = im.dst.RestoreEvent(im.ctx, batch[i].c, batch[i].ev)
		}
	})
	return nil
}

// parallel runs fn(0..n-1) on up to Workers goroutines.
func (im *importer) parallel(n int, fn func(i int)) {
	if n == 0 {
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(im.opts.Workers, n) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// relayKey restores the deployment's relay key: stored when the
// destination holds none, accepted when it holds the same, refused
// (ErrRelayKeyDiffers) when it holds another, which it keeps.
func (im *importer) relayKey(line []byte) error {
	var r relayKeyJSON
	if err := strict(line, &r); err != nil {
		return refusal{err}
	}
	sk, err := nostr.ParseSecretKeyAny(r.SecretKey)
	if err != nil || !nostr.IsLowerHex(r.SecretKey, 64) {
		return refusal{errors.New("relay_key: want a 64-hex secret_key")}
	}
	if r.PubKey != "" && r.PubKey != sk.PublicKey() {
		return refusal{errors.New("relay_key: pubkey is not the secret key's")}
	}
	ks, ok := im.dst.(RelayKeyStore)
	if !ok {
		return refusal{errors.New("the destination keeps no relay key")}
	}
	im.stats.Read[TypeRelayKey]++
	had, err := ks.HasRelayKey(im.ctx)
	if err != nil {
		return fmt.Errorf("transfer: import: relay key: %w", err)
	}
	got, err := ks.RelayKey(im.ctx, sk)
	if err != nil {
		return fmt.Errorf("transfer: import: relay key: %w", err)
	}
	if got != sk {
		return refusal{fmt.Errorf("%w (public key %s; the export's is %s): import into a fresh store, or export without the relay key",
			ErrRelayKeyDiffers, got.PublicKey(), sk.PublicKey())}
	}
	if !had {
		im.stats.Added[TypeRelayKey]++
	}
	return nil
}
