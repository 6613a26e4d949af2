-- Channels, channel membership and community admission (version 4;
-- version 2 is reserved for work landing separately, and the runner allows
-- out-of-order versions).
--
-- channels and channel_members exist since version 1; this adds the
-- picture, the access policy of a community and its member list. Events
-- record their channel in events.channel_id (NULL = community-wide), read
-- through events_channel_idx.

-- +goose Up
ALTER TABLE channels ADD COLUMN picture text NOT NULL DEFAULT '';

ALTER TABLE communities ADD COLUMN access_policy text NOT NULL DEFAULT 'open'
    CHECK (access_policy IN ('open', 'members'));
GRANT UPDATE (access_policy) ON communities TO buzz_app;

CREATE TABLE community_members (
    community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    pubkey       bytea NOT NULL CHECK (length(pubkey) = 32),
    role         text NOT NULL CHECK (role IN ('admin', 'member')),
    added_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (community_id, pubkey)
);
ALTER TABLE community_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE community_members FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON community_members AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON community_members AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON community_members TO buzz_app;

-- +goose Down
DROP TABLE IF EXISTS community_members;
REVOKE UPDATE (access_policy) ON communities FROM buzz_app;
ALTER TABLE communities DROP COLUMN IF EXISTS access_policy;
ALTER TABLE channels DROP COLUMN IF EXISTS picture;
