package postgres_test

import (
	"testing"

	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

// TestWorkflowConformance runs the workflow store suite on PostgreSQL
// (as the RLS role, like every other test here).
func TestWorkflowConformance(t *testing.T) {
	workflowtest.Run(t, func(t *testing.T) workflowtest.Backend { return openStore(t) })
}

func TestWorkflowAudit(t *testing.T) {
	workflowtest.RunAudit(t, func(t *testing.T) workflowtest.AuditBackend { return openStore(t) })
}

func TestWorkflowWebhookConformance(t *testing.T) {
	workflowtest.RunWebhooks(t, func(t *testing.T) workflowtest.WebhookBackend { return openStore(t) })
}
