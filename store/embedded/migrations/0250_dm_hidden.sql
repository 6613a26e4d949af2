-- DM conversations: each participant hides a conversation from its own
-- listing (Buzz 41012) until it opens it again (41010). hidden_at is Unix
-- seconds; NULL: shown.
ALTER TABLE channel_members ADD COLUMN hidden_at INTEGER;
