package embedded_test

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
)

func TestMainHost(t *testing.T) {
	dir := t.TempDir()
	storetest.MainHost(t, func(t *testing.T) (store.MainHostStore, func()) {
		st, err := embedded.Open(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		return st, func() { st.Close() }
	})
}
