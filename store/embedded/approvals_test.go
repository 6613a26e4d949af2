package embedded_test

import (
	"testing"

	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

func TestApprovalConformance(t *testing.T) {
	workflowtest.RunApprovals(t, func(t *testing.T) workflowtest.ApprovalBackend { return openTemp(t) })
}
