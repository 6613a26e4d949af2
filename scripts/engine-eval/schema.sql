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
, channel BLOB);
CREATE UNIQUE INDEX events_id ON events (community, id);
CREATE INDEX events_time ON events (community, created_at DESC, id);
CREATE INDEX events_kind ON events (community, kind, created_at DESC, id);
CREATE INDEX events_author ON events (community, pubkey, kind, created_at DESC, id);
CREATE UNIQUE INDEX events_coordinate ON events (community, kind, pubkey, d_tag) WHERE d_tag IS NOT NULL;
CREATE INDEX events_expiry ON events (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE tags (
    community  INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    event_seq  INTEGER NOT NULL,
    PRIMARY KEY (community, name, value, created_at, event_seq)
) WITHOUT ROWID;
CREATE INDEX tags_event ON tags (event_seq);
CREATE TABLE deleted_ids (
    community INTEGER NOT NULL,
    id        BLOB    NOT NULL,
    pubkey    BLOB    NOT NULL,
    PRIMARY KEY (community, id, pubkey)
) WITHOUT ROWID;
CREATE TABLE coord_deletions (
    community  INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    pubkey     BLOB    NOT NULL,
    d_tag      TEXT    NOT NULL,
    deleted_up_to INTEGER NOT NULL,
    PRIMARY KEY (community, kind, pubkey, d_tag)
) WITHOUT ROWID;
CREATE INDEX events_channel ON events (community, channel, created_at DESC, id) WHERE channel IS NOT NULL;
CREATE VIRTUAL TABLE events_fts USING fts5(
    content,
    content = '',
    contentless_delete = 1,
    tokenize = "unicode61 remove_diacritics 0 categories 'L* N*'"
);
CREATE TRIGGER events_fts_delete AFTER DELETE ON events WHEN old.kind <> 1059
BEGIN
    DELETE FROM events_fts WHERE rowid = old.seq;
END;
