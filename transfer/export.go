package transfer

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// EventSource reads a community's stored events (store.EventStore.Query).
type EventSource interface {
	Query(ctx context.Context, c tenant.CommunityID, f nostr.Filter) iter.Seq2[store.Record, error]
}

// CommunitySource lists every community with its hosts and settings.
type CommunitySource interface {
	CommunityStates(ctx context.Context) ([]store.CommunityState, error)
}

// Source is what Export needs of a backend. A Source may also implement
// MemberSource, ChannelSource, NameSource, ModerationSource and
// AuditSource; Export writes the state of those it implements (store/embedded
// and store/postgres implement them all).
type Source interface {
	EventSource
	CommunitySource
}

// MemberSource lists a community's members.
type MemberSource interface {
	ExportMembers(ctx context.Context, c tenant.CommunityID, fn func(store.MemberState) error) error
}

// ChannelSource lists a community's channels and their members.
type ChannelSource interface {
	ExportChannels(ctx context.Context, c tenant.CommunityID, fn func(store.ChannelState) error) error
	ExportChannelMembers(ctx context.Context, c tenant.CommunityID, fn func(store.ChannelMemberState) error) error
}

// NameSource lists a community's NIP-05 names.
type NameSource interface {
	ExportNames(ctx context.Context, c tenant.CommunityID, fn func(store.NameState) error) error
}

// ModerationSource lists a community's moderation state.
type ModerationSource interface {
	ExportRestrictions(ctx context.Context, c tenant.CommunityID, fn func(store.Restriction) error) error
	ExportReports(ctx context.Context, c tenant.CommunityID, fn func(store.Report) error) error
	ExportModerationActions(ctx context.Context, c tenant.CommunityID, fn func(store.ModerationAction) error) error
}

// AuditSource reads a community's audit chain (store.AuditLog).
type AuditSource interface {
	AuditEntries(ctx context.Context, c tenant.CommunityID, afterSeq int64, limit int) ([]audit.Entry, error)
	SyncAudit(ctx context.Context) error
}

// ExportOptions selects what Export writes.
type ExportOptions struct {
	// Hosts, when not empty, limits the export to the communities that
	// have one of these hosts (normalized) as host or alias; every one
	// must name a community (else ErrUnknownHost). Empty: every community.
	Hosts []string
	// Since and Until, when not zero, bound the exported events' created_at
	// (inclusive, unix seconds). They apply to events only: the state
	// records are always complete.
	Since, Until int64
	// RelayKey, when set, is written as a relay_key record after the
	// header: the deployment's relay master key, a secret. Leave it nil
	// unless the export moves the deployment itself.
	RelayKey *nostr.SecretKey
}

// Counts are the records an export or import went through, by type.
type Counts map[string]int64

// ExportStats says what Export wrote.
type ExportStats struct {
	Communities int64
	Events      int64
	Records     Counts // every record but the header and the end record, by type
	Bytes       int64
}

// ErrUnknownHost: a host given to Export names no community.
var ErrUnknownHost = errors.New("transfer: no community has this host")

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// exporter writes one export.
type exporter struct {
	ctx   context.Context
	out   *countingWriter
	enc   *json.Encoder
	stats ExportStats
	buf   []byte
}

// record writes v (a record struct whose "type" is typ) as a line.
func (x *exporter) record(typ string, v any) error {
	if err := x.enc.Encode(v); err != nil {
		return fmt.Errorf("transfer: export: %w", err)
	}
	x.stats.Records[typ]++
	return nil
}

// Export writes the communities opts selects from src to w in the export
// format (see package doc): the header, then for each community (oldest
// first) its community record, state records and audit chain, then its
// events newest first, and finally the end record. The output depends
// only on the stored state: exporting the same state twice, from either
// backend, gives the same bytes.
func Export(ctx context.Context, w io.Writer, src Source, opts ExportOptions) (ExportStats, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	x := &exporter{ctx: ctx, out: &countingWriter{w: bw}, stats: ExportStats{Records: Counts{}}}
	x.enc = json.NewEncoder(x.out)
	x.enc.SetEscapeHTML(false)
	all, err := src.CommunityStates(ctx)
	if err != nil {
		return x.stats, fmt.Errorf("transfer: export: %w", err)
	}
	chosen, err := pick(all, opts.Hosts)
	if err != nil {
		return x.stats, err
	}
	if a, ok := src.(AuditSource); ok {
		if err := a.SyncAudit(ctx); err != nil {
			return x.stats, fmt.Errorf("transfer: export: %w", err)
		}
	}
	if err := x.enc.Encode(header{BuzzExport: Version}); err != nil {
		return x.stats, fmt.Errorf("transfer: export: %w", err)
	}
	if k := opts.RelayKey; k != nil {
		if err := x.record(TypeRelayKey, relayKeyJSON{Type: TypeRelayKey, SecretKey: k.Hex(), PubKey: k.PublicKey()}); err != nil {
			return x.stats, err
		}
	}
	for _, st := range chosen {
		if err := x.community(src, st, opts); err != nil {
			return x.stats, err
		}
	}
	var records int64
	for _, n := range x.stats.Records {
		records += n
	}
	if err := x.enc.Encode(endJSON{Type: TypeEnd, Communities: x.stats.Communities, Events: x.stats.Events, Records: records}); err != nil {
		return x.stats, fmt.Errorf("transfer: export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return x.stats, fmt.Errorf("transfer: export: %w", err)
	}
	x.stats.Bytes = x.out.n
	return x.stats, nil
}

// pick returns the communities of all that hosts names (all when empty).
func pick(all []store.CommunityState, hosts []string) ([]store.CommunityState, error) {
	if len(hosts) == 0 {
		return all, nil
	}
	want := map[tenant.CommunityID]bool{}
	for _, h := range hosts {
		n, err := tenant.NormalizeHost(h)
		if err != nil {
			return nil, fmt.Errorf("transfer: export: host %q: %w", h, err)
		}
		found := false
		for _, st := range all {
			if st.Host == n {
				found = true
			}
			for _, a := range st.Aliases {
				if a.Host == n {
					found = true
				}
			}
			if found {
				want[st.ID] = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %q", ErrUnknownHost, n)
		}
	}
	var out []store.CommunityState
	for _, st := range all {
		if want[st.ID] {
			out = append(out, st)
		}
	}
	return out, nil
}

// community writes one community's records.
func (x *exporter) community(src Source, st store.CommunityState, opts ExportOptions) error {
	ctx, h, c := x.ctx, st.Host, st.ID
	rec := communityJSON{Type: TypeCommunity, Host: h, ID: c.String(), Owner: st.OwnerPubKey, CreatedAt: st.CreatedAt.Unix(),
		ArchivedAt: unix(st.ArchivedAt), Access: string(st.Access), Profile: profileJSON(st.Profile), Aliases: []aliasJSON{}}
	for _, a := range st.Aliases {
		rec.Aliases = append(rec.Aliases, aliasJSON{Host: a.Host, CreatedAt: a.CreatedAt.Unix()})
	}
	if err := x.record(TypeCommunity, rec); err != nil {
		return err
	}
	x.stats.Communities++
	wrap := func(what string, err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("transfer: export %s of %s: %w", what, h, err)
	}
	if s, ok := src.(MemberSource); ok {
		if err := s.ExportMembers(ctx, c, func(m store.MemberState) error {
			return x.record(TypeMember, memberJSON{Type: TypeMember, Host: h, PubKey: m.PubKey, Role: string(m.Role), AddedAt: m.AddedAt.Unix()})
		}); err != nil {
			return wrap("members", err)
		}
	}
	if s, ok := src.(ChannelSource); ok {
		if err := s.ExportChannels(ctx, c, func(ch store.ChannelState) error {
			r := channelJSON{Type: TypeChannel, Host: h, ID: ch.ID.String(), Slug: ch.Slug, Name: ch.Name, About: ch.About, Picture: ch.Picture,
				Visibility: string(ch.Visibility), ChannelType: string(ch.Type), CreatedBy: ch.CreatedBy, CreatedAt: ch.CreatedAt,
				Closed: ch.Closed, Restricted: ch.Restricted, Hidden: ch.Hidden}
			if ch.Deleted {
				r.DeletedAt = max(1, ch.DeletedAt.Unix())
			}
			return x.record(TypeChannel, r)
		}); err != nil {
			return wrap("channels", err)
		}
		if err := s.ExportChannelMembers(ctx, c, func(m store.ChannelMemberState) error {
			return x.record(TypeChannelMember, channelMemberJSON{Type: TypeChannelMember, Host: h, Channel: m.Channel.String(), PubKey: m.PubKey,
				Role: string(m.Role), JoinedAt: m.JoinedAt.Unix(), AddedBy: m.AddedBy})
		}); err != nil {
			return wrap("channel members", err)
		}
	}
	if s, ok := src.(NameSource); ok {
		if err := s.ExportNames(ctx, c, func(n store.NameState) error {
			return x.record(TypeName, nameJSON{Type: TypeName, Host: h, PubKey: n.PubKey, Name: n.Name, UpdatedAt: n.UpdatedAt.Unix()})
		}); err != nil {
			return wrap("names", err)
		}
	}
	if s, ok := src.(ModerationSource); ok {
		if err := s.ExportRestrictions(ctx, c, func(r store.Restriction) error {
			return x.record(TypeRestriction, restrictionJSON{Type: TypeRestriction, Host: h, PubKey: r.PubKey, Kind: string(r.Kind),
				Until: unix(r.Until), Reason: r.Reason, Actor: r.Actor, CreatedAt: r.CreatedAt.Unix()})
		}); err != nil {
			return wrap("restrictions", err)
		}
		if err := s.ExportReports(ctx, c, func(r store.Report) error {
			if !json.Valid(r.Raw) {
				return fmt.Errorf("report %s: stored event is not JSON", r.ID)
			}
			return x.record(TypeReport, reportJSON{Type: TypeReport, Host: h, ID: r.ID, Reporter: r.Reporter, TargetPubKey: r.TargetPubKey,
				TargetEvent: r.TargetEvent, ReportType: r.Type, CreatedAt: r.CreatedAt, Status: string(r.Status), ReceivedAt: r.ReceivedAt.Unix(),
				ResolvedBy: r.ResolvedBy, ResolvedAt: unix(r.ResolvedAt), Event: r.Raw})
		}); err != nil {
			return wrap("reports", err)
		}
		if err := s.ExportModerationActions(ctx, c, func(a store.ModerationAction) error {
			return x.record(TypeModerationAction, actionJSON{Type: TypeModerationAction, Host: h, Action: a.Action, Actor: a.Actor, Target: a.Target,
				Reason: a.Reason, Until: unix(a.Until), Status: string(a.Status), EventID: a.EventID, CreatedAt: a.CreatedAt.Unix()})
		}); err != nil {
			return wrap("moderation actions", err)
		}
	}
	if s, ok := src.(WorkflowSource); ok {
		if err := x.exportWorkflows(s, h, c, wrap); err != nil {
			return err
		}
	}
	if s, ok := src.(AuditSource); ok {
		var after int64
		for {
			page, err := s.AuditEntries(ctx, c, after, store.MaxAuditPage)
			if err != nil {
				return wrap("audit chain", err)
			}
			for _, e := range page {
				if err := x.record(TypeAudit, auditJSON{Type: TypeAudit, Host: h, Seq: e.Seq, PrevHash: hex.EncodeToString(e.PrevHash[:]),
					Hash: hex.EncodeToString(e.Hash[:]), Version: e.Version, Action: string(e.Action), Actor: e.Actor, Object: e.Object,
					Detail: e.Detail, TimeUS: e.Time.UnixMicro()}); err != nil {
					return err
				}
				after = e.Seq
			}
			if len(page) < store.MaxAuditPage {
				break
			}
		}
	}
	var f nostr.Filter
	if opts.Since != 0 {
		f.Since = &opts.Since
	}
	if opts.Until != 0 {
		f.Until = &opts.Until
	}
	prefix := []byte(`{"type":"event","host":` + strconv.Quote(h) + `,"event":`)
	for r, err := range src.Query(ctx, c, f) {
		if err != nil {
			return wrap("events", err)
		}
		x.buf = append(append(append(x.buf[:0], prefix...), r.Raw...), "}\n"...)
		if _, err := x.out.Write(x.buf); err != nil {
			return fmt.Errorf("transfer: export: %w", err)
		}
		x.stats.Events++
		x.stats.Records[TypeEvent]++
	}
	return nil
}
