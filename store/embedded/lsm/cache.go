package lsm

import (
	"github.com/dgraph-io/ristretto/v2"
)

// recordCache keeps records (header and raw JSON) by seq, so that the
// events queries return most often are read from memory instead of
// through pebble's levels. Records are immutable and seqs never reused, so
// entries need no invalidation; ristretto's Set is asynchronous and may
// drop an entry, which costs a miss. A nil *recordCache caches nothing.
type recordCache struct {
	r *ristretto.Cache[uint64, []byte]
}

// newRecordCache returns a cache holding about maxBytes of records, or nil
// for maxBytes 0.
func newRecordCache(maxBytes int64) (*recordCache, error) {
	if maxBytes == 0 {
		return nil, nil
	}
	r, err := ristretto.NewCache(&ristretto.Config[uint64, []byte]{
		// Ten counters per record the cache can hold, at ~512 bytes a record.
		NumCounters: max(maxBytes/512*10, 1000),
		MaxCost:     maxBytes,
		BufferItems: 64,
	})
	if err != nil {
		return nil, err
	}
	return &recordCache{r: r}, nil
}

func (c *recordCache) get(seq uint64) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	return c.r.Get(seq)
}

func (c *recordCache) put(seq uint64, rec []byte) {
	if c != nil {
		c.r.Set(seq, rec, int64(len(rec)))
	}
}

func (c *recordCache) close() {
	if c != nil {
		c.r.Close()
	}
}
