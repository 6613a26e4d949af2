-- Schema version 170: the authority events applied in each community (see
-- store.Authority), recorded in the transaction of their effect so that a
-- second submission of the same event changes nothing. until (Unix
-- seconds) is when DeleteExpired may forget the row.
CREATE TABLE applied_authority (
    community INTEGER NOT NULL,
    event_id  BLOB    NOT NULL,
    until     INTEGER NOT NULL,
    PRIMARY KEY (community, event_id)
) WITHOUT ROWID;
CREATE INDEX applied_authority_until ON applied_authority (until);
