-- NIP-43 membership announcements: membership_at is the created_at of the
-- latest relay-signed membership event (8000/8001/13534) of the community,
-- Unix seconds, 0 before the first. A membership change takes the
-- community's row lock by raising it, so changes of one community are
-- serialized across pods and their announcements strictly ordered.

-- +goose Up
ALTER TABLE communities ADD COLUMN membership_at bigint NOT NULL DEFAULT 0;
GRANT UPDATE (membership_at) ON communities TO buzz_app;

-- +goose Down
REVOKE UPDATE (membership_at) ON communities FROM buzz_app;
ALTER TABLE communities DROP COLUMN membership_at;
