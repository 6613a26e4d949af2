-- Human approvals (request_approval; version 120, approvals range). The
-- table exists since version 1 (token = SHA-256 of the raw token); an
-- approval also keeps the request's message, shown on the approval page.

-- +goose Up
ALTER TABLE workflow_approvals ADD COLUMN message text NOT NULL DEFAULT '';
CREATE INDEX workflow_approvals_run_idx ON workflow_approvals (community_id, run_id);

-- +goose Down
DROP INDEX IF EXISTS workflow_approvals_run_idx;
ALTER TABLE workflow_approvals DROP COLUMN IF EXISTS message;
