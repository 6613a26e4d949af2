-- The deployment's own settings, one row each. main_host is the host of
-- RELAY_URL, recorded by buzzd as it starts: the admin tools read it to
-- refuse unmapping the relay's own address, whatever their own
-- environment says. updated_at: unix seconds.
CREATE TABLE deployment_settings (
    name       TEXT    PRIMARY KEY,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);
