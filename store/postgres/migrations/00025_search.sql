-- NIP-50 full-text search (version 25).
--
-- events.search_tsv is a generated tsvector of the content in the 'simple'
-- configuration (lowercase, no stemming, no stop words: every language is
-- searchable as written). ASCII punctuation is turned into spaces first, so
-- PostgreSQL's parser yields the words package search's tokenizer yields
-- (runs of letters and numbers): "example.com" is example + com, not one
-- host token; "don't" is don + t. Gift wraps (kind 1059, addressed to one
-- recipient) get NULL and can never match.
--
-- events_search_idx is a GIN index on (community_id, search_tsv) through
-- btree_gin: the community is part of every index search, so a query reads
-- only its own community's postings. Adding the column rewrites the events
-- table (every partition) under an exclusive lock: on a large deployment,
-- schedule the migration.
--
-- Row-level security: a qual whose operator is not LEAKPROOF cannot become
-- an index condition under RLS (PostgreSQL evaluates it only after the
-- policy), and tsvector @@ tsquery (ts_match_vq) is not marked LEAKPROOF,
-- though it raises no data-dependent error. The migration marks it when run
-- by a superuser; otherwise it leaves a NOTICE, searches stay correct but
-- read every row of the community, and Open logs a warning
-- (store/postgres/README.md).
--
-- buzz_ensure_event_partitions is redefined: a new monthly partition must
-- carry the generated column as generated (INCLUDING GENERATED), and rows
-- moved out of the default partition are copied without it.

-- +goose Up
CREATE EXTENSION IF NOT EXISTS btree_gin;

ALTER TABLE events ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    CASE WHEN kind = 1059 THEN NULL
         ELSE to_tsvector('simple'::regconfig, translate(content, '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', '                                '))
    END) STORED;

CREATE INDEX events_search_idx ON events USING gin (community_id, search_tsv);

-- +goose StatementBegin
DO $$
BEGIN
    ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'search under row-level security will not use events_search_idx'
        USING HINT = 'As a superuser: ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF;';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION buzz_ensure_event_partitions(from_ts timestamptz, months_ahead integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- Month arithmetic on UTC wall-clock timestamps, independent of TimeZone.
    m       timestamp := greatest(date_trunc('month', from_ts AT TIME ZONE 'UTC'), timestamp '2026-01-01');
    stop    timestamp := date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => months_ahead + 1);
    lo      bigint;
    hi      bigint;
    part    text;
    cols    text;
    created integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('buzz_ensure_event_partitions'));
    -- The stored columns: generated ones are computed by the partition.
    SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
    FROM pg_attribute
    WHERE attrelid = 'events'::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '';
    WHILE m < stop LOOP
        part := 'events_' || to_char(m, 'YYYY_MM');
        IF to_regclass(part) IS NULL THEN
            lo := extract(epoch FROM m)::bigint;
            hi := extract(epoch FROM m + interval '1 month')::bigint;
            EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED)', part);
            EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM events_p_future WHERE created_at >= %s AND created_at < %s',
                           part, cols, cols, lo, hi);
            EXECUTE format('DELETE FROM events_p_future WHERE created_at >= %s AND created_at < %s', lo, hi);
            EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', part, lo, hi);
            created := created + 1;
        END IF;
        m := m + interval '1 month';
    END LOOP;
    RETURN created;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION buzz_ensure_event_partitions(from_ts timestamptz, months_ahead integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    m       timestamp := greatest(date_trunc('month', from_ts AT TIME ZONE 'UTC'), timestamp '2026-01-01');
    stop    timestamp := date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => months_ahead + 1);
    lo      bigint;
    hi      bigint;
    part    text;
    created integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('buzz_ensure_event_partitions'));
    WHILE m < stop LOOP
        part := 'events_' || to_char(m, 'YYYY_MM');
        IF to_regclass(part) IS NULL THEN
            lo := extract(epoch FROM m)::bigint;
            hi := extract(epoch FROM m + interval '1 month')::bigint;
            EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
            EXECUTE format('INSERT INTO %I SELECT * FROM events_p_future WHERE created_at >= %s AND created_at < %s',
                           part, lo, hi);
            EXECUTE format('DELETE FROM events_p_future WHERE created_at >= %s AND created_at < %s', lo, hi);
            EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', part, lo, hi);
            created := created + 1;
        END IF;
        m := m + interval '1 month';
    END LOOP;
    RETURN created;
END
$$;
-- +goose StatementEnd
DROP INDEX IF EXISTS events_search_idx;
ALTER TABLE events DROP COLUMN IF EXISTS search_tsv;
