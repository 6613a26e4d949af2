package embedded_test

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
)

func openTemp(tb testing.TB, opts ...embedded.Option) *embedded.Store {
	tb.Helper()
	s, err := embedded.Open(context.Background(), tb.TempDir(), opts...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Backend { return openTemp(t) })
}

var (
	errDeleted   = store.ErrDeleted
	errDuplicate = store.ErrDuplicate
)
