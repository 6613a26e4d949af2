package pubsub

import (
	"sync"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/tenant"
)

// Subscription is one live subscription of one connection. It is immutable
// once added to an Index: the Index keeps pointers into Filters.
type Subscription struct {
	// Owner is the connection that owns the subscription. It must be
	// comparable (a pointer, typically); it is used as a map key.
	Owner any
	// ID is the client's subscription id, unique per Owner.
	ID      string
	Filters []nostr.Filter
}

// Index holds the live subscriptions of this process, per community, and
// finds those an event matches without scanning them all.
//
// Every filter is posted in one inverted index, chosen by its most selective
// constraint: event id, else author, else a tag name+value (the tag with the
// fewest values), else one word of its NIP-50 search (the longest: every
// word must occur in a match), else kind. A filter with none of these (only
// since/until, or nothing) goes to a per-community scan list. Matching an
// event looks up its id, its author, each of its tags, each distinct word of
// its content (package search's tokenizer; only in a community that has
// search subscriptions, and never for gift wraps) and its kind, and checks
// only the filters found there, plus the scan list, with a nostr.Matcher:
// the cost of checking one filter does not grow with the length of its
// lists.
// A filter with an explicitly empty list (kinds: [], "#p": [], …) can match
// nothing and is not posted at all; Limit is ignored (a "limit": 0 filter
// still receives live events).
//
// Communities are isolated shards: Match on one community never sees another
// community's subscriptions. Each shard has its own RWMutex: many concurrent
// Match calls (fan-out) proceed in parallel and Add/Remove of one community
// never wait for another's. An Index is safe for concurrent use.
type Index struct {
	mu     sync.RWMutex
	shards map[tenant.CommunityID]*shard
}

// NewIndex returns an empty Index.
func NewIndex() *Index {
	return &Index{shards: make(map[tenant.CommunityID]*shard)}
}

// dimension is the inverted index a filter is posted in.
type dimension uint8

const (
	dimID dimension = iota + 1
	dimAuthor
	dimTag
	dimKind
	dimWord
)

// postKey addresses one inverted-index bucket. For dimTag, name is the tag
// name and val its value; for dimID and dimAuthor val is the hex string; for
// dimWord val is the word; for dimKind, kind is set.
type postKey struct {
	dim  dimension
	name string
	val  string
	kind int
}

// posting is one filter's entry in one bucket; pos is its index there, so
// removal is O(1).
type posting struct {
	f   *filterRef
	key postKey
	pos int
}

// filterRef is one filter of an indexed subscription.
type filterRef struct {
	e     *entry
	f     *search.Matcher
	posts []*posting
}

// entry is one indexed subscription.
type entry struct {
	sub *Subscription
	// dedup is false only when Match cannot reach the entry twice for one
	// event: it has a single posting, and Match scans each bucket at most
	// once per event (an event's repeated tags and words included).
	dedup   bool
	filters []*filterRef
}

type ownerKey struct {
	owner any
	id    string
}

// shard is one community's part of the index.
type shard struct {
	mu      sync.RWMutex
	dead    bool // removed from Index.shards; Add must retry
	subs    map[ownerKey]*entry
	byOwner map[any]map[string]*entry
	// The inverted indexes, one typed map per dimension so a lookup hashes
	// only what it needs; tags are keyed by name first so an event's tags
	// whose name no filter uses cost one short-string lookup. Each is made
	// when a subscription first needs it: a shard lives only while its
	// community has subscriptions, and a lone REQ builds one each time.
	ids     map[string][]*posting
	authors map[string][]*posting
	tags    map[string]map[string][]*posting
	kinds   map[int][]*posting
	words   map[string][]*posting
	scan    []*posting
}

func newShard() *shard {
	return &shard{
		subs:    make(map[ownerKey]*entry),
		byOwner: make(map[any]map[string]*entry),
	}
}

// Add indexes s in community c, replacing the subscription with the same
// Owner and ID there, if any. s must not be modified afterwards. A nil s is
// ignored.
func (x *Index) Add(c tenant.CommunityID, s *Subscription) {
	if s == nil {
		return
	}
	e := buildEntry(s)
	for {
		sh := x.shardFor(c, true)
		sh.mu.Lock()
		if sh.dead {
			sh.mu.Unlock()
			continue
		}
		k := ownerKey{s.Owner, s.ID}
		if old := sh.subs[k]; old != nil {
			sh.unpost(old)
		}
		sh.subs[k] = e
		ids := sh.byOwner[s.Owner]
		if ids == nil {
			ids = make(map[string]*entry)
			sh.byOwner[s.Owner] = ids
		}
		ids[s.ID] = e
		sh.post(e)
		sh.mu.Unlock()
		return
	}
}

// Remove removes owner's subscription id from community c and reports
// whether it was there.
func (x *Index) Remove(c tenant.CommunityID, owner any, id string) bool {
	sh := x.shardFor(c, false)
	if sh == nil {
		return false
	}
	sh.mu.Lock()
	e := sh.subs[ownerKey{owner, id}]
	if e != nil {
		sh.remove(e)
	}
	empty := len(sh.subs) == 0
	sh.mu.Unlock()
	if empty {
		x.dropIfEmpty(c)
	}
	return e != nil
}

// RemoveOwner removes all of owner's subscriptions in community c and
// returns how many there were.
func (x *Index) RemoveOwner(c tenant.CommunityID, owner any) int {
	sh := x.shardFor(c, false)
	if sh == nil {
		return 0
	}
	sh.mu.Lock()
	ids := sh.byOwner[owner]
	n := len(ids)
	for _, e := range ids {
		sh.remove(e)
	}
	empty := len(sh.subs) == 0
	sh.mu.Unlock()
	if empty {
		x.dropIfEmpty(c)
	}
	return n
}

// Len returns the number of subscriptions indexed in community c.
func (x *Index) Len(c tenant.CommunityID) int {
	sh := x.shardFor(c, false)
	if sh == nil {
		return 0
	}
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return len(sh.subs)
}

// Match calls fn once for each subscription of community c that ev matches
// (at least one of its filters matches), however many of its filters match.
//
// fn is called after the shard's lock is released, so it may call Add or
// Remove; a subscription removed concurrently with Match may still be passed
// to fn once. The order of calls is unspecified.
func (x *Index) Match(c tenant.CommunityID, ev *nostr.Event, fn func(*Subscription)) {
	if ev == nil {
		return
	}
	sh := x.shardFor(c, false)
	if sh == nil {
		return
	}
	m := matchPool.Get().(*matches)
	defer m.release()

	sh.mu.RLock()
	if len(sh.ids) > 0 {
		m.scan(ev, sh.ids[ev.ID])
	}
	if len(sh.authors) > 0 {
		m.scan(ev, sh.authors[ev.PubKey])
	}
	if len(sh.tags) > 0 {
		for _, t := range ev.Tags {
			if len(t) >= 2 {
				if byVal := sh.tags[t[0]]; byVal != nil {
					if b := byVal[t[1]]; len(b) > 0 && m.firstScan(b) {
						m.scan(ev, b)
					}
				}
			}
		}
	}
	if len(sh.words) > 0 && nostr.IsSearchable(ev.Kind) {
		sh.scanWords(m, ev)
	}
	if len(sh.kinds) > 0 {
		m.scan(ev, sh.kinds[ev.Kind])
	}
	m.scan(ev, sh.scan)
	sh.mu.RUnlock()

	for _, e := range m.list {
		fn(e.sub)
	}
}

// scanWords scans the word bucket of each distinct word of ev's content.
// sh.mu held for reading.
func (sh *shard) scanWords(m *matches, ev *nostr.Event) {
	var seen map[string]struct{} // buckets scanned, built at the first hit
	for w := range search.Words(ev.Content) {
		b := sh.words[w]
		if b == nil {
			continue
		}
		if seen == nil {
			seen = make(map[string]struct{})
		} else if _, dup := seen[w]; dup {
			continue
		}
		seen[w] = struct{}{}
		m.scan(ev, b)
	}
}

// linearDedupMax is how many matches Match dedups by linear search before
// switching to a map.
const linearDedupMax = 16

// maxPooledMatches bounds the list a pooled matches keeps between calls.
const maxPooledMatches = 1 << 14

// matches collects the entries one event matches, each once. Match takes
// one from matchPool and gives it back once fn has seen every entry: a
// fan-out allocates nothing per call however many subscriptions it reaches.
type matches struct {
	list []*entry
	seen map[*entry]struct{} // used once list outgrows a linear search
	// tagBuckets are the tag buckets scanned so far (by their first
	// posting): an event that repeats a tag must not scan its bucket twice.
	tagBuckets    []*posting
	tagBucketSeen map[*posting]struct{} // used once tagBuckets outgrows a linear search
}

// firstScan reports whether tag bucket b (not empty) was not scanned yet
// for this event, and records it.
func (m *matches) firstScan(b []*posting) bool {
	p := b[0]
	if len(m.tagBuckets) >= linearDedupMax {
		if m.tagBucketSeen == nil {
			m.tagBucketSeen = make(map[*posting]struct{})
		}
		if len(m.tagBucketSeen) == 0 {
			for _, x := range m.tagBuckets {
				m.tagBucketSeen[x] = struct{}{}
			}
		}
		if _, dup := m.tagBucketSeen[p]; dup {
			return false
		}
		m.tagBucketSeen[p] = struct{}{}
		m.tagBuckets = append(m.tagBuckets, p)
		return true
	}
	for _, x := range m.tagBuckets {
		if x == p {
			return false
		}
	}
	m.tagBuckets = append(m.tagBuckets, p)
	return true
}

var matchPool = sync.Pool{New: func() any { return &matches{list: make([]*entry, 0, linearDedupMax)} }}

// release empties m (dropping its references to entries) and pools it.
func (m *matches) release() {
	if cap(m.list) > maxPooledMatches {
		return
	}
	clear(m.list)
	m.list = m.list[:0]
	clear(m.seen)
	clear(m.tagBuckets)
	m.tagBuckets = m.tagBuckets[:0]
	clear(m.tagBucketSeen)
	matchPool.Put(m)
}

// scan checks the filters of bucket b against ev and records the entries
// that match and were not recorded yet.
func (m *matches) scan(ev *nostr.Event, b []*posting) {
	for _, p := range b {
		e := p.f.e
		if e.dedup && m.has(e) {
			continue
		}
		if !p.f.f.Matches(ev) {
			continue
		}
		m.list = append(m.list, e)
		switch {
		case len(m.list) > linearDedupMax+1:
			if e.dedup {
				m.seen[e] = struct{}{}
			}
		case len(m.list) == linearDedupMax+1:
			if m.seen == nil {
				m.seen = make(map[*entry]struct{}, 4*linearDedupMax)
			}
			for _, x := range m.list {
				if x.dedup {
					m.seen[x] = struct{}{}
				}
			}
		}
	}
}

func (m *matches) has(e *entry) bool {
	if len(m.list) > linearDedupMax {
		_, ok := m.seen[e]
		return ok
	}
	for _, x := range m.list {
		if x == e {
			return true
		}
	}
	return false
}

// shardFor returns community c's shard, creating it if create is set.
func (x *Index) shardFor(c tenant.CommunityID, create bool) *shard {
	x.mu.RLock()
	sh := x.shards[c]
	x.mu.RUnlock()
	if sh != nil || !create {
		return sh
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if sh = x.shards[c]; sh == nil {
		sh = newShard()
		x.shards[c] = sh
	}
	return sh
}

// dropIfEmpty forgets community c's shard if it holds no subscription, so
// an idle community costs nothing.
func (x *Index) dropIfEmpty(c tenant.CommunityID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sh := x.shards[c]
	if sh == nil {
		return
	}
	sh.mu.Lock()
	if len(sh.subs) == 0 {
		sh.dead = true
		delete(x.shards, c)
	}
	sh.mu.Unlock()
}

// buildEntry prepares the postings of s, outside any lock.
func buildEntry(s *Subscription) *entry {
	e := &entry{sub: s}
	for i := range s.Filters {
		f := &s.Filters[i]
		keys, scan, ok := postKeys(f)
		if !ok {
			continue // can never match
		}
		fr := &filterRef{e: e, f: search.NewMatcher(f)}
		if scan {
			fr.posts = []*posting{{f: fr}}
		} else {
			fr.posts = make([]*posting, len(keys))
			for j, k := range keys {
				fr.posts[j] = &posting{f: fr, key: k}
			}
		}
		e.filters = append(e.filters, fr)
	}
	posts := 0
	for _, fr := range e.filters {
		posts += len(fr.posts)
	}
	e.dedup = posts > 1
	return e
}

// postKeys chooses the bucket keys of f: one per value of its most selective
// constraint. scan is true when f has no indexable constraint. ok is false
// when f can match nothing (an explicitly empty list).
func postKeys(f *nostr.Filter) (keys []postKey, scan, ok bool) {
	if (f.IDs != nil && len(f.IDs) == 0) || (f.Authors != nil && len(f.Authors) == 0) ||
		(f.Kinds != nil && len(f.Kinds) == 0) {
		return nil, false, false
	}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		return nil, false, false
	}
	tagName := ""
	tagVals := []string(nil)
	for name, vals := range f.Tags {
		if vals == nil {
			continue // no constraint
		}
		if len(vals) == 0 {
			return nil, false, false
		}
		if tagVals == nil || len(vals) < len(tagVals) || (len(vals) == len(tagVals) && name < tagName) {
			tagName, tagVals = name, vals
		}
	}
	switch {
	case f.IDs != nil:
		keys = make([]postKey, 0, len(f.IDs))
		for _, v := range uniqueStrings(f.IDs) {
			keys = append(keys, postKey{dim: dimID, val: v})
		}
	case f.Authors != nil:
		keys = make([]postKey, 0, len(f.Authors))
		for _, v := range uniqueStrings(f.Authors) {
			keys = append(keys, postKey{dim: dimAuthor, val: v})
		}
	case tagVals != nil:
		keys = make([]postKey, 0, len(tagVals))
		for _, v := range uniqueStrings(tagVals) {
			keys = append(keys, postKey{dim: dimTag, name: tagName, val: v})
		}
	case f.Search != "":
		q, err := search.FromFilter(f)
		if err != nil {
			return nil, false, false // an invalid query matches nothing
		}
		word := ""
		for _, p := range q.Phrases() {
			for _, w := range p {
				if len(w) > len(word) {
					word = w
				}
			}
		}
		keys = []postKey{{dim: dimWord, val: word}}
	case f.Kinds != nil:
		keys = make([]postKey, 0, len(f.Kinds))
		seen := make(map[int]struct{}, len(f.Kinds))
		for _, k := range f.Kinds {
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				keys = append(keys, postKey{dim: dimKind, kind: k})
			}
		}
	default:
		return nil, true, true
	}
	return keys, false, true
}

// uniqueStrings returns vs without repeats (first occurrence kept). A filter
// posted twice under one key would be checked twice, harmlessly, but cost
// twice; duplicates in client filters are common enough to drop.
func uniqueStrings(vs []string) []string {
	if len(vs) < 2 {
		return vs
	}
	seen := make(map[string]struct{}, len(vs))
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if _, dup := seen[v]; !dup {
			seen[v] = struct{}{}
			out = append(out, v)
		}
	}
	return out
}

// post inserts e's postings. sh.mu held for writing.
func (sh *shard) post(e *entry) {
	for _, fr := range e.filters {
		for _, p := range fr.posts {
			switch k := p.key; k.dim {
			case dimID:
				sh.ids = postTo(sh.ids, k.val, p)
			case dimAuthor:
				sh.authors = postTo(sh.authors, k.val, p)
			case dimTag:
				if sh.tags == nil {
					sh.tags = make(map[string]map[string][]*posting)
				}
				sh.tags[k.name] = postTo(sh.tags[k.name], k.val, p)
			case dimKind:
				sh.kinds = postTo(sh.kinds, k.kind, p)
			case dimWord:
				sh.words = postTo(sh.words, k.val, p)
			default:
				sh.scan = appendPosting(sh.scan, p)
			}
		}
	}
}

// unpost removes e's postings. sh.mu held for writing.
func (sh *shard) unpost(e *entry) {
	for _, fr := range e.filters {
		for _, p := range fr.posts {
			switch k := p.key; k.dim {
			case dimID:
				removeFrom(sh.ids, k.val, p)
			case dimAuthor:
				removeFrom(sh.authors, k.val, p)
			case dimTag:
				byVal := sh.tags[k.name]
				removeFrom(byVal, k.val, p)
				if len(byVal) == 0 {
					delete(sh.tags, k.name)
				}
			case dimKind:
				removeFrom(sh.kinds, k.kind, p)
			case dimWord:
				removeFrom(sh.words, k.val, p)
			default:
				sh.scan = removePosting(sh.scan, p)
			}
		}
	}
}

// postTo appends p to bucket k of m, making m if it is nil, and returns m.
func postTo[K comparable](m map[K][]*posting, k K, p *posting) map[K][]*posting {
	if m == nil {
		m = make(map[K][]*posting)
	}
	m[k] = appendPosting(m[k], p)
	return m
}

func appendPosting(b []*posting, p *posting) []*posting {
	p.pos = len(b)
	return append(b, p)
}

// removeFrom removes p from bucket m[k], deleting the bucket once empty.
func removeFrom[K comparable](m map[K][]*posting, k K, p *posting) {
	if b := removePosting(m[k], p); len(b) == 0 {
		delete(m, k)
	} else {
		m[k] = b
	}
}

// removePosting swaps the last posting into p's place.
func removePosting(b []*posting, p *posting) []*posting {
	last := len(b) - 1
	if p.pos != last {
		moved := b[last]
		b[p.pos] = moved
		moved.pos = p.pos
	}
	b[last] = nil
	b = b[:last]
	if cap(b) > 64 && len(b) < cap(b)/4 {
		b = append([]*posting(nil), b...) // give memory back after a mass removal
	}
	return b
}

// remove unindexes e entirely. sh.mu held for writing.
func (sh *shard) remove(e *entry) {
	sh.unpost(e)
	k := ownerKey{e.sub.Owner, e.sub.ID}
	delete(sh.subs, k)
	if ids := sh.byOwner[e.sub.Owner]; ids != nil {
		delete(ids, e.sub.ID)
		if len(ids) == 0 {
			delete(sh.byOwner, e.sub.Owner)
		}
	}
}
