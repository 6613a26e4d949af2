-- Schema version 25: NIP-50 full-text search.
--
-- events_fts indexes the content of every event except gift wraps (kind
-- 1059, addressed to one recipient: search never matches them), keyed by
-- events.seq. It is contentless (the text lives in events.raw) with
-- contentless_delete, and kept in step by the triggers below, so every
-- write path (insert, replacement, deletion, expiry) maintains it.
--
-- The tokenizer is package search's: words are runs of Unicode letters and
-- numbers (categories L* and N*), case-folded, diacritics kept, no stemming.
-- The index is shared by all communities; a search joins events and keeps
-- the community's rows, and ranks them by the event alone (package search's
-- Score), so no community's content affects another's results or order.
CREATE VIRTUAL TABLE events_fts USING fts5(
    content,
    content = '',
    contentless_delete = 1,
    tokenize = "unicode61 remove_diacritics 0 categories 'L* N*'"
);

INSERT INTO events_fts (rowid, content)
SELECT seq, json_extract(CAST(raw AS TEXT), '$.content') FROM events WHERE kind <> 1059;

CREATE TRIGGER events_fts_insert AFTER INSERT ON events WHEN new.kind <> 1059
BEGIN
    INSERT INTO events_fts (rowid, content)
    VALUES (new.seq, json_extract(CAST(new.raw AS TEXT), '$.content'));
END;

CREATE TRIGGER events_fts_delete AFTER DELETE ON events WHEN old.kind <> 1059
BEGIN
    DELETE FROM events_fts WHERE rowid = old.seq;
END;
