-- The deployment's relay master key: every buzzd of a deployment signs
-- relay-signed events (NIP-29 39000-39003) with keys derived from it, so it
-- is stored once here and read by every pod. The first pod to start inserts
-- the key it was given (or generated); the primary key arbitrates between
-- pods starting at once.

-- +goose Up
CREATE TABLE deployment_keys (
    name       text PRIMARY KEY CHECK (name = 'relay'),
    secret_key bytea NOT NULL CHECK (length(secret_key) = 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO _operator_global_tables (table_name, reason) VALUES
    ('deployment_keys', 'one relay key for the whole deployment, read before any community');
GRANT SELECT, INSERT ON deployment_keys TO buzz_app;

-- +goose Down
REVOKE ALL ON deployment_keys FROM buzz_app;
DELETE FROM _operator_global_tables WHERE table_name = 'deployment_keys';
DROP TABLE IF EXISTS deployment_keys;
