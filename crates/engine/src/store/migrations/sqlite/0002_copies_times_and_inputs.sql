ALTER TABLE runs ADD COLUMN workflow_name TEXT;
             ALTER TABLE runs ADD COLUMN document TEXT;
             ALTER TABLE runs ADD COLUMN options TEXT;
             ALTER TABLE runs ADD COLUMN started_at TEXT;
             ALTER TABLE runs ADD COLUMN ended_at TEXT;
             ALTER TABLE runs ADD COLUMN pending TEXT;
             CREATE TABLE inputs (
                 id INTEGER PRIMARY KEY,
                 run_id TEXT NOT NULL,
                 input TEXT NOT NULL
             );
             CREATE INDEX inputs_run ON inputs (run_id, id);
             CREATE INDEX runs_started ON runs (started_at);
             CREATE TABLE events_by_run (
                 run_id TEXT NOT NULL,
                 seq INTEGER NOT NULL,
                 event TEXT NOT NULL,
                 PRIMARY KEY (run_id, seq)
             ) WITHOUT ROWID;
             INSERT INTO events_by_run SELECT run_id, seq, event FROM events;
             DROP TABLE events;
             ALTER TABLE events_by_run RENAME TO events;