package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/store"
)

// testReminders: due reminders are claimed by due time, earliest first,
// each held for its lease (no second claim meanwhile, even by claims at
// once), claimed again after it, and never after FinishReminder;
// scheduling twice changes nothing; communities do not mix.
func testReminders(t *testing.T, b ReminderBackend) {
	var rs store.ReminderStore = b
	ctx := ctxb()
	a, o := Community(t, b, "a.example"), Community(t, b, "b.example")
	t0 := time.Unix(base, 0)
	id := func(i int) string { return fmt.Sprintf("%064x", i) }
	pk := NewAuthor(t).PubKey
	due := []store.DueReminder{
		{Community: a, ID: id(1), PubKey: pk, NotBefore: base + 30},
		{Community: a, ID: id(2), PubKey: pk, NotBefore: base + 10},
		{Community: o, ID: id(3), PubKey: pk, NotBefore: base + 20},
		{Community: a, ID: id(4), PubKey: pk, NotBefore: base + 3600},
	}
	for _, r := range append(due, due[0]) {
		if err := rs.ScheduleReminder(ctx, r); err != nil {
			t.Fatalf("ScheduleReminder: %v", err)
		}
	}
	claim := func(at time.Time) []store.DueReminder {
		t.Helper()
		got, err := rs.ClaimDueReminders(ctx, at, time.Minute, 10)
		if err != nil {
			t.Fatalf("ClaimDueReminders: %v", err)
		}
		return got
	}
	if got := claim(t0); len(got) != 0 {
		t.Fatalf("claimed before due: %v", got)
	}
	got := claim(t0.Add(40 * time.Second))
	if want := []store.DueReminder{due[1], due[2], due[0]}; !slices.Equal(got, want) {
		t.Fatalf("claim = %v, want %v", got, want)
	}
	if got := claim(t0.Add(50 * time.Second)); len(got) != 0 {
		t.Fatalf("claimed again within the lease: %v", got)
	}
	if err := rs.FinishReminder(ctx, a, id(2)); err != nil {
		t.Fatal(err)
	}
	if err := rs.FinishReminder(ctx, o, id(1)); err != nil { // another community's id: nothing
		t.Fatal(err)
	}
	got = claim(t0.Add(2 * time.Minute))
	if want := []store.DueReminder{due[2], due[0]}; !slices.Equal(got, want) {
		t.Fatalf("claim after the lease = %v, want %v", got, want)
	}
	for _, r := range got {
		if err := rs.FinishReminder(ctx, r.Community, r.ID); err != nil {
			t.Fatal(err)
		}
	}

	// Claims at once take each reminder once.
	for i := 10; i < 60; i++ {
		if err := rs.ScheduleReminder(ctx, store.DueReminder{Community: a, ID: id(i), PubKey: pk, NotBefore: base + int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	at := t0.Add(10 * time.Minute)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := rs.ClaimDueReminders(ctx, at, time.Hour, 7)
				if err != nil {
					t.Errorf("ClaimDueReminders: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, r := range got {
					seen[r.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 50 {
		t.Fatalf("claimed %d distinct reminders, want 50", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("reminder %s claimed %d times", id, n)
		}
	}
}

// ReminderBackend is a backend that schedules reminders.
type ReminderBackend interface {
	store.Backend
	store.ReminderStore
}

// RunReminders is the conformance suite of store.ReminderStore.
func RunReminders(t *testing.T, open func(t *testing.T) ReminderBackend) {
	t.Run("Reminders", func(t *testing.T) { testReminders(t, open(t)) })
}
