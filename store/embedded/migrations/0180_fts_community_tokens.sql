-- Schema version 180: the text index keeps each community's words apart.
--
-- events_fts was one index of every community's words: a search read the
-- postings of its words in every community (and dropped the others' rows
-- afterwards), so the time a search took told whether, and how often,
-- another community wrote them. Every word is now indexed as a token of
-- its community (buzz_fts_text: the community's number, the letter x, the
-- word as package search's tokenizer yields it), and a search asks for its
-- own community's tokens alone, so it reads no other community's postings
-- (store/sqlite/ftstext.go). The tokenizer is FTS5's ascii, which keeps
-- each such token whole.
--
-- The index is rebuilt: from events when they are in SQLite; when they are
-- in the LSM engine, the text indexer indexes every event again from the
-- start after the next open (searches wait for it, as for any event not
-- yet indexed). The delete trigger of migration 25 is unchanged.
DROP TABLE events_fts;

CREATE VIRTUAL TABLE events_fts USING fts5(
    content,
    content = '',
    contentless_delete = 1,
    tokenize = 'ascii'
);

INSERT INTO events_fts (rowid, content)
SELECT seq, buzz_fts_text(community, json_extract(CAST(raw AS TEXT), '$.content')) FROM events WHERE kind <> 1059;

UPDATE lsm_text_index SET indexed_through = 0;
