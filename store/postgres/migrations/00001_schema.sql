-- Buzz PostgreSQL schema, version 1.
--
-- Every tenant table carries community_id NOT NULL and leads every primary
-- key and unique constraint with it; the few deliberately global tables are
-- listed in _operator_global_tables (schema_lint_test.go enforces both).
-- Row-level security is the fail-closed backstop: restrictive policies bind
-- every tenant table to current_setting('buzz.community_id'), which the store
-- sets per transaction, and the relay runs as buzz_app (NOBYPASSRLS).

-- +goose Up

-- +goose StatementBegin
DO $$
BEGIN
    CREATE ROLE buzz_app NOLOGIN NOBYPASSRLS;
EXCEPTION
    WHEN duplicate_object OR unique_violation THEN
        NULL; -- created by another database of this cluster, or concurrently
    WHEN insufficient_privilege THEN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'buzz_app') THEN
            RAISE EXCEPTION 'role buzz_app is missing and % may not create it', current_user
                USING HINT = 'As a superuser: CREATE ROLE buzz_app NOLOGIN NOBYPASSRLS; GRANT buzz_app TO ' || current_user || ';';
        END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
    -- Lets the migrating user SET ROLE buzz_app. Superusers need no
    -- membership; operators without CREATEROLE grant it themselves.
    EXECUTE format('GRANT buzz_app TO %I', current_user);
EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation OR duplicate_object THEN
    NULL;
END
$$;
-- +goose StatementEnd

CREATE TABLE _operator_global_tables (
    table_name text PRIMARY KEY,
    reason     text NOT NULL
);

INSERT INTO _operator_global_tables (table_name, reason) VALUES
    ('_operator_global_tables', 'this registry'),
    ('goose_db_version', 'migration bookkeeping'),
    ('communities', 'host resolution happens before a community is known'),
    ('community_host_aliases', 'host resolution happens before a community is known');

CREATE TYPE channel_type AS ENUM ('stream', 'forum', 'dm', 'workflow');
CREATE TYPE channel_visibility AS ENUM ('open', 'private');
CREATE TYPE member_role AS ENUM ('owner', 'admin', 'member', 'guest', 'bot');
CREATE TYPE workflow_status AS ENUM ('active', 'disabled', 'archived');
CREATE TYPE run_status AS ENUM ('pending', 'running', 'waiting_approval', 'completed', 'failed', 'cancelled');
CREATE TYPE approval_status AS ENUM ('pending', 'granted', 'denied', 'expired');

CREATE TABLE communities (
    id           uuid PRIMARY KEY CHECK (id <> '00000000-0000-0000-0000-000000000000'),
    host         text NOT NULL CHECK (host <> '' AND length(host) <= 255),
    owner_pubkey bytea CHECK (owner_pubkey IS NULL OR length(owner_pubkey) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    archived_at  timestamptz
);
CREATE UNIQUE INDEX communities_host_key ON communities (lower(host));

CREATE TABLE community_host_aliases (
    host         text NOT NULL CHECK (host <> '' AND length(host) <= 255),
    community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX community_host_aliases_host_key ON community_host_aliases (lower(host));
CREATE INDEX community_host_aliases_community_idx ON community_host_aliases (community_id);

CREATE TABLE channels (
    community_id   uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    id             uuid NOT NULL,
    name           text NOT NULL,
    channel_type   channel_type NOT NULL DEFAULT 'stream',
    visibility     channel_visibility NOT NULL DEFAULT 'open',
    description    text NOT NULL DEFAULT '',
    created_by     bytea NOT NULL CHECK (length(created_by) = 32),
    created_at     timestamptz NOT NULL DEFAULT now(),
    archived_at    timestamptz,
    deleted_at     timestamptz,
    nip29_group_id text,
    PRIMARY KEY (community_id, id),
    UNIQUE (community_id, nip29_group_id)
);

-- +goose StatementBegin
CREATE FUNCTION buzz_forbid_community_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.community_id IS DISTINCT FROM OLD.community_id THEN
        RAISE EXCEPTION 'community_id of % is immutable', TG_TABLE_NAME
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER channels_community_immutable
    BEFORE UPDATE OF community_id ON channels
    FOR EACH ROW EXECUTE FUNCTION buzz_forbid_community_change();

CREATE TABLE channel_members (
    community_id uuid NOT NULL,
    channel_id   uuid NOT NULL,
    pubkey       bytea NOT NULL CHECK (length(pubkey) = 32),
    role         member_role NOT NULL DEFAULT 'member',
    joined_at    timestamptz NOT NULL DEFAULT now(),
    invited_by   bytea,
    removed_at   timestamptz,
    removed_by   bytea,
    PRIMARY KEY (community_id, channel_id, pubkey),
    FOREIGN KEY (community_id, channel_id) REFERENCES channels (community_id, id) ON DELETE CASCADE
);
CREATE INDEX channel_members_pubkey_idx ON channel_members (community_id, pubkey) WHERE removed_at IS NULL;

CREATE TABLE users (
    community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    pubkey       bytea NOT NULL CHECK (length(pubkey) = 32),
    display_name text,
    avatar       text,
    nip05        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (community_id, pubkey)
);
CREATE UNIQUE INDEX users_nip05_key ON users (community_id, lower(nip05)) WHERE nip05 IS NOT NULL;

-- Events. created_at is unix seconds (bigint) exactly as in the event, so
-- the partition bounds below are unix seconds of the first of each month
-- (UTC). raw holds the exact bytes nostr.Event.AppendJSON wrote at ingest;
-- tags and content are copies for SQL use (NUL and invalid UTF-8 removed).
CREATE TABLE events (
    community_id uuid NOT NULL,
    created_at   bigint NOT NULL,
    id           bytea NOT NULL CHECK (length(id) = 32),
    pubkey       bytea NOT NULL CHECK (length(pubkey) = 32),
    kind         integer NOT NULL CHECK (kind BETWEEN 0 AND 65535),
    tags         jsonb NOT NULL,
    content      text NOT NULL,
    sig          bytea NOT NULL CHECK (length(sig) = 64),
    raw          bytea NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    channel_id   uuid,
    d_tag        text,
    expires_at   bigint,
    deleted_at   timestamptz,
    PRIMARY KEY (community_id, created_at, id)
) PARTITION BY RANGE (created_at);

CREATE TABLE events_p_past PARTITION OF events FOR VALUES FROM (MINVALUE) TO (1767225600); -- < 2026-01-01
CREATE TABLE events_p_future PARTITION OF events DEFAULT;

CREATE INDEX events_id_idx ON events (community_id, id);
-- Covering and live-only, so counting an author's events is an index-only
-- scan on settled (all-visible) pages.
CREATE INDEX events_author_idx ON events (community_id, pubkey, created_at DESC, id)
    INCLUDE (kind, expires_at) WHERE deleted_at IS NULL;
CREATE INDEX events_author_kind_idx ON events (community_id, pubkey, kind, created_at DESC, id);
CREATE INDEX events_kind_idx ON events (community_id, kind, created_at DESC, id);
CREATE INDEX events_timeline_idx ON events (community_id, created_at DESC, id);
CREATE INDEX events_channel_idx ON events (community_id, channel_id, created_at DESC, id)
    WHERE channel_id IS NOT NULL;
CREATE INDEX events_coordinate_idx ON events (community_id, kind, pubkey, d_tag, created_at DESC, id)
    WHERE d_tag IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX events_expires_idx ON events (community_id, expires_at)
    WHERE expires_at IS NOT NULL;

-- Tag index: one row per distinct (single-letter name, first value) of an
-- event. value is 0xfe || the 32 bytes of a 64-character lowercase hex value
-- (ids, pubkeys), 0xff || sha256(value) for values longer than 256 bytes,
-- else the UTF-8 bytes (0xfe and 0xff never occur in UTF-8). Measured faster
-- than JSONB containment with GIN at 1M events, and usable under RLS, where
-- jsonb @> (not leakproof) cannot become an index condition.
CREATE TABLE event_tags (
    community_id uuid NOT NULL,
    name         text NOT NULL,
    value        bytea NOT NULL,
    created_at   bigint NOT NULL,
    event_id     bytea NOT NULL
);
CREATE UNIQUE INDEX event_tags_key ON event_tags (community_id, name, value, created_at DESC, event_id);

-- NIP-09 deletion by id: the (id, author) pairs a deletion request named.
-- A later Save of that id by that author is refused (ErrDeleted).
CREATE TABLE event_tombstones (
    community_id uuid NOT NULL,
    event_id     bytea NOT NULL,
    pubkey       bytea NOT NULL,
    deleted_by   bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (community_id, event_id, pubkey)
);

-- NIP-09 deletion by coordinate: versions with created_at <= deleted_until
-- are deleted and refused on later arrival.
CREATE TABLE deletion_watermarks (
    community_id  uuid NOT NULL,
    kind          integer NOT NULL,
    pubkey        bytea NOT NULL,
    d_tag         text NOT NULL,
    deleted_until bigint NOT NULL,
    PRIMARY KEY (community_id, kind, pubkey, d_tag)
);

CREATE TABLE workflows (
    community_id    uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    id              uuid NOT NULL,
    name            text NOT NULL,
    owner_pubkey    bytea NOT NULL CHECK (length(owner_pubkey) = 32),
    channel_id      uuid,
    definition      jsonb NOT NULL,
    definition_hash bytea NOT NULL,
    status          workflow_status NOT NULL DEFAULT 'active',
    enabled         boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (community_id, id)
);

CREATE TABLE workflow_runs (
    community_id     uuid NOT NULL,
    id               uuid NOT NULL,
    workflow_id      uuid NOT NULL,
    status           run_status NOT NULL DEFAULT 'pending',
    trigger_event_id bytea,
    current_step     integer NOT NULL DEFAULT 0,
    execution_trace  jsonb NOT NULL DEFAULT '[]',
    trigger_context  jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    completed_at     timestamptz,
    error_message    text,
    PRIMARY KEY (community_id, id),
    UNIQUE (community_id, workflow_id, trigger_event_id),
    FOREIGN KEY (community_id, workflow_id) REFERENCES workflows (community_id, id) ON DELETE CASCADE
);

-- token is SHA-256(raw approval token); the raw token is never stored.
CREATE TABLE workflow_approvals (
    community_id    uuid NOT NULL,
    token           bytea NOT NULL CHECK (length(token) = 32),
    workflow_id     uuid NOT NULL,
    run_id          uuid NOT NULL,
    step_id         varchar(64) NOT NULL,
    step_index      integer NOT NULL,
    approver_spec   text NOT NULL,
    status          approval_status NOT NULL DEFAULT 'pending',
    approver_pubkey bytea,
    note            text,
    granted_at      timestamptz,
    denied_at       timestamptz,
    expires_at      timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (community_id, token),
    FOREIGN KEY (community_id, run_id) REFERENCES workflow_runs (community_id, id) ON DELETE CASCADE
);

-- The primary key is the cross-pod at-most-once claim of a scheduled fire.
CREATE TABLE scheduled_workflow_fires (
    community_id    uuid NOT NULL,
    workflow_id     uuid NOT NULL,
    scheduled_for   timestamptz NOT NULL,
    claimed_at      timestamptz NOT NULL DEFAULT now(),
    workflow_run_id uuid,
    PRIMARY KEY (community_id, workflow_id, scheduled_for),
    FOREIGN KEY (community_id, workflow_id) REFERENCES workflows (community_id, id) ON DELETE CASCADE
);

CREATE TABLE audit_log (
    community_id uuid NOT NULL,
    seq          bigint NOT NULL,
    hash         bytea NOT NULL,
    prev_hash    bytea,
    hash_version smallint NOT NULL DEFAULT 1,
    action       text NOT NULL,
    actor_pubkey bytea,
    object_id    text,
    detail       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (community_id, seq),
    UNIQUE (community_id, hash)
);

-- Monthly partitions of events. Rows already sitting in the default
-- partition for a new month are moved into it, so creating a partition
-- never fails because of early arrivals.
-- +goose StatementBegin
CREATE FUNCTION buzz_ensure_event_partitions(from_ts timestamptz, months_ahead integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- Month arithmetic on UTC wall-clock timestamps, independent of TimeZone.
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

SELECT buzz_ensure_event_partitions(now() - interval '1 month', 3);

-- Save: the whole per-event write path, atomic in the caller's transaction.
-- Returns 0 stored, 1 duplicate, 2 superseded, 3 deleted.
-- p_lock is the advisory-lock key of the event's coordinate (NULL for kinds
-- that are neither replaceable nor addressable); p_del_* describe the
-- targets of a kind 5 request already filtered to its own author.
-- +goose StatementBegin
CREATE FUNCTION buzz_save_event(
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

-- Row-level security on every tenant table, and the privileges of buzz_app
-- (none on partitions: tenant data is reachable only through the parents).
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN
        SELECT c.relname FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
          AND c.relname NOT IN (SELECT table_name FROM _operator_global_tables)
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_access ON %I AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true)', t);
        EXECUTE format($p$CREATE POLICY tenant_isolation ON %I AS RESTRICTIVE FOR ALL
            USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
            WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)$p$, t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO buzz_app', t);
    END LOOP;
END
$$;
-- +goose StatementEnd

GRANT USAGE ON SCHEMA public TO buzz_app;
GRANT SELECT, INSERT ON communities, community_host_aliases TO buzz_app;
GRANT SELECT ON _operator_global_tables TO buzz_app;
GRANT EXECUTE ON FUNCTION buzz_save_event(uuid, bytea, bytea, bigint, integer, jsonb, text, bytea, bytea,
    uuid, text, bigint, bigint, text[], bytea[], bytea[], integer[], text[], bigint[]) TO buzz_app;

-- +goose Down
DROP TABLE IF EXISTS audit_log, scheduled_workflow_fires, workflow_approvals, workflow_runs, workflows,
    deletion_watermarks, event_tombstones, event_tags, events, users, channel_members, channels,
    community_host_aliases, communities, _operator_global_tables CASCADE;
DROP FUNCTION IF EXISTS buzz_save_event, buzz_ensure_event_partitions, buzz_forbid_community_change;
DROP TYPE IF EXISTS approval_status, run_status, workflow_status, member_role, channel_visibility, channel_type;
