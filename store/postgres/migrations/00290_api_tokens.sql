-- API tokens (package apitoken): the SHA-256 of each token, never the
-- token, under row-level security like every community's data. scopes is
-- a JSON array of scope names; created_by is a hex pubkey or '' (a local
-- administrator); expires_at NULL: never; revoked_at NULL: not revoked. A
-- hash is looked up within its community only.

-- +goose Up
CREATE TABLE api_tokens (
    community_id uuid        NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    id           text        NOT NULL,
    hash         bytea       NOT NULL CHECK (length(hash) = 32),
    owner        bytea       NOT NULL CHECK (length(owner) = 32),
    name         text        NOT NULL,
    scopes       jsonb       NOT NULL,
    created_by   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    PRIMARY KEY (community_id, id)
);
CREATE UNIQUE INDEX api_tokens_hash_idx ON api_tokens (community_id, hash);
CREATE INDEX api_tokens_owner_idx ON api_tokens (community_id, owner);
ALTER TABLE api_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON api_tokens AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON api_tokens AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON api_tokens TO buzz_app;

-- +goose Down
DROP TABLE IF EXISTS api_tokens;
