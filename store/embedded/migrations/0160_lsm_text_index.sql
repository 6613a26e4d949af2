-- Schema version 160: the text index of a store whose events are in the
-- LSM engine (WithLSMEvents).
--
-- Such a store keeps its events out of SQLite, and indexes their text in
-- events_fts all the same, keyed by the engine's seq instead of events.seq
-- (a store is one or the other for its whole life, so the two never mix).
-- An indexer adds the text of new events in large batches after they are
-- acknowledged, and removes the text of removed ones; lsm_text_index holds
-- the seq it has indexed through, committed with the rows it added, so it
-- resumes there after a restart.
CREATE TABLE lsm_text_index (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through INTEGER NOT NULL
);
INSERT INTO lsm_text_index (id, indexed_through) VALUES (1, 0);
