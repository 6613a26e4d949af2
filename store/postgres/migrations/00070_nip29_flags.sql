-- NIP-29 group flags (version 70; versions 70-79 belong to NIP-29 interop).
--
-- closed, restricted and hidden are NIP-29's flags; private is
-- visibility = 'private'. nip29_group_id (since version 1) holds the
-- group id when it is not a UUID. A channel that was private before this
-- version was private, closed (joins refused), restricted (non-members
-- cannot post) and hidden (its state events are read under the channel's
-- rules), so it keeps all four.

-- +goose Up
ALTER TABLE channels ADD COLUMN closed boolean NOT NULL DEFAULT false;
ALTER TABLE channels ADD COLUMN restricted boolean NOT NULL DEFAULT false;
ALTER TABLE channels ADD COLUMN hidden boolean NOT NULL DEFAULT false;
UPDATE channels SET closed = true, restricted = true, hidden = true WHERE visibility = 'private';

-- +goose Down
ALTER TABLE channels DROP COLUMN IF EXISTS hidden;
ALTER TABLE channels DROP COLUMN IF EXISTS restricted;
ALTER TABLE channels DROP COLUMN IF EXISTS closed;
