-- Revisioned project state (NIP-PC, kind 47010: store.ProjectStore) and
-- git repository name reservations (NIP-34 kind 30617: store.RepoNameStore).
-- community is communities.seq; related is the related channels, sorted,
-- joined by newlines.
CREATE TABLE project_heads (
    community INTEGER NOT NULL,
    owner     TEXT    NOT NULL,
    d         TEXT    NOT NULL,
    revision  INTEGER NOT NULL,
    identity  TEXT    NOT NULL,
    related   TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (community, owner, d)
) WITHOUT ROWID;
CREATE TABLE project_change_receipts (
    community INTEGER NOT NULL,
    event_id  TEXT    NOT NULL,
    owner     TEXT    NOT NULL,
    d         TEXT    NOT NULL,
    revision  INTEGER NOT NULL,
    PRIMARY KEY (community, event_id)
) WITHOUT ROWID;
CREATE TABLE repo_names (
    community INTEGER NOT NULL,
    name      TEXT    NOT NULL,
    owner     TEXT    NOT NULL,
    PRIMARY KEY (community, name)
) WITHOUT ROWID;
CREATE INDEX repo_names_owner ON repo_names (community, owner);
