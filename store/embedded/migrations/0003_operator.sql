-- Schema version 3: the operator plane (migration 2 is reserved for work
-- landing separately; the runner accepts gaps).
--
-- owner_pubkey: the 32-byte owner key, NULL when the community has none.
-- archived_at: unix seconds; an archived community resolves as unmapped.
ALTER TABLE communities ADD COLUMN owner_pubkey BLOB;
ALTER TABLE communities ADD COLUMN archived_at INTEGER;
CREATE INDEX communities_owner ON communities (owner_pubkey, created_at) WHERE owner_pubkey IS NOT NULL;

-- community_host_aliases: further hosts selecting a community. A host is
-- either a primary host or an alias, never both (enforced by the writers).
CREATE TABLE community_host_aliases (
    host       TEXT    PRIMARY KEY,
    community  INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX community_host_aliases_community ON community_host_aliases (community);
