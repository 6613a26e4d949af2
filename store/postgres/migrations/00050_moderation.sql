-- Community moderation (version 50; versions 50-59 belong to moderation).
--
-- The community role 'moderator'; bans and timeouts in force
-- (moderation_restrictions), the log of every moderation action
-- (moderation_actions) and the NIP-56 report queue (moderation_reports).
-- Reports are never stored in events: no event read path can return them.
-- Times that come from events (until, created_at) are unix seconds.
-- buzz_app may now delete host aliases (the operator API removes them).

-- +goose Up
ALTER TABLE community_members DROP CONSTRAINT community_members_role_check;
ALTER TABLE community_members ADD CONSTRAINT community_members_role_check
    CHECK (role IN ('admin', 'moderator', 'member'));

CREATE TABLE moderation_restrictions (
    community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    pubkey       bytea NOT NULL CHECK (length(pubkey) = 32),
    kind         text NOT NULL CHECK (kind IN ('ban', 'timeout')),
    until        bigint CHECK (kind = 'ban' OR until IS NOT NULL),
    reason       text NOT NULL DEFAULT '',
    actor        bytea NOT NULL CHECK (length(actor) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (community_id, pubkey, kind)
);

CREATE TABLE moderation_actions (
    community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    action       text NOT NULL CHECK (action IN ('ban', 'unban', 'timeout', 'untimeout', 'resolve_report')),
    actor        bytea NOT NULL CHECK (length(actor) = 32),
    target       bytea NOT NULL CHECK (length(target) = 32),
    reason       text NOT NULL DEFAULT '',
    until        bigint,
    status       text,
    event_id     bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (community_id, seq)
);

CREATE TABLE moderation_reports (
    community_id  uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
    seq           bigint GENERATED ALWAYS AS IDENTITY,
    id            bytea NOT NULL CHECK (length(id) = 32),
    reporter      bytea NOT NULL CHECK (length(reporter) = 32),
    target_pubkey bytea NOT NULL CHECK (length(target_pubkey) = 32),
    target_event  bytea CHECK (target_event IS NULL OR length(target_event) = 32),
    report_type   text NOT NULL,
    created_at    bigint NOT NULL,
    raw           bytea NOT NULL,
    status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved', 'dismissed', 'escalated')),
    received_at   timestamptz NOT NULL DEFAULT now(),
    resolved_by   bytea,
    resolved_at   timestamptz,
    PRIMARY KEY (community_id, seq),
    UNIQUE (community_id, id)
);
CREATE INDEX moderation_reports_status_idx ON moderation_reports (community_id, status, seq DESC);
CREATE INDEX moderation_reports_reporter_idx ON moderation_reports (community_id, reporter, seq DESC);

-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['moderation_restrictions', 'moderation_actions', 'moderation_reports'] LOOP
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

GRANT DELETE ON community_host_aliases TO buzz_app;

-- +goose Down
REVOKE DELETE ON community_host_aliases FROM buzz_app;
DROP TABLE IF EXISTS moderation_reports, moderation_actions, moderation_restrictions;
DELETE FROM community_members WHERE role = 'moderator';
ALTER TABLE community_members DROP CONSTRAINT community_members_role_check;
ALTER TABLE community_members ADD CONSTRAINT community_members_role_check
    CHECK (role IN ('admin', 'member'));
