package lsm

import (
	"fmt"
	"hash/maphash"

	"github.com/cockroachdb/pebble/v2"
	"github.com/dgraph-io/ristretto/v2/z"
)

// keyFilter answers, without a read, that a key of one index is not in the
// store. Every save checks two keys that almost never exist: its event's
// id ('i', the duplicate check) and its tombstone ('d', a NIP-09 deletion
// that came first); a reaction checks a third, its slot ('r', held by an
// earlier reaction of the same author, target and emoji). The engine's own
// bloom filters skip the tables on disk, but each read still searches the
// memtable, a skiplist of tens of MiB: the first two searches were a tenth
// of a closed-loop ingest's CPU, the slot's 2 % with a quarter of the
// events reactions.
//
// The filter holds every key of its index the store has held since Open
// (loaded by Open, added to before each write of one; keys removed since
// stay, as false positives), so a miss is exact and skips the read; a hit
// (the key, or a false positive at about 1 % per generation) reads the
// store as before. It grows without a rescan: when its newest bloom filter
// holds as many keys as it was sized for, a new one of twice the size
// takes the next keys, and a lookup asks every generation (a scalable
// bloom filter). Guarded by the writer's lock.
//
// Its cost: Open reads every id and tombstone key (about 0.27 µs a key,
// BenchmarkLoadFilter: a quarter of a second per million stored events),
// and the filter takes 2.4 to 4.8 MiB of memory per million (sized for
// twice the keys at 1 %, rounded up to a power of two bits).
type keyFilter struct {
	seed   maphash.Seed
	blooms []*z.Bloom // generations, oldest first; the last takes new keys
	size   int        // keys the last was sized for
	n      int        // keys in the last
}

// minFilterKeys sizes the first generation of an empty store's filter
// (about 80 KiB).
const minFilterKeys = 64 << 10

// loadFilter makes the filter of the keys with prefix p in r, sized for
// twice as many (at least minFilterKeys).
func loadFilter(r pebble.Reader, p byte) (*keyFilter, error) {
	f := &keyFilter{seed: maphash.MakeSeed()}
	var hashes []uint64
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
	if err != nil {
		return nil, fmt.Errorf("lsm: load the %q filter: %w", p, err)
	}
	for it.First(); it.Valid(); it.Next() {
		hashes = append(hashes, f.hash(it.Key()))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("lsm: load the %q filter: %w", p, err)
	}
	f.grow(max(2*len(hashes), minFilterKeys))
	for _, h := range hashes {
		f.blooms[0].Add(h)
	}
	f.n = len(hashes)
	return f, nil
}

func (f *keyFilter) hash(k []byte) uint64 { return maphash.Bytes(f.seed, k) }

// grow starts a generation sized for size keys.
func (f *keyFilter) grow(size int) {
	f.blooms = append(f.blooms, z.NewBloomFilter(float64(size), 0.01))
	f.size, f.n = size, 0
}

// add records k, a key about to be written.
func (f *keyFilter) add(k []byte) {
	if f.n >= f.size {
		f.grow(2 * f.size)
	}
	f.blooms[len(f.blooms)-1].Add(f.hash(k))
	f.n++
}

// mayHave reports whether k may be in the store.
func (f *keyFilter) mayHave(k []byte) bool {
	h := f.hash(k)
	for _, b := range f.blooms {
		if b.Has(h) {
			return true
		}
	}
	return false
}

// stored reports whether the store holds k, a key of filter f's index,
// reading it only when f cannot tell.
func (t *txn) stored(f *keyFilter, k []byte) (bool, error) {
	if !f.mayHave(k) {
		return false, nil
	}
	return t.has(k)
}
