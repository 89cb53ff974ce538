ALTER TABLE runs ADD COLUMN wake boolean NOT NULL DEFAULT false;
     ALTER TABLE runs ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
     ALTER TABLE runs ADD COLUMN wake_at timestamptz;
     CREATE INDEX runs_waking ON runs (wake_at) WHERE status = 'paused' AND wake_at IS NOT NULL;
     CREATE INDEX runs_woken ON runs (started_at) WHERE status = 'paused' AND wake;
     CREATE TABLE decisions (
         run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
         node text NOT NULL,
         round integer NOT NULL,
         decision json NOT NULL,
         received_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (run_id, node, round)
     );
     CREATE TABLE tokens (
         name text PRIMARY KEY,
         hash text NOT NULL UNIQUE,
         created_at timestamptz NOT NULL DEFAULT now(),
         revoked_at timestamptz
     );
     CREATE TABLE deliveries (
         hook text NOT NULL,
         key text NOT NULL,
         run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
         received_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (hook, key)
     );
     CREATE TABLE fires (
         schedule text NOT NULL,
         due timestamptz NOT NULL,
         run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
         PRIMARY KEY (schedule, due)
     );
     CREATE TABLE workflows (
         name text NOT NULL,
         version integer NOT NULL,
         hash text NOT NULL,
         path text NOT NULL,
         document json NOT NULL,
         registered_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (name, version)
     );