package embedded_test

import (
	"testing"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/storetest"
)

func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, func(b *testing.B) store.Backend { return openTemp(b) })
}
