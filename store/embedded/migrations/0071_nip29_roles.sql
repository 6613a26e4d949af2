-- Schema version 71: NIP-29 roles (versions 70-79 belong to NIP-29 interop).
--
-- channel_members.role accepts any role name a 9000 gives (NIP-29 roles are
-- the relay's to define; a role Buzz does not know grants what member
-- grants), 1 to 64 bytes. SQLite cannot alter a CHECK constraint: the table
-- is rebuilt.
CREATE TABLE channel_members_v71 (
    community INTEGER NOT NULL,
    channel   BLOB    NOT NULL,
    pubkey    BLOB    NOT NULL,
    role      TEXT    NOT NULL CHECK (length(role) BETWEEN 1 AND 64),
    joined_at INTEGER NOT NULL,
    added_by  BLOB,
    PRIMARY KEY (community, channel, pubkey)
) WITHOUT ROWID;
INSERT INTO channel_members_v71 (community, channel, pubkey, role, joined_at, added_by)
    SELECT community, channel, pubkey, role, joined_at, added_by FROM channel_members;
DROP TABLE channel_members;
ALTER TABLE channel_members_v71 RENAME TO channel_members;
CREATE INDEX channel_members_pubkey ON channel_members (community, pubkey);
