-- 10: level with SQLite's migration 4: child runs (docs/subworkflows.md), the run, node, iteration and `for_each`
-- item of the parent run a child run belongs to, from the link its options keep (`RunOptions::parent`). Read only
-- from options that have one: PostgreSQL refuses to read a JSON text holding `\u0000` (a fork's answer may).
ALTER TABLE runs ADD COLUMN parent_run text GENERATED ALWAYS AS
    (CASE WHEN strpos(options::text, '"parent":') > 0 THEN options -> 'parent' ->> 'run' END) STORED;
ALTER TABLE runs ADD COLUMN parent_node text GENERATED ALWAYS AS
    (CASE WHEN strpos(options::text, '"parent":') > 0 THEN options -> 'parent' ->> 'node' END) STORED;
ALTER TABLE runs ADD COLUMN parent_iteration integer GENERATED ALWAYS AS
    (CASE WHEN strpos(options::text, '"parent":') > 0 THEN (options -> 'parent' ->> 'iteration')::integer END) STORED;
ALTER TABLE runs ADD COLUMN parent_item integer GENERATED ALWAYS AS
    (CASE WHEN strpos(options::text, '"parent":') > 0 THEN (options -> 'parent' ->> 'item')::integer END) STORED;
CREATE INDEX runs_parent ON runs (parent_run) WHERE parent_run IS NOT NULL;
