package sqlite

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/dgraph-io/ristretto/v2"
)

// eventCache answers REQs by ids from memory: the live events that earlier
// lookups by id read, keyed by community and id. Reading an event by id
// through SQLite costs a read transaction (two fcntl calls on the
// shared-memory index), database/sql and two goroutines watching the
// context — most of a lookup, for an answer that never changes: a stored
// event is immutable until it is removed.
//
// Removal is what the cache must not miss, and it is tracked by epochs: the
// writer bumps a community's epoch after every transaction that removed
// one of its events (replacement, NIP-09 deletion, expiry sweep, channel
// command) — after the commit, so before a read can no longer see the
// event. An entry records the epoch loaded before the read transaction
// that found it, and serves only while the epoch is unchanged. A read that
// overlapped a removal therefore stores an entry that is already stale;
// one that started after it did not see the event. Entries are never
// updated in place (an id's event is one), so ristretto's asynchronous,
// droppable Set is harmless: a dropped entry is a miss.
//
// Expiry and channel scope are checked at each hit, as the SQL checks them
// at each read; f.Matches applies the rest of the filter. The cache is
// safe for concurrent use.
type eventCache struct {
	r *ristretto.Cache[string, *cachedEvent]
	// epochs are per community, sharded: a removal in one community
	// invalidates the entries of the others in its shard too, which costs
	// only misses.
	epochs [256]atomic.Uint64
}

type cachedEvent struct {
	epoch   uint64
	rec     store.Record
	ev      *nostr.Event
	expires int64       // 0: none
	channel *channel.ID // nil: community-wide
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

func cacheKey(cseq int64, id []byte) string {
	var b [8 + 32]byte
	binary.BigEndian.PutUint64(b[:8], uint64(cseq))
	copy(b[8:], id)
	return string(b[:])
}

// put stores the event of a row read by id, found by a read that started
// after epoch was loaded. expires is 0 for none; ch is the row's channel
// BLOB or nil.
func (c *eventCache) put(cseq int64, epoch uint64, rec store.Record, expires int64, ch []byte) {
	id, ok := decodeHex32(rec.ID)
	if !ok {
		return
	}
	ev, err := nostr.ParseEvent(rec.Raw)
	if err != nil {
		return
	}
	e := &cachedEvent{epoch: epoch, rec: rec, ev: ev, expires: expires}
	if len(ch) == len(channel.ID{}) {
		e.channel = new(channel.ID)
		copy(e.channel[:], ch)
	} else if ch != nil {
		return // not a channel id: leave it to SQL
	}
	// The parsed event holds about as much again as the raw JSON.
	c.r.Set(cacheKey(cseq, id), e, int64(2*len(rec.Raw)+256))
}

// lookup answers f — a filter with ids and no search — in community c
// (cseq) at now under scope, when every id it names is cached and current;
// ok is false otherwise (the caller reads the store).
func (c *eventCache) lookup(cseq int64, cid tenant.CommunityID, f *nostr.Filter, now int64, scope channel.Scope) (recs []store.Record, ok bool) {
	epoch := c.epoch(cseq)
	ids := make([][]byte, 0, len(f.IDs))
	for _, s := range f.IDs {
		if b, ok := decodeHex32(s); ok {
			ids = append(ids, b)
		}
	}
	var hits []*cachedEvent
	for _, id := range ids {
		e, found := c.r.Get(cacheKey(cseq, id))
		if !found || e.epoch != epoch {
			return nil, false
		}
		switch {
		case e.expires != 0 && e.expires <= now:
		case e.channel != nil && !scope.Contains(*e.channel):
		case !f.Matches(e.ev):
		case slices.Contains(hits, e): // an id listed twice
		default:
			hits = append(hits, e)
		}
	}
	slices.SortFunc(hits, func(a, b *cachedEvent) int {
		if a.rec.CreatedAt != b.rec.CreatedAt {
			if a.rec.CreatedAt > b.rec.CreatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.rec.ID, b.rec.ID)
	})
	if f.LimitSet && len(hits) > f.Limit {
		hits = hits[:max(0, f.Limit)]
	}
	recs = make([]store.Record, len(hits))
	for i, e := range hits {
		recs[i] = e.rec
		recs[i].Community = cid
	}
	return recs, true
}
