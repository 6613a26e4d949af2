-- The workflow engine (package workflow; version 10, in the 10-19 range
-- reserved for it).
--
-- workflows and workflow_runs exist since version 1. This adds what the
-- engine needs beside them:
--   * workflows.trigger_on and event_id: the trigger kind (to find the
--     workflows an event may fire) and the 30620 event of the revision;
--   * workflow_runs.error_code and resume_at (a parked run's resume time);
--   * workflow_effects: one row per external effect of a run, keyed by an
--     idempotency key, written before (intent) and after (result) the
--     effect, so a run taken over never repeats one;
--   * workflow_run_queue: the lease of every unfinished run. It is the one
--     place a worker looks across communities (which run is due, which
--     lease lapsed), so it is a registered global table holding ids,
--     times and lease bookkeeping only; everything a run contains stays in
--     the tenant tables under row-level security.

-- +goose Up
ALTER TABLE workflows ADD COLUMN trigger_on text NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN event_id bytea CHECK (event_id IS NULL OR length(event_id) = 32);
CREATE INDEX workflows_channel_trigger_idx ON workflows (community_id, channel_id, trigger_on) WHERE enabled;

ALTER TABLE workflow_runs ADD COLUMN error_code text;
ALTER TABLE workflow_runs ADD COLUMN resume_at timestamptz;
CREATE INDEX workflow_runs_list_idx ON workflow_runs (community_id, workflow_id, created_at DESC, id);

CREATE TABLE workflow_effects (
    community_id uuid NOT NULL,
    run_id       uuid NOT NULL,
    key          text NOT NULL CHECK (length(key) <= 256),
    intent       bytea,
    done         boolean NOT NULL DEFAULT false,
    result       bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    PRIMARY KEY (community_id, run_id, key),
    FOREIGN KEY (community_id, run_id) REFERENCES workflow_runs (community_id, id) ON DELETE CASCADE
);
ALTER TABLE workflow_effects ENABLE ROW LEVEL SECURITY;
ALTER TABLE workflow_effects FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON workflow_effects AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON workflow_effects AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON workflow_effects TO buzz_app;

CREATE TABLE workflow_run_queue (
    community_id     uuid NOT NULL,
    run_id           uuid NOT NULL,
    available_at     timestamptz NOT NULL DEFAULT now(),
    lease_owner      text,
    lease_token      bigint NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    heartbeat_at     timestamptz,
    PRIMARY KEY (community_id, run_id),
    FOREIGN KEY (community_id, run_id) REFERENCES workflow_runs (community_id, id) ON DELETE CASCADE
);
CREATE INDEX workflow_run_queue_due_idx ON workflow_run_queue (available_at);
CREATE INDEX workflow_run_queue_lease_idx ON workflow_run_queue (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
INSERT INTO _operator_global_tables (table_name, reason) VALUES
    ('workflow_run_queue', 'workers claim due runs of every community; holds ids, times and leases only');
GRANT SELECT, INSERT, UPDATE, DELETE ON workflow_run_queue TO buzz_app;

-- +goose Down
DELETE FROM _operator_global_tables WHERE table_name = 'workflow_run_queue';
DROP TABLE IF EXISTS workflow_run_queue, workflow_effects;
DROP INDEX IF EXISTS workflow_runs_list_idx;
ALTER TABLE workflow_runs DROP COLUMN IF EXISTS resume_at, DROP COLUMN IF EXISTS error_code;
DROP INDEX IF EXISTS workflows_channel_trigger_idx;
ALTER TABLE workflows DROP COLUMN IF EXISTS event_id, DROP COLUMN IF EXISTS trigger_on;
