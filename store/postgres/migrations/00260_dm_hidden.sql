-- DM conversations: each participant hides a conversation from its own
-- listing (Buzz 41012) until it opens it again (41010). NULL: shown.

-- +goose Up
ALTER TABLE channel_members ADD COLUMN hidden_at timestamptz;

-- +goose Down
ALTER TABLE channel_members DROP COLUMN IF EXISTS hidden_at;
