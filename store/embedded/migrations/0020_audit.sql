-- Schema version 20: per-community audit chains (package audit).
--
-- One row per chain entry, keyed (community, seq); seq has no gaps. Entries
-- are appended by the writer inside the transaction of the change they
-- record. actor is the 32-byte key or NULL; detail is canonical JSON;
-- created_us is Unix microseconds (the precision the hash covers).
CREATE TABLE audit_log (
    community    INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    hash         BLOB    NOT NULL,
    prev_hash    BLOB    NOT NULL,
    hash_version INTEGER NOT NULL,
    action       TEXT    NOT NULL,
    actor        BLOB,
    object       TEXT    NOT NULL,
    detail       TEXT    NOT NULL,
    created_us   INTEGER NOT NULL,
    PRIMARY KEY (community, seq)
) WITHOUT ROWID;
