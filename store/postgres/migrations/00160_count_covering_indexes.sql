-- COUNT by author in a channel scope reads only the index (version 160).
--
-- A client reads with a channel scope (community-wide events plus the
-- channels it may read), so every COUNT carries a channel_id condition:
-- `channel_id IS NULL` for one without membership. events_author_idx
-- (version 1) covered an author COUNT's other conditions (kind,
-- expires_at; deleted_at is its predicate) but not channel_id, so such a
-- COUNT visited the heap for every one of the author's events, and the
-- planner preferred a sequential scan of the partition or the author+kind
-- index with a heap visit per row (the benchmark's heaviest author, 3,389
-- of 20,000 events: about 3,050 buffers, 10-12 ms). With channel_id
-- included it is an index-only scan: 106 buffers, 1-2 ms, once the
-- analyser has vacuumed the partition; 818 buffers on the freshly loaded
-- one. The key is unchanged, so REQs by author read it as before;
-- channel_id is NULL for community-wide events, which costs an index entry
-- nothing.
--
-- Dropped before it is created again, so the partitions' indexes keep their
-- generated names.

-- +goose Up
DROP INDEX IF EXISTS events_author_idx;
CREATE INDEX events_author_idx ON events (community_id, pubkey, created_at DESC, id)
    INCLUDE (kind, expires_at, channel_id) WHERE deleted_at IS NULL;

-- +goose Down
DROP INDEX IF EXISTS events_author_idx;
CREATE INDEX events_author_idx ON events (community_id, pubkey, created_at DESC, id)
    INCLUDE (kind, expires_at) WHERE deleted_at IS NULL;
