-- Due-time delivery of NIP-ER reminders (kind 30300): one row per stored
-- reminder with a future not_before, found by index when it falls due.
-- Every pod's sweeper looks across communities, so it is a registered
-- global table of ids, authors and times; the events stay in events under
-- row-level security. not_before and lease_until are Unix seconds
-- (lease_until 0: not claimed); a claim holds a row until its lease ends,
-- so one pod delivers it.

-- +goose Up
CREATE TABLE reminders_due (
    community_id uuid   NOT NULL,
    id           text   NOT NULL,
    pubkey       text   NOT NULL,
    not_before   bigint NOT NULL,
    lease_until  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (community_id, id)
);
CREATE INDEX reminders_due_at_idx ON reminders_due (not_before);
INSERT INTO _operator_global_tables (table_name, reason) VALUES
    ('reminders_due', 'every pod''s reminder sweeper claims due reminders of every community; holds ids, authors and times only');
GRANT SELECT, INSERT, UPDATE, DELETE ON reminders_due TO buzz_app;

-- +goose Down
REVOKE ALL ON reminders_due FROM buzz_app;
DELETE FROM _operator_global_tables WHERE table_name = 'reminders_due';
DROP TABLE IF EXISTS reminders_due;
