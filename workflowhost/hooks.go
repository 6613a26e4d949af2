package workflowhost

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// Incoming webhooks (no NIP-98: the secret authenticates):
//
//	POST /hooks/{workflow_id}     X-Webhook-Secret: <secret>
//	                              Idempotency-Key: <key>   (optional)
//	                              body: a JSON object (≤ 1 MiB) or empty
//
// The fields of the body become the run's trigger variables
// (trigger_<key>). Success is 202 {"run_id","workflow_id","status"}, the
// run stored before the answer is written; a repeated Idempotency-Key
// answers the first delivery's run (202, its current status). Every
// refusal — an id unknown here or of another community, a wrong or
// missing secret, a disabled workflow, another trigger — is the same 404
// body, byte for byte (webhookNotFoundBody).
//
// The secret is created by the relay with the workflow's first webhook
// definition (a 30620 whose trigger is webhook) and returned once, as
// "webhook_secret" in that 30620's OK response; only its SHA-256 is
// stored. The owner rotates it with the NIP-98 call
//
//	POST /workflows/{id}/webhook-secret   → {"workflow_id","webhook_secret"}
//
// (buzz.WithHTTPAuth), or by deleting the workflow and defining it again.
const (
	// HooksPath is where a community's incoming webhooks live: POST
	// /hooks/{workflow_id} on the community's host.
	HooksPath = "/hooks"

	// MaxIdempotencyKeyBytes bounds an Idempotency-Key header.
	MaxIdempotencyKeyBytes = 255
)

// webhookNotFoundBody is the answer to every refused delivery.
const webhookNotFoundBody = `{"error":"not_found","message":"invalid: no such webhook"}`

const (
	msgWebhookBody      = "invalid: the body must be empty or a JSON object"
	msgIdempotencyKey   = "invalid: Idempotency-Key must be at most 255 bytes"
	msgWebhookNotOwner  = "restricted: only the workflow's owner may rotate its webhook secret"
	msgWebhookNoTrigger = "invalid: the workflow is not triggered by webhook"
)

func webhookNotFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, webhookNotFoundBody)
}

// serveWebhook is POST /hooks/{id}. What is checked before the workflow
// is looked up (body size and syntax, key length) does not depend on it.
func (f *Feature) serveWebhook(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, buzz.MaxHTTPBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			apijson.Error(w, http.StatusRequestEntityTooLarge, "invalid", msgBodyTooLarge)
			return
		}
		apijson.Error(w, http.StatusBadRequest, "invalid", msgWebhookBody)
		return
	}
	fields := map[string]any{}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
			apijson.Error(w, http.StatusBadRequest, "invalid", msgWebhookBody)
			return
		}
	}
	key := req.Header.Get("Idempotency-Key")
	if len(key) > MaxIdempotencyKeyBytes {
		apijson.Error(w, http.StatusBadRequest, "invalid", msgIdempotencyKey)
		return
	}
	id, ok := workflow.ParseID(req.PathValue("id"))
	if !ok {
		webhookNotFound(w)
		return
	}
	run, _, err := f.engine.TriggerWebhook(req.Context(), tc.Community(), workflow.WebhookDelivery{
		Workflow: id, Secret: req.Header.Get("X-Webhook-Secret"), IdempotencyKey: key, Fields: fields,
	})
	if errors.Is(err, workflow.ErrNotFound) {
		webhookNotFound(w)
		return
	}
	if err != nil {
		f.internalError(w, req, "webhook delivery", err)
		return
	}
	apijson.Write(w, http.StatusAccepted, map[string]string{
		"run_id": run.ID.String(), "workflow_id": run.Workflow.String(), "status": string(run.Status),
	})
}

// serveWebhookRotate is POST /workflows/{id}/webhook-secret (NIP-98, the
// workflow's owner): a new secret replaces the old one at once.
func (f *Feature) serveWebhookRotate(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	pk, rt, wf, _, ok := f.workflowRequest(w, req, tc, "workflow_webhook_secret")
	if !ok {
		return
	}
	if pk != wf.Owner {
		rt.Refused(req.Context(), msgWebhookNotOwner)
		apijson.Error(w, http.StatusForbidden, "restricted", msgWebhookNotOwner)
		return
	}
	secret, err := f.engine.RotateWebhookSecret(audit.WithActor(req.Context(), pk), tc.Community(), wf.ID)
	switch {
	case err == nil:
	case errors.Is(err, workflow.ErrNotFound):
		rt.Refused(req.Context(), msgWorkflowNotFound)
		notFound(w, msgWorkflowNotFound)
		return
	case errors.Is(err, workflow.ErrWrongTrigger):
		rt.Refused(req.Context(), msgWebhookNoTrigger)
		apijson.Error(w, http.StatusBadRequest, "invalid", msgWebhookNoTrigger)
		return
	default:
		f.wfInternal(w, req, rt, "rotate webhook secret", err)
		return
	}
	rt.Returned(req.Context(), []tenant.CommunityID{wf.Community})
	apijson.Write(w, http.StatusOK, map[string]string{"workflow_id": wf.ID.String(), "webhook_secret": secret})
}
