-- Schema version 10: the workflow engine (package workflow). The same
-- model as PostgreSQL's (workflows, workflow_runs, workflow_effects, and
-- the run queue holding leases), keyed by the community's seq.
CREATE TABLE workflows (
    community  INTEGER NOT NULL,
    id         BLOB    NOT NULL,
    name       TEXT    NOT NULL,
    owner      BLOB    NOT NULL,
    channel    BLOB    NOT NULL,
    definition TEXT    NOT NULL,
    hash       BLOB    NOT NULL,
    trigger_on TEXT    NOT NULL,
    event_id   BLOB,
    enabled    INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (community, id)
) WITHOUT ROWID;
CREATE INDEX workflows_channel_trigger ON workflows (community, channel, trigger_on) WHERE enabled;

CREATE TABLE workflow_runs (
    community        INTEGER NOT NULL,
    id               BLOB    NOT NULL,
    workflow         BLOB    NOT NULL,
    status           TEXT    NOT NULL,
    trigger_event_id BLOB    NOT NULL,
    trigger_context  TEXT    NOT NULL,
    current_step     INTEGER NOT NULL DEFAULT 0,
    trace            TEXT    NOT NULL DEFAULT '[]',
    error_code       TEXT,
    error_message    TEXT,
    resume_at        INTEGER,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    completed_at     INTEGER,
    PRIMARY KEY (community, id),
    UNIQUE (community, workflow, trigger_event_id)
) WITHOUT ROWID;
CREATE INDEX workflow_runs_list ON workflow_runs (community, workflow, created_at DESC, id);

CREATE TABLE workflow_effects (
    community   INTEGER NOT NULL,
    run         BLOB    NOT NULL,
    key         TEXT    NOT NULL,
    intent      BLOB,
    done        INTEGER NOT NULL DEFAULT 0,
    result      BLOB,
    created_at  INTEGER NOT NULL,
    finished_at INTEGER,
    PRIMARY KEY (community, run, key)
) WITHOUT ROWID;

-- Unfinished runs and their leases (times in Unix milliseconds).
CREATE TABLE workflow_run_queue (
    community        INTEGER NOT NULL,
    run              BLOB    NOT NULL,
    available_at     INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_token      INTEGER NOT NULL DEFAULT 0,
    lease_expires_at INTEGER,
    PRIMARY KEY (community, run)
) WITHOUT ROWID;
CREATE INDEX workflow_run_queue_due ON workflow_run_queue (available_at);
