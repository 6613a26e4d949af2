package workflowtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

// WebhookBackend is a workflow store that keeps webhook secrets (and
// audit chains).
type WebhookBackend interface {
	Backend
	workflow.WebhookSecretStore
	store.AuditLog
}

// RunWebhooks checks webhook secrets (set once unless replaced, scoped by
// community, kept by a redefinition, gone with the workflow) and that a
// delivery's idempotency key yields one run per (community, workflow).
// Every stored secret appends an audit entry (never the hash); a refused
// set appends none.
func RunWebhooks(t *testing.T, open func(t *testing.T) WebhookBackend) {
	t.Run("Audit", func(t *testing.T) { testWebhookAudit(t, open(t)) })
	ctx := context.Background()
	b := open(t)
	c, other := Community(t, b, "hooks.example"), Community(t, b, "hooks-other.example")
	owner, ch := Hex32(), ChannelID()
	def := Definition(t, "hook", workflow.TriggerWebhook)
	id := workflow.NewID()
	put(t, b, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: def})

	if _, ok, err := b.WebhookSecret(ctx, c, id); err != nil || ok {
		t.Fatalf("secret of a new workflow: ok %v, %v", ok, err)
	}
	h1, h2 := workflow.WebhookSecretHash("one"), workflow.WebhookSecretHash("two")
	if set, err := b.SetWebhookSecret(ctx, c, id, h1, false); err != nil || !set {
		t.Fatalf("first secret: set %v, %v", set, err)
	}
	if set, err := b.SetWebhookSecret(ctx, c, id, h2, false); err != nil || set {
		t.Fatalf("second secret without replace: set %v, %v", set, err)
	}
	check := func(what string, want [32]byte) {
		t.Helper()
		got, ok, err := b.WebhookSecret(ctx, c, id)
		if err != nil || !ok || got != want {
			t.Fatalf("%s: ok %v, %v, hash matches %v", what, ok, err, got == want)
		}
	}
	check("after a refused set", h1)
	// A redefinition keeps the secret.
	put(t, b, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: Definition(t, "hook v2", workflow.TriggerWebhook)})
	check("after a redefinition", h1)
	if set, err := b.SetWebhookSecret(ctx, c, id, h2, true); err != nil || !set {
		t.Fatalf("replace: set %v, %v", set, err)
	}
	check("after a replace", h2)

	// Tenancy: the id does not exist in another community, nor does a
	// random one.
	for name, f := range map[string]func() error{
		"foreign get": func() error { _, _, err := b.WebhookSecret(ctx, other, id); return err },
		"foreign set": func() error { _, err := b.SetWebhookSecret(ctx, other, id, h1, true); return err },
		"random get":  func() error { _, _, err := b.WebhookSecret(ctx, c, workflow.NewID()); return err },
		"random set":  func() error { _, err := b.SetWebhookSecret(ctx, c, workflow.NewID(), h1, false); return err },
	} {
		if err := f(); !errors.Is(err, workflow.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
	check("after foreign writes", h2)

	// Idempotency keys: one run per (community, workflow, key).
	key := workflow.WebhookTriggerID("delivery-1")
	r1, created, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: id, TriggerEventID: key, Trigger: map[string]any{"n": 1.0}})
	if err != nil || !created {
		t.Fatalf("first delivery: created %v, %v", created, err)
	}
	r2, created, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: id, TriggerEventID: key, Trigger: map[string]any{"n": 2.0}})
	if err != nil || created || r2.ID != r1.ID || r2.Trigger["n"] != 1.0 {
		t.Fatalf("retried delivery: created %v, %v, same run %v, trigger %v", created, err, r2.ID == r1.ID, r2.Trigger)
	}
	id2 := workflow.NewID()
	put(t, b, c, workflow.PutWorkflow{ID: id2, Channel: ch, Owner: owner, Definition: def})
	if r3, created, err := b.CreateRun(ctx, c, workflow.NewRun{Workflow: id2, TriggerEventID: key}); err != nil || !created || r3.ID == r1.ID {
		t.Fatalf("same key, other workflow: created %v, %v", created, err)
	}
	put(t, b, other, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: def})
	if _, created, err := b.CreateRun(ctx, other, workflow.NewRun{Workflow: id, TriggerEventID: key}); err != nil || !created {
		t.Fatalf("same key and id, other community: created %v, %v", created, err)
	}
	if _, ok, err := b.WebhookSecret(ctx, other, id); err != nil || ok {
		t.Fatalf("the other community's workflow of the same id has a secret: ok %v, %v", ok, err)
	}

	// Deleting the workflow deletes the secret: recreated, it has none.
	if err := b.DeleteWorkflow(ctx, c, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.WebhookSecret(ctx, c, id); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("secret of a deleted workflow: %v", err)
	}
	put(t, b, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: def})
	if _, ok, err := b.WebhookSecret(ctx, c, id); err != nil || ok {
		t.Fatalf("secret of a recreated workflow: ok %v, %v", ok, err)
	}
}

func testWebhookAudit(t *testing.T, b WebhookBackend) {
	ctx := context.Background()
	c := Community(t, b, "hooks-audit.example")
	owner, rotator, ch := Hex32(), Hex32(), ChannelID()
	id := workflow.NewID()
	put(t, b, c, workflow.PutWorkflow{ID: id, Channel: ch, Owner: owner, Definition: Definition(t, "hook", workflow.TriggerWebhook)})
	h := workflow.WebhookSecretHash("s")
	if set, err := b.SetWebhookSecret(audit.WithActor(ctx, owner), c, id, h, false); err != nil || !set {
		t.Fatalf("set: %v %v", set, err)
	}
	if set, err := b.SetWebhookSecret(audit.WithActor(ctx, owner), c, id, h, false); err != nil || set {
		t.Fatalf("refused set: %v %v", set, err)
	}
	if set, err := b.SetWebhookSecret(audit.WithActor(ctx, rotator), c, id, h, true); err != nil || !set {
		t.Fatalf("rotation: %v %v", set, err)
	}
	es, err := b.AuditEntries(ctx, c, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || es[0].Action != workflow.AuditCreated ||
		es[1].Action != workflow.AuditWebhookSecret || es[1].Actor != owner ||
		es[2].Action != workflow.AuditWebhookSecret || es[2].Actor != rotator {
		t.Fatalf("audit entries %+v, want created, then two webhook_secret entries by owner and rotator", es)
	}
	var v audit.Verifier
	for _, e := range es {
		if !v.Add(e) {
			seq, why := v.Broken()
			t.Fatalf("chain broken at %d: %s", seq, why)
		}
		if d := string(e.Detail); strings.Contains(d, fmt.Sprintf("%x", h[:])) {
			t.Fatalf("entry %d carries the secret's hash: %s", e.Seq, d)
		}
	}
}
