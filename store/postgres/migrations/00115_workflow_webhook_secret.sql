-- Incoming webhooks (version 115, webhook range 115-119): a workflow
-- triggered by webhook keeps the SHA-256 of its relay-generated secret
-- (the secret itself is never stored). Deleting the workflow row deletes
-- it; redefining the workflow (an UPDATE of the row) keeps it. Retried
-- deliveries are deduplicated by workflow_runs' existing unique
-- (community_id, workflow_id, trigger_event_id), the trigger event id
-- being a hash of the Idempotency-Key (workflow.WebhookTriggerID).

-- +goose Up
ALTER TABLE workflows ADD COLUMN webhook_secret_hash bytea CHECK (webhook_secret_hash IS NULL OR length(webhook_secret_hash) = 32);

-- +goose Down
ALTER TABLE workflows DROP COLUMN IF EXISTS webhook_secret_hash;
