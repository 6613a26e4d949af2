-- Revisioned project state (NIP-PC, kind 47010: store.ProjectStore) and
-- git repository name reservations (NIP-34 kind 30617: store.RepoNameStore),
-- shared by every pod.

-- +goose Up
CREATE TABLE project_heads (
    community_id uuid   NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    owner        text   NOT NULL,
    d            text   NOT NULL,
    revision     bigint NOT NULL,
    identity     text   NOT NULL,
    related      text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (community_id, owner, d)
);
CREATE TABLE project_change_receipts (
    community_id uuid   NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    event_id     text   NOT NULL,
    owner        text   NOT NULL,
    d            text   NOT NULL,
    revision     bigint NOT NULL,
    PRIMARY KEY (community_id, event_id)
);
CREATE TABLE repo_names (
    community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    name         text NOT NULL,
    owner        text NOT NULL,
    PRIMARY KEY (community_id, name)
);
CREATE INDEX repo_names_owner_idx ON repo_names (community_id, owner);

ALTER TABLE project_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE project_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON project_heads AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON project_heads AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON project_heads TO buzz_app;

ALTER TABLE project_change_receipts ENABLE ROW LEVEL SECURITY;
ALTER TABLE project_change_receipts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON project_change_receipts AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON project_change_receipts AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON project_change_receipts TO buzz_app;

ALTER TABLE repo_names ENABLE ROW LEVEL SECURITY;
ALTER TABLE repo_names FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON repo_names AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON repo_names AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON repo_names TO buzz_app;

-- +goose Down
DROP TABLE IF EXISTS repo_names;
DROP TABLE IF EXISTS project_change_receipts;
DROP TABLE IF EXISTS project_heads;
