-- 4: child runs (docs/subworkflows.md): the run, node, iteration and `for_each` item of the parent run a child run
-- belongs to, read from the link its options keep (`RunOptions::parent`), so that a parent's children are found.
ALTER TABLE runs ADD COLUMN parent_run TEXT GENERATED ALWAYS AS (json_extract(options, '$.parent.run')) VIRTUAL;
ALTER TABLE runs ADD COLUMN parent_node TEXT GENERATED ALWAYS AS (json_extract(options, '$.parent.node')) VIRTUAL;
ALTER TABLE runs ADD COLUMN parent_iteration INTEGER
    GENERATED ALWAYS AS (json_extract(options, '$.parent.iteration')) VIRTUAL;
ALTER TABLE runs ADD COLUMN parent_item INTEGER GENERATED ALWAYS AS (json_extract(options, '$.parent.item')) VIRTUAL;
CREATE INDEX runs_parent ON runs (parent_run) WHERE parent_run IS NOT NULL;
