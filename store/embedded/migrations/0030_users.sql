-- users: the NIP-05 names of each community's users. One name per pubkey
-- per community; a name (stored in lower case) is held by one pubkey per
-- community.
CREATE TABLE users (
    community  INTEGER NOT NULL,
    pubkey     BLOB    NOT NULL,
    nip05      TEXT,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (community, pubkey)
) WITHOUT ROWID;
CREATE UNIQUE INDEX users_nip05 ON users (community, lower(nip05)) WHERE nip05 IS NOT NULL;
