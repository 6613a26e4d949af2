-- Schema version 120: human approvals (request_approval), keyed by the
-- SHA-256 of the raw token (never stored). Times in Unix milliseconds.
CREATE TABLE workflow_approvals (
    community  INTEGER NOT NULL,
    token      BLOB    NOT NULL,
    workflow   BLOB    NOT NULL,
    run        BLOB    NOT NULL,
    step_id    TEXT    NOT NULL,
    step_index INTEGER NOT NULL,
    approver   TEXT    NOT NULL,
    message    TEXT    NOT NULL DEFAULT '',
    status     TEXT    NOT NULL DEFAULT 'pending',
    decided_by BLOB,
    decided_at INTEGER,
    expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (community, token)
) WITHOUT ROWID;
CREATE INDEX workflow_approvals_run ON workflow_approvals (community, run);
