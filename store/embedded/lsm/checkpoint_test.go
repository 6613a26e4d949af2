package lsm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded/lsm"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// TestTxCheckpoint: a checkpoint taken in a transaction, while other
// goroutines save, holds exactly the events committed before Begin — none
// of the transaction's own — and Dump reads back what a store holds.
func TestTxCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	c := storetest.Community(t, s, "a.example")
	alice := storetest.NewAuthor(t)
	evs := make([]*nostr.Event, 400)
	for i := range evs {
		evs[i] = alice.Event(t, 1, 1_700_000_000+int64(i), fmt.Sprint(i))
	}
	var saved atomic.Int64
	hundred := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(evs); i += 4 {
				if err := s.Save(ctx, c, evs[i]); err != nil {
					t.Error(err)
					return
				}
				if saved.Add(1) == 100 {
					close(hundred)
				}
			}
		}()
	}
	<-hundred // some events saved, more being saved
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := storetest.CountOf(t, s, c, nostr.Filter{}) // reads do not wait for the writer's lock
	own := alice.Event(t, 1, 1_600_000_000, "the transaction's own")
	if err := tx.Save(ctx, c, own); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	if err := tx.Checkpoint(dir); err != nil {
		t.Fatal(err)
	}
	if err := tx.Watermark(ctx, c, 30023, alice.PubKey, "x", 1_700_000_000); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	ck, err := lsm.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if n := storetest.CountOf(t, ck, c, nostr.Filter{}); n != before {
		t.Fatalf("the checkpoint holds %d events, %d were committed before Begin", n, before)
	}
	if n := storetest.CountOf(t, ck, c, nostr.Filter{IDs: []string{own.ID}}); n != 0 {
		t.Fatal("the checkpoint holds the transaction's own event")
	}

	// Dump of the store: every event, and the watermark.
	var events, marks int
	err = s.Dump(ctx, lsm.Dump{
		Event: func(got tenant.CommunityID, raw []byte) error {
			if got != c {
				return fmt.Errorf("event of community %v", got)
			}
			events++
			return nil
		},
		Watermark: func(got tenant.CommunityID, kind int, pubkey, d string, upTo int64) error {
			if got != c || kind != 30023 || pubkey != alice.PubKey || d != "x" || upTo != 1_700_000_000 {
				return fmt.Errorf("watermark %v %d %s %q %d", got, kind, pubkey, d, upTo)
			}
			marks++
			return nil
		},
	})
	if err != nil || events != len(evs)+1 || marks != 1 {
		t.Fatalf("Dump: %d events, %d watermarks, %v", events, marks, err)
	}
	storetest.SaveIs(t, s, c, alice.Event(t, 30023, 1_700_000_000, "", nostr.Tag{"d", "x"}), store.ErrDeleted)
}
