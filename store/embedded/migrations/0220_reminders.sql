-- Due-time delivery of NIP-ER reminders (kind 30300): one row per stored
-- reminder with a future not_before, found by index when it falls due. It
-- holds ids, authors and times only; the events stay in the event store.
-- community is the community id (16 bytes); not_before and lease_until are
-- Unix seconds (lease_until 0: not claimed).
CREATE TABLE reminders_due (
    community   BLOB    NOT NULL,
    id          TEXT    NOT NULL,
    pubkey      TEXT    NOT NULL,
    not_before  INTEGER NOT NULL,
    lease_until INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (community, id)
) WITHOUT ROWID;
CREATE INDEX reminders_due_at ON reminders_due (not_before);
