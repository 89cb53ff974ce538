-- 4: what a token may do (`read` < `run` < `decide` < `admin`; tokens made before scopes keep doing everything),
-- until when (none: no end), and when it was last used (kept at most once a minute).
ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'admin' CHECK (scope IN ('read', 'run', 'decide', 'admin'));
ALTER TABLE tokens ADD COLUMN expires_at TIMESTAMPTZ;
ALTER TABLE tokens ADD COLUMN last_used_at TIMESTAMPTZ;
