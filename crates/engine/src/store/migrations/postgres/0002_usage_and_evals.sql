ALTER TABLE runs ADD COLUMN usage json;
     ALTER TABLE runs ADD COLUMN eval_id text;
     CREATE TABLE evals (
         id text PRIMARY KEY,
         file text NOT NULL,
         workflow text NOT NULL,
         started_at text NOT NULL,
         report text NOT NULL
     );
     CREATE INDEX evals_file ON evals (file, started_at);