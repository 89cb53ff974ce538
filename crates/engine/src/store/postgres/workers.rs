//! The workers that take runs (`switchyard worker`), as `switchyard workers` and `GET /api/workers` list them.
//!
//! Invariants:
//! - A worker is named as its claims are (`PgStore::owner`, `host:pid`): its row says who holds which run, and a
//!   restarted worker is a new row (a new pid). It registers as it starts (its queues, its slots, its lease), answers
//!   every third of its lease (`seen_at`, on the database's clock) and says when it stopped gracefully.
//! - What a worker holds is read from the runs, never kept twice: its runs are those it owns under a live lease.
//! - A worker not seen for a whole lease has stopped answering (killed, frozen, cut off): its runs are taken over
//!   once their own leases run out. Workers not seen for a day are not listed.

use serde::Serialize;

use super::connection::InDb;
use super::{lease_ms, PgError, PgStore};

/// One worker, as it last said and as the runs say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerRow {
    /// `host:pid`, as the runs' `owner` names it.
    pub name: String,
    /// The queues it takes runs from; none: every queue.
    pub queues: Option<Vec<String>>,
    /// Runs it takes at once (`--jobs`).
    pub jobs: i32,
    /// When it started (RFC 3339, UTC).
    pub started: String,
    /// When it last answered (its heartbeat, RFC 3339, UTC), and how long ago that was.
    pub last_heartbeat: String,
    pub heartbeat_age_ms: i64,
    /// `answering`, `not answering` (not seen for a whole lease) or `stopped` (it stopped gracefully).
    pub state: String,
    /// The runs it holds now (a live lease), oldest first.
    pub runs: Vec<String>,
}

const REGISTER: &str = "INSERT INTO workers (name, queues, jobs, lease_ms) VALUES ($1, $2, $3, $4)
     ON CONFLICT (name) DO UPDATE SET queues = $2, jobs = $3, lease_ms = $4, started_at = now(), seen_at = now(),
       stopped_at = NULL";
const BEAT: &str = "UPDATE workers SET seen_at = now() WHERE name = $1";
const STOPPED: &str = "UPDATE workers SET seen_at = now(), stopped_at = now() WHERE name = $1";
const LIST: &str = "SELECT w.name, w.queues, w.jobs,
       to_char(w.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
       to_char(w.seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
       (extract(epoch FROM now() - w.seen_at) * 1000)::int8,
       CASE WHEN w.stopped_at IS NOT NULL THEN 'stopped'
            WHEN w.seen_at + coalesce(w.lease_ms, 30000) * interval '1 millisecond' > now() THEN 'answering'
            ELSE 'not answering' END,
       coalesce((SELECT array_agg(r.id ORDER BY r.started_at, r.id) FROM runs r
                 WHERE r.owner = w.name AND r.lease_until > now()), '{}')
     FROM workers w
     WHERE w.seen_at > now() - interval '1 day'
     ORDER BY w.started_at, w.name";

impl PgStore {
    /// Says that this store's owner works runs now, from its queues (`with_queues`), `jobs` at a time, with its
    /// lease.
    pub async fn register_worker(&self, jobs: usize) -> Result<(), PgError> {
        let (name, queues) = (self.owner.to_string(), self.queues.as_deref().map(<[String]>::to_vec));
        let (jobs, lease) = (i32::try_from(jobs).unwrap_or(i32::MAX), lease_ms(self.lease)? as i32);
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let register = session.statement(REGISTER).await.in_db(&s)?;
            session.client.execute(&register, &[&name, &queues, &jobs, &lease]).await.in_db(&s)?;
            Ok(())
        })
        .await
    }

    /// This store's owner answers: its worker's heartbeat.
    pub async fn worker_beat(&self) -> Result<(), PgError> {
        self.worker_says(BEAT).await
    }

    /// This store's owner stopped working runs (gracefully).
    pub async fn worker_stopped(&self) -> Result<(), PgError> {
        self.worker_says(STOPPED).await
    }

    async fn worker_says(&self, statement: &'static str) -> Result<(), PgError> {
        let name = self.owner.to_string();
        self.call(|s| async move {
            // On the main connection: a worker's beat never waits in front of its runs' lease heartbeats.
            let mut session = s.main.session(&s.db).await?;
            let said = session.statement(statement).await.in_db(&s)?;
            session.client.execute(&said, &[&name]).await.in_db(&s)?;
            Ok(())
        })
        .await
    }

    /// The workers seen in the last day, oldest first: their queues, their runs and when each last answered.
    pub async fn workers(&self) -> Result<Vec<WorkerRow>, PgError> {
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let list = session.statement(LIST).await.in_db(&s)?;
            let rows = session.client.query(&list, &[]).await.in_db(&s)?;
            rows.iter()
                .map(|r| {
                    Ok(WorkerRow {
                        name: r.try_get(0).in_db(&s)?,
                        queues: r.try_get(1).in_db(&s)?,
                        jobs: r.try_get(2).in_db(&s)?,
                        started: r.try_get(3).in_db(&s)?,
                        last_heartbeat: r.try_get(4).in_db(&s)?,
                        heartbeat_age_ms: r.try_get::<_, i64>(5).in_db(&s)?.max(0),
                        state: r.try_get(6).in_db(&s)?,
                        runs: r.try_get(7).in_db(&s)?,
                    })
                })
                .collect()
        })
        .await
    }
}
