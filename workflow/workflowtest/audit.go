package workflowtest

import (
	"context"
	"errors"
	"testing"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

// AuditBackend is a workflow store that keeps audit chains.
type AuditBackend interface {
	Backend
	store.AuditLog
}

// RunAudit checks that every change to a workflow definition appends its
// entry to the community's audit chain (workflow.PutAudit and friends),
// and that refused or no-op changes append nothing.
func RunAudit(t *testing.T, open func(t *testing.T) AuditBackend) {
	b := open(t)
	ctx := context.Background()
	c := Community(t, b, "wf-audit.example")
	owner, admin, ch := Hex32(), Hex32(), ChannelID()
	id := workflow.NewID()
	def := Definition(t, "greeter", workflow.TriggerMessagePosted)
	put(t, b, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: def})
	def2 := Definition(t, "greeter v2", workflow.TriggerMessagePosted)
	put(t, b, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: def2})
	// Another owner's put is refused: no entry.
	if _, err := b.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: Hex32(), Definition: def}); !errors.Is(err, workflow.ErrNotOwner) {
		t.Fatalf("foreign put: %v", err)
	}
	actx := audit.WithActor(ctx, admin)
	if err := b.SetWorkflowEnabled(actx, c, id, false); err != nil {
		t.Fatal(err)
	}
	if err := b.SetWorkflowEnabled(actx, c, id, true); err != nil {
		t.Fatal(err)
	}
	if n, err := b.DisableOwnerWorkflows(actx, c, ch, owner); err != nil || n != 1 {
		t.Fatalf("DisableOwnerWorkflows: %d %v", n, err)
	}
	// Nothing left to disable: no entry.
	if n, err := b.DisableOwnerWorkflows(actx, c, ch, owner); err != nil || n != 0 {
		t.Fatalf("DisableOwnerWorkflows again: %d %v", n, err)
	}
	if err := b.DeleteWorkflow(actx, c, id); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteWorkflow(actx, c, id); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}

	es, err := b.AuditEntries(ctx, c, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		action audit.Action
		actor  string
	}{
		{workflow.AuditCreated, owner}, {workflow.AuditUpdated, owner}, {workflow.AuditDisabled, admin},
		{workflow.AuditEnabled, admin}, {workflow.AuditDisabled, admin}, {workflow.AuditDeleted, admin},
	}
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(es), len(want), es)
	}
	var v audit.Verifier
	for i, e := range es {
		if e.Action != want[i].action || e.Actor != want[i].actor {
			t.Errorf("entry %d: %s by %s, want %s by %s", e.Seq, e.Action, e.Actor, want[i].action, want[i].actor)
		}
		if !v.Add(e) {
			seq, why := v.Broken()
			t.Fatalf("chain broken at %d: %s", seq, why)
		}
	}
	if es[0].Object != id.String() || es[5].Object != id.String() {
		t.Errorf("objects %q, %q", es[0].Object, es[5].Object)
	}
}
