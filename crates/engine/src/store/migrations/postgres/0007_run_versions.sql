-- 7: run versions (docs/server.md, "Served workflows"): the version of the served workflow a run was started from
-- (`workflows.version` of its name), none for a run started from a file of its own (a worker's `run`, a local run).
ALTER TABLE runs ADD COLUMN workflow_version integer;
