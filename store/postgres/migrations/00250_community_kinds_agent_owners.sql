-- A community's kind allow-list setting (store.CommunityKindsStore): the
-- text messaging.ParseKinds reads, or '' to follow the relay's list. Agent
-- owners (store.AgentOwnerStore): which key owns each agent key of a
-- community, first recorded wins, shared by every pod.

-- +goose Up
ALTER TABLE communities ADD COLUMN kind_allowlist text NOT NULL DEFAULT '';
GRANT UPDATE (kind_allowlist) ON communities TO buzz_app;

CREATE TABLE agent_owners (
    community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    agent        text NOT NULL,
    owner        text NOT NULL,
    recorded_at  timestamptz NOT NULL,
    PRIMARY KEY (community_id, agent)
);
ALTER TABLE agent_owners ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_owners FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON agent_owners AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON agent_owners AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON agent_owners TO buzz_app;

-- +goose Down
DROP TABLE IF EXISTS agent_owners;
REVOKE UPDATE (kind_allowlist) ON communities FROM buzz_app;
ALTER TABLE communities DROP COLUMN IF EXISTS kind_allowlist;
