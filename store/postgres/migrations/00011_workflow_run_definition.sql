-- A run records the definition hash it was triggered under (version 11,
-- workflow engine range), so a run whose workflow is redefined meanwhile
-- is not continued against different steps. NULL for runs created before.

-- +goose Up
ALTER TABLE workflow_runs ADD COLUMN definition_hash bytea CHECK (definition_hash IS NULL OR length(definition_hash) = 32);

-- +goose Down
ALTER TABLE workflow_runs DROP COLUMN IF EXISTS definition_hash;
