-- A community's own self-description (NIP-11 name, description, icon,
-- contact), served for its hosts only; '' falls back to the relay's.

-- +goose Up
ALTER TABLE communities
    ADD COLUMN profile_name        text NOT NULL DEFAULT '',
    ADD COLUMN profile_description text NOT NULL DEFAULT '',
    ADD COLUMN profile_icon        text NOT NULL DEFAULT '',
    ADD COLUMN profile_contact     text NOT NULL DEFAULT '';
GRANT UPDATE (profile_name, profile_description, profile_icon, profile_contact) ON communities TO buzz_app;

-- +goose Down
REVOKE UPDATE (profile_name, profile_description, profile_icon, profile_contact) ON communities FROM buzz_app;
ALTER TABLE communities
    DROP COLUMN IF EXISTS profile_name,
    DROP COLUMN IF EXISTS profile_description,
    DROP COLUMN IF EXISTS profile_icon,
    DROP COLUMN IF EXISTS profile_contact;
