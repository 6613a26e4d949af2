package lsm

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// maxAuthorKindPrefixes bounds the author × kind product a filter is
// answered by from the author-and-kind index, one range per author and
// kind: directly for one kind, or for several as each author's timeline
// splits into them (merger.position); beyond it the author index is walked
// and the kinds checked per event, however many it skips.
const maxAuthorKindPrefixes = 256

// plan is how one filter is answered: either point reads of the ids it
// names, or a merge of index prefixes (each yielding entries newest first),
// then per candidate the conditions the chosen index does not ensure.
type plan struct {
	f    *nostr.Filter
	cseq uint32
	now  int64

	ids      [][32]byte // the ids path; nil for the index path
	prefixes []key      // the index path
	// split, when set, are the kinds (sorted) of a filter naming authors
	// and several kinds, whose prefixes walk each author's timeline and
	// skip the other kinds, until skipping costs more than seeking each
	// kind's own range would (merger.position).
	split []int

	// Conditions checked on each candidate's header. since and until also
	// bound the index scans.
	since, until int64
	kinds        []int      // sorted; nil = any
	authors      [][32]byte // sorted; nil = any
	scope        channel.Scope
	// parse: the filter has conditions only the event itself answers (tags
	// the driving index does not cover, names longer than one letter,
	// search); candidates are parsed and checked with match.
	parse bool
	// match is f prepared for those checks, made by the first one.
	match *search.Matcher
}

// newPlan plans f for community cseq at time now. ok is false when f can
// match nothing.
func newPlan(cseq uint32, f *nostr.Filter, scope channel.Scope, now int64) (p *plan, ok bool) {
	p = &plan{f: f, cseq: cseq, now: now, scope: scope, until: -1}
	if f.Since != nil {
		p.since = max(*f.Since, 0)
	}
	if f.Until != nil {
		if *f.Until < p.since {
			return nil, false
		}
		p.until = *f.Until
	}
	if f.Kinds != nil {
		if p.kinds = validKinds(f.Kinds); len(p.kinds) == 0 {
			return nil, false
		}
	}
	if f.Authors != nil {
		if p.authors = decodeAll(f.Authors); len(p.authors) == 0 {
			return nil, false
		}
	}
	// The one-letter tag with the fewest values drives a tag scan; every
	// other tag condition is checked on the parsed event.
	var tagName byte
	var tagVals []string
	for name, vals := range f.Tags {
		if vals == nil {
			continue
		}
		if len(vals) == 0 {
			return nil, false
		}
		p.parse = true
		if len(name) == 1 && (tagVals == nil || len(vals) < len(tagVals) ||
			(len(vals) == len(tagVals) && name[0] < tagName)) {
			tagName, tagVals = name[0], vals
		}
	}
	if f.Search != "" {
		p.parse = true
	}
	if f.IDs != nil {
		if p.ids = decodeAll(f.IDs); len(p.ids) == 0 {
			return nil, false
		}
		return p, true
	}
	switch {
	case p.authors != nil && len(p.kinds) == 1 && len(p.authors) <= maxAuthorKindPrefixes:
		for _, a := range p.authors {
			p.prefixes = append(p.prefixes, authorKindPrefix(cseq, a[:], p.kinds[0]))
		}
		p.kinds, p.authors = nil, nil
	case p.authors != nil && p.kinds != nil && len(p.authors)*len(p.kinds) <= maxAuthorKindPrefixes:
		// An author's timeline first: one seek an author instead of one an
		// author and kind (a home timeline's ten authors and two kinds:
		// ten seeks, not twenty), its other kinds skipped. A timeline
		// that skips too many is split into its kinds' ranges from where
		// it is (merger.position).
		for _, a := range p.authors {
			p.prefixes = append(p.prefixes, authorPrefix(cseq, a[:]))
		}
		p.split = p.kinds // sorted, without repeats (validKinds)
		p.authors = nil
	case p.authors != nil:
		for _, a := range p.authors {
			p.prefixes = append(p.prefixes, authorPrefix(cseq, a[:]))
		}
		p.authors = nil
	case tagVals != nil:
		vals := slices.Clone(tagVals)
		slices.Sort(vals)
		for _, v := range slices.Compact(vals) {
			p.prefixes = append(p.prefixes, tagPrefix(cseq, tagName, v))
		}
		p.parse = p.parse && !onlyTag(f, string(tagName))

	case p.kinds != nil:
		for _, k := range p.kinds {
			p.prefixes = append(p.prefixes, kindPrefix(cseq, k))
		}
		p.kinds = nil
	default:
		p.prefixes = []key{timePrefix(cseq)}
	}
	return p, true
}

// onlyTag reports whether f's only tag condition is name's and it has no
// search: the tag index of name then answers every condition that needs the
// event's body.
func onlyTag(f *nostr.Filter, name string) bool {
	if f.Search != "" {
		return false
	}
	for n, vals := range f.Tags {
		if vals != nil && n != name {
			return false
		}
	}
	return true
}

// validKinds returns the kinds of ks a stored event can have, sorted and
// distinct.
func validKinds(ks []int) []int {
	out := make([]int, 0, len(ks))
	for _, k := range ks {
		if k >= 0 && k <= nostr.MaxKind {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// decodeAll decodes the values of hexes that are 64 lowercase hex
// characters (no stored id or pubkey has another form), sorted and
// distinct.
func decodeAll(hexes []string) [][32]byte {
	out := make([][32]byte, 0, len(hexes))
	for _, s := range hexes {
		var b [32]byte
		if nostr.DecodeLowerHex(b[:], s) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(out)
}

// admits checks a candidate's header against the conditions the plan did
// not leave to its index: expiry, access scope, time, kinds and authors.
func (p *plan) admits(h *header) bool {
	if h.hasExpiry && h.expiresAt <= p.now {
		return false
	}
	if h.hasChan && !p.scope.All() {
		if _, ok := slices.BinarySearchFunc(p.scope.Channels(), h.channel, func(a channel.ID, b [16]byte) int {
			return bytes.Compare(a[:], b[:])
		}); !ok {
			return false
		}
	}
	if h.createdAt < p.since || (p.until >= 0 && h.createdAt > p.until) {
		return false
	}
	if p.kinds != nil {
		if _, ok := slices.BinarySearch(p.kinds, h.kind); !ok {
			return false
		}
	}
	if p.authors != nil {
		if _, ok := slices.BinarySearchFunc(p.authors, h.pubkey, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) }); !ok {
			return false
		}
	}
	return true
}

// hit is a candidate that passed every condition.
type hit struct {
	seq uint64
	h   header
	raw []byte
	ev  *nostr.Event // parsed when the plan needed it
}

// run yields the filter's matching events newest first (created_at DESC,
// id ASC) until fn returns false, reading through r (a snapshot or the
// database). With bodies false, and a plan whose conditions the index
// entries answer, records are not read: the hits carry their seq and meta
// only (what Count needs).
func (p *plan) run(ctx context.Context, r pebble.Reader, cache *recordCache, bodies bool, fn func(hit) bool) error {
	recs := records{cache: cache, r: r}
	if p.ids != nil {
		return p.runIDs(ctx, r, recs, fn)
	}
	m, err := newMerger(r, p.prefixes, p.since, p.until, p.split)
	if err != nil {
		return err
	}
	defer m.close()
	bodies = bodies || p.parse
	var (
		group   []hit // the matches sharing created_at, sorted by id before yielding
		groupAt int64 = -1
		lastSeq uint64
		checked int
	)
	flush := func() bool {
		if len(group) > 1 {
			slices.SortFunc(group, func(a, b hit) int { return bytes.Compare(a.h.id[:], b.h.id[:]) })
		}
		for _, h := range group {
			if !fn(h) {
				return false
			}
		}
		group = group[:0]
		return true
	}
	for {
		c, ok := m.next()
		if !ok {
			break
		}
		if c.createdAt == groupAt && c.seq == lastSeq {
			continue // the same event under two values of one tag
		}
		if c.createdAt != groupAt {
			if !flush() {
				return nil
			}
			groupAt = c.createdAt
		}
		lastSeq = c.seq
		if checked++; checked%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var h header
		h.createdAt = c.createdAt
		if err := decodeMeta(c.meta, &h); err != nil {
			return err
		}
		if !p.admits(&h) {
			continue
		}
		if !bodies {
			group = append(group, hit{seq: c.seq, h: h})
			continue
		}
		out, ok, err := p.check(recs, c.seq)
		if err != nil {
			return err
		}
		if ok {
			group = append(group, out)
		}
	}
	if err := m.err(); err != nil {
		return err
	}
	flush()
	return nil
}

// check reads candidate seq and reports whether it matches.
func (p *plan) check(recs records, seq uint64) (hit, bool, error) {
	rec, ok, err := recs.get(seq)
	if err != nil || !ok {
		return hit{}, false, err // !ok: removed since the index was read
	}
	h, raw, err := decodeRecord(rec)
	if err != nil {
		return hit{}, false, err
	}
	if h.cseq != p.cseq || !p.admits(&h) {
		return hit{}, false, nil
	}
	out := hit{seq: seq, h: h, raw: raw}
	if p.parse {
		ev, err := nostr.ParseEvent(raw)
		if err != nil {
			return hit{}, false, fmt.Errorf("%w: event %d: %v", errCorrupt, seq, err)
		}
		if p.match == nil {
			p.match = search.NewMatcher(p.f)
		}
		if !p.match.Matches(ev) {
			return hit{}, false, nil
		}
		out.ev = ev
	}
	return out, true, nil
}

func (p *plan) runIDs(ctx context.Context, r pebble.Reader, recs records, fn func(hit) bool) error {
	var hits []hit
	for _, id := range p.ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, ok, err := readValue(r, idKey(p.cseq, id[:]))
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if len(v) != 8 {
			return fmt.Errorf("%w: index value of %d bytes", errCorrupt, len(v))
		}
		h, ok, err := p.check(recs, beU64(v))
		if err != nil {
			return err
		}
		if ok {
			hits = append(hits, h)
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.h.createdAt != b.h.createdAt {
			if a.h.createdAt > b.h.createdAt {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.h.id[:], b.h.id[:])
	})
	for _, h := range hits {
		if !fn(h) {
			return nil
		}
	}
	return nil
}

// records reads events by seq: from the store's record cache, or through
// r (a snapshot or the database), caching what it reads. A record never
// changes once written and a seq is never reused, so a cached record is
// never stale; a removed event's is simply never asked for again.
type records struct {
	cache *recordCache
	r     pebble.Reader
}

func (rs records) get(seq uint64) ([]byte, bool, error) {
	if rec, ok := rs.cache.get(seq); ok {
		return rec, true, nil
	}
	rec, ok, err := readValue(rs.r, eventKey(seq))
	if ok {
		rs.cache.put(seq, rec)
	}
	return rec, ok, err
}

// readValue reads a copy of k's value through r.
func readValue(r pebble.Reader, k []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(k)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("lsm: read: %w", err)
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

// merger walks several index prefixes at once, yielding their entries in
// timeline order: created_at descending, then seq ascending.
type merger struct {
	cs    []cursor  // one per prefix; their iterators are the merger's
	more  []*cursor // the kinds' ranges of split timelines; theirs too
	ready []*cursor // of more, those at an entry and not yet on the heap
	h     cursorHeap
	fail  error
	buf   []byte // holds the meta next returned last
	r     pebble.Reader
	since int64
	split []int // plan.split
}

type cursor struct {
	it        *pebble.Iterator
	opts      pebble.IterOptions // its bounds
	createdAt int64
	seq       uint64
	meta      []byte // the entry's value; valid until the cursor moves
	// skipped counts the entries of other kinds an author's timeline
	// skipped (only a cursor of a plan with split kinds skips).
	skipped int
	split   bool // walks an author's timeline for the merger's split kinds
}

// maxSkips is how many entries of other kinds an author's timeline skips
// before it is split into its kinds' ranges: a skip costs a step of the
// iterator, a split one seek per kind, and a seek costs tens of steps.
const maxSkips = 32

// load reads the entry the cursor's iterator is at.
func (c *cursor) load() error {
	c.createdAt, c.seq = suffix(c.it.Key())
	v, err := c.it.ValueAndErr()
	c.meta = v
	return err
}

type cursorHeap []*cursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	if h[i].createdAt != h[j].createdAt {
		return h[i].createdAt > h[j].createdAt
	}
	return h[i].seq < h[j].seq
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// newMerger opens one iterator per prefix, bounded to created_at in
// [since, until] (until < 0: no upper bound). Its allocations are per
// merger, not per prefix: a REQ naming a follow list of authors opens an
// iterator for each. With split kinds the prefixes are authors' timelines,
// of which it yields the entries of those kinds only.
func newMerger(r pebble.Reader, prefixes []key, since, until int64, split []int) (*merger, error) {
	size := 0
	for _, p := range prefixes {
		size += 2 * (len(p) + 8)
	}
	// Every bound in one buffer, sized so it never moves: the iterators
	// read their bounds for as long as they live, as long as the merger.
	bounds := make([]byte, 0, size)
	bound := func(p key, createdAt int64) []byte {
		start := len(bounds)
		bounds = append(bounds, p...)
		bounds = binary.BigEndian.AppendUint64(bounds, ^uint64(createdAt))
		return bounds[start:len(bounds):len(bounds)]
	}
	m := &merger{cs: make([]cursor, len(prefixes)), h: make(cursorHeap, 0, len(prefixes)), r: r, since: since, split: split}
	for i, p := range prefixes {
		c := &m.cs[i]
		c.split = split != nil
		c.opts.LowerBound = []byte(p)
		if until >= 0 {
			c.opts.LowerBound = bound(p, until)
		}
		c.opts.UpperBound = successor(bound(p, since))
		it, err := r.NewIter(&c.opts)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("lsm: iterate: %w", err)
		}
		c.it = it
		ok, err := m.position(c, it.First())
		if err != nil {
			m.close()
			return nil, err
		}
		if ok {
			m.h = append(m.h, c)
		}
	}
	m.h = append(m.h, m.ready...)
	m.ready = m.ready[:0]
	heap.Init(&m.h)
	return m, nil
}

// position loads the entry c's iterator moved to (moved false: it found
// none) and reports whether c is at an entry to yield. A split author's
// timeline first skips the entries of other kinds; after maxSkips it
// splits instead: its kinds' ranges, from the entry it is at, join the
// merger (m.more; m.ready, for the heap once c is off it) and c reports
// false.
func (m *merger) position(c *cursor, moved bool) (bool, error) {
	for {
		if !moved {
			if err := c.it.Error(); err != nil {
				return false, fmt.Errorf("lsm: iterate: %w", err)
			}
			return false, nil
		}
		if err := c.load(); err != nil {
			return false, fmt.Errorf("lsm: iterate: %w", err)
		}
		if !c.split || len(c.meta) < 3 {
			return true, nil // a short meta is decodeMeta's to report
		}
		if _, ok := slices.BinarySearch(m.split, int(binary.BigEndian.Uint16(c.meta[1:3]))); ok {
			return true, nil
		}
		if c.skipped++; c.skipped > maxSkips {
			return false, m.splitAt(c)
		}
		moved = c.it.Next()
	}
}

// splitAt replaces c, an author's timeline at an entry of another kind,
// with the ranges of the author-and-kind index for the merger's kinds from
// that entry on ('a' cseq pubkey → 'A' cseq pubkey kind, same suffixes).
func (m *merger) splitAt(c *cursor) error {
	k := c.it.Key()
	at := k[len(k)-16:] // ^created_at seq of the entry c is at
	cseq, pubkey := binary.BigEndian.Uint32(k[1:5]), k[5:len(k)-16]
	for _, kind := range m.split {
		p := authorKindPrefix(cseq, pubkey, kind)
		sub := &cursor{}
		sub.opts.LowerBound = append(slices.Clip(p), at...)
		sub.opts.UpperBound = successor(binary.BigEndian.AppendUint64(slices.Clip(p), ^uint64(m.since)))
		it, err := m.r.NewIter(&sub.opts)
		if err != nil {
			return fmt.Errorf("lsm: iterate: %w", err)
		}
		sub.it = it
		m.more = append(m.more, sub)
		ok, err := m.position(sub, it.First())
		if err != nil {
			return err
		}
		if ok {
			m.ready = append(m.ready, sub)
		}
	}
	return nil
}

// next returns the next entry (its meta is a copy), or ok false at the end
// (or on an error, which err then reports).
func (m *merger) next() (entry cursor, ok bool) {
	if len(m.h) == 0 || m.fail != nil {
		return cursor{}, false
	}
	c := m.h[0]
	entry = cursor{createdAt: c.createdAt, seq: c.seq, meta: append(m.buf[:0], c.meta...)}
	m.buf = entry.meta
	ok, err := m.position(c, c.it.Next())
	switch {
	case err != nil:
		m.fail = err
	case ok:
		heap.Fix(&m.h, 0)
	default:
		heap.Pop(&m.h)
	}
	for _, sub := range m.ready {
		heap.Push(&m.h, sub)
	}
	m.ready = m.ready[:0]
	return entry, true
}

func (m *merger) err() error { return m.fail }

func (m *merger) close() {
	for i := range m.cs {
		if it := m.cs[i].it; it != nil {
			_ = it.Close()
			m.cs[i].it = nil
		}
	}
	for _, c := range m.more {
		if c.it != nil {
			_ = c.it.Close()
			c.it = nil
		}
	}
}

// Query implements store.EventStore: every channel's events included.
func (s *Store) Query(ctx context.Context, c tenant.CommunityID, f nostr.Filter) iter.Seq2[store.Record, error] {
	return s.QueryScoped(ctx, c, f, channel.AllChannels())
}

// QueryScoped is Query restricted to the community-wide events plus the
// channels of scope.
func (s *Store) QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope) iter.Seq2[store.Record, error] {
	return func(yield func(store.Record, error) bool) {
		cseq, err := s.enterCommunity(ctx, c)
		if err != nil {
			yield(store.Record{}, err)
			return
		}
		defer s.life.leave()
		if f.LimitSet && f.Limit <= 0 {
			return
		}
		p, ok := newPlan(cseq, &f, scope, time.Now().Unix())
		if !ok {
			return
		}
		if f.Search != "" {
			s.querySearch(ctx, c, p, yield)
			return
		}
		sent := 0
		stopped := false
		err = p.run(ctx, s.db, s.cache, true, func(h hit) bool {
			if !yield(record(c, h), nil) {
				stopped = true
				return false
			}
			sent++
			return !f.LimitSet || sent < f.Limit
		})
		if err != nil && !stopped {
			yield(store.Record{}, err)
		}
	}
}

func record(c tenant.CommunityID, h hit) store.Record {
	return store.Record{ID: recordID(&h.h.id, h.raw), CreatedAt: h.h.createdAt, Raw: h.raw, Community: c}
}

// recordID returns the event id as lowercase hex. A stored event's raw
// JSON is nostr.Event.AppendJSON's, which begins with the id, and raw is
// immutable once stored (store.Record.Raw): the string shares those 64
// bytes rather than allocating them again for every event a query returns.
// A raw that does not begin with this id gets an encoded copy.
func recordID(id *[32]byte, raw []byte) string {
	const prefix = `{"id":"`
	if len(raw) > len(prefix)+64 && string(raw[:len(prefix)]) == prefix && raw[len(prefix)+64] == '"' {
		s := unsafe.String(&raw[len(prefix)], 64)
		var got [32]byte
		if nostr.DecodeLowerHex(got[:], s) && got == *id {
			return s
		}
	}
	return hex.EncodeToString(id[:])
}

// scored is a search hit with its relevance.
type scored struct {
	rec   store.Record
	score float64
}

// querySearch answers a filter with a search: every candidate the plan
// selects is matched and scored on its content (package search), and the
// hits are yielded by descending score, then newest first, at most f.Limit
// when f.LimitSet.
func (s *Store) querySearch(ctx context.Context, c tenant.CommunityID, p *plan, yield func(store.Record, error) bool) {
	sq, err := search.FromFilter(p.f)
	if err != nil {
		return // an invalid query matches nothing
	}
	var hits []scored
	err = p.run(ctx, s.db, s.cache, true, func(h hit) bool {
		hits = append(hits, scored{rec: record(c, h), score: sq.Score(h.ev.Content)})
		return true
	})
	if err != nil {
		yield(store.Record{}, err)
		return
	}
	yieldRanked(hits, p.f, yield)
}

// yieldRanked yields search hits by descending score, then newest first
// (created_at DESC, id ASC), at most f.Limit when f.LimitSet.
func yieldRanked(hits []scored, f *nostr.Filter, yield func(store.Record, error) bool) {
	slices.SortFunc(hits, func(a, b scored) int { return store.CompareSearchHits(a.rec, a.score, b.rec, b.score) })
	for i, h := range hits {
		if f.LimitSet && i >= f.Limit {
			return
		}
		if !yield(h.rec, nil) {
			return
		}
	}
}

// Count implements store.EventStore.
func (s *Store) Count(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter) (int64, error) {
	return s.CountScoped(ctx, c, filters, channel.AllChannels())
}

// CountScoped is Count restricted to the community-wide events plus the
// channels of scope.
func (s *Store) CountScoped(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter, scope channel.Scope) (int64, error) {
	n, err := s.CountEach(ctx, c, [][]nostr.Filter{filters}, scope)
	if err != nil {
		return 0, err
	}
	return n[0], nil
}

// CountEach counts each set of filters as CountScoped does, reading one
// snapshot of the store for all of them.
func (s *Store) CountEach(ctx context.Context, c tenant.CommunityID, sets [][]nostr.Filter, scope channel.Scope) ([]int64, error) {
	cseq, err := s.enterCommunity(ctx, c)
	if err != nil {
		return nil, err
	}
	defer s.life.leave()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	now := time.Now().Unix()
	out := make([]int64, len(sets))
	for i, filters := range sets {
		var seen map[uint64]struct{} // distinct events across filters
		if len(filters) > 1 {
			seen = map[uint64]struct{}{}
		}
		for j := range filters {
			p, ok := newPlan(cseq, &filters[j], scope, now)
			if !ok {
				continue
			}
			err := p.run(ctx, snap, s.cache, false, func(h hit) bool {
				if seen != nil {
					if _, dup := seen[h.seq]; dup {
						return true
					}
					seen[h.seq] = struct{}{}
				}
				out[i]++
				return true
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// DeleteExpired implements store.EventStore: it removes, in every community,
// the events whose NIP-40 expiration is at or before now, and returns how
// many.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	if err := s.life.enter(); err != nil {
		return 0, err
	}
	defer s.life.leave()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	const chunk = 256
	var removed int64
	for {
		keys, err := s.expired(now.Unix(), chunk)
		if err != nil {
			return removed, err
		}
		if len(keys) == 0 {
			break
		}
		n, err := s.removeExpired(keys)
		removed += n
		if err != nil {
			return removed, err
		}
		if len(keys) < chunk {
			break
		}
		if err := ctx.Err(); err != nil {
			return removed, err
		}
	}
	if removed > 0 {
		if err := s.durable(); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// expired returns up to n expiry keys of events expiring at or before now.
func (s *Store) expired(now int64, n int) ([][]byte, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{pExpiry},
		UpperBound: newKey(pExpiry, 9).u64(uint64(now) + 1),
	})
	if err != nil {
		return nil, fmt.Errorf("lsm: iterate: %w", err)
	}
	var keys [][]byte
	for ok := it.First(); ok && len(keys) < n; ok = it.Next() {
		k := it.Key()
		if len(k) != 17 {
			return nil, errors.Join(fmt.Errorf("%w: expiry key of %d bytes", errCorrupt, len(k)), it.Close())
		}
		keys = append(keys, slices.Clone(k))
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("lsm: iterate: %w", err)
	}
	return keys, nil
}

// removeExpired removes the events of expiry keys, in one batch. A key
// whose event is gone is deleted itself.
func (s *Store) removeExpired(keys [][]byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.newTxn(false)
	defer t.close()
	var n int64
	for _, k := range keys {
		r, ok, err := t.record(beU64(k[9:]))
		if err != nil {
			return 0, err
		}
		if !ok {
			if err := t.b.Delete(k, nil); err != nil {
				return 0, fmt.Errorf("lsm: delete expired: %w", err)
			}
			continue
		}
		if err := t.remove(r); err != nil {
			return 0, err
		}
		n++
	}
	if err := t.commit(); err != nil {
		return 0, err
	}
	return n, nil
}

func beU64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
