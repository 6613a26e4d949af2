-- Schema version 11: a run records the definition hash it was triggered
-- under (NULL for runs created before).
ALTER TABLE workflow_runs ADD COLUMN definition_hash BLOB;
