package workflowtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

// ApprovalBackend is a workflow store that keeps approvals and audit
// chains.
type ApprovalBackend interface {
	Backend
	workflow.ApprovalStore
	store.AuditLog
}

// RunApprovals is the conformance suite of workflow.ApprovalStore.
func RunApprovals(t *testing.T, open func(t *testing.T) ApprovalBackend) {
	t.Run("Lifecycle", func(t *testing.T) { testApprovalLifecycle(t, open(t)) })
	t.Run("Race", func(t *testing.T) { testApprovalRace(t, open(t)) })
	t.Run("ExpiryAndTenancy", func(t *testing.T) { testApprovalExpiry(t, open(t)) })
	t.Run("DecisionWakesParkedRun", func(t *testing.T) { testApprovalWakes(t, open(t)) })
	t.Run("AuthorityMarkedDecision", func(t *testing.T) { testApprovalAuthority(t, open(t)) })
}

// testApprovalAuthority: a decision made on behalf of an authority event
// (store.WithAuthority) records the event with the decision; reading the
// approval with the marked context first (as the engine does to check the
// approver) records nothing, so the decision still applies, and only a
// second submission of the same event is a duplicate.
func testApprovalAuthority(t *testing.T, b ApprovalBackend) {
	a := pendingApproval(t, b, "marked.example", time.Hour)
	mark := store.Authority{Community: a.Community, Event: Hex32(), Until: time.Now().Add(time.Hour)}
	submit := func() error {
		ctx := store.WithAuthority(context.Background(), mark)
		if _, err := b.Approval(ctx, a.Community, a.TokenHash); err != nil {
			t.Fatalf("read with a marked context: %v", err)
		}
		_, err := b.DecideApproval(ctx, a.Community, a.TokenHash, workflow.Decision{Status: workflow.ApprovalGranted, Approver: Hex32(), At: time.Now()})
		return err
	}
	if err := submit(); err != nil {
		t.Fatalf("first submission: %v", err)
	}
	got, err := b.Approval(context.Background(), a.Community, a.TokenHash)
	if err != nil || got.Status != workflow.ApprovalGranted {
		t.Fatalf("after the decision: %v %v, want granted", got.Status, err)
	}
	if err := submit(); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("second submission of the same event: %v, want store.ErrDuplicate", err)
	}
}

// pendingApproval creates a workflow, a run parked at step 1 waiting for
// approval, and its approval; it returns the approval and the run's lease
// holder's park time.
func pendingApproval(t *testing.T, b ApprovalBackend, host string, ttl time.Duration) workflow.Approval {
	t.Helper()
	ctx := context.Background()
	c := Community(t, b, host)
	w := put(t, b, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ChannelID(), Owner: Hex32(), Definition: Definition(t, "a", workflow.TriggerWebhook)})
	r, _, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: w.ID, TriggerEventID: Hex32()})
	if err != nil {
		t.Fatal(err)
	}
	_, hash := workflow.NewApprovalToken()
	a := workflow.Approval{Community: c, TokenHash: hash, Workflow: w.ID, Run: r.ID, StepID: "ask", StepIndex: 1,
		Approver: workflow.ApproverAny, Message: "ship it?", Status: workflow.ApprovalPending,
		ExpiresAt: time.Now().Add(ttl).Truncate(time.Millisecond)}
	if err := b.CreateApproval(ctx, c, a); err != nil {
		t.Fatal(err)
	}
	return a
}

func testApprovalLifecycle(t *testing.T, b ApprovalBackend) {
	ctx := context.Background()
	a := pendingApproval(t, b, "approve.example", time.Hour)
	c := a.Community
	// Creating it again (a takeover) changes nothing.
	again := a
	again.Message = "other"
	if err := b.CreateApproval(ctx, c, again); err != nil {
		t.Fatal(err)
	}
	got, err := b.Approval(ctx, c, a.TokenHash)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != workflow.ApprovalPending || got.Message != "ship it?" || got.StepID != "ask" || got.StepIndex != 1 ||
		got.Run != a.Run || got.Workflow != a.Workflow || got.Approver != workflow.ApproverAny ||
		!got.ExpiresAt.Equal(a.ExpiresAt) || got.DecidedBy != "" || !got.DecidedAt.IsZero() {
		t.Fatalf("stored approval %+v, want %+v", got, a)
	}
	approver := Hex32()
	at := time.Now().Truncate(time.Millisecond)
	dec, err := b.DecideApproval(ctx, c, a.TokenHash, workflow.Decision{Status: workflow.ApprovalGranted, Approver: approver, At: at})
	if err != nil {
		t.Fatal(err)
	}
	if dec.Status != workflow.ApprovalGranted || dec.DecidedBy != approver || dec.DecidedAt.IsZero() {
		t.Fatalf("decided %+v", dec)
	}
	// Final: a second decision of any kind is refused.
	for _, s := range []workflow.ApprovalStatus{workflow.ApprovalDenied, workflow.ApprovalGranted, workflow.ApprovalExpired} {
		if _, err := b.DecideApproval(ctx, c, a.TokenHash, workflow.Decision{Status: s, Approver: Hex32(), At: at}); !errors.Is(err, workflow.ErrApprovalClosed) {
			t.Fatalf("second decision %s: %v, want ErrApprovalClosed", s, err)
		}
	}
	// A denial of another approval; then the audit chain holds both.
	d := pendingApproval(t, b, "approve.example", time.Hour)
	if _, err := b.DecideApproval(ctx, c, d.TokenHash, workflow.Decision{Status: workflow.ApprovalDenied, Approver: approver, At: at}); err != nil {
		t.Fatal(err)
	}
	es, err := b.AuditEntries(ctx, c, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var decisions []string
	for _, e := range es {
		if e.Action == workflow.AuditApprovalGranted || e.Action == workflow.AuditApprovalDenied {
			if e.Actor != approver {
				t.Errorf("%s by %s, want %s", e.Action, e.Actor, approver)
			}
			decisions = append(decisions, string(e.Action)+" "+e.Object)
		}
	}
	want := []string{string(workflow.AuditApprovalGranted) + " " + a.ID(), string(workflow.AuditApprovalDenied) + " " + d.ID()}
	if len(decisions) != 2 || decisions[0] != want[0] || decisions[1] != want[1] {
		t.Fatalf("audit decisions %v, want %v", decisions, want)
	}
	// Deleting the workflow deletes its approvals.
	if err := b.DeleteWorkflow(ctx, c, a.Workflow); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Approval(ctx, c, a.TokenHash); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("approval of a deleted workflow: %v", err)
	}
}

func testApprovalRace(t *testing.T, b ApprovalBackend) {
	ctx := context.Background()
	a := pendingApproval(t, b, "race.example", time.Hour)
	const n = 8
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		won, lost, bad int
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := workflow.ApprovalGranted
			if i%2 == 1 {
				s = workflow.ApprovalDenied
			}
			_, err := b.DecideApproval(ctx, a.Community, a.TokenHash, workflow.Decision{Status: s, Approver: Hex32(), At: time.Now()})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, workflow.ErrApprovalClosed):
				lost++
			default:
				bad++
				t.Errorf("decision: %v", err)
			}
		}(i)
	}
	wg.Wait()
	if won != 1 || lost != n-1 || bad != 0 {
		t.Fatalf("%d won, %d lost, %d failed; want exactly one winner", won, lost, bad)
	}
}

func testApprovalExpiry(t *testing.T, b ApprovalBackend) {
	ctx := context.Background()
	a := pendingApproval(t, b, "expiry.example", time.Minute)
	late := a.ExpiresAt.Add(time.Second)
	if _, err := b.DecideApproval(ctx, a.Community, a.TokenHash, workflow.Decision{Status: workflow.ApprovalGranted, Approver: Hex32(), At: late}); !errors.Is(err, workflow.ErrApprovalClosed) {
		t.Fatalf("grant after expiry: %v, want ErrApprovalClosed", err)
	}
	got, err := b.DecideApproval(ctx, a.Community, a.TokenHash, workflow.Decision{Status: workflow.ApprovalExpired, At: late})
	if err != nil || got.Status != workflow.ApprovalExpired || got.DecidedBy != "" {
		t.Fatalf("expire: %+v %v", got, err)
	}
	// Another community does not see it; an unknown hash is not found.
	z := Community(t, b, "elsewhere.example")
	if _, err := b.Approval(ctx, z, a.TokenHash); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("foreign lookup: %v", err)
	}
	b2 := pendingApproval(t, b, "expiry.example", time.Hour)
	if _, err := b.DecideApproval(ctx, z, b2.TokenHash, workflow.Decision{Status: workflow.ApprovalGranted, Approver: Hex32(), At: time.Now()}); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("foreign decision: %v", err)
	}
	_, random := workflow.NewApprovalToken()
	if _, err := b.DecideApproval(ctx, a.Community, random, workflow.Decision{Status: workflow.ApprovalGranted, Approver: Hex32(), At: time.Now()}); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("unknown decision: %v", err)
	}
	if got, _ := b.Approval(ctx, a.Community, b2.TokenHash); got.Status != workflow.ApprovalPending {
		t.Fatalf("a foreign decision changed the approval: %+v", got)
	}
}

// testApprovalWakes: a run parked until its approval's expiry becomes
// claimable at once when the approval is decided, even if the decision
// lands while the run is being parked.
func testApprovalWakes(t *testing.T, b ApprovalBackend) {
	ctx := context.Background()
	a := pendingApproval(t, b, "wake.example", time.Hour)
	l := claimAll(t, b, "pod", time.Minute)[0]
	if l.Run != a.Run {
		t.Fatalf("claimed %s, want %s", l.Run, a.Run)
	}
	// Decided before the park is written: the park keeps it claimable.
	if _, err := b.DecideApproval(ctx, a.Community, a.TokenHash, workflow.Decision{Status: workflow.ApprovalGranted, Approver: Hex32(), At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateRun(ctx, l, workflow.RunUpdate{Status: workflow.RunWaitingApproval, CurrentStep: 1, ResumeAt: a.ExpiresAt}); err != nil {
		t.Fatal(err)
	}
	if r, _ := b.Run(ctx, a.Community, a.Run); r.Status != workflow.RunWaitingApproval {
		t.Fatalf("run status %s, want waiting_approval", r.Status)
	}
	l2 := waitClaim(t, b, "pod2", time.Minute, a.Run)
	// Parked again for another approval of the same run (step 3), then
	// decided: claimable at once.
	_, h2 := workflow.NewApprovalToken()
	a2 := a
	a2.TokenHash, a2.StepIndex, a2.StepID = h2, 3, "ask2"
	if err := b.CreateApproval(ctx, a.Community, a2); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateRun(ctx, l2, workflow.RunUpdate{Status: workflow.RunWaitingApproval, CurrentStep: 3, ResumeAt: a2.ExpiresAt}); err != nil {
		t.Fatal(err)
	}
	if ls := claimAll(t, b, "pod3", time.Minute); len(ls) != 0 {
		t.Fatalf("a run waiting for a pending approval was claimed: %+v", ls)
	}
	if _, err := b.DecideApproval(ctx, a.Community, h2, workflow.Decision{Status: workflow.ApprovalDenied, Approver: Hex32(), At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, b, "pod3", time.Minute, a.Run)
}
