-- NIP-10 threads (store.ThreadStore). thread_nodes holds one row per
-- stored reply: its parent, its thread's root, its depth, its author and
-- created_at. thread_stats holds the counters of every message with
-- replies: replies (direct replies), descendants and last_reply_at (of the
-- thread it is the root of). Triggers on events record a reply when it is
-- inserted (kind 9 or 40002–40008 in a channel, with a NIP-10 "reply"
-- marker: the last e tag of four or more elements whose value is 64 hex
-- characters and whose fourth element is "reply", as store.ThreadOf reads
-- it) and remove it when it is deleted (NIP-09, a channel's delete-event,
-- expiry); triggers on thread_nodes keep thread_stats exact, all in the
-- transaction of the event's write. Replies stored before this migration
-- are not recorded.

-- +goose Up
CREATE TABLE thread_nodes (
    community_id uuid   NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    id           bytea  NOT NULL,
    parent       bytea  NOT NULL,
    root         bytea  NOT NULL,
    depth        integer NOT NULL,
    pubkey       bytea  NOT NULL,
    created_at   bigint NOT NULL,
    PRIMARY KEY (community_id, id)
);
CREATE INDEX thread_nodes_root_idx ON thread_nodes (community_id, root, created_at);

CREATE TABLE thread_stats (
    community_id  uuid   NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    event         bytea  NOT NULL,
    replies       bigint NOT NULL DEFAULT 0,
    descendants   bigint NOT NULL DEFAULT 0,
    last_reply_at bigint,
    PRIMARY KEY (community_id, event)
);

ALTER TABLE thread_nodes ENABLE ROW LEVEL SECURITY;
ALTER TABLE thread_nodes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON thread_nodes AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON thread_nodes AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON thread_nodes TO buzz_app;

ALTER TABLE thread_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE thread_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON thread_stats AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON thread_stats AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON thread_stats TO buzz_app;

-- +goose StatementBegin
CREATE FUNCTION buzz_thread_node_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO thread_stats AS s (community_id, event, descendants, last_reply_at) VALUES (NEW.community_id, NEW.root, 1, NEW.created_at)
    ON CONFLICT (community_id, event) DO UPDATE SET descendants = s.descendants + 1,
        last_reply_at = GREATEST(s.last_reply_at, EXCLUDED.last_reply_at);
    INSERT INTO thread_stats AS s (community_id, event, replies) VALUES (NEW.community_id, NEW.parent, 1)
    ON CONFLICT (community_id, event) DO UPDATE SET replies = s.replies + 1;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Both triggers lock the root's row first, then the parent's, so replies
-- and deletions in one thread take their locks in one order. The root's
-- row is locked before the newest remaining reply is read: the read is a
-- statement of its own, so under READ COMMITTED it sees every reply
-- committed by a transaction that held the lock before.
-- +goose StatementBegin
CREATE FUNCTION buzz_thread_node_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM thread_stats WHERE community_id = OLD.community_id AND event = OLD.root FOR UPDATE;
    UPDATE thread_stats SET replies = replies - 1 WHERE community_id = OLD.community_id AND event = OLD.parent;
    UPDATE thread_stats SET descendants = descendants - 1,
        last_reply_at = (SELECT max(n.created_at) FROM thread_nodes n WHERE n.community_id = OLD.community_id AND n.root = OLD.root)
    WHERE community_id = OLD.community_id AND event = OLD.root;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER thread_nodes_insert AFTER INSERT ON thread_nodes
    FOR EACH ROW EXECUTE FUNCTION buzz_thread_node_insert();
CREATE TRIGGER thread_nodes_delete AFTER DELETE ON thread_nodes
    FOR EACH ROW EXECUTE FUNCTION buzz_thread_node_delete();

-- +goose StatementBegin
CREATE FUNCTION buzz_thread_event_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_parent bytea;
BEGIN
    SELECT decode(lower(x.tag->>1), 'hex') INTO v_parent
    FROM jsonb_array_elements(NEW.tags) WITH ORDINALITY AS x(tag, n)
    WHERE jsonb_typeof(x.tag) = 'array' AND jsonb_array_length(x.tag) >= 4
      AND x.tag->>0 = 'e' AND x.tag->>3 = 'reply' AND x.tag->>1 ~ '^[0-9a-fA-F]{64}$'
    ORDER BY x.n DESC LIMIT 1;
    IF v_parent IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO thread_nodes (community_id, id, parent, root, depth, pubkey, created_at)
    SELECT NEW.community_id, NEW.id, v_parent, coalesce(p.root, v_parent), coalesce(p.depth, 0) + 1, NEW.pubkey, NEW.created_at
    FROM (SELECT 1) one LEFT JOIN thread_nodes p ON p.community_id = NEW.community_id AND p.id = v_parent
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION buzz_thread_event_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM thread_nodes WHERE community_id = OLD.community_id AND id = OLD.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER events_thread_insert AFTER INSERT ON events
    FOR EACH ROW WHEN ((NEW.kind = 9 OR NEW.kind BETWEEN 40002 AND 40008) AND NEW.channel_id IS NOT NULL AND NEW.deleted_at IS NULL)
    EXECUTE FUNCTION buzz_thread_event_insert();
CREATE TRIGGER events_thread_soft_delete AFTER UPDATE OF deleted_at ON events
    FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL AND (OLD.kind = 9 OR OLD.kind BETWEEN 40002 AND 40008))
    EXECUTE FUNCTION buzz_thread_event_delete();
CREATE TRIGGER events_thread_delete AFTER DELETE ON events
    FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND (OLD.kind = 9 OR OLD.kind BETWEEN 40002 AND 40008))
    EXECUTE FUNCTION buzz_thread_event_delete();

-- +goose Down
DROP TRIGGER IF EXISTS events_thread_delete ON events;
DROP TRIGGER IF EXISTS events_thread_soft_delete ON events;
DROP TRIGGER IF EXISTS events_thread_insert ON events;
DROP FUNCTION IF EXISTS buzz_thread_event_delete();
DROP FUNCTION IF EXISTS buzz_thread_event_insert();
DROP TABLE IF EXISTS thread_stats;
DROP TABLE IF EXISTS thread_nodes;
DROP FUNCTION IF EXISTS buzz_thread_node_delete();
DROP FUNCTION IF EXISTS buzz_thread_node_insert();
