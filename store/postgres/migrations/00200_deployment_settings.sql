-- The deployment's own settings, one row each. main_host is the host of
-- RELAY_URL, recorded by every buzzd as it starts: the admin tools read it
-- to refuse unmapping the relay's own address, whatever their own
-- environment says.

-- +goose Up
CREATE TABLE deployment_settings (
    name       text PRIMARY KEY CHECK (name IN ('main_host')),
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO _operator_global_tables (table_name, reason) VALUES
    ('deployment_settings', 'settings of the whole deployment (its main host), read before any community');
GRANT SELECT, INSERT, UPDATE ON deployment_settings TO buzz_app;

-- +goose Down
REVOKE ALL ON deployment_settings FROM buzz_app;
DELETE FROM _operator_global_tables WHERE table_name = 'deployment_settings';
DROP TABLE IF EXISTS deployment_settings;
