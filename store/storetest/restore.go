package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// RestoreBatchBackend is a backend that restores a batch of events at once
// (transfer.EventBatchDestination).
type RestoreBatchBackend interface {
	store.Backend
	RestoreEvents(ctx context.Context, c tenant.CommunityID, evs []*nostr.Event) ([]error, error)
}

// RunRestoreBatch is the conformance suite of RestoreEvents: each event's
// outcome is Save's had the events been saved one after another in their
// order, a refused event writes nothing and does not stop the others, a
// second run adds nothing, and the events reach only their community.
func RunRestoreBatch(t *testing.T, open func(t *testing.T) RestoreBatchBackend) {
	t.Run("RestoreBatch", func(t *testing.T) { testRestoreBatch(t, open(t)) })
}

func testRestoreBatch(t *testing.T, b RestoreBatchBackend) {
	ctx := ctxb()
	c, other := Community(t, b, "a.example"), Community(t, b, "b.example")
	alice, bob := NewAuthor(t), NewAuthor(t)
	note := alice.Event(t, 1, base, "first")
	pNew := alice.Event(t, 0, base+2, `{"name":"new"}`)
	pOld := alice.Event(t, 0, base+1, `{"name":"old"}`)
	qOld := bob.Event(t, 0, base+1, `{"name":"bob old"}`)
	qNew := bob.Event(t, 0, base+3, `{"name":"bob new"}`)
	target := alice.Event(t, 1, base+3, "deleted before it arrives")
	del := alice.Event(t, nostr.KindDeletion, base+4, "", nostr.Tag{"e", target.ID})
	bad := bob.Event(t, 1, base+5, "two groups", nostr.Tag{"h", "one"}, nostr.Tag{"h", "two"})
	last := bob.Event(t, 1, base+6, "after the refused one")
	batch := []*nostr.Event{note, note, pNew, pOld, qOld, qNew, del, target, bad, last}
	want := []error{nil, store.ErrDuplicate, nil, store.ErrSuperseded, nil, nil, nil, store.ErrDeleted, channel.ErrInvalidTag, nil}

	check := func(what string, got []error, err error, want []error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: RestoreEvents: %v", what, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d results for %d events", what, len(got), len(want))
		}
		for i := range want {
			if want[i] == nil && got[i] != nil || want[i] != nil && !errors.Is(got[i], want[i]) {
				t.Errorf("%s: event %d (kind %d, id %.8s) = %v, want %v", what, i, batch[i].Kind, batch[i].ID, got[i], want[i])
			}
		}
	}
	got, err := b.RestoreEvents(ctx, c, batch)
	check("first run", got, err, want)
	stored := []string{last.ID, del.ID, qNew.ID, pNew.ID, note.ID}
	wantIDs(t, "after the batch", QueryIDs(t, b, c, nostr.Filter{}), stored...)
	wantIDs(t, "the other community", QueryIDs(t, b, other, nostr.Filter{}))

	// A second run adds nothing: what is stored is a duplicate, what lost
	// still loses.
	got, err = b.RestoreEvents(ctx, c, batch)
	check("second run", got, err, []error{store.ErrDuplicate, store.ErrDuplicate, store.ErrDuplicate, store.ErrSuperseded,
		store.ErrSuperseded, store.ErrDuplicate, store.ErrDuplicate, store.ErrDeleted, channel.ErrInvalidTag, store.ErrDuplicate})
	wantIDs(t, "after the second run", QueryIDs(t, b, c, nostr.Filter{}), stored...)

	// The same events in another community are that community's own.
	got, err = b.RestoreEvents(ctx, other, batch)
	check("other community", got, err, want)
	wantIDs(t, "the other community after its batch", QueryIDs(t, b, other, nostr.Filter{}), stored...)

	// An empty batch writes nothing.
	if got, err := b.RestoreEvents(ctx, c, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty batch: %v, %v", got, err)
	}
}
