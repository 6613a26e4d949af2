package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/buzzrelay/buzz/store"
)

// MainHost checks a store.MainHostStore: nothing is recorded at first, a
// recorded host is read back by a handle opened afterwards on the same
// data (as a later process reads it), a later one replaces it, and an
// invalid host is refused with store.ErrInvalidHost and changes nothing.
// open returns a new handle on the same data and a function closing it.
func MainHost(t *testing.T, open func(t *testing.T) (store.MainHostStore, func())) {
	t.Helper()
	ctx := context.Background()
	a, closeA := open(t)
	if h, err := a.MainHost(ctx); err != nil || h != "" {
		t.Fatalf("MainHost before any record = %q, %v; want \"\"", h, err)
	}
	if err := a.SetMainHost(ctx, "relay.example"); err != nil {
		t.Fatal(err)
	}
	closeA()
	b, closeB := open(t)
	defer closeB()
	if h, err := b.MainHost(ctx); err != nil || h != "relay.example" {
		t.Fatalf("MainHost through a new handle = %q, %v", h, err)
	}
	if err := b.SetMainHost(ctx, "localhost:7100"); err != nil {
		t.Fatal(err)
	}
	if err := b.SetMainHost(ctx, "Not A Host"); !errors.Is(err, store.ErrInvalidHost) {
		t.Fatalf("SetMainHost of an invalid host: %v, want ErrInvalidHost", err)
	}
	if h, err := b.MainHost(ctx); err != nil || h != "localhost:7100" {
		t.Fatalf("MainHost after a replacement and a refused write = %q, %v", h, err)
	}
}
