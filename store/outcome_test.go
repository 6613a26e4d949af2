package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/buzzrelay/buzz/store"
)

func TestIsOutcome(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{store.ErrDuplicate, true},
		{store.ErrSuperseded, true},
		{store.ErrDeleted, true},
		{store.ErrReactionHeld, true},
		{fmt.Errorf("save %s: %w", "abc", store.ErrDeleted), true},
		{store.ErrInUse, false},
		{context.Canceled, false},
		{errors.New("store: duplicate event"), false}, // same text, not the sentinel
	} {
		if got := store.IsOutcome(c.err); got != c.want {
			t.Errorf("IsOutcome(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestSettle: a staged save's answer is durable's failure when it fails,
// else the save's own outcome, and durable is called once.
func TestSettle(t *testing.T) {
	diskErr := errors.New("disk on fire")
	calls := 0
	ok := func() error { calls++; return nil }
	failing := func() error { calls++; return diskErr }
	for _, c := range []struct {
		durable func() error
		err     error
		want    error
		calls   int
	}{
		{nil, nil, nil, 0},
		{nil, store.ErrDuplicate, store.ErrDuplicate, 0},
		{ok, nil, nil, 1},
		{ok, store.ErrDuplicate, store.ErrDuplicate, 1},
		{failing, nil, diskErr, 1},
		{failing, store.ErrDuplicate, diskErr, 1},
	} {
		calls = 0
		if got := store.Settle(c.durable, c.err); got != c.want || calls != c.calls {
			t.Errorf("Settle(durable, %v) = %v after %d calls, want %v after %d", c.err, got, calls, c.want, c.calls)
		}
	}
}
