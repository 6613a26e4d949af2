package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/dgraph-io/ristretto/v2"
)

// eventCache answers REQs from memory: the live events earlier reads
// returned and the writer stored, keyed by community and id (REQs by ids)
// and by community and row (queries that find their rows through an
// index, which then need not read them). Reading an event through SQLite
// costs a read transaction (two fcntl calls on the shared-memory index),
// database/sql and two goroutines watching the context, and a row read per
// event — most of a small REQ, for an answer that never changes: a stored
// event is immutable until it is removed.
//
// Removal is what the cache must not miss, and it is tracked by epochs: the
// writer bumps a community's epoch after every transaction that removed
// one of its events (replacement, NIP-09 deletion, expiry sweep, channel
// command), right after the commit and before the removal is
// acknowledged. An entry carries the epoch loaded before the read that
// found it (for an event the writer stored, the epoch during its
// transaction) and serves only while that epoch is current. A read that
// overlapped a removal therefore stores an entry that is already stale;
// one that started after it did not see the event. A row number SQLite
// reuses after a removal is covered the same way. Entries are never
// updated in place, so ristretto's asynchronous, droppable Set is
// harmless: a dropped entry is a miss.
//
// Expiry and channel scope are checked at each hit, as the SQL checks them
// at each read; f.Matches applies the rest of a filter by ids. The cache
// is safe for concurrent use.
type eventCache struct {
	r *ristretto.Cache[string, *cachedEvent]
	// epochs are per community, sharded: a removal in one community
	// invalidates the entries of the others in its shard too, which costs
	// only misses.
	epochs [256]atomic.Uint64
}

type cachedEvent struct {
	epoch   uint64
	seq     int64
	rec     store.Record
	expires int64       // 0: none
	channel *channel.ID // nil: community-wide
	// ev is rec.Raw parsed, on the first lookup by ids that needs it.
	ev atomic.Pointer[nostr.Event]
}

// event returns the entry's event, parsing it once; nil if it does not
// parse (never for a stored event).
func (e *cachedEvent) event() *nostr.Event {
	if ev := e.ev.Load(); ev != nil {
		return ev
	}
	ev, err := nostr.ParseEvent(e.rec.Raw)
	if err != nil {
		return nil
	}
	e.ev.Store(ev)
	return ev
}

// newEventCache returns a cache holding about maxBytes of events.
func newEventCache(maxBytes int64) (*eventCache, error) {
	r, err := ristretto.NewCache(&ristretto.Config[string, *cachedEvent]{
		NumCounters: max(1000, maxBytes/100), // ~10 per entry of ~1 KB
		MaxCost:     maxBytes,
		BufferItems: 64,
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: event cache: %w", err)
	}
	return &eventCache{r: r}, nil
}

func (c *eventCache) close() { c.r.Close() }

func (c *eventCache) epochOf(cseq int64) *atomic.Uint64 {
	return &c.epochs[uint64(cseq)&255]
}

// epoch returns community cseq's epoch; load it before the read whose rows
// are passed to put.
func (c *eventCache) epoch(cseq int64) uint64 { return c.epochOf(cseq).Load() }

// removed invalidates the entries of the communities in cseqs; the writer
// calls it after each transaction that removed their events, once the
// transaction has ended.
func (c *eventCache) removed(cseqs []int64) {
	for _, cs := range cseqs {
		c.epochOf(cs).Add(1)
	}
}

// idKey and seqKey are an entry's two keys: by id (REQs by ids) and by
// row (queries that find rows through an index; see QueryScoped).
func idKey(cseq int64, id []byte) string {
	var b [1 + 8 + 32]byte
	b[0] = 'i'
	binary.BigEndian.PutUint64(b[1:9], uint64(cseq))
	copy(b[9:], id)
	return string(b[:])
}

func seqKey(cseq, seq int64) string {
	var b [1 + 8 + 8]byte
	b[0] = 's'
	binary.BigEndian.PutUint64(b[1:9], uint64(cseq))
	binary.BigEndian.PutUint64(b[9:], uint64(seq))
	return string(b[:])
}

// visible reports whether a read under scope at now may return e, as the
// SQL decides for a row.
func (e *cachedEvent) visible(now int64, scope channel.Scope) bool {
	return (e.expires == 0 || e.expires > now) && (e.channel == nil || scope.Contains(*e.channel))
}

// put stores the event of row seq, found by a read that started after
// epoch was loaded. expires is 0 for none; ch is the row's channel BLOB or
// nil. A row's seq may be reused once the row is removed (SQLite rowids),
// which the removal's epoch bump covers like any other.
func (c *eventCache) put(cseq int64, epoch uint64, seq int64, rec store.Record, expires int64, ch []byte) {
	id, ok := nostr.DecodeHex32(rec.ID)
	if !ok {
		return
	}
	e := &cachedEvent{epoch: epoch, seq: seq, rec: rec, expires: expires}
	if len(ch) == len(channel.ID{}) {
		e.channel = new(channel.ID)
		copy(e.channel[:], ch)
	} else if ch != nil {
		return // not a channel id: leave it to SQL
	}
	// Once parsed (by a lookup by ids), the event holds about as much
	// again as the raw JSON; each key carries half.
	cost := int64(len(rec.Raw) + 128)
	c.r.Set(idKey(cseq, id), e, cost)
	c.r.Set(seqKey(cseq, seq), e, cost)
}

// get returns the current entry of row seq of community cseq whose epoch
// is epoch, if cached.
func (c *eventCache) get(cseq, seq int64, epoch uint64) (*cachedEvent, bool) {
	e, found := c.r.Get(seqKey(cseq, seq))
	if !found || e.epoch != epoch {
		return nil, false
	}
	return e, true
}

// records answers rows seqs (in their order) of community c (cseq), all
// visible at now under scope, when every one is cached and current; ok is
// false otherwise.
func (c *eventCache) records(cseq int64, cid tenant.CommunityID, seqs []int64, now int64, scope channel.Scope) (recs []store.Record, ok bool) {
	epoch := c.epoch(cseq)
	recs = make([]store.Record, 0, len(seqs))
	for _, seq := range seqs {
		e, found := c.get(cseq, seq, epoch)
		if !found || !e.visible(now, scope) {
			return nil, false
		}
		rec := e.rec
		rec.Community = cid
		recs = append(recs, rec)
	}
	return recs, true
}

// lookup answers f — a filter with ids and no search — in community c
// (cseq) at now under scope, when every id it names is cached and current;
// ok is false otherwise (the caller reads the store).
func (c *eventCache) lookup(cseq int64, cid tenant.CommunityID, f *nostr.Filter, now int64, scope channel.Scope) (recs []store.Record, ok bool) {
	epoch := c.epoch(cseq)
	ids := make([][]byte, 0, len(f.IDs))
	for _, s := range f.IDs {
		if b, ok := nostr.DecodeHex32(s); ok {
			ids = append(ids, b)
		}
	}
	var hits []*cachedEvent
	for _, id := range ids {
		e, found := c.r.Get(idKey(cseq, id))
		if !found || e.epoch != epoch {
			return nil, false
		}
		ev := e.event()
		switch {
		case ev == nil:
			return nil, false
		case !e.visible(now, scope):
		case !search.Matches(f, ev):
		case slices.Contains(hits, e): // an id listed twice
		default:
			hits = append(hits, e)
		}
	}
	limit := len(hits)
	if f.LimitSet {
		limit = max(0, f.Limit)
	}
	return answer(hits, limit, cid), true
}

// cachedRows runs inner — the index-only statement of an index-first query
// (indexFirstQuery), selecting the rows' seqs in answer order — and answers
// from the cache when it holds every row; hit is false otherwise.
func (s *Store) cachedRows(ctx context.Context, c tenant.CommunityID, cseq int64, inner *sqlBuilder, now int64, scope channel.Scope) (recs []store.Record, hit bool, err error) {
	seqs, err := s.seqs(ctx, inner, func(int64, int64) bool { return true })
	if err != nil {
		return nil, false, err
	}
	recs, hit = s.events.records(cseq, c, seqs, now, scope)
	return recs, hit, nil
}

// seqs runs q, whose rows are (seq) or (seq, created_at), and collects the
// seqs while each passes keep; it returns nil when one does not.
func (s *Store) seqs(ctx context.Context, q *sqlBuilder, keep func(seq, createdAt int64) bool) ([]int64, error) {
	st, err := s.rstmts.get(ctx, q.sb.String())
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, q.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	n, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	seqs := []int64{}
	var seq, createdAt int64
	dest := []any{&seq, &createdAt}[:len(n)]
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if !keep(seq, createdAt) {
			return nil, nil
		}
		seqs = append(seqs, seq)
	}
	return seqs, rows.Err()
}

// tagWalkable reports whether f is a limited filter on one value of one
// single-letter tag and nothing else but time bounds: the shape
// cachedTagWalk answers.
func tagWalkable(f *nostr.Filter) bool {
	if !f.LimitSet || f.Limit <= 0 || f.IDs != nil || f.Authors != nil || f.Kinds != nil || f.Search != "" {
		return false
	}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		return false
	}
	n := 0
	for name, vals := range f.Tags {
		if vals == nil {
			continue
		}
		if len(name) != 1 || len(slices.Compact(slices.Sorted(slices.Values(vals)))) != 1 {
			return false
		}
		n++
	}
	return n == 1
}

// cachedTagWalk answers a tagWalkable filter from the tag rows (which
// carry each event's created_at) and the cache, when the cache holds every
// row the answer needs: rows are taken newest first until limit visible
// events are found, plus those tied with the last of them, then ordered by
// id within a second as the SQL orders them. hit is false otherwise.
func (s *Store) cachedTagWalk(ctx context.Context, c tenant.CommunityID, cseq int64, f *nostr.Filter, now int64, scope channel.Scope) (recs []store.Record, hit bool, err error) {
	var name, value string
	for n, vals := range f.Tags {
		if vals != nil {
			name, value = n, vals[0]
		}
	}
	q := new(sqlBuilder)
	q.add(`SELECT t.event_seq, t.created_at FROM tags t WHERE t.community = ? AND t.name = ? AND t.value = ?`, cseq, name, value)
	if f.Since != nil {
		q.add(` AND t.created_at >= ?`, *f.Since)
	}
	if f.Until != nil {
		q.add(` AND t.created_at <= ?`, *f.Until)
	}
	q.add(` ORDER BY t.created_at DESC`)
	epoch := s.events.epoch(cseq) // before the walk, see eventCache
	var (
		found    []*cachedEvent
		boundary int64
		missed   bool
	)
	_, err = s.seqs(ctx, q, func(seq, createdAt int64) bool {
		if len(found) >= f.Limit && createdAt < boundary {
			return false // done: the rest is older than the limit's last
		}
		e, ok := s.events.get(cseq, seq, epoch)
		if !ok {
			missed = true
			return false
		}
		if e.visible(now, scope) {
			found = append(found, e)
			if len(found) == f.Limit {
				boundary = createdAt
			}
		}
		return true
	})
	if err != nil || missed {
		return nil, false, err
	}
	return answer(found, f.Limit, c), true, nil
}

// answer orders es as the SQL does (newest first, then lowest id) and
// returns the first limit as records of community c.
func answer(es []*cachedEvent, limit int, c tenant.CommunityID) []store.Record {
	slices.SortFunc(es, func(a, b *cachedEvent) int {
		if a.rec.CreatedAt != b.rec.CreatedAt {
			if a.rec.CreatedAt > b.rec.CreatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.rec.ID, b.rec.ID)
	})
	es = es[:min(len(es), limit)]
	recs := make([]store.Record, len(es))
	for i, e := range es {
		recs[i] = e.rec
		recs[i].Community = c
	}
	return recs
}
