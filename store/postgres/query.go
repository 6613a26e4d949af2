package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// errNothing marks a filter that can match no event (an empty list, an
// impossible time window, or only malformed ids/authors).
var errNothing = errors.New("filter matches nothing")

const setCommunitySQL = `SELECT set_config('buzz.community_id', $1, true)`

// predicate is a filter compiled to SQL conditions on events e, with the
// dimension a LIMIT query is best driven by kept apart.
type predicate struct {
	ids      [][]byte
	authors  [][]byte
	kinds    []int32
	since    *int64
	until    *int64
	tags     []tagCond // indexed names, sorted by name
	jsonTags []tagCond // other names (never produced by ParseFilter)
	// channels, unless nil, restricts rows to community-wide events plus
	// these channels (channel.Scope; AllChannels leaves it nil).
	channels *[][16]byte
	// tsquery, unless "", is the filter's search as to_tsquery input.
	tsquery string
}

// withScope restricts p to the access scope sc.
func (p *predicate) withScope(sc channel.Scope) {
	if sc.All() {
		return
	}
	ids := make([][16]byte, len(sc.Channels()))
	for i, id := range sc.Channels() {
		ids[i] = id
	}
	p.channels = &ids
}

type tagCond struct {
	name   string
	keys   [][]byte // event_tags values (indexed names)
	values []string // sanitized values (jsonb fallback)
}

func compileFilter(f *nostr.Filter) (*predicate, error) {
	p := &predicate{since: f.Since, until: f.Until}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		return nil, errNothing
	}
	if f.Search != "" {
		q, err := search.FromFilter(f)
		if err != nil {
			return nil, errNothing // an invalid query matches nothing
		}
		p.tsquery = tsqueryText(q)
	}
	var err error
	if f.IDs != nil {
		if p.ids, err = hexList(f.IDs); err != nil {
			return nil, err
		}
	}
	if f.Authors != nil {
		if p.authors, err = hexList(f.Authors); err != nil {
			return nil, err
		}
	}
	if f.Kinds != nil {
		for _, k := range f.Kinds {
			if k >= 0 && k <= nostr.MaxKind && !slices.Contains(p.kinds, int32(k)) {
				p.kinds = append(p.kinds, int32(k))
			}
		}
		if len(p.kinds) == 0 {
			return nil, errNothing
		}
	}
	names := make([]string, 0, len(f.Tags))
	for n, vals := range f.Tags {
		if vals != nil {
			if len(vals) == 0 {
				return nil, errNothing
			}
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		vals := f.Tags[n]
		if isIndexedTagName(n) {
			tc := tagCond{name: n}
			seen := map[string]bool{}
			for _, v := range vals {
				k := tagKey(v)
				if !seen[string(k)] {
					seen[string(k)] = true
					tc.keys = append(tc.keys, k)
				}
			}
			p.tags = append(p.tags, tc)
		} else {
			tc := tagCond{name: sqlText(n)}
			for _, v := range vals {
				tc.values = append(tc.values, sqlText(v))
			}
			p.jsonTags = append(p.jsonTags, tc)
		}
	}
	return p, nil
}

// hexList decodes the well-formed 64-hex entries; malformed ones can match
// no event. An all-malformed (or empty) list matches nothing.
func hexList(in []string) ([][]byte, error) {
	out := make([][]byte, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if b, ok := nostr.DecodeHex32(s); ok && !seen[s] {
			seen[s] = true
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, errNothing
	}
	return out, nil
}

// conds returns the conditions on events e, except the one on the driving
// dimension skip ("ids", "authors", "kinds", a tag name, or "").
func (p *predicate) conds(skip string) sq.And {
	and := scopeOn("e", p)
	if p.ids != nil && skip != "ids" {
		and = append(and, eqAny("e.id", p.ids))
	}
	if p.authors != nil && skip != "authors" {
		and = append(and, eqAny("e.pubkey", p.authors))
	}
	if p.kinds != nil && skip != "kinds" {
		and = append(and, eqAny("e.kind", p.kinds))
	}
	if p.since != nil {
		and = append(and, sq.Expr("e.created_at >= ?", *p.since))
	}
	if p.until != nil {
		and = append(and, sq.Expr("e.created_at <= ?", *p.until))
	}
	for _, t := range p.tags {
		if t.name == skip {
			continue
		}
		// OFFSET 0 keeps the EXISTS a subplan run per event (one probe of
		// event_tags_key, every column bound): pulled up into a semi-join,
		// it was planned without statistics as a scan of every row of the
		// tag value per event.
		and = append(and, sq.Expr(`EXISTS (SELECT 1 FROM event_tags t WHERE t.community_id = e.community_id
  AND t.name = ? AND ? AND t.created_at = e.created_at AND t.event_id = e.id OFFSET 0)`, t.name, eqAny("t.value", t.keys)))
	}
	for _, t := range p.jsonTags {
		and = append(and, sq.Expr(`EXISTS (SELECT 1 FROM jsonb_array_elements(e.tags) AS x(tag)
  WHERE jsonb_typeof(x.tag) = 'array' AND x.tag->>0 = ? AND x.tag->>1 = ANY(?))`, t.name, t.values))
	}
	if p.tsquery != "" {
		// The match itself is searchFrom's (event_search); gift wraps are
		// never indexed there, and never match here either, nor do the
		// author-only kinds (nostr.IsSearchable).
		and = append(and, sq.Expr("e.kind <> ALL(?)", unsearchableKinds))
	}
	return and
}

// eqAny is "col = ?" for one value (so the planner can read an index in
// order) and "col = ANY(?)" for several.
func eqAny[T any](col string, vals []T) sq.Sqlizer {
	if len(vals) == 1 {
		return sq.Expr(col+" = ?", vals[0])
	}
	return sq.Expr(col+" = ANY(?)", vals)
}

// live are the conditions every read carries: the community, not deleted,
// not expired.
func live(c tenant.CommunityID, now int64) sq.And {
	return liveWith(c, now, "e.deleted_at IS NULL")
}

// liveWith is live with notDeleted as its "not deleted" condition.
func liveWith(c tenant.CommunityID, now int64, notDeleted string) sq.And {
	return sq.And{
		sq.Expr("e.community_id = ?", c.UUID()),
		sq.Expr(notDeleted),
		sq.Expr("(e.expires_at IS NULL OR e.expires_at > ?)", now),
	}
}

// liveUnauthored is live for a filter that names no authors: the same
// conditions, with deleted_at IS NULL wrapped in IS TRUE, which the
// planner does not take as implying the predicate of the partial author
// index (events_author_idx), so that index cannot be chosen, and whose
// selectivity it still takes from the column's statistics. Without
// statistics (a partition not analysed yet) the planner costed that index,
// bound by community_id alone and filtering created_at inside it, below
// the primary key for a since/until window: it read every event of the
// community (546 buffers for a window of 33 of 20,000 events, against 30
// through the primary key, which it chooses once analysed).
func liveUnauthored(c tenant.CommunityID, now int64) sq.And {
	return liveWith(c, now, "(e.deleted_at IS NULL) IS TRUE")
}

const cols = "e.id, e.created_at, e.raw"

// buildQuery compiles one filter to a SELECT of (id, created_at, raw) in
// created_at DESC, id ASC order. With a limit, a filter listing several
// authors, kinds or tag values is run as a LATERAL join over that list, each
// branch reading its own index in order and stopping after limit rows,
// instead of collecting and sorting every matching row; a single tag value
// drives the query from the event_tags index.
func buildQuery(c tenant.CommunityID, f *nostr.Filter, now int64) (string, []any, error) {
	return buildScopedQuery(c, f, now, channel.AllChannels())
}

// buildScopedQuery is buildQuery restricted to the access scope sc: the
// scope is one more condition of every branch, so limits count only rows
// in scope.
func buildScopedQuery(c tenant.CommunityID, f *nostr.Filter, now int64, sc channel.Scope) (string, []any, error) {
	p, err := compileFilter(f)
	if err != nil {
		return "", nil, err
	}
	p.withScope(sc)
	limit := uint64(f.Limit)
	if !f.LimitSet {
		limit = math.MaxInt64 // a tag-driven query without a limit
	}
	// The plain reads below (no list to fan out over) keep the partial
	// author index for filters that name authors (see liveUnauthored).
	plain := live(c, now)
	if p.authors == nil {
		plain = liveUnauthored(c, now)
	}
	var q sq.Sqlizer
	switch {
	case p.tsquery != "":
		q = searchQuery(c, now, p, f)
	case p.ids != nil:
		q = byIDs(c, now, p, f.LimitSet, limit)
	case !f.LimitSet && (p.authors != nil || len(p.tags) == 0):
		q = sq.Select(cols).From("events e").Where(plain).Where(p.conds("")).OrderBy(order)
	case len(p.authors) > 1:
		q = fanOut(len(p.authors), func(v any) sq.Sqlizer {
			return sq.Select(cols).From("events e").Where(live(c, now)).Where(sq.Expr("e.pubkey = ?", v)).
				Where(p.conds("authors")).OrderBy(order).Limit(limit)
		}, func(i int) any { return p.authors[i] }, "?::bytea[]", p.authors, limit, false)
	case p.authors == nil && len(p.tags) > 0 && len(p.tags[0].keys) == 1:
		t := p.tags[0]
		q = tagDriven(c, now, p, sq.Expr("t.value = ?", t.keys[0]), limit)
	case p.authors == nil && len(p.tags) > 0:
		keys := p.tags[0].keys
		q = fanOut(len(keys), func(v any) sq.Sqlizer {
			return tagDriven(c, now, p, sq.Expr("t.value = ?", v), limit)
		}, func(i int) any { return keys[i] }, "?::bytea[]", keys, limit, true)
	case p.authors == nil && len(p.tags) == 0 && p.kinds != nil && p.channels != nil:
		q = scopedKinds(c, now, p, limit)
	case p.authors == nil && len(p.kinds) > 1:
		q = fanOut(len(p.kinds), func(v any) sq.Sqlizer {
			return sq.Select(cols).From("events e").Where(live(c, now)).Where(sq.Expr("e.kind = ?", v)).
				Where(p.conds("kinds")).OrderBy(order).Limit(limit)
		}, func(i int) any { return p.kinds[i] }, "?::integer[]", p.kinds, limit, false)
	default:
		q = sq.Select(cols).From("events e").Where(plain).Where(p.conds("")).OrderBy(order).Limit(limit)
	}
	sqlStr, args, err := q.ToSql()
	if err != nil {
		return "", nil, fmt.Errorf("postgres: build query: %w", err)
	}
	sqlStr, err = sq.Dollar.ReplacePlaceholders(sqlStr)
	return sqlStr, args, err
}

const order = "e.created_at DESC, e.id"

// tagDriven reads the first indexed tag condition from event_tags in index
// order and reaches each tag row's event by one primary-key probe carrying
// every other condition of p. The probe is a LATERAL subquery with LIMIT 1,
// which PostgreSQL cannot flatten into a join: without statistics (a fresh
// or freshly filled partition; autovacuum never analyses the partitioned
// parents) a plain join was planned as a nested loop rescanning every
// event of the community per tag row through an index bound only by
// community_id, for seconds to minutes. In the subquery the
// event's whole key is bound, so an index probe is the only sensible plan
// whatever the estimates, and the probe touches one partition.
func tagDriven(c tenant.CommunityID, now int64, p *predicate, value sq.Sqlizer, limit uint64) sq.SelectBuilder {
	return tagRows(c, now, p, cols, value).OrderBy("t.created_at DESC, t.event_id").Limit(limit)
}

// tagRows selects sel (columns of the event, alias e: id, created_at, raw)
// of the live events of c matching p whose first indexed tag condition
// holds with value, driven by event_tags (alias t).
func tagRows(c tenant.CommunityID, now int64, p *predicate, sel string, value sq.Sqlizer) sq.SelectBuilder {
	t := p.tags[0]
	return sq.Select(sel).From("event_tags t").
		JoinClause(sq.Expr("CROSS JOIN LATERAL (?) AS e", keyProbe("t.community_id", "t.created_at", "t.event_id"))).
		Where(sq.Expr("t.community_id = ? AND t.name = ?", c.UUID(), t.name)).Where(value).
		Where(timeOn("t", p)).
		Where(live(c, now)).Where(p.conds(t.name))
}

// tagOnly reports whether a COUNT of p can be answered from event_tags
// alone: p is driven by its one tag condition, and every other condition
// it has (kinds, since/until, the access scope) is on columns the tag rows
// carry. Tag rows exist only for live events (migration 170), so the rows
// need no probe of events; expiry is checked on the row.
func (p *predicate) tagOnly() bool {
	return p.ids == nil && p.authors == nil && len(p.tags) == 1 && len(p.jsonTags) == 0 && p.tsquery == ""
}

// tagCountRows selects sel (columns of alias t: created_at, event_id,
// kind) of the tag rows of c's live events matching p, which must be
// tagOnly. It reads only event_tags: an index-only scan of event_tags_key,
// which includes kind, expires_at and channel_id, once the pages are
// all-visible.
func tagCountRows(c tenant.CommunityID, now int64, p *predicate, sel string) sq.SelectBuilder {
	t := p.tags[0]
	q := sq.Select(sel).From("event_tags t").
		Where(sq.Expr("t.community_id = ? AND t.name = ?", c.UUID(), t.name)).Where(eqAny("t.value", t.keys)).
		Where(timeOn("t", p)).
		Where(sq.Expr("(t.expires_at IS NULL OR t.expires_at > ?)", now)).
		Where(scopeOn("t", p))
	if p.kinds != nil {
		q = q.Where(eqAny("t.kind", p.kinds))
	}
	return q
}

// keyProbe selects the event (every column, alias e) whose primary key is
// (community, createdAt, id) — SQL expressions of the enclosing query — as
// a LATERAL subquery with LIMIT 1, which PostgreSQL cannot flatten into a
// join. It carries no other condition: the caller filters its one row. So
// the only indexes it can use are those led by the key's columns (the
// partial author index, whose predicate it does not imply, cannot be), and
// the primary key, every column bound, is the cheapest of them whatever
// the statistics.
func keyProbe(community, createdAt, id string) sq.SelectBuilder {
	return sq.Select("e.*").From("events e").
		Where(fmt.Sprintf("e.community_id = %s AND e.created_at = %s AND e.id = %s", community, createdAt, id)).Limit(1)
}

// byIDs reads the events of a filter with ids: one probe of
// events_id_idx per id (a LATERAL subquery with LIMIT 1 over the list,
// bound on (community_id, id) and carrying no other condition, so no
// index bound by community_id alone can look cheaper without statistics),
// filtered, newest first.
func byIDs(c tenant.CommunityID, now int64, p *predicate, limited bool, limit uint64) sq.Sqlizer {
	event := sq.Select("e.*").From("events e").Where(sq.Expr("e.community_id = ? AND e.id = k.v", c.UUID())).Limit(1)
	q := "SELECT " + cols + " FROM unnest(?::bytea[]) AS k(v) CROSS JOIN LATERAL (?) AS e WHERE ? ORDER BY " + order
	where := sq.And{live(c, now), p.conds("ids")}
	if limited {
		return sq.Expr(q+" LIMIT ?", p.ids, event, where, limit)
	}
	return sq.Expr(q, p.ids, event, where)
}

// maxUnionBranches bounds the UNION ALL form of fanOut; longer lists use a
// LATERAL join over the array.
const maxUnionBranches = 16

// fanOut runs one branch per list element (each reading its index in
// order, at most limit rows) and merges them newest first; distinct drops
// an event reached through two elements. Up to maxUnionBranches elements it
// is a UNION ALL, which PostgreSQL merges lazily (Merge Append): about
// limit rows are fetched in all, not limit per branch. Beyond, it is a
// LATERAL join over the array (one statement shape for any length).
func fanOut(n int, branch func(v any) sq.Sqlizer, elem func(i int) any, listType string, list any, limit uint64, distinct bool) sq.Sqlizer {
	sel := "x.id, x.created_at, x.raw"
	if distinct {
		sel = "DISTINCT ON (x.created_at, x.id) " + sel
	}
	if n <= maxUnionBranches {
		parts := make([]string, n)
		args := make([]any, 0, n+1)
		for i := range n {
			parts[i] = "(?)"
			args = append(args, branch(elem(i)))
		}
		args = append(args, limit)
		return sq.Expr("SELECT "+sel+" FROM ("+strings.Join(parts, " UNION ALL ")+") AS x ORDER BY x.created_at DESC, x.id LIMIT ?", args...)
	}
	return sq.Expr("SELECT "+sel+" FROM unnest("+listType+") AS k(v) CROSS JOIN LATERAL (?) AS x ORDER BY x.created_at DESC, x.id LIMIT ?",
		list, branch(sq.Expr("k.v")), limit)
}

// scopedKinds runs a channel-scoped filter driven by its kinds as one
// branch per (kind, channel of the scope) and one per (kind, community-wide),
// each an equality on events_kind_channel_idx read in order and stopped at
// limit. The branches are disjoint, so no row is reached twice. Up to
// maxUnionBranches branches they are a UNION ALL merged lazily; beyond, two
// LATERAL joins (over the zipped (kind, channel) pairs and over the kinds)
// whose rows are sorted once.
func scopedKinds(c tenant.CommunityID, now int64, p *predicate, limit uint64) sq.Sqlizer {
	rest := *p
	rest.kinds, rest.channels = nil, nil
	chans := *p.channels
	// The community-wide branch orders by channel_id first (all NULL, so
	// the same order): IS NULL makes no equivalence class, so without it the
	// planner, estimating kind and channel_id as independent, may walk
	// events_kind_idx and filter out every row of a channel-only kind; this
	// order only events_kind_channel_idx delivers without a sort.
	branch := func(kind, ch sq.Sqlizer, community bool) sq.SelectBuilder {
		o := order
		if community {
			o = "e.channel_id, " + order
		}
		return sq.Select(cols).From("events e").Where(live(c, now)).Where(kind).Where(ch).
			Where(rest.conds("")).OrderBy(o).Limit(limit)
	}
	const outer = "SELECT x.id, x.created_at, x.raw FROM ("
	const tail = ") AS x ORDER BY x.created_at DESC, x.id LIMIT ?"
	if n := len(p.kinds) * (len(chans) + 1); n <= maxUnionBranches {
		parts := make([]string, 0, n)
		args := make([]any, 0, n+1)
		for _, k := range p.kinds {
			parts = append(parts, "(?)")
			args = append(args, branch(sq.Expr("e.kind = ?", k), sq.Expr("e.channel_id IS NULL"), true))
			for _, ch := range chans {
				parts = append(parts, "(?)")
				args = append(args, branch(sq.Expr("e.kind = ?", k), sq.Expr("e.channel_id = ?::uuid", ch), false))
			}
		}
		args = append(args, limit)
		return sq.Expr(outer+strings.Join(parts, " UNION ALL ")+tail, args...)
	}
	pairKinds := make([]int32, 0, len(p.kinds)*len(chans))
	pairChans := make([][16]byte, 0, len(p.kinds)*len(chans))
	for _, k := range p.kinds {
		for _, ch := range chans {
			pairKinds = append(pairKinds, k)
			pairChans = append(pairChans, ch)
		}
	}
	return sq.Expr(outer+
		"SELECT y.* FROM unnest(?::integer[], ?::uuid[]) AS k(kind, ch) CROSS JOIN LATERAL (?) AS y"+
		" UNION ALL SELECT y.* FROM unnest(?::integer[]) AS k(kind) CROSS JOIN LATERAL (?) AS y"+tail,
		pairKinds, pairChans, branch(sq.Expr("e.kind = k.kind"), sq.Expr("e.channel_id = k.ch"), false),
		p.kinds, branch(sq.Expr("e.kind = k.kind"), sq.Expr("e.channel_id IS NULL"), true), limit)
}

// scopeOn is p's access scope as conditions on the channel_id of alias
// (events, or event_tags, whose rows carry their event's channel).
func scopeOn(alias string, p *predicate) sq.And {
	switch {
	case p.channels == nil:
		return nil
	case len(*p.channels) == 0:
		return sq.And{sq.Expr(alias + ".channel_id IS NULL")}
	default:
		return sq.And{sq.Expr("("+alias+".channel_id IS NULL OR "+alias+".channel_id = ANY(?::uuid[]))", *p.channels)}
	}
}

// timeOn repeats since/until on the event_tags alias, so the tag index
// range-scans the window.
func timeOn(alias string, p *predicate) sq.And {
	var and sq.And
	if p.since != nil {
		and = append(and, sq.Expr(alias+".created_at >= ?", *p.since))
	}
	if p.until != nil {
		and = append(and, sq.Expr(alias+".created_at <= ?", *p.until))
	}
	return and
}

// inCommunity runs fn on a pooled connection inside one implicit
// transaction whose buzz.community_id is c: the statements fn queues are
// pipelined after set_config in a single round trip.
func (s *Store) inCommunity(ctx context.Context, c tenant.CommunityID, b *pgx.Batch, fn func(pgx.BatchResults) error) (err error) {
	defer func() { err = withCtxErr(ctx, err) }()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	full := &pgx.Batch{}
	full.Queue(setCommunitySQL, c.String())
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	br := conn.SendBatch(ctx, full)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return err
	}
	if err := fn(br); err != nil {
		_ = br.Close()
		return err
	}
	return br.Close()
}

// withCtxErr makes an error caused by ctx ending wrap ctx's error. The
// server answers a cancelled statement with its own error (SQLSTATE 57014,
// see the context watcher in Open); callers test for context.Canceled or
// context.DeadlineExceeded.
func withCtxErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w (%v)", ctx.Err(), err)
}

// Query yields the live events of community c matching f, newest first
// (created_at DESC, id ASC), at most f.Limit when f.LimitSet.
func (s *Store) Query(ctx context.Context, c tenant.CommunityID, f nostr.Filter) iter.Seq2[store.Record, error] {
	return s.QueryScoped(ctx, c, f, channel.AllChannels())
}

// QueryScoped implements store.ChannelStore: Query restricted to the
// community-wide events and the channels of sc, in SQL.
func (s *Store) QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, sc channel.Scope) iter.Seq2[store.Record, error] {
	return func(yield func(store.Record, error) bool) {
		if c.IsZero() {
			yield(store.Record{}, errors.New("postgres: query: zero community"))
			return
		}
		if f.LimitSet && f.Limit <= 0 {
			return
		}
		sqlStr, args, err := buildScopedQuery(c, &f, time.Now().Unix(), sc)
		if errors.Is(err, errNothing) {
			return
		}
		if err != nil {
			yield(store.Record{}, err)
			return
		}
		var b pgx.Batch
		b.Queue(sqlStr, args...)
		stopped := false
		err = s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			defer rows.Close()
			var id []byte
			rec := store.Record{Community: c}
			for rows.Next() {
				var raw []byte
				if err := rows.Scan(&id, &rec.CreatedAt, &raw); err != nil {
					return err
				}
				rec.ID = hex.EncodeToString(id)
				rec.Raw = raw
				if !yield(rec, nil) {
					stopped = true
					return nil
				}
			}
			return rows.Err()
		})
		if err != nil && !stopped {
			yield(store.Record{}, fmt.Errorf("postgres: query: %w", err))
		}
	}
}

// Count returns the number of distinct live events of c matching any filter.
func (s *Store) Count(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter) (int64, error) {
	return s.CountScoped(ctx, c, filters, channel.AllChannels())
}

// CountScoped implements store.ChannelStore: Count restricted to the
// community-wide events and the channels of sc.
func (s *Store) CountScoped(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter, sc channel.Scope) (int64, error) {
	if c.IsZero() {
		return 0, errors.New("postgres: count: zero community")
	}
	sqlStr, args, err := buildCount(c, filters, time.Now().Unix(), sc, false, nil)
	if errors.Is(err, errNothing) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var b pgx.Batch
	b.Queue(sqlStr, args...)
	var n int64
	err = s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: count: %w", err)
	}
	return n, nil
}

// CountEach answers CountScoped for each of sets, in order, pipelined in
// one round trip. A set followed by its gift-wrap part (wrapsOf) is
// counted once, both answers from one statement: the rows are read once.
func (s *Store) CountEach(ctx context.Context, c tenant.CommunityID, sets [][]nostr.Filter, sc channel.Scope) ([]int64, error) {
	if c.IsZero() {
		return nil, errors.New("postgres: count: zero community")
	}
	now := time.Now().Unix()
	ns := make([]int64, len(sets))
	var b pgx.Batch
	type asked struct {
		i     int  // the set's index
		wraps bool // the statement also answers set i+1
		mine  bool // and set i+2
	}
	var queued []asked
	for i := 0; i < len(sets); i++ {
		wraps := i+1 < len(sets) && wrapsOf(sets[i], sets[i+1])
		var mine []nostr.Filter
		if wraps && i+2 < len(sets) && narrowsAll(sets[i+2], sets[i]) {
			mine = sets[i+2]
		}
		sqlStr, args, err := buildCount(c, sets[i], now, sc, wraps, mine)
		if errors.Is(err, errNothing) {
			continue // set i+1, if it was the part, is counted on its own
		}
		if err != nil {
			return nil, err
		}
		b.Queue(sqlStr, args...)
		queued = append(queued, asked{i, wraps, mine != nil})
		if wraps {
			i++
		}
		if mine != nil {
			i++
		}
	}
	if len(queued) == 0 {
		return ns, nil
	}
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		for _, q := range queued {
			dst := []any{&ns[q.i]}
			if q.wraps {
				dst = append(dst, &ns[q.i+1])
			}
			if q.mine {
				dst = append(dst, &ns[q.i+2])
			}
			if err := br.QueryRow().Scan(dst...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: count: %w", err)
	}
	return ns, nil
}

// buildCount compiles a COUNT over filters in the access scope sc to one
// statement; errNothing when no filter can match. With wraps, the
// statement answers two counts from the same rows: all of them, and the
// private events (gift wraps and author-only kinds) among them. With mine
// too (only with wraps; every filter of it narrowing one of filters, see
// narrowsAll), a third: the rows mine matches, which are all among
// filters' rows, so counting them there counts mine (channel.CountGiftWrapped's
// third set, the reader's own private events, without a statement, a plan
// and a scan of its own).
func buildCount(c tenant.CommunityID, filters []nostr.Filter, now int64, sc channel.Scope, wraps bool, mine []nostr.Filter) (string, []any, error) {
	var or sq.Or           // filters counted as conditions on events
	var parts []sq.Sqlizer // the others, each selecting cols
	distinct := false      // whether one part may yield an event twice
	cols, tcols, agg, direct := "e.created_at, e.id", "t.created_at, t.event_id", "count(*)", "count(*)"
	var mineDirect, mineUnion sq.Sqlizer // the third count, over e or x
	if wraps {
		cols, tcols = "e.created_at, e.id, e.kind", "t.created_at, t.event_id, t.kind"
		agg = fmt.Sprintf("count(*), count(*) FILTER (WHERE x.kind IN (%s))", privateKindList)
		direct = fmt.Sprintf("count(*), count(*) FILTER (WHERE e.kind IN (%s))", privateKindList)
		if mine != nil {
			mineDirect, mineUnion = mineCounts(c, mine)
		}
	}
	for i := range filters {
		p, err := compileFilter(&filters[i])
		if errors.Is(err, errNothing) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		p.withScope(sc)
		switch {
		case p.tsquery != "":
			parts = append(parts, searchFrom(c, now, p, cols))
		case p.tagOnly():
			parts = append(parts, tagCountRows(c, now, p, tcols))
			distinct = distinct || len(p.tags[0].keys) > 1
		case p.ids == nil && p.authors == nil && len(p.tags) > 0:
			// Driven by the tag index (see tagDriven): as a condition on
			// events, a plan without statistics could read every event of
			// the community once per tag row.
			parts = append(parts, tagRows(c, now, p, cols, eqAny("t.value", p.tags[0].keys)))
			distinct = distinct || len(p.tags[0].keys) > 1
		default:
			or = append(or, p.conds(""))
		}
	}
	if len(or) == 0 && len(parts) == 0 {
		return "", nil, errNothing
	}
	sel := sq.Select(direct)
	var aggX sq.Sqlizer = sq.Expr(agg)
	if mineDirect != nil {
		sel = sel.Column(mineDirect)
		aggX = sq.Expr(agg+", ?", mineUnion)
	}
	var q sq.Sqlizer = sel.From("events e").Where(live(c, now)).Where(or)
	if len(parts) > 0 {
		if len(or) > 0 {
			parts = append(parts, sq.Select(cols).From("events e").Where(live(c, now)).Where(or))
		}
		q = countUnion(parts, distinct, aggX, wraps)
	}
	sqlStr, args, err := q.ToSql()
	if err == nil {
		sqlStr, err = sq.Dollar.ReplacePlaceholders(sqlStr)
	}
	if err != nil {
		return "", nil, fmt.Errorf("postgres: build count: %w", err)
	}
	return sqlStr, args, nil
}

// mineCounts compiles the count of mine's rows among a COUNT's rows
// (buildCount): as an aggregate over the events e of a statement reading
// events, and over the merged rows x (created_at, id, kind) of a union,
// where each candidate row (of one of mine's kinds, when every filter of
// mine names kinds) reaches its event by one primary-key probe. A filter
// of mine that can match nothing adds no rows.
func mineCounts(c tenant.CommunityID, mine []nostr.Filter) (overE, overX sq.Sqlizer) {
	var or sq.Or
	var kinds []int32
	allKinds := true
	for i := range mine {
		p, err := compileFilter(&mine[i])
		if err != nil {
			continue // errNothing: compileFilter fails on nothing else
		}
		or = append(or, p.conds(""))
		if p.kinds == nil {
			allKinds = false
		}
		for _, k := range p.kinds {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	if len(or) == 0 {
		none := sq.Expr("0::bigint")
		return none, none
	}
	// The rows are already live and in scope. A FILTER's AND is
	// evaluated in order: when every filter of mine names kinds (mine's
	// are a few private kinds), a row of another kind costs one test, and
	// the probes run only for rows of mine's kinds (in or, the conditions
	// on columns come before the tag probes).
	probe := sq.Expr("EXISTS (SELECT 1 FROM events e WHERE e.community_id = ? AND e.created_at = x.created_at AND e.id = x.id AND ?)", c.UUID(), or)
	if allKinds {
		return sq.Expr("count(*) FILTER (WHERE e.kind = ANY(?) AND ?)", kinds, or),
			sq.Expr("count(*) FILTER (WHERE x.kind = ANY(?) AND ?)", kinds, probe)
	}
	return sq.Expr("count(*) FILTER (WHERE ?)", or), sq.Expr("count(*) FILTER (WHERE ?)", probe)
}

// narrowsAll reports whether every filter of sub narrows (matches only
// events matched by) some filter of set, so that sub's events are among
// set's. Neither may search.
func narrowsAll(sub, set []nostr.Filter) bool {
	if len(sub) == 0 {
		return false
	}
	for i := range sub {
		if !slices.ContainsFunc(set, func(f nostr.Filter) bool { return narrows(&sub[i], &f) }) {
			return false
		}
	}
	return true
}

// narrows reports whether every event m matches also matches f: each
// condition of f is in m, at least as strict. A search in either is never
// compared (false).
func narrows(m, f *nostr.Filter) bool {
	if m.Search != "" || f.Search != "" {
		return false
	}
	if !within(m.IDs, f.IDs) || !within(m.Authors, f.Authors) || !within(m.Kinds, f.Kinds) {
		return false
	}
	for name, vals := range f.Tags {
		if vals != nil && !within(m.Tags[name], vals) {
			return false
		}
	}
	if f.Since != nil && (m.Since == nil || *m.Since < *f.Since) {
		return false
	}
	if f.Until != nil && (m.Until == nil || *m.Until > *f.Until) {
		return false
	}
	return true
}

// within reports whether a condition listing sub is at least as strict as
// one listing set: set lists nothing (no condition), or sub lists values,
// all of them in set.
func within[T comparable](sub, set []T) bool {
	return set == nil || (sub != nil && !slices.ContainsFunc(sub, func(v T) bool { return !slices.Contains(set, v) }))
}

// unsearchableKinds are the kinds a search never matches: the p-gated and
// the author-only kinds (nostr.IsSearchable).
var unsearchableKinds = []int32{nostr.KindGiftWrap, nostr.KindReminder, nostr.KindPushLease, nostr.KindPrivateManagedAgent, nostr.KindMemberAdded, nostr.KindMemberRemoved, nostr.KindDMVisibility}

// privateKindList is channel.PrivateKinds as SQL: the kinds whose rows a
// private part (channel.GiftWrapPart) counts.
var privateKindList = func() string {
	s := make([]string, len(channel.PrivateKinds))
	for i, k := range channel.PrivateKinds {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, ", ")
}()

// wrapsOf reports whether set w is set f's private part
// (channel.GiftWrapPart), as channel.CountGiftWrapped asks for it right
// after f. Its count is then the count of f's rows of private kinds, which the
// statement counting f answers too (buildCount with wraps). Not for a set
// with a search filter: its rows come through probe, which selects no
// kind.
func wrapsOf(f, w []nostr.Filter) bool {
	if len(w) == 0 || slices.ContainsFunc(f, func(f nostr.Filter) bool { return f.Search != "" }) {
		return false
	}
	return reflect.DeepEqual(channel.GiftWrapPart(f), w)
}

// DeleteExpired removes, in every community, the events whose NIP-40
// expiration is at or before now, with their tag and search rows.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM communities`)
	if err != nil {
		return 0, fmt.Errorf("postgres: delete expired: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
	if err != nil {
		return 0, fmt.Errorf("postgres: delete expired: %w", err)
	}
	var total int64
	for _, id := range ids {
		c := tenant.FromUUID(id)
		var b pgx.Batch
		b.Queue(`WITH gone AS (
    DELETE FROM events WHERE community_id = $1 AND expires_at IS NOT NULL AND expires_at <= $2
    RETURNING community_id, created_at, id, tags),
  tagrows AS (
    SELECT g.community_id, x.tag->>0 AS name, x.tag->>1 AS value, g.created_at, g.id
    FROM gone g, jsonb_array_elements(g.tags) AS x(tag)
    WHERE jsonb_typeof(x.tag) = 'array' AND jsonb_array_length(x.tag) >= 2 AND length(x.tag->>0) = 1),
  searchdel AS (
    DELETE FROM event_search s USING gone g
    WHERE s.community_id = g.community_id AND s.event_id = g.id AND s.created_at = g.created_at),
  tagdel AS (
    DELETE FROM event_tags t USING tagrows r
    WHERE t.community_id = r.community_id AND t.name = r.name AND t.created_at = r.created_at
      AND t.event_id = r.id
      AND t.value = buzz_tag_key(r.value))
SELECT count(*) FROM gone`, c.UUID(), now.Unix())
		// Authority marks past their until (see store.Authority).
		b.Queue(`DELETE FROM applied_authority WHERE community_id = $1 AND until < $2`, c.UUID(), now)
		var n int64
		err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
			if err := br.QueryRow().Scan(&n); err != nil {
				return err
			}
			_, err := br.Exec()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("postgres: delete expired: %w", err)
		}
		total += n
	}
	return total, nil
}
