-- API tokens (package apitoken): the SHA-256 of each token, never the
-- token. community is the community's seq; owner and hash are 32 bytes;
-- scopes is a JSON array of scope names; created_by is a hex pubkey or ''
-- (a local administrator); times are Unix seconds, 0 meaning never (expires_at)
-- or not revoked (revoked_at). A hash is looked up within its community
-- only.
CREATE TABLE api_tokens (
    community  INTEGER NOT NULL,
    id         TEXT    NOT NULL,
    hash       BLOB    NOT NULL,
    owner      BLOB    NOT NULL,
    name       TEXT    NOT NULL,
    scopes     TEXT    NOT NULL,
    created_by TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL DEFAULT 0,
    revoked_at INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (community, id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (community, hash);
CREATE INDEX api_tokens_owner ON api_tokens (community, owner);
