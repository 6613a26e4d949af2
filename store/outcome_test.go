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
