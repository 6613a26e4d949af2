// Package workflowtest is the conformance suite of workflow.Store: every
// backend (store/postgres, store/embedded) runs it unchanged, so the engine
// sees the same semantics on both.
//
// It must not import a store backend (the backends' tests import it) or the
// relay.
package workflowtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// Backend is a workflow store that can also create communities.
type Backend interface {
	workflow.Store
	EnsureCommunity(ctx context.Context, normalizedHost string) (tenant.CommunityID, bool, error)
}

// Run runs the suite; open returns a fresh, empty backend per subtest.
func Run(t *testing.T, open func(t *testing.T) Backend) {
	t.Run("Definitions", func(t *testing.T) { testDefinitions(t, open(t)) })
	t.Run("Tenancy", func(t *testing.T) { testTenancy(t, open(t)) })
	t.Run("Caps", func(t *testing.T) { testCaps(t, open(t)) })
	t.Run("RunsOnePerTrigger", func(t *testing.T) { testRunsOnePerTrigger(t, open(t)) })
	t.Run("RunPages", func(t *testing.T) { testRunPages(t, open(t)) })
	t.Run("Leases", func(t *testing.T) { testLeases(t, open(t)) })
	t.Run("ParkAndFinish", func(t *testing.T) { testParkAndFinish(t, open(t)) })
	t.Run("Effects", func(t *testing.T) { testEffects(t, open(t)) })
	t.Run("ConcurrentClaims", func(t *testing.T) { testConcurrentClaims(t, open(t)) })
	t.Run("DeleteCascades", func(t *testing.T) { testDeleteCascades(t, open(t)) })
	t.Run("ScheduleLifecycle", func(t *testing.T) { testScheduleLifecycle(t, open(t)) })
	t.Run("ScheduleClaimOnce", func(t *testing.T) { testScheduleClaimOnce(t, open(t)) })
	t.Run("SchedulePrune", func(t *testing.T) { testSchedulePrune(t, open(t)) })
}

// Community returns the community of host, creating it.
func Community(t testing.TB, b Backend, host string) tenant.CommunityID {
	t.Helper()
	c, _, err := b.EnsureCommunity(context.Background(), host)
	if err != nil {
		t.Fatalf("EnsureCommunity(%s): %v", host, err)
	}
	return c
}

// Hex32 returns a random 64-hex string (a pubkey or event id).
func Hex32() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ChannelID returns a random channel id.
func ChannelID() channel.ID { return channel.ID(workflow.NewID()) }

// Definition returns a valid definition named name with the given trigger.
func Definition(t testing.TB, name string, on workflow.TriggerKind) *workflow.Definition {
	t.Helper()
	return &workflow.Definition{
		Name:    name,
		Trigger: workflow.Trigger{On: on},
		Steps: []workflow.Step{{ID: "s1", Action: "send_message",
			Fields: workflow.Fields{"text": "hello {{trigger.text}}"}}},
		Enabled: true,
	}
}

func put(t *testing.T, b Backend, c tenant.CommunityID, p workflow.PutWorkflow) workflow.Workflow {
	t.Helper()
	w, err := b.PutWorkflow(context.Background(), c, p)
	if err != nil {
		t.Fatalf("PutWorkflow: %v", err)
	}
	return w
}

func testDefinitions(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "defs.example")
	ch, other := ChannelID(), ChannelID()
	owner, stranger := Hex32(), Hex32()
	id := workflow.NewID()
	ev := Hex32()
	d := Definition(t, "first", workflow.TriggerMessagePosted)
	w := put(t, b, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: d, EventID: ev})
	if w.ID != id || w.Owner != owner || w.Channel != ch || w.Name != "first" || !w.Enabled || w.EventID != ev || w.Hash != d.Hash() {
		t.Fatalf("put returned %+v", w)
	}
	got, err := b.Workflow(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Definition.CanonicalJSON()) != string(d.CanonicalJSON()) || got.Revision() != workflow.RevisionOf(d.Hash()) {
		t.Fatalf("definition changed in storage:\n%s\n%s", got.Definition.CanonicalJSON(), d.CanonicalJSON())
	}
	// Compare-and-swap.
	d2 := Definition(t, "second", workflow.TriggerMessagePosted)
	if _, err := b.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: d2, ExpectedRevision: "00000000000000000000000000000000"}); !errors.Is(err, workflow.ErrRevisionConflict) {
		t.Fatalf("stale revision: %v", err)
	}
	w2 := put(t, b, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: d2, ExpectedRevision: w.Revision()})
	if w2.Name != "second" || w2.Revision() == w.Revision() || w2.EventID != "" {
		t.Fatalf("CAS update returned %+v", w2)
	}
	if _, err := b.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: d, ExpectedRevision: w.Revision()}); !errors.Is(err, workflow.ErrRevisionConflict) {
		t.Fatalf("replayed revision: %v", err)
	}
	// Owner and channel are fixed.
	if _, err := b.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: stranger, Definition: d}); !errors.Is(err, workflow.ErrNotOwner) {
		t.Fatalf("other owner: %v", err)
	}
	if _, err := b.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: id, Channel: other, Owner: owner, Definition: d}); !errors.Is(err, workflow.ErrNotOwner) {
		t.Fatalf("other channel: %v", err)
	}
	// An expected revision for a workflow that does not exist.
	if _, err := b.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: owner, Definition: d, ExpectedRevision: w.Revision()}); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("CAS on missing workflow: %v", err)
	}
	// Listing, triggers, enabling.
	hook := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: stranger, Definition: Definition(t, "hook", workflow.TriggerWebhook)})
	put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: other, Owner: owner, Definition: Definition(t, "elsewhere", workflow.TriggerMessagePosted)})
	all, err := b.Workflows(ctx, c, ch)
	if err != nil || len(all) != 2 {
		t.Fatalf("Workflows: %d, %v", len(all), err)
	}
	act, err := b.ActiveWorkflows(ctx, c, ch, workflow.TriggerMessagePosted)
	if err != nil || len(act) != 1 || act[0].ID != id {
		t.Fatalf("ActiveWorkflows(message_posted): %+v, %v", act, err)
	}
	if err := b.SetWorkflowEnabled(ctx, c, id, false); err != nil {
		t.Fatal(err)
	}
	if act, _ := b.ActiveWorkflows(ctx, c, ch, workflow.TriggerMessagePosted); len(act) != 0 {
		t.Fatal("a disabled workflow is active")
	}
	if err := b.SetWorkflowEnabled(ctx, c, id, true); err != nil {
		t.Fatal(err)
	}
	n, err := b.DisableOwnerWorkflows(ctx, c, ch, owner)
	if err != nil || n != 1 {
		t.Fatalf("DisableOwnerWorkflows: %d, %v", n, err)
	}
	if w, _ := b.Workflow(ctx, c, id); w.Enabled {
		t.Fatal("owner's workflow still enabled")
	}
	if w, _ := b.Workflow(ctx, c, hook.ID); !w.Enabled {
		t.Fatal("another owner's workflow was disabled")
	}
	if err := b.SetWorkflowEnabled(ctx, c, workflow.NewID(), true); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("enable unknown: %v", err)
	}
	if err := b.DeleteWorkflow(ctx, c, id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Workflow(ctx, c, id); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("deleted workflow: %v", err)
	}
	if err := b.DeleteWorkflow(ctx, c, id); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

func testTenancy(t *testing.T, b Backend) {
	ctx := context.Background()
	a := Community(t, b, "a.example")
	z := Community(t, b, "z.example")
	ch := ChannelID()
	owner := Hex32()
	w := put(t, b, a, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: owner, Definition: Definition(t, "a", workflow.TriggerMessagePosted)})
	run, _, err := b.CreateRun(ctx, a, workflow.NewRun{Workflow: w.ID, TriggerEventID: Hex32(), Trigger: map[string]any{"text": "secret"}})
	if err != nil {
		t.Fatal(err)
	}
	// From z, a's ids behave exactly like random ones.
	for _, id := range []workflow.ID{w.ID, workflow.NewID()} {
		if _, err := b.Workflow(ctx, z, id); !errors.Is(err, workflow.ErrNotFound) {
			t.Errorf("Workflow from z: %v", err)
		}
		if _, _, err := b.Runs(ctx, z, id, workflow.RunPage{}); !errors.Is(err, workflow.ErrNotFound) {
			t.Errorf("Runs from z: %v", err)
		}
		if err := b.SetWorkflowEnabled(ctx, z, id, false); !errors.Is(err, workflow.ErrNotFound) {
			t.Errorf("SetWorkflowEnabled from z: %v", err)
		}
		if err := b.DeleteWorkflow(ctx, z, id); !errors.Is(err, workflow.ErrNotFound) {
			t.Errorf("DeleteWorkflow from z: %v", err)
		}
		if _, _, err := b.CreateRun(ctx, z, workflow.NewRun{Workflow: id, TriggerEventID: Hex32()}); !errors.Is(err, workflow.ErrNotFound) {
			t.Errorf("CreateRun from z: %v", err)
		}
	}
	for _, id := range []workflow.ID{run.ID, workflow.NewID()} {
		if _, err := b.Run(ctx, z, id); !errors.Is(err, workflow.ErrNotFound) {
			t.Errorf("Run from z: %v", err)
		}
	}
	if l, err := b.Workflows(ctx, z, ch); err != nil || len(l) != 0 {
		t.Errorf("Workflows from z: %d, %v", len(l), err)
	}
	if l, err := b.ActiveWorkflows(ctx, z, ch, workflow.TriggerMessagePosted); err != nil || len(l) != 0 {
		t.Errorf("ActiveWorkflows from z: %d, %v", len(l), err)
	}
	if n, err := b.DisableOwnerWorkflows(ctx, z, ch, owner); err != nil || n != 0 {
		t.Errorf("DisableOwnerWorkflows from z: %d, %v", n, err)
	}
	// The same workflow id in z is an independent workflow.
	zw := put(t, b, z, workflow.PutWorkflow{ID: w.ID, Channel: ch, Owner: Hex32(), Definition: Definition(t, "z", workflow.TriggerWebhook)})
	if zw.Name != "z" {
		t.Fatalf("z's workflow: %+v", zw)
	}
	if got, _ := b.Workflow(ctx, a, w.ID); got.Name != "a" || got.Owner != owner {
		t.Fatalf("a's workflow changed: %+v", got)
	}
	// A lease names its community; claimed runs carry it.
	leases := claimAll(t, b, "w", time.Minute)
	if len(leases) != 1 || leases[0].Community != a || leases[0].Run != run.ID {
		t.Fatalf("claimed %+v", leases)
	}
}

func claimAll(t *testing.T, b Backend, owner string, ttl time.Duration) []workflow.Lease {
	t.Helper()
	ls, err := b.ClaimRuns(context.Background(), owner, ttl, 1000)
	if err != nil {
		t.Fatalf("ClaimRuns: %v", err)
	}
	return ls
}

func testRunsOnePerTrigger(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "runs.example")
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: Definition(t, "r", workflow.TriggerMessagePosted)})
	w2 := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: Definition(t, "r2", workflow.TriggerMessagePosted)})
	ev := Hex32()
	vars := map[string]any{"text": "hi", "n": float64(3)}
	// Concurrent deliveries of one trigger event make one run.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[workflow.ID]int{}
		created int
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, made, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: w.ID, TriggerEventID: ev, Trigger: vars})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids[r.ID]++
			if made {
				created++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(ids) != 1 || created != 1 {
		t.Fatalf("one trigger event made runs %v (created %d)", ids, created)
	}
	var id workflow.ID
	for k := range ids {
		id = k
	}
	r, err := b.Run(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != workflow.RunPending || r.Workflow != w.ID || r.TriggerEventID != ev || r.Trigger["text"] != "hi" || r.Trigger["n"] != float64(3) || r.CreatedAt.IsZero() {
		t.Fatalf("run %+v", r)
	}
	if r.DefinitionHash != w.Hash {
		t.Fatalf("run records definition hash %x, want %x", r.DefinitionHash, w.Hash)
	}
	// A redefinition does not change the hash an existing run recorded.
	w3 := put(t, b, c, workflow.PutWorkflow{ID: w.ID, Channel: w.Channel, Owner: w.Owner, Definition: Definition(t, "renamed", workflow.TriggerMessagePosted)})
	if r, _ := b.Run(ctx, c, id); r.DefinitionHash != w.Hash || w3.Hash == w.Hash {
		t.Fatalf("after redefinition the run records %x", r.DefinitionHash)
	}
	if r2, _, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: w.ID, TriggerEventID: Hex32()}); err != nil || r2.DefinitionHash != w3.Hash {
		t.Fatalf("new run records %x, want %x (%v)", r2.DefinitionHash, w3.Hash, err)
	}
	// The same event triggers another workflow separately.
	if _, made, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: w2.ID, TriggerEventID: ev}); err != nil || !made {
		t.Fatalf("second workflow, same event: %v, %v", made, err)
	}
	if _, _, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: workflow.NewID(), TriggerEventID: ev}); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("run of unknown workflow: %v", err)
	}
}

func testRunPages(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "pages.example")
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: Definition(t, "p", workflow.TriggerWebhook)})
	made := map[workflow.ID]bool{}
	for range 7 {
		r, _, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: w.ID, TriggerEventID: Hex32()})
		if err != nil {
			t.Fatal(err)
		}
		made[r.ID] = true
	}
	seen := map[workflow.ID]bool{}
	cursor := ""
	pages := 0
	var last time.Time
	for {
		runs, next, err := b.Runs(ctx, c, w.ID, workflow.RunPage{Cursor: cursor, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range runs {
			if seen[r.ID] || !made[r.ID] {
				t.Fatalf("page %d repeats or invents run %s", pages, r.ID)
			}
			if !last.IsZero() && r.CreatedAt.After(last) {
				t.Fatalf("runs not newest first")
			}
			last = r.CreatedAt
			seen[r.ID] = true
		}
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		cursor = next
	}
	if len(seen) != 7 || pages != 3 {
		t.Fatalf("saw %d runs in %d pages", len(seen), pages)
	}
	if _, _, err := b.Runs(ctx, c, w.ID, workflow.RunPage{Cursor: "!!"}); !errors.Is(err, workflow.ErrBadCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
	all, next, err := b.Runs(ctx, c, w.ID, workflow.RunPage{})
	if err != nil || len(all) != 7 || next != "" {
		t.Fatalf("default page: %d, %q, %v", len(all), next, err)
	}
}

// waitClaim polls until owner claims exactly the run id, or fails.
func waitClaim(t *testing.T, b Backend, owner string, ttl time.Duration, id workflow.ID) workflow.Lease {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range claimAll(t, b, owner, ttl) {
			if l.Run == id {
				return l
			}
			t.Fatalf("claimed an unexpected run %s", l.Run)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s never became claimable", id)
	return workflow.Lease{}
}

func testLeases(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "lease.example")
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: Definition(t, "l", workflow.TriggerWebhook)})
	r, _, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: w.ID, TriggerEventID: Hex32()})
	if err != nil {
		t.Fatal(err)
	}
	a := claimAll(t, b, "pod-a", 300*time.Millisecond)
	if len(a) != 1 || a[0].Run != r.ID || a[0].Owner != "pod-a" || a[0].Community != c {
		t.Fatalf("claim: %+v", a)
	}
	la := a[0]
	if more := claimAll(t, b, "pod-b", time.Minute); len(more) != 0 {
		t.Fatalf("a held run was claimed again: %+v", more)
	}
	if err := b.RenewLease(ctx, la, 300*time.Millisecond); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if err := b.UpdateRun(ctx, la, workflow.RunUpdate{Status: workflow.RunRunning, CurrentStep: 1,
		Trace: []workflow.StepTrace{{StepID: "s1", Status: workflow.StepCompleted, Output: map[string]any{"x": "y"}}}}); err != nil {
		t.Fatalf("update: %v", err)
	}
	// pod-a stops heartbeating; once the lease lapses pod-b takes over.
	lb := waitClaim(t, b, "pod-b", time.Minute, r.ID)
	if lb.Token <= la.Token {
		t.Fatalf("takeover token %d not above %d", lb.Token, la.Token)
	}
	if err := b.RenewLease(ctx, la, time.Minute); !errors.Is(err, workflow.ErrLeaseLost) {
		t.Fatalf("stale renew: %v", err)
	}
	if err := b.UpdateRun(ctx, la, workflow.RunUpdate{Status: workflow.RunCompleted}); !errors.Is(err, workflow.ErrLeaseLost) {
		t.Fatalf("stale update: %v", err)
	}
	if _, _, err := b.BeginEffect(ctx, la, "k", []byte("i")); !errors.Is(err, workflow.ErrLeaseLost) {
		t.Fatalf("stale effect: %v", err)
	}
	if err := b.ReleaseRun(ctx, la); !errors.Is(err, workflow.ErrLeaseLost) {
		t.Fatalf("stale release: %v", err)
	}
	got, err := b.Run(ctx, c, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != workflow.RunRunning || got.CurrentStep != 1 || len(got.Trace) != 1 || got.Trace[0].Output["x"] != "y" || got.StartedAt.IsZero() {
		t.Fatalf("progress under the old lease lost: %+v", got)
	}
	// Releasing makes the run claimable at once.
	if err := b.ReleaseRun(ctx, lb); err != nil {
		t.Fatal(err)
	}
	lc := claimAll(t, b, "pod-c", time.Minute)
	if len(lc) != 1 || lc[0].Token <= lb.Token {
		t.Fatalf("after release: %+v", lc)
	}
}

func testParkAndFinish(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "park.example")
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: Definition(t, "p", workflow.TriggerWebhook)})
	r, _, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: w.ID, TriggerEventID: Hex32()})
	if err != nil {
		t.Fatal(err)
	}
	l := claimAll(t, b, "pod", time.Minute)[0]
	resume := time.Now().Add(400 * time.Millisecond)
	if err := b.UpdateRun(ctx, l, workflow.RunUpdate{Status: workflow.RunRunning, CurrentStep: 2, ResumeAt: resume}); err != nil {
		t.Fatal(err)
	}
	got, _ := b.Run(ctx, c, r.ID)
	if got.ResumeAt.IsZero() || got.ResumeAt.Sub(resume).Abs() > time.Millisecond {
		t.Fatalf("resume time %v, want %v", got.ResumeAt, resume)
	}
	// Parking released the lease: the old one can no longer write.
	if err := b.UpdateRun(ctx, l, workflow.RunUpdate{Status: workflow.RunRunning}); !errors.Is(err, workflow.ErrLeaseLost) {
		t.Fatalf("write after park: %v", err)
	}
	if ls := claimAll(t, b, "other", time.Minute); len(ls) != 0 && time.Now().Before(resume) {
		t.Fatalf("parked run claimed before its resume time: %+v", ls)
	}
	l2 := waitClaim(t, b, "other", time.Minute, r.ID)
	if time.Now().Before(resume) {
		t.Fatal("claimed before the resume time")
	}
	if err := b.UpdateRun(ctx, l2, workflow.RunUpdate{Status: workflow.RunFailed, CurrentStep: 2, ErrorCode: "boom", Error: "it broke"}); err != nil {
		t.Fatal(err)
	}
	got, _ = b.Run(ctx, c, r.ID)
	if got.Status != workflow.RunFailed || got.ErrorCode != "boom" || got.Error != "it broke" || got.CompletedAt.IsZero() || !got.ResumeAt.IsZero() {
		t.Fatalf("finished run: %+v", got)
	}
	time.Sleep(50 * time.Millisecond)
	if ls := claimAll(t, b, "x", time.Minute); len(ls) != 0 {
		t.Fatalf("a finished run was claimed: %+v", ls)
	}
}

func testEffects(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "fx.example")
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: Definition(t, "e", workflow.TriggerWebhook)})
	r, _, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: w.ID, TriggerEventID: Hex32()})
	if err != nil {
		t.Fatal(err)
	}
	l := claimAll(t, b, "pod-a", 200*time.Millisecond)[0]
	e, created, err := b.BeginEffect(ctx, l, "s1:message", []byte("intent-1"))
	if err != nil || !created || string(e.Intent) != "intent-1" || e.Done {
		t.Fatalf("begin: %+v %v %v", e, created, err)
	}
	e, created, err = b.BeginEffect(ctx, l, "s1:message", []byte("intent-2"))
	if err != nil || created || string(e.Intent) != "intent-1" {
		t.Fatalf("begin again: %+v %v %v", e, created, err)
	}
	// Another run's effect with the same key is independent.
	if err := b.FinishEffect(ctx, l, "s1:message", []byte("result")); err != nil {
		t.Fatal(err)
	}
	// After a takeover the new holder finds the finished effect.
	l2 := waitClaim(t, b, "pod-b", time.Minute, r.ID)
	e, created, err = b.BeginEffect(ctx, l2, "s1:message", []byte("intent-3"))
	if err != nil || created || !e.Done || string(e.Result) != "result" || string(e.Intent) != "intent-1" {
		t.Fatalf("after takeover: %+v %v %v", e, created, err)
	}
	e, created, err = b.BeginEffect(ctx, l2, "s2:call", nil)
	if err != nil || !created || e.Done {
		t.Fatalf("second effect: %+v %v %v", e, created, err)
	}
}

func testConcurrentClaims(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "many.example")
	c2 := Community(t, b, "many2.example")
	const n = 30
	want := map[workflow.ID]bool{}
	for i := range n {
		cc := c
		if i%2 == 1 {
			cc = c2
		}
		w := put(t, b, cc, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: Definition(t, "m", workflow.TriggerWebhook)})
		r, _, err := b.CreateRun(ctx, cc, workflow.NewRun{Workflow: w.ID, TriggerEventID: Hex32()})
		if err != nil {
			t.Fatal(err)
		}
		want[r.ID] = true
	}
	var (
		mu  sync.Mutex
		got = map[workflow.ID]string{}
		wg  sync.WaitGroup
	)
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("pod-%d", p)
			for range 20 {
				ls, err := b.ClaimRuns(ctx, owner, time.Minute, 3)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, l := range ls {
					if prev, dup := got[l.Run]; dup {
						t.Errorf("run %s claimed by %s and %s", l.Run, prev, owner)
					}
					got[l.Run] = owner
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("claimed %d of %d runs", len(got), n)
	}
	for id := range got {
		if !want[id] {
			t.Fatalf("claimed unknown run %s", id)
		}
	}
}

func testDeleteCascades(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "del.example")
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: Definition(t, "d", workflow.TriggerWebhook)})
	r, _, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: w.ID, TriggerEventID: Hex32()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteWorkflow(ctx, c, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(ctx, c, r.ID); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("run of a deleted workflow: %v", err)
	}
	if ls := claimAll(t, b, "pod", time.Minute); len(ls) != 0 {
		t.Fatalf("run of a deleted workflow is claimable: %+v", ls)
	}
}

// testCaps: a channel holds at most MaxWorkflowsPerChannel workflows and an
// owner at most MaxWorkflowsPerOwner in a community, decided atomically at
// creation; replacing a workflow does not count again; other communities
// are not affected.
func testCaps(t *testing.T, b Backend) {
	ctx := context.Background()
	c := Community(t, b, "caps.example")
	ch := ChannelID()
	owner := Hex32()
	d := Definition(t, "cap", workflow.TriggerMessagePosted)
	var first workflow.Workflow
	for i := range workflow.MaxWorkflowsPerChannel - 2 {
		w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: Hex32(), Definition: d})
		if i == 0 {
			first = w
		}
	}
	// Concurrent creations: exactly the two free places are taken.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		refused []error
	)
	start := make(chan struct{})
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := b.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: Hex32(), Definition: d})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				created++
			} else {
				refused = append(refused, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if created != 2 {
		t.Fatalf("%d of 32 concurrent puts into a channel two short of its cap were created (refusals %v)", created, refused)
	}
	for _, err := range refused {
		var le *workflow.LimitError
		if !errors.As(err, &le) || !le.PerChannel || le.Max != workflow.MaxWorkflowsPerChannel || !errors.Is(err, workflow.ErrTooManyWorkflows) {
			t.Fatalf("a put past the channel cap failed with %v, want the channel's LimitError", err)
		}
	}
	if ws, err := b.Workflows(ctx, c, ch); err != nil || len(ws) != workflow.MaxWorkflowsPerChannel {
		t.Fatalf("channel holds %d workflows (%v), want %d", len(ws), err, workflow.MaxWorkflowsPerChannel)
	}
	// A replacement in a full channel is not a creation.
	put(t, b, c, workflow.PutWorkflow{ID: first.ID, Channel: ch, Owner: first.Owner,
		Definition: Definition(t, "renamed", workflow.TriggerMessagePosted)})
	// Deleting one frees a place.
	if err := b.DeleteWorkflow(ctx, c, first.ID); err != nil {
		t.Fatal(err)
	}
	put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: owner, Definition: d})

	// The owner's cap counts every channel of the community.
	for i := 1; i < workflow.MaxWorkflowsPerOwner; i++ {
		put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: owner, Definition: d})
	}
	_, err := b.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: owner, Definition: d})
	var le *workflow.LimitError
	if !errors.As(err, &le) || le.PerChannel || le.Max != workflow.MaxWorkflowsPerOwner {
		t.Fatalf("owner's workflow past the cap: %v, want the owner's LimitError", err)
	}
	// Another community is not affected by this one's counts.
	z := Community(t, b, "caps-other.example")
	put(t, b, z, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: owner, Definition: d})
}
