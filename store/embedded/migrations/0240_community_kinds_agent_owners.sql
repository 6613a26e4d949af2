-- A community's kind allow-list setting (store.CommunityKindsStore): the
-- text messaging.ParseKinds reads, or '' to follow the relay's list.
ALTER TABLE communities ADD COLUMN kind_allowlist TEXT NOT NULL DEFAULT '';

-- Agent owners (store.AgentOwnerStore): which key owns each agent key of a
-- community, first recorded wins. community is communities.seq; agent and
-- owner are lowercase hex pubkeys; recorded_at unix seconds.
CREATE TABLE agent_owners (
    community   INTEGER NOT NULL,
    agent       TEXT    NOT NULL,
    owner       TEXT    NOT NULL,
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (community, agent)
) WITHOUT ROWID;
