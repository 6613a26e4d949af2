-- Schedule triggers (version 110, in the 110-114 range of the schedules
-- work).
--
-- workflow_schedules holds the next fire time of every schedule-triggered
-- workflow, so a scheduler tick selects only the due ones through an index
-- (its cost does not grow with the number of schedules). Every pod's
-- scheduler looks across communities, so it is a registered global table
-- of ids and times; the definitions stay in workflows under row-level
-- security. The row is kept by triggers on workflows: created (due at
-- once, next_fire_at = the epoch) when a schedule workflow is put,
-- reset when its definition changes, removed when it stops being one (and
-- with the workflow). since is when it was (re)defined: no slot before it
-- fires.
--
-- scheduled_workflow_fires (version 1) is the claim of one slot: its
-- primary key makes a fire at most once across pods.

-- +goose Up
CREATE TABLE workflow_schedules (
    community_id uuid NOT NULL,
    workflow_id  uuid NOT NULL,
    next_fire_at timestamptz NOT NULL DEFAULT 'epoch',
    since        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (community_id, workflow_id),
    FOREIGN KEY (community_id, workflow_id) REFERENCES workflows (community_id, id) ON DELETE CASCADE
);
CREATE INDEX workflow_schedules_due_idx ON workflow_schedules (next_fire_at);
INSERT INTO _operator_global_tables (table_name, reason) VALUES
    ('workflow_schedules', 'every pod''s scheduler selects due schedules of every community; holds ids and times only');
GRANT SELECT, INSERT, UPDATE, DELETE ON workflow_schedules TO buzz_app;

-- +goose StatementBegin
CREATE FUNCTION buzz_sync_workflow_schedule() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.trigger_on = 'schedule' THEN
        INSERT INTO workflow_schedules (community_id, workflow_id) VALUES (NEW.community_id, NEW.id)
        ON CONFLICT (community_id, workflow_id) DO UPDATE SET next_fire_at = 'epoch', since = now();
    ELSE
        DELETE FROM workflow_schedules WHERE community_id = NEW.community_id AND workflow_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER workflows_schedule_insert AFTER INSERT ON workflows
    FOR EACH ROW EXECUTE FUNCTION buzz_sync_workflow_schedule();
CREATE TRIGGER workflows_schedule_update AFTER UPDATE OF definition_hash, trigger_on ON workflows
    FOR EACH ROW WHEN (OLD.definition_hash IS DISTINCT FROM NEW.definition_hash OR OLD.trigger_on IS DISTINCT FROM NEW.trigger_on)
    EXECUTE FUNCTION buzz_sync_workflow_schedule();

-- +goose Down
DROP TRIGGER IF EXISTS workflows_schedule_update ON workflows;
DROP TRIGGER IF EXISTS workflows_schedule_insert ON workflows;
DROP FUNCTION IF EXISTS buzz_sync_workflow_schedule();
DELETE FROM _operator_global_tables WHERE table_name = 'workflow_schedules';
DROP TABLE IF EXISTS workflow_schedules;
