-- 8: queues and limits (docs/server.md, "Queues and limits"), and the workers that take runs.
-- A run waits in a queue (`queue`: its trigger's, else its workflow's, else 'default'); a worker takes from the
-- queues it is given. Within them, runs a person started (the API, the browser, /mcp: `priority` 1) go before the
-- others (webhooks, schedules, `run --detach`: 0), then the oldest first. `max_concurrent`: the workflow's
-- `max_concurrent_runs` when the run was submitted; at most that many runs of its name run on workers at once.
ALTER TABLE runs ADD COLUMN queue text NOT NULL DEFAULT 'default';
ALTER TABLE runs ADD COLUMN priority smallint NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN max_concurrent integer CHECK (max_concurrent > 0);
CREATE INDEX runs_queued ON runs (queue, priority DESC, started_at, id) WHERE status = 'ready';
-- A claim reads one index per kind of run it takes (`postgres::claims`): ready runs in their order, and paused runs a
-- dead worker still holds.
CREATE INDEX runs_ready ON runs (priority DESC, started_at, id) WHERE status = 'ready';
CREATE INDEX runs_paused_held ON runs (lease_until) WHERE status = 'paused' AND owner IS NOT NULL;
CREATE INDEX runs_running_by_name ON runs (workflow_name) WHERE status = 'running';
-- Each worker as it last said: its queues (NULL: all of them), how many runs it takes at once, and when it last
-- answered (its heartbeat, on the database's clock); `stopped_at` once it stopped gracefully.
CREATE TABLE workers (
    name text PRIMARY KEY,
    queues text[],
    jobs integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    seen_at timestamptz NOT NULL DEFAULT now(),
    stopped_at timestamptz
);
