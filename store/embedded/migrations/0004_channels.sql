-- Schema version 4: channels, channel membership, community access policy.
--
-- events.channel: the 16-byte UUID of the channel the event's "h" tag
-- names, NULL for community-wide events. Reads filter on it (the access
-- scope), so the channel timeline has its own index.
ALTER TABLE events ADD COLUMN channel BLOB;
CREATE INDEX events_channel ON events (community, channel, created_at DESC, id) WHERE channel IS NOT NULL;

-- channels: keyed (community, id): the same UUID in two communities is two
-- unrelated channels. A deleted channel keeps its row (deleted_at) so its
-- id is never reused.
CREATE TABLE channels (
    community    INTEGER NOT NULL,
    id           BLOB    NOT NULL,
    name         TEXT    NOT NULL,
    about        TEXT    NOT NULL DEFAULT '',
    picture      TEXT    NOT NULL DEFAULT '',
    visibility   TEXT    NOT NULL CHECK (visibility IN ('open', 'private')),
    channel_type TEXT    NOT NULL CHECK (channel_type IN ('stream', 'forum', 'dm', 'workflow')),
    created_by   BLOB    NOT NULL,
    created_at   INTEGER NOT NULL,
    deleted_at   INTEGER,
    PRIMARY KEY (community, id)
) WITHOUT ROWID;

-- channel_members: active members only (a removal deletes the row).
CREATE TABLE channel_members (
    community INTEGER NOT NULL,
    channel   BLOB    NOT NULL,
    pubkey    BLOB    NOT NULL,
    role      TEXT    NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'guest', 'bot')),
    joined_at INTEGER NOT NULL,
    added_by  BLOB,
    PRIMARY KEY (community, channel, pubkey)
) WITHOUT ROWID;
CREATE INDEX channel_members_pubkey ON channel_members (community, pubkey);

-- Community admission: access_policy 'open' or 'members'; members are the
-- owner (communities.owner_pubkey) plus community_members.
ALTER TABLE communities ADD COLUMN access_policy TEXT NOT NULL DEFAULT 'open'
    CHECK (access_policy IN ('open', 'members'));
CREATE TABLE community_members (
    community INTEGER NOT NULL,
    pubkey    BLOB    NOT NULL,
    role      TEXT    NOT NULL CHECK (role IN ('admin', 'member')),
    added_at  INTEGER NOT NULL,
    PRIMARY KEY (community, pubkey)
) WITHOUT ROWID;
