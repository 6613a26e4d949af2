-- Reaction slots (kind 7): one reaction per (author, target, emoji) in a
-- community (store.ReactionStore), shared by every pod. event_id is the
-- reaction holding the slot.

-- +goose Up
CREATE TABLE reactions (
    community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    pubkey       text NOT NULL,
    target       text NOT NULL,
    emoji        text NOT NULL,
    event_id     text NOT NULL,
    claimed_at   timestamptz NOT NULL,
    PRIMARY KEY (community_id, pubkey, target, emoji)
);
CREATE INDEX reactions_event_idx ON reactions (community_id, event_id);
ALTER TABLE reactions ENABLE ROW LEVEL SECURITY;
ALTER TABLE reactions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON reactions AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON reactions AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON reactions TO buzz_app;

-- +goose Down
DROP TABLE IF EXISTS reactions;
