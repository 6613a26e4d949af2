package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// inlineListMax is the longest ids/authors list bound as individual
// parameters; longer lists travel as one JSON array read with json_each, so a
// filter may name any number of ids.
const inlineListMax = 256

// spinForTest, when a test asked for slow reads, runs a query on a read
// connection that only an interrupt (ctx ending) stops: a stand-in for a
// slow query.
func (s *Store) spinForTest(ctx context.Context) error {
	if !s.cfg.slowReads {
		return nil
	}
	var n int64
	return s.rdb.QueryRowContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 1e15) SELECT max(x) FROM c`).Scan(&n)
}

// Query implements store.EventStore. The returned sequence holds a read
// connection until the consumer stops or the rows end; stopping early closes
// the rows.
func (s *Store) Query(ctx context.Context, c tenant.CommunityID, f nostr.Filter) iter.Seq2[store.Record, error] {
	return s.QueryScoped(ctx, c, f, channel.AllChannels())
}

// QueryScoped implements store.ChannelStore: Query restricted to the
// community-wide events and the channels of scope, in SQL.
func (s *Store) QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope) iter.Seq2[store.Record, error] {
	return func(yield func(store.Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(store.Record{}, err)
			return
		}
		if f.LimitSet && f.Limit <= 0 {
			return
		}
		cseq, err := s.communitySeq(ctx, c)
		if errors.Is(err, errNoSuchCommunity) {
			return // an unknown community holds nothing
		}
		if err != nil {
			yield(store.Record{}, err)
			return
		}
		if err := s.eventsOff(); err != nil {
			yield(store.Record{}, err)
			return
		}
		if s.ev != nil && f.Search != "" {
			s.lsmSearch(ctx, c, f, scope, yield)
			return
		}
		if s.ev != nil {
			for r, err := range s.ev.QueryScoped(ctx, c, f, scope) {
				if !yield(r, err) {
					return
				}
			}
			return
		}
		if err := s.spinForTest(ctx); err != nil {
			yield(store.Record{}, internal("query", err))
			return
		}
		if f.Search != "" {
			s.querySearch(ctx, c, cseq, &f, scope, yield)
			return
		}
		now := time.Now().Unix()
		yieldAll := func(recs []store.Record) {
			for _, rec := range recs {
				if !yield(rec, nil) {
					return
				}
			}
		}
		// The event cache answers a lookup by ids when it holds every id;
		// otherwise the rows read fill it (put, below).
		var epoch uint64
		if s.events != nil {
			if len(f.IDs) > 0 {
				if recs, ok := s.events.lookup(cseq, c, &f, now, scope); ok {
					yieldAll(recs)
					return
				}
			}
			epoch = s.events.epoch(cseq) // before the read, see eventCache
		}
		q, inner, ok, residual := indexFirstQuery(cseq, &f, now, scope)
		if !ok {
			return
		}
		// A query an index drives finds its rows from the index alone;
		// when the cache holds them all, they need not be read.
		if s.events != nil {
			var (
				recs []store.Record
				hit  bool
				err  error
			)
			switch {
			case inner != nil:
				recs, hit, err = s.cachedRows(ctx, c, cseq, inner, now, scope)
			case tagWalkable(&f):
				recs, hit, err = s.cachedTagWalk(ctx, c, cseq, &f, now, scope)
			}
			if err != nil {
				yield(store.Record{}, internal("query", err))
				return
			}
			if hit {
				yieldAll(recs)
				return
			}
		}
		if q == nil {
			q = new(sqlBuilder)
			q.add(`SELECT ` + rowColumns + ` FROM `)
			q.from(cseq, &f)
			q.add(` WHERE e.community = ? AND (e.expires_at IS NULL OR e.expires_at > ?)`, cseq, now)
			ok, residual = q.filter(cseq, &f)
			if !ok {
				return
			}
			q.scope(scope)
			if q.tagDriven {
				// Tag rows carry their event's created_at and come out of
				// the primary key in that order: SQLite sorts only ties on
				// id and stops at the limit instead of sorting every match.
				q.add(` ORDER BY t.created_at DESC, e.id ASC`)
			} else {
				q.add(` ORDER BY e.created_at DESC, e.id ASC`)
			}
			if f.LimitSet && !residual {
				q.add(` LIMIT ?`, f.Limit)
			}
		}
		st, err := s.rstmts.get(ctx, q.sb.String())
		if err != nil {
			yield(store.Record{}, internal("query", err))
			return
		}
		rows, err := st.QueryContext(ctx, q.args...)
		if err != nil {
			yield(store.Record{}, internal("query", err))
			return
		}
		defer rows.Close()
		sent := 0
		for rows.Next() {
			var (
				id      []byte
				rec     store.Record
				expires sql.NullInt64
				ch      []byte
				seq     int64
			)
			if err := rows.Scan(&id, &rec.CreatedAt, &rec.Raw, &expires, &ch, &seq); err != nil {
				yield(store.Record{}, internal("query", err))
				return
			}
			if s.events != nil {
				s.events.put(cseq, epoch, seq, store.Record{ID: hex.EncodeToString(id), CreatedAt: rec.CreatedAt, Raw: rec.Raw}, expires.Int64, ch)
			}
			if residual {
				ev, err := nostr.ParseEvent(rec.Raw)
				if err != nil {
					yield(store.Record{}, internal("query: stored event", err))
					return
				}
				if !search.Matches(&f, ev) {
					continue
				}
			}
			rec.ID = hex.EncodeToString(id)
			rec.Community = c
			if !yield(rec, nil) {
				return
			}
			sent++
			if f.LimitSet && sent >= f.Limit {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(store.Record{}, internal("query", err))
		}
	}
}

// Count implements store.EventStore: distinct live events matching any of
// filters; limits are ignored.
func (s *Store) Count(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter) (int64, error) {
	return s.CountScoped(ctx, c, filters, channel.AllChannels())
}

// CountScoped implements store.ChannelStore: Count restricted to the
// community-wide events and the channels of scope.
func (s *Store) CountScoped(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter, scope channel.Scope) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := s.eventsOff(); err != nil {
		return 0, err
	}
	if s.ev != nil {
		return s.ev.CountScoped(ctx, c, filters, scope)
	}
	if err := s.spinForTest(ctx); err != nil {
		return 0, internal("count", err)
	}
	q, ok, residual := countSQL(cseq, filters, time.Now().Unix(), scope)
	if residual {
		return s.countSlow(ctx, c, filters, scope)
	}
	if !ok {
		return 0, nil
	}
	st, err := s.rstmts.get(ctx, q.sb.String())
	if err != nil {
		return 0, internal("count", err)
	}
	var n int64
	if err := st.QueryRowContext(ctx, q.args...).Scan(&n); err != nil {
		return 0, internal("count", err)
	}
	return n, nil
}

// CountEach answers CountScoped for each of sets, in order; filter sets
// the index serves are counted in one statement (one snapshot).
func (s *Store) CountEach(ctx context.Context, c tenant.CommunityID, sets [][]nostr.Filter, scope channel.Scope) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return make([]int64, len(sets)), nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.eventsOff(); err != nil {
		return nil, err
	}
	if s.ev != nil {
		return s.ev.CountEach(ctx, c, sets, scope)
	}
	if err := s.spinForTest(ctx); err != nil {
		return nil, internal("count", err)
	}
	now := time.Now().Unix()
	var q sqlBuilder
	q.add(`SELECT `)
	for i, filters := range sets {
		if i > 0 {
			q.sb.WriteString(`, `)
		}
		one, ok, residual := countSQL(cseq, filters, now, scope)
		switch {
		case residual:
			return s.countEachSlow(ctx, c, sets, scope)
		case !ok:
			q.sb.WriteString(`0`)
		default:
			q.sb.WriteString(`(`)
			q.append(one)
			q.sb.WriteString(`)`)
		}
	}
	st, err := s.rstmts.get(ctx, q.sb.String())
	if err != nil {
		return nil, internal("count", err)
	}
	ns := make([]int64, len(sets))
	dest := make([]any, len(sets))
	for i := range ns {
		dest[i] = &ns[i]
	}
	if err := st.QueryRowContext(ctx, q.args...).Scan(dest...); err != nil {
		return nil, internal("count", err)
	}
	return ns, nil
}

// countEachSlow is CountEach one set at a time.
func (s *Store) countEachSlow(ctx context.Context, c tenant.CommunityID, sets [][]nostr.Filter, scope channel.Scope) ([]int64, error) {
	ns := make([]int64, len(sets))
	for i, filters := range sets {
		var err error
		if ns[i], err = s.CountScoped(ctx, c, filters, scope); err != nil {
			return nil, err
		}
	}
	return ns, nil
}

// countSQL builds the statement counting the live events of scope matching
// any of filters at now. ok is false when no filter can match; residual is
// true when one has a condition SQL cannot express (see filter).
//
// Each filter is counted through the access path its REQ would take (see
// from): an OR of the filters' conditions in one WHERE would make SQLite
// walk every event of the community. Several filters count the union of
// their matches' seqs, so an event matching two counts once.
//
// Whether an event is hidden (expired, or in a channel outside scope) is
// known only from its row, and reading a row per match costs 20–30 times
// what counting index entries does. So the statement first asks two partial
// indexes whether the community holds any event that could be hidden; when
// it holds none, it counts without those conditions, usually from an index
// alone. Both branches are one statement, so on one snapshot.
func countSQL(cseq int64, filters []nostr.Filter, now int64, scope channel.Scope) (q *sqlBuilder, ok, residual bool) {
	visible, bare, ok, residual := countUnion(cseq, filters, now, scope)
	if residual || !ok {
		return nil, ok, residual
	}
	q = new(sqlBuilder)
	q.add(`SELECT CASE WHEN `)
	q.hiddenProbe(cseq, now, scope)
	q.add(` THEN (`)
	q.append(visible)
	q.add(`) ELSE (`)
	q.append(bare)
	q.add(`) END`)
	return q, true, false
}

// indexFirstQuery builds the query of f, limited, when an events index
// drives it (authors, kinds, or the timeline; not ids, tags or a search):
// the index entries are filtered and ordered first, selecting seqs, and only
// the limit's rows are then read for their raw JSON. Reading rows while
// ordering costs a row per match: every event of an author (the author
// index orders by kind before time) or of ten authors, each with its raw
// JSON in the sorter. Whether a match is hidden (expired, or in a channel
// outside scope) needs its row too, so those conditions are guarded by
// hiddenProbe: in a community holding no such event they are never
// evaluated, and the index alone orders the matches. q is nil when another
// access path drives f (the caller builds that query); ok is false when f
// can match nothing.
func indexFirstQuery(cseq int64, f *nostr.Filter, now int64, scope channel.Scope) (q, inner *sqlBuilder, ok, residual bool) {
	if !f.LimitSet || len(f.IDs) > 0 || tagDriven(f) || f.Search != "" {
		return nil, nil, true, false
	}
	if q, inner, ok, handled := authorKindsQuery(cseq, f, now, scope); handled {
		return q, inner, ok, false
	}
	// The probe is a column of a one-row outer loop (LIMIT 1 keeps SQLite
	// from flattening it back into the condition): SQLite evaluates a
	// condition's subqueries after its other terms, which would read each
	// row before learning that it need not.
	inner = new(sqlBuilder)
	inner.add(`SELECT e.seq FROM (SELECT `)
	inner.hiddenProbe(cseq, now, scope)
	inner.add(` AS hidden LIMIT 1) AS h CROSS JOIN `)
	inner.from(cseq, f)
	inner.add(` WHERE e.community = ?`, cseq)
	ok, residual = inner.filter(cseq, f)
	if !ok || residual {
		return nil, nil, ok, residual
	}
	inner.add(` AND (NOT h.hidden OR (e.expires_at IS NULL OR e.expires_at > ?)`, now)
	inner.scope(scope)
	inner.add(`) ORDER BY e.created_at DESC, e.id ASC LIMIT ?`, f.Limit)
	q = new(sqlBuilder)
	q.add(`SELECT ` + rowColumns + ` FROM events e WHERE e.seq IN (`)
	q.append(inner)
	q.add(`) ORDER BY e.created_at DESC, e.id ASC`)
	return q, inner, true, false
}

// rowColumns are the columns every query reading events selects, in
// QueryScoped's scan order: what a record needs, then what the event
// cache needs.
const rowColumns = `e.id, e.created_at, e.raw, e.expires_at, e.channel, e.seq`

// authorKindsMaxAuthors bounds authorKindsQuery: a longer author list (a
// follow list) has few events per author, and walking them all is no worse.
const authorKindsMaxAuthors = 64

// authorKindsQuery builds the limited query of a filter naming authors and
// no kinds, ids, tags or search. events_author orders an author's entries
// by kind before time, so SQLite would read every event of the authors and
// sort them: thousands of entries for an active author and a limit of 20.
// Here each (author, kind) range gives at most about limit entries: the
// author's kinds are enumerated first (one index seek each), a walk of
// limit entries finds each range's limit-th newest created_at, and the
// range is read from there (entries tying at that time included), so every
// event of the overall newest limit is among those read, and only the
// limit's rows are then read for their JSON. When the community may hold
// hidden events (hiddenProbe), both walks skip them, reading their rows.
// handled is false when f is not such a filter, or has any condition on
// tags (the caller builds another query); ok is false when f can match
// nothing.
func authorKindsQuery(cseq int64, f *nostr.Filter, now int64, scope channel.Scope) (q, inner *sqlBuilder, ok, handled bool) {
	if f.Authors == nil || f.Kinds != nil || f.IDs != nil || f.Search != "" {
		return nil, nil, true, false // (an empty ids list matches nothing: filter says so)
	}
	for _, vals := range f.Tags {
		if vals != nil { // a condition on tags (even one matching nothing): filter handles it
			return nil, nil, true, false
		}
	}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		return nil, nil, false, true
	}
	var authors [][]byte
	for _, a := range slices.Compact(slices.Sorted(slices.Values(f.Authors))) {
		if b, ok := nostr.DecodeHex32(a); ok {
			authors = append(authors, b)
		}
	}
	switch {
	case len(authors) == 0:
		return nil, nil, false, true
	case len(authors) > authorKindsMaxAuthors:
		return nil, nil, true, false
	}

	var with, sub sqlBuilder
	with.add(`WITH RECURSIVE a(pk) AS (VALUES `)
	for i, n := 0, padTo(len(authors)); i < n; i++ {
		if i > 0 {
			with.sb.WriteString(`,`)
		}
		if i < len(authors) {
			with.add(`(?)`, authors[i])
		} else {
			with.add(`(NULL)`) // matches no author; lets similar lists share a statement
		}
	}
	// p: each author's kinds, smallest first, one seek each.
	with.add(`), p(pk, kind) AS (SELECT a.pk, (SELECT min(kind) FROM events INDEXED BY events_author WHERE community = ? AND pubkey = a.pk) FROM a`+
		` UNION ALL SELECT p.pk, (SELECT min(kind) FROM events INDEXED BY events_author WHERE community = ? AND pubkey = p.pk AND kind > p.kind) FROM p WHERE p.kind IS NOT NULL) `,
		cseq, cseq)
	// match appends the conditions tying alias al to the range of p, the
	// filter's time bounds, and (only when h.hidden) what a read must not
	// return.
	match := func(al string) {
		sub.add(` WHERE p.kind IS NOT NULL AND `+al+`.community = ? AND `+al+`.pubkey = p.pk AND `+al+`.kind = p.kind`, cseq)
		if f.Since != nil {
			sub.add(` AND `+al+`.created_at >= ?`, *f.Since)
		}
		if f.Until != nil {
			sub.add(` AND `+al+`.created_at <= ?`, *f.Until)
		}
		sub.add(` AND (NOT h.hidden OR ((`+al+`.expires_at IS NULL OR `+al+`.expires_at > ?)`, now)
		sub.scopeOn(al, scope)
		sub.add(`))`)
	}
	// The probe is a column of a one-row outer loop, as in indexFirstQuery.
	sub.add(`SELECT x.seq FROM (SELECT `)
	sub.hiddenProbe(cseq, now, scope)
	sub.add(` AS hidden LIMIT 1) AS h CROSS JOIN p CROSS JOIN events x INDEXED BY events_author`)
	match("x")
	sub.add(` AND x.created_at >= coalesce((SELECT y.created_at FROM events y INDEXED BY events_author`)
	match("y")
	sub.add(` ORDER BY y.created_at DESC, y.id ASC LIMIT 1 OFFSET ?), -9223372036854775808)`, f.Limit-1)
	sub.add(` ORDER BY x.created_at DESC, x.id ASC LIMIT ?`, f.Limit)

	q, inner = new(sqlBuilder), new(sqlBuilder)
	q.append(&with)
	q.add(`SELECT ` + rowColumns + ` FROM events e WHERE e.seq IN (`)
	q.append(&sub)
	q.add(`) ORDER BY e.created_at DESC, e.id ASC`)
	inner.append(&with)
	inner.append(&sub)
	return q, inner, true, true
}

// hiddenProbe appends a condition on no table that holds when community
// may hold an event a read under scope at now must not return: an expired
// one not yet swept, or (unless scope is every channel) one in a channel.
// Two partial indexes answer it with a seek each.
func (q *sqlBuilder) hiddenProbe(community, now int64, scope channel.Scope) {
	q.add(`EXISTS (SELECT 1 FROM events INDEXED BY events_expiry WHERE expires_at <= ? AND community = ?)`, now, community)
	if !scope.All() {
		q.add(` OR EXISTS (SELECT 1 FROM events INDEXED BY events_channel WHERE community = ? AND channel IS NOT NULL)`, community)
	}
}

// countSlow counts by running each filter's query, for filters with tag
// conditions the index does not serve.
func (s *Store) countSlow(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter, scope channel.Scope) (int64, error) {
	seen := make(map[string]struct{})
	for _, f := range filters {
		f.LimitSet, f.Limit = false, 0
		for rec, err := range s.QueryScoped(ctx, c, f, scope) {
			if err != nil {
				return 0, err
			}
			seen[rec.ID] = struct{}{}
		}
	}
	return int64(len(seen)), nil
}

// countUnion builds the COUNT of the events matching any of filters:
// visible counts those of scope that have not expired at now, bare every
// match (the same number when the community holds no expired event and
// none outside scope). ok is false when no filter can match; residual is
// true when one has a condition SQL cannot express (see filter).
func countUnion(cseq int64, filters []nostr.Filter, now int64, scope channel.Scope) (visible, bare *sqlBuilder, ok, residual bool) {
	visible, bare = new(sqlBuilder), new(sqlBuilder)
	visible.add(`SELECT COUNT(*) FROM (`)
	bare.add(`SELECT COUNT(*) FROM (`)
	for i := range filters {
		f := &filters[i]
		var v, b sqlBuilder
		v.add(`SELECT e.seq FROM `)
		v.kindGuard(cseq, f)
		v.from(cseq, f)
		v.add(` WHERE e.community = ? AND (e.expires_at IS NULL OR e.expires_at > ?)`, cseq, now)
		fok, res := v.filter(cseq, f)
		if res {
			return nil, nil, false, true
		}
		if !fok {
			continue
		}
		v.scope(scope)
		if name, value, ok := tagOnly(f); ok {
			// Tag rows exist exactly while their event does (they are
			// written and deleted with it) and carry its created_at: the
			// primary key alone counts them.
			b.add(`SELECT t.event_seq FROM tags t WHERE t.community = ? AND t.name = ? AND t.value = ?`, cseq, name, value)
			if f.Since != nil {
				b.add(` AND t.created_at >= ?`, *f.Since)
			}
			if f.Until != nil {
				b.add(` AND t.created_at <= ?`, *f.Until)
			}
		} else {
			b.add(`SELECT e.seq FROM `)
			b.kindGuard(cseq, f)
			b.from(cseq, f)
			b.add(` WHERE e.community = ?`, cseq)
			b.filter(cseq, f)
		}
		if ok {
			visible.sb.WriteString(` UNION `)
			bare.sb.WriteString(` UNION `)
		}
		visible.append(&v)
		bare.append(&b)
		ok = true
	}
	visible.sb.WriteString(`)`)
	bare.sb.WriteString(`)`)
	return visible, bare, ok, false
}

// tagOnly returns the tag of f when f selects by exactly one indexed tag
// value and at most a time range: no ids, authors, kinds, search or other
// tag.
func tagOnly(f *nostr.Filter) (name, value string, ok bool) {
	if f.IDs != nil || f.Authors != nil || f.Kinds != nil || f.Search != "" || len(f.Tags) != 1 {
		return "", "", false
	}
	for n, vals := range f.Tags {
		if len(n) != 1 || len(vals) == 0 {
			return "", "", false
		}
		for _, v := range vals[1:] {
			if v != vals[0] {
				return "", "", false
			}
		}
		name, value = n, vals[0]
	}
	return name, value, true
}

// kindGuard starts the FROM clause of a count of f whose tag rows drive
// and whose kinds are checked on each event's row: an outer loop of at most
// one row that holds only when the community has an event of one of f's
// kinds. When it has none (the gift wraps the relay counts apart, in most
// communities), one seek of the kind index answers instead of a walk of
// the tag rows.
func (q *sqlBuilder) kindGuard(community int64, f *nostr.Filter) {
	kinds := validKinds(f.Kinds)
	if len(kinds) == 0 || !tagDriven(f) {
		return
	}
	q.add(`(SELECT 1 FROM events INDEXED BY events_kind WHERE community = ? AND kind IN (`, community)
	for i, k := range kinds {
		if i > 0 {
			q.sb.WriteString(`,`)
		}
		q.sb.WriteString(strconv.Itoa(k))
	}
	q.sb.WriteString(`) LIMIT 1) AS g CROSS JOIN `)
}

// tagDriven reports whether from drives f's query by tag rows.
func tagDriven(f *nostr.Filter) bool {
	if len(f.IDs) > 0 {
		return false
	}
	for name, vals := range f.Tags {
		if len(name) == 1 && len(vals) > 0 {
			return true
		}
	}
	return false
}

// validKinds returns the kinds of ks a stored event can have, sorted and
// distinct.
func validKinds(ks []int) []int {
	kinds := make([]int, 0, len(ks))
	for _, k := range ks {
		if k >= 0 && k <= nostr.MaxKind {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

type sqlBuilder struct {
	sb   strings.Builder
	args []any

	// tagDriven is set by from when the query walks the tag rows of a
	// single (name, value) as its outer loop, joined as t; skipTag is that
	// tag name, whose condition filter then leaves out.
	tagDriven bool
	skipTag   string
	// searchDriven is set by from when the query walks the full-text
	// matches of the filter's search as its outer loop; filter then leaves
	// the search condition out.
	searchDriven bool
}

func (q *sqlBuilder) add(s string, args ...any) {
	q.sb.WriteString(s)
	q.args = append(q.args, args...)
}

// append appends p's text and arguments.
func (q *sqlBuilder) append(p *sqlBuilder) {
	q.sb.WriteString(p.sb.String())
	q.args = append(q.args, p.args...)
}

// inList appends "?, ?, …" binding vals, padded with NULLs to padTo(len)
// so that lists of similar length share one cached statement (NULL equals
// nothing, so the padding selects nothing).
func inList[T any](q *sqlBuilder, vals []T) {
	n := padTo(len(vals))
	for i := 0; i < n; i++ {
		if i > 0 {
			q.sb.WriteString(`,`)
		}
		q.sb.WriteString(`?`)
		if i < len(vals) {
			q.args = append(q.args, vals[i])
		} else {
			q.args = append(q.args, nil)
		}
	}
}

// scope appends the access condition of sc: community-wide events
// (channel NULL) plus the events of sc's channels; nothing for AllChannels.
func (q *sqlBuilder) scope(sc channel.Scope) {
	q.scopeOn("e", sc)
}

// scopeOn is scope for events aliased al.
func (q *sqlBuilder) scopeOn(al string, sc channel.Scope) {
	if sc.All() {
		return
	}
	ids := sc.Channels()
	switch {
	case len(ids) == 0:
		q.sb.WriteString(` AND ` + al + `.channel IS NULL`)
	case len(ids) <= inlineListMax:
		q.sb.WriteString(` AND (` + al + `.channel IS NULL OR ` + al + `.channel IN (`)
		vals := make([][]byte, len(ids))
		for i := range ids {
			vals[i] = ids[i][:]
		}
		inList(q, vals)
		q.sb.WriteString(`))`)
	default:
		var js strings.Builder
		js.Grow(len(ids) * 35)
		js.WriteByte('[')
		for i := range ids {
			if i > 0 {
				js.WriteByte(',')
			}
			js.WriteByte('"')
			js.WriteString(hex.EncodeToString(ids[i][:]))
			js.WriteByte('"')
		}
		js.WriteByte(']')
		q.add(` AND (`+al+`.channel IS NULL OR `+al+`.channel IN (SELECT unhex(value) FROM json_each(?)))`, js.String())
	}
}

// from appends the FROM clause of a query for f, choosing the access path
// by rule rather than leaving it to the planner, which has no statistics and
// otherwise tends to walk a timeline index to avoid a sort, testing every
// row. The most selective constraint drives: ids, then a tag (the matching
// tag rows, deduplicated, probe events by rowid), then authors, then kinds,
// else the community timeline.
func (q *sqlBuilder) from(community int64, f *nostr.Filter) {
	switch {
	case len(f.IDs) > 0:
		q.add(`events e INDEXED BY events_id`)
		return
	}
	names := make([]string, 0, len(f.Tags))
	for name, vals := range f.Tags {
		if len(name) == 1 && len(vals) > 0 {
			names = append(names, name)
		}
	}
	if sq, err := search.FromFilter(f); sq != nil && err == nil && len(names) == 0 {
		q.add(`(SELECT rowid AS seq FROM events_fts WHERE events_fts MATCH ?) AS s CROSS JOIN events e ON e.seq = s.seq`, ftsMatch(community, sq))
		q.searchDriven = true
		return
	}
	if len(names) > 0 {
		sort.Strings(names)
		name, vals := names[0], f.Tags[names[0]]
		if len(slices.Compact(slices.Sorted(slices.Values(vals)))) == 1 {
			// One value: each event has at most one row for it (Save
			// indexes distinct pairs), so no DISTINCT is needed and the
			// rows are already in timeline order.
			q.add(`tags t CROSS JOIN events e ON e.seq = t.event_seq AND t.community = ? AND t.name = ? AND t.value = ?`, community, name, vals[0])
			q.tagDriven, q.skipTag = true, name
			return
		}
		q.add(`(SELECT DISTINCT t.event_seq AS seq FROM tags t WHERE t.community = ? AND t.name = ? AND t.value IN (`, community, name)
		inList(q, vals)
		// CROSS JOIN makes SQLite keep the tag rows as the outer loop.
		q.add(`)) AS m CROSS JOIN events e ON e.seq = m.seq`)
		return
	}
	switch {
	case len(f.Authors) > 0:
		q.add(`events e INDEXED BY events_author`)
	case len(f.Kinds) > 0:
		q.add(`events e INDEXED BY events_kind`)
	default:
		q.add(`events e INDEXED BY events_time`)
	}
}

// filter appends f's conditions, each as " AND …", against events aliased e.
// ok is false when f can match nothing (an empty list, or ids that cannot be
// event ids, or an invalid search). residual is true when f has a tag
// condition the tags table does not index (a name that is not exactly one
// byte); those conditions are left out, and the caller must check each row
// with f.Matches. A search restricts rows to searchable kinds whose content
// events_fts matches.
func (q *sqlBuilder) filter(community int64, f *nostr.Filter) (ok, residual bool) {
	if f.Search != "" {
		sq, err := search.FromFilter(f)
		if err != nil {
			return false, false
		}
		q.add(` AND e.kind NOT IN (?, ?, ?, ?, ?, ?, ?)`, nostr.KindGiftWrap, nostr.KindReminder, nostr.KindPushLease, nostr.KindPrivateManagedAgent, nostr.KindMemberAdded, nostr.KindMemberRemoved, nostr.KindDMVisibility)
		if !q.searchDriven {
			q.add(` AND e.seq IN (SELECT rowid FROM events_fts WHERE events_fts MATCH ?)`, ftsMatch(community, sq))
		}
	}
	if f.IDs != nil {
		if !q.hexList("e.id", f.IDs) {
			return false, false
		}
	}
	if f.Authors != nil {
		if !q.hexList("e.pubkey", f.Authors) {
			return false, false
		}
	}
	if f.Kinds != nil {
		kinds := validKinds(f.Kinds)
		if len(kinds) == 0 {
			return false, false
		}
		if len(kinds) == 1 {
			q.add(` AND e.kind = ?`, kinds[0])
		} else {
			q.sb.WriteString(` AND e.kind IN (`)
			for i, k := range kinds {
				if i > 0 {
					q.sb.WriteString(`,`)
				}
				// Kinds are validated small integers: inline them, so a
				// large list needs no parameters.
				q.sb.WriteString(strconv.Itoa(k))
			}
			q.sb.WriteString(`)`)
		}
	}
	if f.Since != nil {
		q.add(` AND e.created_at >= ?`, *f.Since)
	}
	if f.Until != nil {
		q.add(` AND e.created_at <= ?`, *f.Until)
	}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		return false, false
	}
	names := make([]string, 0, len(f.Tags))
	for name := range f.Tags {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		vals := f.Tags[name]
		if vals == nil {
			continue // no constraint, as nostr.Filter.Matches has it
		}
		if len(name) != 1 {
			residual = true
			continue
		}
		if len(vals) == 0 {
			return false, false
		}
		if name == q.skipTag {
			continue // the join in from already applies it
		}
		// Not correlated with e: the subquery runs once and its result
		// probes events by rowid.
		q.add(` AND e.seq IN (SELECT t.event_seq FROM tags t WHERE t.community = ? AND t.name = ? AND t.value IN (`, community, name)
		inList(q, vals)
		q.sb.WriteString(`))`)
	}
	return true, residual
}

// hexList appends "col IN (…)" for the valid 64-hex values of vals. It
// returns false when none is valid (the condition matches nothing).
func (q *sqlBuilder) hexList(col string, vals []string) bool {
	valid := make([]string, 0, len(vals))
	for _, v := range vals {
		if _, ok := nostr.DecodeHex32(v); ok {
			valid = append(valid, v)
		}
	}
	slices.Sort(valid)
	valid = slices.Compact(valid)
	switch {
	case len(valid) == 0:
		return false
	case len(valid) == 1:
		b, _ := nostr.DecodeHex32(valid[0])
		q.add(` AND `+col+` = ?`, b)
	case len(valid) <= inlineListMax:
		q.sb.WriteString(` AND ` + col + ` IN (`)
		bs := make([][]byte, len(valid))
		for i, v := range valid {
			bs[i], _ = nostr.DecodeHex32(v)
		}
		inList(q, bs)
		q.sb.WriteString(`)`)
	default:
		// Validated lowercase hex needs no JSON escaping.
		var js strings.Builder
		js.Grow(len(valid) * 67)
		js.WriteByte('[')
		for i, v := range valid {
			if i > 0 {
				js.WriteByte(',')
			}
			js.WriteByte('"')
			js.WriteString(v)
			js.WriteByte('"')
		}
		js.WriteByte(']')
		q.add(` AND `+col+` IN (SELECT unhex(value) FROM json_each(?))`, js.String())
	}
	return true
}

// DeleteExpired implements store.EventStore: it removes, in every community,
// the events whose NIP-40 expiration is at or before now, in batches that
// interleave with other writes.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	if err := s.eventsOff(); err != nil {
		return 0, err
	}
	if err := s.pruneAuthority(ctx, now); err != nil {
		return 0, err
	}
	if s.ev != nil {
		n, err := s.ev.DeleteExpired(ctx, now)
		if err != nil {
			return n, err
		}
		return n, s.deleteExpiredReplies(ctx, now)
	}
	const chunk = 500
	var total int64
	for {
		var n int64
		err := s.submit(ctx, func(w *writer) error {
			if err := w.indexText(); err != nil {
				return err
			}
			rows, err := w.deleteExpired.QueryContext(w.ctx, now.Unix(), chunk)
			if err != nil {
				return internal("delete expired", err)
			}
			var seqs []int64
			for rows.Next() {
				var seq, cseq int64
				if err := rows.Scan(&seq, &cseq); err != nil {
					rows.Close()
					return internal("delete expired", err)
				}
				seqs = append(seqs, seq)
				w.noteRemoval(cseq)
			}
			if err := rows.Err(); err != nil {
				rows.Close()
				return internal("delete expired", err)
			}
			rows.Close()
			for _, seq := range seqs {
				if _, err := w.deleteTags.ExecContext(w.ctx, seq); err != nil {
					return internal("delete expired", err)
				}
			}
			n = int64(len(seqs))
			return nil
		})
		total += n
		if err != nil {
			return total, err
		}
		if n < chunk {
			return total, nil
		}
	}
}

// pruneAuthority forgets the authority marks (store.Authority) whose until
// is before now.
func (s *Store) pruneAuthority(ctx context.Context, now time.Time) error {
	return s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, `DELETE FROM applied_authority WHERE until < ?`, now.Unix()); err != nil {
			return internal("prune authority marks", err)
		}
		return nil
	})
}
