-- Schema version 1 of the embedded buzz store.
--
-- Identifiers (community uuid, event id, pubkey) are stored as raw bytes:
-- BLOB comparison is memcmp, so ORDER BY id on the 32-byte blob is exactly
-- lexicographic order of the lowercase hex id.

-- communities: the tenant registry. seq is a compact surrogate key used by
-- every other table; id is the public 16-byte CommunityID.
CREATE TABLE communities (
    seq        INTEGER PRIMARY KEY,
    id         BLOB    NOT NULL UNIQUE,
    host       TEXT    NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);

-- events: live events only. A replaced, deleted or expired event is removed
-- (its id stays refused through deleted_ids or coord_deletions where NIP-09
-- requires it). d_tag is NULL for regular kinds, '' for replaceable kinds and
-- the d value for addressable kinds, so the partial unique index
-- events_coordinate enforces one live head per coordinate.
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    community  INTEGER NOT NULL,
    id         BLOB    NOT NULL,
    pubkey     BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    d_tag      TEXT,
    expires_at INTEGER,
    raw        BLOB    NOT NULL
);
CREATE UNIQUE INDEX events_id ON events (community, id);
CREATE INDEX events_time ON events (community, created_at DESC, id);
CREATE INDEX events_kind ON events (community, kind, created_at DESC, id);
CREATE INDEX events_author ON events (community, pubkey, kind, created_at DESC, id);
CREATE UNIQUE INDEX events_coordinate ON events (community, kind, pubkey, d_tag) WHERE d_tag IS NOT NULL;
CREATE INDEX events_expiry ON events (expires_at) WHERE expires_at IS NOT NULL;

-- tags: one row per distinct (single-letter name, first value) of an event,
-- serving "#x" filters. created_at is copied so a tag scan can run in
-- timeline order.
CREATE TABLE tags (
    community  INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    event_seq  INTEGER NOT NULL,
    PRIMARY KEY (community, name, value, created_at, event_seq)
) WITHOUT ROWID;
CREATE INDEX tags_event ON tags (event_seq);

-- deleted_ids: NIP-09 "e" deletions. A row says: the author pubkey asked for
-- event id to be deleted in this community. An event with that id and that
-- author is refused forever (ErrDeleted), whether it arrived before or after
-- the request.
CREATE TABLE deleted_ids (
    community INTEGER NOT NULL,
    id        BLOB    NOT NULL,
    pubkey    BLOB    NOT NULL,
    PRIMARY KEY (community, id, pubkey)
) WITHOUT ROWID;

-- coord_deletions: NIP-09 "a" deletions. The highest created_at of a
-- deletion request naming the coordinate; versions at or before it are
-- removed and refused.
CREATE TABLE coord_deletions (
    community  INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    pubkey     BLOB    NOT NULL,
    d_tag      TEXT    NOT NULL,
    deleted_up_to INTEGER NOT NULL,
    PRIMARY KEY (community, kind, pubkey, d_tag)
) WITHOUT ROWID;
