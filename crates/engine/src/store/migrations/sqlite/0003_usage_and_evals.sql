ALTER TABLE runs ADD COLUMN usage TEXT;
             ALTER TABLE runs ADD COLUMN eval_id TEXT;
             CREATE TABLE evals (
                 id TEXT PRIMARY KEY,
                 file TEXT NOT NULL,
                 workflow TEXT NOT NULL,
                 started_at TEXT NOT NULL,
                 report TEXT NOT NULL
             );
             CREATE INDEX evals_file ON evals (file, started_at);