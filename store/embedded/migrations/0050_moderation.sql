-- Schema version 50: community moderation (versions 50-59 belong to it).
--
-- community_members gains the role 'moderator' (SQLite cannot alter a
-- CHECK constraint: the table is rebuilt). moderation_restrictions holds
-- the bans and timeouts in force, moderation_actions the log of every
-- moderation action, moderation_reports the NIP-56 report queue (reports
-- are never stored in events). Times are unix seconds.
CREATE TABLE community_members_v50 (
    community INTEGER NOT NULL,
    pubkey    BLOB    NOT NULL,
    role      TEXT    NOT NULL CHECK (role IN ('admin', 'moderator', 'member')),
    added_at  INTEGER NOT NULL,
    PRIMARY KEY (community, pubkey)
) WITHOUT ROWID;
INSERT INTO community_members_v50 (community, pubkey, role, added_at)
    SELECT community, pubkey, role, added_at FROM community_members;
DROP TABLE community_members;
ALTER TABLE community_members_v50 RENAME TO community_members;

CREATE TABLE moderation_restrictions (
    community  INTEGER NOT NULL,
    pubkey     BLOB    NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('ban', 'timeout')),
    until      INTEGER CHECK (kind = 'ban' OR until IS NOT NULL),
    reason     TEXT    NOT NULL DEFAULT '',
    actor      BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (community, pubkey, kind)
) WITHOUT ROWID;

CREATE TABLE moderation_actions (
    seq        INTEGER PRIMARY KEY,
    community  INTEGER NOT NULL,
    action     TEXT    NOT NULL,
    actor      BLOB    NOT NULL,
    target     BLOB    NOT NULL,
    reason     TEXT    NOT NULL DEFAULT '',
    until      INTEGER,
    status     TEXT,
    event_id   BLOB,
    created_at INTEGER NOT NULL
);
CREATE INDEX moderation_actions_community ON moderation_actions (community, seq DESC);

CREATE TABLE moderation_reports (
    seq           INTEGER PRIMARY KEY,
    community     INTEGER NOT NULL,
    id            BLOB    NOT NULL,
    reporter      BLOB    NOT NULL,
    target_pubkey BLOB    NOT NULL,
    target_event  BLOB,
    report_type   TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    raw           BLOB    NOT NULL,
    status        TEXT    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved', 'dismissed', 'escalated')),
    received_at   INTEGER NOT NULL,
    resolved_by   BLOB,
    resolved_at   INTEGER
);
CREATE UNIQUE INDEX moderation_reports_id ON moderation_reports (community, id);
CREATE INDEX moderation_reports_status ON moderation_reports (community, status, seq DESC);
CREATE INDEX moderation_reports_reporter ON moderation_reports (community, reporter, seq DESC);
CREATE INDEX moderation_reports_open ON moderation_reports (seq DESC) WHERE status = 'open';
