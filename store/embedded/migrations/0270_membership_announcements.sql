-- NIP-43 membership announcements: membership_at is the created_at of the
-- latest relay-signed membership event (8000/8001/13534) of the community,
-- Unix seconds, 0 before the first. Each change announces one second after
-- it at least, so the announcements of a community are strictly ordered.
ALTER TABLE communities ADD COLUMN membership_at INTEGER NOT NULL DEFAULT 0;
