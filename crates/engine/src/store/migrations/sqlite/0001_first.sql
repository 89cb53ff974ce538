CREATE TABLE IF NOT EXISTS runs (
                 id TEXT PRIMARY KEY,
                 workflow_path TEXT NOT NULL,
                 script_path TEXT,
                 status TEXT NOT NULL,
                 snapshot TEXT,
                 updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
             );
             CREATE TABLE IF NOT EXISTS events (
                 run_id TEXT NOT NULL,
                 seq INTEGER NOT NULL,
                 event TEXT NOT NULL,
                 PRIMARY KEY (run_id, seq)
             );