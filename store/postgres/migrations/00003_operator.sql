-- Operator plane: quotas by owner, archiving and ownership transfer update
-- communities. (Version 2 is reserved for work landing separately.)

-- +goose Up
CREATE INDEX communities_owner_idx ON communities (owner_pubkey, created_at)
    WHERE owner_pubkey IS NOT NULL;
GRANT UPDATE (owner_pubkey, archived_at) ON communities TO buzz_app;

-- +goose Down
REVOKE UPDATE (owner_pubkey, archived_at) ON communities FROM buzz_app;
DROP INDEX IF EXISTS communities_owner_idx;
