package workflowtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// ScheduleDefinition returns a valid definition with an interval schedule.
func ScheduleDefinition(t testing.TB, name string, every time.Duration) *workflow.Definition {
	t.Helper()
	d := Definition(t, name, workflow.TriggerSchedule)
	d.Trigger.Schedule = workflow.Schedule{Interval: every}
	return d
}

func dueOf(t *testing.T, b Backend, now time.Time, c tenant.CommunityID, id workflow.ID) (workflow.DueSchedule, bool) {
	t.Helper()
	due, err := b.DueSchedules(context.Background(), now, 10000)
	if err != nil {
		t.Fatalf("DueSchedules: %v", err)
	}
	for _, d := range due {
		if d.Community == c && d.Workflow == id {
			return d, true
		}
	}
	return workflow.DueSchedule{}, false
}

// testScheduleLifecycle: putting a schedule workflow makes it due at once;
// advancing moves it out of the due set; redefining resets it; another
// trigger or deleting removes it.
func testScheduleLifecycle(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "sched-life.example")
	ch, owner := ChannelID(), Hex32()
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: owner, Definition: ScheduleDefinition(t, "s", time.Minute)})
	other := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: owner, Definition: Definition(t, "m", workflow.TriggerMessagePosted)})
	now := time.Now().UTC().Truncate(time.Second)
	d, ok := dueOf(t, b, now, c, w.ID)
	if !ok || d.NextFire.After(now) || d.Since.After(now.Add(time.Minute)) || d.Since.Before(now.Add(-time.Minute)) {
		t.Fatalf("a new schedule is not due at once: %+v %v", d, ok)
	}
	if _, ok := dueOf(t, b, now, c, other.ID); ok {
		t.Fatal("a message_posted workflow is listed as a schedule")
	}
	next := now.Add(time.Hour)
	if _, adv, fired, err := b.FireSchedule(ctx, c, workflow.ScheduleFire{Workflow: w.ID, Seen: d.NextFire, Next: next}); err != nil || !adv || fired {
		t.Fatalf("advance: advanced %v fired %v err %v", adv, fired, err)
	}
	if _, ok := dueOf(t, b, now, c, w.ID); ok {
		t.Fatal("still due after advancing")
	}
	if d2, ok := dueOf(t, b, next, c, w.ID); !ok || !d2.NextFire.Equal(next) {
		t.Fatalf("not due at its next fire time: %+v %v", d2, ok)
	}
	// A stale decision writes nothing.
	if _, adv, _, err := b.FireSchedule(ctx, c, workflow.ScheduleFire{Workflow: w.ID, Seen: d.NextFire, Next: next.Add(time.Hour)}); err != nil || adv {
		t.Fatalf("stale advance: advanced %v err %v", adv, err)
	}
	// Redefining resets it: due at once.
	put(t, b, c, workflow.PutWorkflow{ID: w.ID, Channel: ch, Owner: owner, Definition: ScheduleDefinition(t, "s", 2*time.Minute)})
	if _, ok := dueOf(t, b, now, c, w.ID); !ok {
		t.Fatal("a redefined schedule is not due at once")
	}
	// Another trigger: gone.
	put(t, b, c, workflow.PutWorkflow{ID: w.ID, Channel: ch, Owner: owner, Definition: Definition(t, "s", workflow.TriggerWebhook)})
	if _, ok := dueOf(t, b, next, c, w.ID); ok {
		t.Fatal("a webhook workflow is still scheduled")
	}
	// Deleted: gone.
	w3 := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: owner, Definition: ScheduleDefinition(t, "t", time.Minute)})
	if err := b.DeleteWorkflow(ctx, c, w3.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := dueOf(t, b, next, c, w3.ID); ok {
		t.Fatal("a deleted workflow is still scheduled")
	}
}

// testScheduleClaimOnce: of many concurrent claimers of one slot exactly
// one advances the schedule and fires, creating exactly one run; a slot
// already claimed never fires again; another community's id claims
// nothing.
func testScheduleClaimOnce(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "sched-claim.example")
	z := Community(t, b, "sched-other.example")
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: ScheduleDefinition(t, "s", time.Minute)})
	now := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	d, ok := dueOf(t, b, now, c, w.ID)
	if !ok {
		t.Fatal("not due")
	}
	slot := now
	f := workflow.ScheduleFire{Workflow: w.ID, Seen: d.NextFire, Next: slot.Add(time.Minute), Slot: slot,
		Trigger: map[string]any{"scheduled_for": slot.Format(time.RFC3339)}}
	if _, adv, fired, err := b.FireSchedule(ctx, z, f); adv || fired || err != nil && !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("foreign community: advanced %v fired %v err %v", adv, fired, err)
	}
	const claimers = 8
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		advanced, fireds int
		runs             []workflow.Run
	)
	for range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, adv, fired, err := b.FireSchedule(ctx, c, f)
			if err != nil {
				t.Errorf("FireSchedule: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if adv {
				advanced++
			}
			if fired {
				fireds++
				runs = append(runs, r)
			}
		}()
	}
	wg.Wait()
	if advanced != 1 || fireds != 1 {
		t.Fatalf("%d claimers: %d advanced, %d fired; want 1 and 1", claimers, advanced, fireds)
	}
	r := runs[0]
	if r.Workflow != w.ID || r.Status != workflow.RunPending || r.TriggerEventID != workflow.ScheduleEventID(w.ID, slot) ||
		r.Trigger["scheduled_for"] != slot.Format(time.RFC3339) || r.DefinitionHash != w.Hash {
		t.Fatalf("fired run: %+v", r)
	}
	all, _, err := b.Runs(ctx, c, w.ID, workflow.RunPage{})
	if err != nil || len(all) != 1 || all[0].ID != r.ID {
		t.Fatalf("runs: %d %v", len(all), err)
	}
	// The run is claimable at once (it is in the run queue).
	waitClaim(t, b, "sched-worker", time.Minute, r.ID)

	// The slot is claimed: a later decision naming it again advances but
	// does not fire.
	d2, _ := dueOf(t, b, slot.Add(time.Minute), c, w.ID)
	again := f
	again.Seen, again.Next = d2.NextFire, slot.Add(2*time.Minute)
	if _, adv, fired, err := b.FireSchedule(ctx, c, again); err != nil || !adv || fired {
		t.Fatalf("claimed slot again: advanced %v fired %v err %v", adv, fired, err)
	}
	if all, _, _ := b.Runs(ctx, c, w.ID, workflow.RunPage{}); len(all) != 1 {
		t.Fatalf("a claimed slot created another run: %d runs", len(all))
	}
}

// testSchedulePrune: claiming a slot prunes the workflow's older fire
// claims and keeps the latest, with its run; a pruned slot still never
// fires again (its run exists); another community sees no claims.
func testSchedulePrune(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "sched-prune.example")
	z := Community(t, b, "sched-prune-other.example")
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: ScheduleDefinition(t, "s", time.Minute)})
	base := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	fire := func(slot time.Time) (r workflow.Run, adv, fired bool) {
		t.Helper()
		d, ok := dueOf(t, b, slot.Add(24*time.Hour), c, w.ID)
		if !ok {
			t.Fatalf("not due at %v", slot)
		}
		r, adv, fired, err := b.FireSchedule(ctx, c, workflow.ScheduleFire{Workflow: w.ID, Seen: d.NextFire, Next: slot.Add(time.Minute), Slot: slot})
		if err != nil {
			t.Fatal(err)
		}
		return r, adv, fired
	}
	var last workflow.Run
	for i := range 3 {
		r, adv, fired := fire(base.Add(time.Duration(i) * time.Minute))
		if !adv || !fired {
			t.Fatalf("slot %d: advanced %v fired %v", i, adv, fired)
		}
		last = r
	}
	fires, err := b.ScheduledFires(ctx, c, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(fires) != 1 || !fires[0].Slot.Equal(base.Add(2*time.Minute)) || fires[0].Run != last.ID {
		t.Fatalf("fire claims after three slots: %+v (want only the latest, run %s)", fires, last.ID)
	}
	if _, _, fired := fire(base); fired {
		t.Fatal("a pruned slot fired again")
	}
	if got, err := b.ScheduledFires(ctx, z, w.ID); err != nil || len(got) != 0 {
		t.Fatalf("another community sees claims: %v %v", got, err)
	}
	if all, _, _ := b.Runs(ctx, c, w.ID, workflow.RunPage{}); len(all) != 3 {
		t.Fatalf("runs: %d, want 3", len(all))
	}
}
