-- 6: identities (docs/server.md, "Identities"): how each run was started (`via`: api, webhook, schedule, mcp; local
-- for one started on a machine of its own) and by whom (`started_by`: a token's, webhook's or schedule's name), and
-- who asked that it be cancelled (`cancelled_by`: a token's name). Who decided an approval is in its kept decision.
ALTER TABLE runs ADD COLUMN via TEXT NOT NULL DEFAULT 'local' CHECK (via IN ('local', 'api', 'webhook', 'schedule', 'mcp'));
ALTER TABLE runs ADD COLUMN started_by TEXT;
ALTER TABLE runs ADD COLUMN cancelled_by TEXT;
