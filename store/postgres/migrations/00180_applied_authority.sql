-- The authority events applied in each community (version 180; see
-- store.Authority): a row is inserted in the transaction of the event's
-- effect, so a second submission of the same event, from any pod, changes
-- nothing. DeleteExpired removes rows past until.

-- +goose Up
CREATE TABLE applied_authority (
    community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    event_id     bytea NOT NULL CHECK (length(event_id) = 32),
    until        timestamptz NOT NULL,
    PRIMARY KEY (community_id, event_id)
);
CREATE INDEX applied_authority_until_idx ON applied_authority (community_id, until);
ALTER TABLE applied_authority ENABLE ROW LEVEL SECURITY;
ALTER TABLE applied_authority FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON applied_authority AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON applied_authority AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, DELETE ON applied_authority TO buzz_app;

-- +goose Down
DROP TABLE IF EXISTS applied_authority;
