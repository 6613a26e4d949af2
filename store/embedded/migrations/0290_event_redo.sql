-- event_redo: the events engine's part of a committed write batch (the
-- event of a channel command or membership change, a deletion request, a
-- thread reply), written in the same transaction as the SQLite rows that
-- go with it. The engine applies it after the commit; the row is deleted
-- once the engine's part is durable, and the store replays whatever rows
-- a crash left before it serves again. ops is a JSON array of operations;
-- seq only grows (AUTOINCREMENT): records up to a seq are deleted at once.
CREATE TABLE event_redo (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ops BLOB    NOT NULL
);
