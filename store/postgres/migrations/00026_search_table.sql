-- NIP-50 search in a table of its own (version 26), replacing migration
-- 25's generated column and index on events.
--
-- Why: on a database that was never analysed (autovacuum off, or a fresh
-- bulk load), PostgreSQL estimates a community's events at a few dozen
-- rows, prefers any btree led by community_id over the search GIN index,
-- and filters every event of the community by @@ (7–9 s per search at 1M
-- events, measured). event_search has no btree that a
-- community condition can use, so its GIN index is the only cheap path
-- whatever the statistics, and the query joins events afterwards, one
-- primary-key probe per match (query.go, searchQuery).
--
-- event_search holds one row per searchable event (every kind but gift
-- wraps, 1059): its tsvector, computed as migration 25 did (ASCII
-- punctuation to spaces, then the 'simple' configuration), filled by an
-- AFTER INSERT trigger on events in the inserting transaction. Soft
-- deletions and replacements leave the row (the join to events drops it);
-- DeleteExpired removes the rows of the events it deletes. Moving early
-- arrivals into a new monthly partition does not touch it.

-- +goose Up
CREATE TABLE event_search (
    community_id uuid NOT NULL,
    created_at   bigint NOT NULL,
    event_id     bytea NOT NULL,
    tsv          tsvector NOT NULL
);
CREATE INDEX event_search_idx ON event_search USING gin (community_id, tsv);
-- For DeleteExpired; deliberately not led by community_id (see above).
CREATE INDEX event_search_event_idx ON event_search (event_id, created_at);

ALTER TABLE event_search ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_search FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON event_search AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON event_search AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, DELETE ON event_search TO buzz_app;

-- +goose StatementBegin
CREATE FUNCTION buzz_event_search_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_search (community_id, created_at, event_id, tsv)
    VALUES (NEW.community_id, NEW.created_at, NEW.id,
            to_tsvector('simple'::regconfig, translate(NEW.content, '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', '                                ')));
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER events_search_insert AFTER INSERT ON events
    FOR EACH ROW WHEN (NEW.kind <> 1059) EXECUTE FUNCTION buzz_event_search_insert();

INSERT INTO event_search (community_id, created_at, event_id, tsv)
SELECT community_id, created_at, id, search_tsv FROM events WHERE search_tsv IS NOT NULL;

DROP INDEX IF EXISTS events_search_idx;
ALTER TABLE events DROP COLUMN IF EXISTS search_tsv;

-- +goose Down
DROP TRIGGER IF EXISTS events_search_insert ON events;
DROP FUNCTION IF EXISTS buzz_event_search_insert();
DROP TABLE IF EXISTS event_search;
ALTER TABLE events ADD COLUMN IF NOT EXISTS search_tsv tsvector GENERATED ALWAYS AS (
    CASE WHEN kind = 1059 THEN NULL
         ELSE to_tsvector('simple'::regconfig, translate(content, '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', '                                '))
    END) STORED;
CREATE INDEX IF NOT EXISTS events_search_idx ON events USING gin (community_id, search_tsv);
