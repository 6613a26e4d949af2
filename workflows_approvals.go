package buzz

import (
	"context"
	"errors"
	"fmt"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// Approvals (request_approval): a run waiting for a human decision is
// granted by kind 46030 and denied by kind 46031, each with d = the
// approval id (the SHA-256 of the token, lowercase hex) and h = the
// workflow's channel. They are executed, never stored. The signer must be
// the named approver, or any member of the channel for "any". The OK is
// `response:{"approval_id":…,"status":"granted"|"denied"}`; a request
// decided meanwhile (another approver won), expired, unknown, or of
// another community or channel is refused with the same message, so the
// answer reveals nothing about approvals the signer may not decide.

const (
	msgApprovalUnknown    = "invalid: unknown, expired or already decided approval"
	msgApprovalNotAllowed = "restricted: you are not an approver of this request"
)

var _ workflow.ApprovalLinker = (*WorkflowHost)(nil)

// decide executes a 46030 (grant) or 46031 (deny).
func (h *WorkflowHost) decide(ctx context.Context, s ingest.Submission) (ingest.Outcome, bool) {
	ev, c := s.Event, s.Tenant.Community()
	ch, ok := workflowChannel(ev)
	if !ok {
		return ingest.Outcome{Message: msgWorkflowNoH}, false
	}
	ap, err := h.engine.Decide(ctx, c, ch, ev.DTag(), ev.Kind == nostr.KindApprovalGrant, ev.PubKey)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrDuplicate): // decided by this very event before (the authority rule)
		return ingest.Outcome{OK: true, Message: ingest.MsgDuplicate}, false
	case errors.Is(err, workflow.ErrNotFound), errors.Is(err, workflow.ErrApprovalClosed):
		return ingest.Outcome{Message: msgApprovalUnknown}, false
	case errors.Is(err, workflow.ErrApprovalNotAllowed):
		return ingest.Outcome{Message: msgApprovalNotAllowed}, false
	default:
		h.r.log.ErrorContext(ctx, "buzz: approval decision", "community", c.String(), "err", err)
		return ingest.Outcome{Message: ingest.MsgInternal}, false
	}
	return ingest.Outcome{OK: true, Message: response(map[string]any{
		"approval_id": ap.ID(), "status": string(ap.Status), "run_id": ap.Run.String(),
	})}, false
}

// ApprovalURL implements workflow.ApprovalLinker: the approval page on the
// community's primary host.
func (h *WorkflowHost) ApprovalURL(ctx context.Context, c tenant.CommunityID, token string) (string, error) {
	host, err := h.communityHost(ctx, c)
	if err != nil {
		return "", fmt.Errorf("buzz: approval link: %w", err)
	}
	scheme := "https"
	if h.r.cfg.relayScheme == "ws" {
		scheme = "http"
	}
	return scheme + "://" + host + ApprovalsPath + "/" + token, nil
}
