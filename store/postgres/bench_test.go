package postgres_test

import (
	"testing"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/storetest"
)

// BenchmarkStore runs the shared store benchmarks (insert throughput single
// and concurrent, queries) on a fresh database per benchmark.
//
//	go test ./store/postgres -run '^$' -bench . -count 5
func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, func(b *testing.B) store.Backend { return openStore(b) })
}
