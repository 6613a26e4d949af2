-- Reaction slots (kind 7): one reaction per (author, target, emoji) in a
-- community (store.ReactionStore). community is communities.seq; event_id
-- the reaction holding the slot; claimed_at unix seconds.
CREATE TABLE reactions (
    community  INTEGER NOT NULL,
    pubkey     TEXT    NOT NULL,
    target     TEXT    NOT NULL,
    emoji      TEXT    NOT NULL,
    event_id   TEXT    NOT NULL,
    claimed_at INTEGER NOT NULL,
    PRIMARY KEY (community, pubkey, target, emoji)
) WITHOUT ROWID;
CREATE INDEX reactions_event ON reactions (community, event_id);
