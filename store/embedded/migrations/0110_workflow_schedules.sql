-- Schema version 110: schedule triggers (the same model as PostgreSQL's;
-- times in Unix milliseconds).
--
-- workflow_schedules holds the next fire time of every schedule-triggered
-- workflow, so a scheduler tick selects only the due ones through an
-- index. Triggers on workflows keep it: a row due at once (next_fire_at
-- 0) when a schedule workflow is put or its definition changes, none when
-- it is not one (or is deleted). since is when it was (re)defined: no
-- slot before it fires.
--
-- scheduled_workflow_fires is the claim of one slot: its primary key makes
-- a fire at most once.
CREATE TABLE workflow_schedules (
    community    INTEGER NOT NULL,
    workflow     BLOB    NOT NULL,
    next_fire_at INTEGER NOT NULL,
    since        INTEGER NOT NULL,
    PRIMARY KEY (community, workflow)
) WITHOUT ROWID;
CREATE INDEX workflow_schedules_due ON workflow_schedules (next_fire_at);

CREATE TABLE scheduled_workflow_fires (
    community     INTEGER NOT NULL,
    workflow      BLOB    NOT NULL,
    scheduled_for INTEGER NOT NULL,
    claimed_at    INTEGER NOT NULL,
    run           BLOB,
    PRIMARY KEY (community, workflow, scheduled_for)
) WITHOUT ROWID;

CREATE TRIGGER workflows_schedule_insert AFTER INSERT ON workflows
WHEN NEW.trigger_on = 'schedule'
BEGIN
    INSERT OR REPLACE INTO workflow_schedules (community, workflow, next_fire_at, since)
    VALUES (NEW.community, NEW.id, 0, NEW.updated_at);
END;

CREATE TRIGGER workflows_schedule_update AFTER UPDATE OF hash, trigger_on ON workflows
WHEN OLD.hash IS NOT NEW.hash OR OLD.trigger_on IS NOT NEW.trigger_on
BEGIN
    DELETE FROM workflow_schedules WHERE community = NEW.community AND workflow = NEW.id;
    INSERT INTO workflow_schedules (community, workflow, next_fire_at, since)
    SELECT NEW.community, NEW.id, 0, NEW.updated_at WHERE NEW.trigger_on = 'schedule';
END;

CREATE TRIGGER workflows_schedule_delete AFTER DELETE ON workflows
BEGIN
    DELETE FROM workflow_schedules WHERE community = OLD.community AND workflow = OLD.id;
    DELETE FROM scheduled_workflow_fires WHERE community = OLD.community AND workflow = OLD.id;
END;
