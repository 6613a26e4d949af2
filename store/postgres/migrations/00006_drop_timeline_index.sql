-- Drop events_timeline_idx (version 6): it repeated the primary key
-- (community_id, created_at, id) with id ascending. A backward scan of the
-- primary key yields created_at DESC, and PostgreSQL's incremental sort
-- orders each run of equal created_at by id, reading about limit rows, so
-- the since/until and plain timeline reads need no index of their own; every
-- insert maintains one index less.

-- +goose Up
DROP INDEX IF EXISTS events_timeline_idx;

-- +goose Down
CREATE INDEX IF NOT EXISTS events_timeline_idx ON events (community_id, created_at DESC, id);
