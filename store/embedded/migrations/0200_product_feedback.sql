-- Product feedback (kind 42000), operator-wide: never a community's event.
-- community is the community id (16 bytes), host the host it was sent to;
-- tags are the event's tags as JSON; times are unix seconds.
CREATE TABLE product_feedback (
    seq         INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    community   BLOB    NOT NULL,
    host        TEXT    NOT NULL,
    pubkey      TEXT    NOT NULL,
    content     TEXT    NOT NULL,
    tags        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    received_at INTEGER NOT NULL
);
