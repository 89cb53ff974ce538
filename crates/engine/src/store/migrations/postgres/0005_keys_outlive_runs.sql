-- 5: retention (`Store::prune`). A webhook delivery key and a schedule firing outlive the run they started: deleting
-- the run keeps them (their `run_id` names a run that is gone), so a late redelivery still starts nothing; they are
-- pruned on their own, later (`received_at`, `due`). Ended runs are found by when they ended.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_run_id_fkey;
ALTER TABLE fires DROP CONSTRAINT fires_run_id_fkey;
CREATE INDEX deliveries_received ON deliveries (received_at);
CREATE INDEX fires_due ON fires (due);
CREATE INDEX runs_ended ON runs (ended_at) WHERE status IN ('completed', 'failed', 'cancelled');
