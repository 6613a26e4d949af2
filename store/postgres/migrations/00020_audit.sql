-- Audit chains (version 20).
--
-- audit_log (version 1) holds the chains. Changes do not append to it
-- directly: each records its entry in audit_outbox in its own transaction
-- (a durable, ordered per-community queue), and the store links queued
-- entries into the chain in batches — one transaction and one advisory
-- lock per community per batch, so concurrent changes never serialize on
-- the chain head while their transactions are open.

-- +goose Up
CREATE TABLE audit_outbox (
    community_id uuid NOT NULL,
    id           bigserial,
    action       text NOT NULL,
    actor_pubkey bytea CHECK (actor_pubkey IS NULL OR length(actor_pubkey) = 32),
    object_id    text NOT NULL DEFAULT '',
    detail       jsonb NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (community_id, id)
);
ALTER TABLE audit_outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_access ON audit_outbox AS PERMISSIVE FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON audit_outbox AS RESTRICTIVE FOR ALL
    USING (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid)
    WITH CHECK (community_id = NULLIF(current_setting('buzz.community_id', true), '')::uuid);
GRANT SELECT, INSERT, DELETE ON audit_outbox TO buzz_app;
GRANT USAGE ON SEQUENCE audit_outbox_id_seq TO buzz_app;

-- buzz_audit_pending lists the communities with queued entries, looking
-- into each community under its own RLS binding (the caller needs no
-- BYPASSRLS). The store runs it at start-up and now and then, to link
-- entries a crashed process committed but did not link.
-- +goose StatementBegin
CREATE FUNCTION buzz_audit_pending() RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE
    c uuid;
BEGIN
    FOR c IN SELECT id FROM communities LOOP
        PERFORM set_config('buzz.community_id', c::text, true);
        IF EXISTS (SELECT 1 FROM audit_outbox WHERE community_id = c) THEN
            RETURN NEXT c;
        END IF;
    END LOOP;
    PERFORM set_config('buzz.community_id', '', true);
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION buzz_audit_pending() TO buzz_app;

-- +goose Down
DROP FUNCTION IF EXISTS buzz_audit_pending();
DROP TABLE IF EXISTS audit_outbox;
