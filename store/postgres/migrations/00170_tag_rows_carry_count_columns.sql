-- Tag rows carry what a COUNT filters on (version 170).
--
-- A COUNT driven by a tag (`{"kinds":[1],"#t":["x"]}`, a thread's
-- `{"#e":[root]}`) read each tag row and then probed its event through the
-- primary key only to check the event's kind, expiry, channel and
-- deletion: one probe per row (about 12 µs each with row-level security's
-- check per partition), 3-4 ms for a topic of 355 events, where counting
-- the tag rows alone takes 0.5 ms (PostgreSQL COUNT was the one
-- figure behind khatru's). Now:
--
--   * each tag row carries its event's kind, expires_at and channel_id,
--     which never change after the event is stored, and the unique index
--     includes them, so such a COUNT is an index-only scan of event_tags
--     once its pages are all-visible (the analyser vacuums them);
--   * tag rows exist only for live events: when an event is deleted
--     (deleted_at set: a NIP-09 request, a replaced version, a moderator's
--     removal) the trigger below removes its tag rows, as DeleteExpired
--     removes those of expired events. Every read already skipped deleted
--     events through the event itself, so reads that still join events
--     are unchanged.
--
-- buzz_tag_key is the tag value encoding of encode.go's tagKey (which
-- stays the writer's): DeleteExpired and the trigger compute the rows to
-- remove from the event's tags with it.
--
-- Existing rows are filled from their events (as the schema owner: forced
-- row-level security binds only the relay's role, as in version 26).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION buzz_tag_key(v text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN v ~ '^[0-9a-f]{64}$' THEN '\xfe'::bytea || decode(v, 'hex')
                WHEN octet_length(v) > 256 THEN '\xff'::bytea || sha256(convert_to(v, 'UTF8'))
                ELSE convert_to(v, 'UTF8') END
$$;
-- +goose StatementEnd

ALTER TABLE event_tags ADD COLUMN kind integer, ADD COLUMN expires_at bigint, ADD COLUMN channel_id uuid;

DELETE FROM event_tags t USING events e
WHERE e.community_id = t.community_id AND e.created_at = t.created_at AND e.id = t.event_id
  AND e.deleted_at IS NOT NULL;
UPDATE event_tags t SET kind = e.kind, expires_at = e.expires_at, channel_id = e.channel_id
FROM events e
WHERE e.community_id = t.community_id AND e.created_at = t.created_at AND e.id = t.event_id;
DELETE FROM event_tags WHERE kind IS NULL; -- rows whose event is gone
ALTER TABLE event_tags ALTER COLUMN kind SET NOT NULL;

CREATE UNIQUE INDEX event_tags_key_v170 ON event_tags (community_id, name, value, created_at DESC, event_id)
    INCLUDE (kind, expires_at, channel_id);
DROP INDEX event_tags_key;
ALTER INDEX event_tags_key_v170 RENAME TO event_tags_key;

-- +goose StatementBegin
CREATE FUNCTION buzz_event_tags_drop() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM event_tags t
    USING (SELECT DISTINCT x.tag->>0 AS name, x.tag->>1 AS value
           FROM jsonb_array_elements(NEW.tags) AS x(tag)
           WHERE jsonb_typeof(x.tag) = 'array' AND jsonb_array_length(x.tag) >= 2
             AND length(x.tag->>0) = 1) r
    WHERE t.community_id = NEW.community_id AND t.name = r.name AND t.value = buzz_tag_key(r.value)
      AND t.created_at = NEW.created_at AND t.event_id = NEW.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER events_tags_drop AFTER UPDATE OF deleted_at ON events
    FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
    EXECUTE FUNCTION buzz_event_tags_drop();

-- buzz_save_event of version 1, writing the new columns.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION buzz_save_event(
    p_community uuid, p_id bytea, p_pubkey bytea, p_created_at bigint, p_kind integer,
    p_tags jsonb, p_content text, p_sig bytea, p_raw bytea, p_channel uuid,
    p_d_tag text, p_expires_at bigint, p_lock bigint,
    p_tag_names text[], p_tag_values bytea[],
    p_del_ids bytea[], p_del_kinds integer[], p_del_dtags text[], p_del_locks bigint[]
) RETURNS smallint
LANGUAGE plpgsql AS $$
DECLARE
    head_created bigint;
    head_id      bytea;
    n            integer;
BEGIN
    PERFORM set_config('buzz.community_id', p_community::text, true);

    IF p_kind <> 5 AND EXISTS (
        SELECT 1 FROM event_tombstones
        WHERE community_id = p_community AND event_id = p_id AND pubkey = p_pubkey) THEN
        RETURN 3;
    END IF;

    IF p_lock IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(p_lock);
        IF EXISTS (
            SELECT 1 FROM deletion_watermarks
            WHERE community_id = p_community AND kind = p_kind AND pubkey = p_pubkey
              AND d_tag = p_d_tag AND deleted_until >= p_created_at) THEN
            RETURN 3;
        END IF;
        SELECT created_at, id INTO head_created, head_id
        FROM events
        WHERE community_id = p_community AND kind = p_kind AND pubkey = p_pubkey
          AND d_tag = p_d_tag AND deleted_at IS NULL
        ORDER BY created_at DESC, id ASC
        LIMIT 1;
        IF FOUND THEN
            IF head_id = p_id THEN
                RETURN 1;
            END IF;
            IF head_created > p_created_at OR (head_created = p_created_at AND head_id < p_id) THEN
                RETURN 2; -- includes a replaced version coming back
            END IF;
        END IF;
    END IF;

    INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw,
                        channel_id, d_tag, expires_at)
    VALUES (p_community, p_created_at, p_id, p_pubkey, p_kind, p_tags, p_content, p_sig, p_raw,
            p_channel, p_d_tag, p_expires_at)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RETURN 1;
    END IF;

    IF cardinality(p_tag_names) > 0 THEN
        INSERT INTO event_tags (community_id, name, value, created_at, event_id, kind, expires_at, channel_id)
        SELECT p_community, t.name, t.value, p_created_at, p_id, p_kind, p_expires_at, p_channel
        FROM unnest(p_tag_names, p_tag_values) AS t(name, value); -- new event: no conflict possible
    END IF;

    IF p_lock IS NOT NULL THEN
        UPDATE events SET deleted_at = now()
        WHERE community_id = p_community AND kind = p_kind AND pubkey = p_pubkey
          AND d_tag = p_d_tag AND deleted_at IS NULL
          AND NOT (created_at = p_created_at AND id = p_id);
    END IF;

    IF p_kind = 5 THEN
        IF cardinality(p_del_ids) > 0 THEN
            INSERT INTO event_tombstones (community_id, event_id, pubkey, deleted_by)
            SELECT p_community, x, p_pubkey, p_id FROM unnest(p_del_ids) AS x
            ON CONFLICT DO NOTHING;
            UPDATE events SET deleted_at = now()
            WHERE community_id = p_community AND id = ANY (p_del_ids) AND pubkey = p_pubkey
              AND kind <> 5 AND deleted_at IS NULL;
        END IF;
        FOR i IN 1 .. coalesce(cardinality(p_del_kinds), 0) LOOP
            PERFORM pg_advisory_xact_lock(p_del_locks[i]);
            INSERT INTO deletion_watermarks (community_id, kind, pubkey, d_tag, deleted_until)
            VALUES (p_community, p_del_kinds[i], p_pubkey, p_del_dtags[i], p_created_at)
            ON CONFLICT (community_id, kind, pubkey, d_tag) DO UPDATE
                SET deleted_until = greatest(deletion_watermarks.deleted_until, EXCLUDED.deleted_until);
            UPDATE events SET deleted_at = now()
            WHERE community_id = p_community AND kind = p_del_kinds[i] AND pubkey = p_pubkey
              AND d_tag = p_del_dtags[i] AND created_at <= p_created_at AND deleted_at IS NULL;
        END LOOP;
    END IF;

    RETURN 0;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS events_tags_drop ON events;
DROP FUNCTION IF EXISTS buzz_event_tags_drop();
CREATE UNIQUE INDEX event_tags_key_v1 ON event_tags (community_id, name, value, created_at DESC, event_id);
DROP INDEX event_tags_key;
ALTER INDEX event_tags_key_v1 RENAME TO event_tags_key;
ALTER TABLE event_tags DROP COLUMN kind, DROP COLUMN expires_at, DROP COLUMN channel_id;
DROP FUNCTION IF EXISTS buzz_tag_key(text);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION buzz_save_event(
    p_community uuid, p_id bytea, p_pubkey bytea, p_created_at bigint, p_kind integer,
    p_tags jsonb, p_content text, p_sig bytea, p_raw bytea, p_channel uuid,
    p_d_tag text, p_expires_at bigint, p_lock bigint,
    p_tag_names text[], p_tag_values bytea[],
    p_del_ids bytea[], p_del_kinds integer[], p_del_dtags text[], p_del_locks bigint[]
) RETURNS smallint
LANGUAGE plpgsql AS $$
DECLARE
    head_created bigint;
    head_id      bytea;
    n            integer;
BEGIN
    PERFORM set_config('buzz.community_id', p_community::text, true);

    IF p_kind <> 5 AND EXISTS (
        SELECT 1 FROM event_tombstones
        WHERE community_id = p_community AND event_id = p_id AND pubkey = p_pubkey) THEN
        RETURN 3;
    END IF;

    IF p_lock IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(p_lock);
        IF EXISTS (
            SELECT 1 FROM deletion_watermarks
            WHERE community_id = p_community AND kind = p_kind AND pubkey = p_pubkey
              AND d_tag = p_d_tag AND deleted_until >= p_created_at) THEN
            RETURN 3;
        END IF;
        SELECT created_at, id INTO head_created, head_id
        FROM events
        WHERE community_id = p_community AND kind = p_kind AND pubkey = p_pubkey
          AND d_tag = p_d_tag AND deleted_at IS NULL
        ORDER BY created_at DESC, id ASC
        LIMIT 1;
        IF FOUND THEN
            IF head_id = p_id THEN
                RETURN 1;
            END IF;
            IF head_created > p_created_at OR (head_created = p_created_at AND head_id < p_id) THEN
                RETURN 2; -- includes a replaced version coming back
            END IF;
        END IF;
    END IF;

    INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw,
                        channel_id, d_tag, expires_at)
    VALUES (p_community, p_created_at, p_id, p_pubkey, p_kind, p_tags, p_content, p_sig, p_raw,
            p_channel, p_d_tag, p_expires_at)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RETURN 1;
    END IF;

    IF cardinality(p_tag_names) > 0 THEN
        INSERT INTO event_tags (community_id, name, value, created_at, event_id)
        SELECT p_community, t.name, t.value, p_created_at, p_id
        FROM unnest(p_tag_names, p_tag_values) AS t(name, value); -- new event: no conflict possible
    END IF;

    IF p_lock IS NOT NULL THEN
        UPDATE events SET deleted_at = now()
        WHERE community_id = p_community AND kind = p_kind AND pubkey = p_pubkey
          AND d_tag = p_d_tag AND deleted_at IS NULL
          AND NOT (created_at = p_created_at AND id = p_id);
    END IF;

    IF p_kind = 5 THEN
        IF cardinality(p_del_ids) > 0 THEN
            INSERT INTO event_tombstones (community_id, event_id, pubkey, deleted_by)
            SELECT p_community, x, p_pubkey, p_id FROM unnest(p_del_ids) AS x
            ON CONFLICT DO NOTHING;
            UPDATE events SET deleted_at = now()
            WHERE community_id = p_community AND id = ANY (p_del_ids) AND pubkey = p_pubkey
              AND kind <> 5 AND deleted_at IS NULL;
        END IF;
        FOR i IN 1 .. coalesce(cardinality(p_del_kinds), 0) LOOP
            PERFORM pg_advisory_xact_lock(p_del_locks[i]);
            INSERT INTO deletion_watermarks (community_id, kind, pubkey, d_tag, deleted_until)
            VALUES (p_community, p_del_kinds[i], p_pubkey, p_del_dtags[i], p_created_at)
            ON CONFLICT (community_id, kind, pubkey, d_tag) DO UPDATE
                SET deleted_until = greatest(deletion_watermarks.deleted_until, EXCLUDED.deleted_until);
            UPDATE events SET deleted_at = now()
            WHERE community_id = p_community AND kind = p_del_kinds[i] AND pubkey = p_pubkey
              AND d_tag = p_del_dtags[i] AND created_at <= p_created_at AND deleted_at IS NULL;
        END LOOP;
    END IF;

    RETURN 0;
END
$$;
-- +goose StatementEnd
