CREATE TABLE runs (
         id text PRIMARY KEY,
         workflow_path text NOT NULL DEFAULT '',
         script_path text,
         status text NOT NULL
             CHECK (status IN ('ready', 'running', 'paused', 'completed', 'failed', 'cancelled')),
         workflow_name text NOT NULL DEFAULT '',
         document json NOT NULL,
         options json NOT NULL,
         pending json NOT NULL DEFAULT '[]',
         started_at timestamptz NOT NULL DEFAULT now(),
         ended_at timestamptz,
         updated_at timestamptz NOT NULL DEFAULT now(),
         owner text,
         lease_until timestamptz,
         epoch bigint NOT NULL DEFAULT 0
     );
     CREATE INDEX runs_started ON runs (started_at DESC, id DESC);
     CREATE INDEX runs_claimable ON runs (started_at, id) WHERE status IN ('ready', 'running');
     CREATE TABLE events (
         run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
         seq bigint NOT NULL,
         event json NOT NULL,
         PRIMARY KEY (run_id, seq)
     );
     CREATE TABLE inputs (
         id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
         run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
         input json NOT NULL
     );
     CREATE INDEX inputs_run ON inputs (run_id, id);