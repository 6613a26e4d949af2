package embedded_test

import (
	"testing"

	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

func TestWorkflowConformance(t *testing.T) {
	workflowtest.Run(t, func(t *testing.T) workflowtest.Backend { return openTemp(t) })
}

func TestWorkflowAudit(t *testing.T) {
	workflowtest.RunAudit(t, func(t *testing.T) workflowtest.AuditBackend { return openTemp(t) })
}

func TestWorkflowWebhookConformance(t *testing.T) {
	workflowtest.RunWebhooks(t, func(t *testing.T) workflowtest.WebhookBackend { return openTemp(t) })
}
