package lsm

import (
	"fmt"
	"hash/maphash"

	"github.com/cockroachdb/pebble/v2"
	"github.com/dgraph-io/ristretto/v2/z"
)

// tombFilter answers, without a read, that an event has no tombstone.
//
// Every save checks for a tombstone of the event it writes (a NIP-09
// deletion that arrived before it), and almost every save finds none. The
// engine's own bloom filters skip the tables on disk, but the read still
// searches the memtable, a skiplist of tens of MiB: on a closed-loop
// ingest that search was a tenth of the relay's CPU with the duplicate
// check. The filter holds every tombstone key the store has (loaded by
// Open, added to before each write of one), so a miss is exact and skips
// the read; a hit (a tombstone, or a false positive at about 1 %) reads
// the store as before. It grows by rebuilding from the store when it
// holds twice the keys it was sized for. Guarded by the writer's lock.
type tombFilter struct {
	seed     maphash.Seed
	bloom    *z.Bloom
	n        int // keys added since it was built
	capacity int // keys it was sized for
}

// minTombCapacity is the smallest filter (about 12 KiB).
const minTombCapacity = 10_000

func (f *tombFilter) hash(k []byte) uint64 { return maphash.Bytes(f.seed, k) }

// mayHave reports whether k may be a tombstone key of the store.
func (f *tombFilter) mayHave(k []byte) bool { return f.bloom.Has(f.hash(k)) }

// buildTombs makes a filter of the tombstone keys r holds, sized for twice
// as many keys as it holds or as n, and at least minTombCapacity.
func (s *Store) buildTombs(r pebble.Reader, n int) error {
	seed := maphash.MakeSeed()
	var hashes []uint64
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{pTombstone}, UpperBound: []byte{pTombstone + 1}})
	if err != nil {
		return fmt.Errorf("lsm: tombstones: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		hashes = append(hashes, maphash.Bytes(seed, it.Key()))
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("lsm: tombstones: %w", err)
	}
	f := &tombFilter{seed: seed, capacity: max(2*len(hashes), 2*n, minTombCapacity)}
	f.bloom = z.NewBloomFilter(float64(f.capacity), 0.01)
	for _, h := range hashes {
		f.bloom.Add(h)
	}
	f.n = len(hashes)
	s.tombs = f
	return nil
}

// addTomb records tombstone key k in the filter; t's writes are about to
// include it. Past the filter's capacity the filter is rebuilt from the
// store and the keys t added before (which t has not committed yet).
func (t *txn) addTomb(k []byte) error {
	t.tombs = append(t.tombs, k)
	f := t.s.tombs
	if f.n < f.capacity {
		f.bloom.Add(f.hash(k))
		f.n++
		return nil
	}
	if err := t.s.buildTombs(t.s.db, f.n); err != nil {
		return err
	}
	f = t.s.tombs
	for _, k := range t.tombs {
		f.bloom.Add(f.hash(k))
		f.n++
	}
	return nil
}

// tombstoned reports whether k, a tombstone key, is in the store.
func (t *txn) tombstoned(k []byte) (bool, error) {
	if !t.s.tombs.mayHave(k) {
		return false, nil
	}
	return t.has(k)
}
