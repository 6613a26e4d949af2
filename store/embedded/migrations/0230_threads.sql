-- NIP-10 threads (store.ThreadStore). thread_nodes holds one row per stored
-- reply: its parent, its thread's root and its depth, its author and
-- created_at (ids and pubkeys as 32-byte BLOBs, community is
-- communities.seq). thread_stats holds the counters of every message with
-- replies: replies (direct replies), descendants and last_reply_at (of the
-- thread it is the root of). The triggers keep thread_stats exact in the
-- transaction that adds or removes a node; removing a stored reply from
-- events (a deletion, a channel's delete-event, expiry) removes its node.
-- With the events in the LSM engine the writer adds and removes nodes
-- itself, in the transaction that writes the engine's part, and
-- DeleteExpired removes the nodes of expired replies after the engine
-- removed them.
CREATE TABLE thread_nodes (
    community  INTEGER NOT NULL,
    id         BLOB    NOT NULL,
    parent     BLOB    NOT NULL,
    root       BLOB    NOT NULL,
    depth      INTEGER NOT NULL,
    pubkey     BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER, -- the reply's NIP-40 expiration, if any
    PRIMARY KEY (community, id)
) WITHOUT ROWID;
CREATE INDEX thread_nodes_root ON thread_nodes (community, root, created_at);
CREATE INDEX thread_nodes_expiry ON thread_nodes (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE thread_stats (
    community     INTEGER NOT NULL,
    event         BLOB    NOT NULL,
    replies       INTEGER NOT NULL DEFAULT 0,
    descendants   INTEGER NOT NULL DEFAULT 0,
    last_reply_at INTEGER,
    PRIMARY KEY (community, event)
) WITHOUT ROWID;

CREATE TRIGGER thread_nodes_insert AFTER INSERT ON thread_nodes
BEGIN
    INSERT OR IGNORE INTO thread_stats (community, event) VALUES (NEW.community, NEW.parent);
    INSERT OR IGNORE INTO thread_stats (community, event) VALUES (NEW.community, NEW.root);
    UPDATE thread_stats SET replies = replies + 1 WHERE community = NEW.community AND event = NEW.parent;
    UPDATE thread_stats SET descendants = descendants + 1,
        last_reply_at = max(coalesce(last_reply_at, NEW.created_at), NEW.created_at)
    WHERE community = NEW.community AND event = NEW.root;
END;

CREATE TRIGGER thread_nodes_delete AFTER DELETE ON thread_nodes
BEGIN
    UPDATE thread_stats SET replies = replies - 1 WHERE community = OLD.community AND event = OLD.parent;
    UPDATE thread_stats SET descendants = descendants - 1,
        last_reply_at = (SELECT max(created_at) FROM thread_nodes WHERE community = OLD.community AND root = OLD.root)
    WHERE community = OLD.community AND event = OLD.root;
END;

CREATE TRIGGER events_thread_delete AFTER DELETE ON events
WHEN OLD.kind = 9 OR OLD.kind BETWEEN 40002 AND 40008
BEGIN
    DELETE FROM thread_nodes WHERE community = OLD.community AND id = OLD.id;
END;
