package lsm

import (
	"encoding/binary"
	"hash/maphash"
	"testing"
)

// TestKeyFilterGrows: past its size the filter adds generations, keeps
// answering yes for every key added, and answers yes for few others.
func TestKeyFilterGrows(t *testing.T) {
	f := &keyFilter{seed: maphash.MakeSeed()}
	f.grow(100)
	key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte{pID}, uint64(i)) }
	const n = 3_101 // 100 + 200 + 400 + 800 + 1,600 fill five generations; the sixth takes the last
	for i := range n {
		f.add(key(i))
	}
	if len(f.blooms) != 6 {
		t.Fatalf("%d generations after %d keys from a size of 100, want 6", len(f.blooms), n)
	}
	for i := range n {
		if !f.mayHave(key(i)) {
			t.Fatalf("key %d added but not found", i)
		}
	}
	hits := 0
	const others = 100_000
	for i := n; i < n+others; i++ {
		if f.mayHave(key(i)) {
			hits++
		}
	}
	// About 1 % per generation at most.
	if hits > others*6/100 {
		t.Fatalf("%d of %d keys never added found", hits, others)
	}
}

// BenchmarkLoadFilter measures what the id filter adds to Open: the scan of
// a store's id keys (1,000,000 here, flushed to tables) and the filter's
// construction.
func BenchmarkLoadFilter(b *testing.B) {
	s, err := Open(b.Context(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 1_000_000
	batch := s.db.NewBatch()
	var id [32]byte
	for i := range n {
		binary.BigEndian.PutUint64(id[:], uint64(i)*0x9e3779b97f4a7c15)
		if err := batch.Set(idKey(1, id[:]), binary.BigEndian.AppendUint64(nil, uint64(i)), nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := batch.Commit(nil); err != nil {
		b.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		f, err := loadFilter(s.db, pID)
		if err != nil || f.n != n {
			b.Fatalf("loadFilter: %d keys, %v", f.n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/key")
}
