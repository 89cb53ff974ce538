//! Claims as leases: who works a run, under which epoch, until when.
//!
//! Invariants:
//! - A claim (`claim_from`) picks a run that is `ready`, or `running` with an expired lease, or `paused` and woken (a
//!   decision or cancellation came, or an approval's deadline passed) and held by nobody (or by a worker whose lease
//!   expired: it died between pausing the run and giving it up), locking its row and skipping rows another
//!   transaction holds, then sets its owner and lease and increases its epoch, in one transaction. So two claimers
//!   never get the same run, and each claim of a run has an epoch higher than every earlier one.
//! - A worker takes only from its queues (`queue = ANY(queues)`; given none, from all): runs already going on (taken
//!   over, woken) before runs that have not started, and within each a person's runs first (`priority`: the API,
//!   the browser, `/mcp`), then the oldest (`CLAIM_PICK`).
//! - A claim reads one index per kind of run it may take, never the whole table: it costs the same however many
//!   ended runs the table keeps.
//! - At most `max_concurrent` runs of a workflow (its `max_concurrent_runs`, copied into each run when it was
//!   submitted) run on workers at once, counting the runs of its name `running` under a live lease. Under READ
//!   COMMITTED a count in one statement could miss a claim committing at the same moment, so a claim of a run with a
//!   limit takes the workflow's advisory lock (`pg_advisory_xact_lock`, held to the end of its transaction) and only
//!   then counts, in a statement of its own, whose snapshot is taken after every claim that held the lock before it
//!   committed: each claim sees all those before it, and the one that would exceed the limit rolls back and looks
//!   for another run. A run with no limit is taken with no lock, in one statement (`CLAIM_FAST`). Runs in a terminal
//!   or the app (`create`, `claim_run`) are not limited, and are counted.
//! - Only a claim ends an epoch: a worker whose lease expired but that nobody took over may still write and heartbeat.
//! - Leases are measured on the database's clock (`now()`), never a worker's, so clocks that differ between machines
//!   do not matter.
//! - A claim ([`Claim`]) is kept alive by a heartbeat on a thread of its own (on the `leases` connection, so it never
//!   waits behind a batch) and given up when dropped; its log is the claim's [`PgRunLog`], fenced by its epoch.

use std::sync::Arc;
use std::time::Duration;

use super::connection::{InDb, Wait};
use super::log::PgRunLog;
use super::{Lease, PgError, PgStore, READY_CHANNEL};
use crate::store::{Claim, Lease as Leased, NewRun, Signal};

/// The longest lease a claim or heartbeat may ask for.
const MAX_LEASE: Duration = Duration::from_secs(24 * 3600);

/// Takes one run by its id (to resume it): one that is ready, paused, or running with an expired lease, and nobody
/// holds. Concurrent claims queue on the row's lock, and each re-checks the condition on the row as the one before
/// left it, so only the first gets it.
const CLAIM_RUN: &str = "UPDATE runs SET status = 'running', owner = $2, epoch = epoch + 1, updated_at = now(),
       wake = false, wake_at = NULL, lease_until = now() + $3::int8 * interval '1 millisecond'
     WHERE id = $1 AND status IN ('ready', 'paused', 'running') AND (owner IS NULL OR lease_until <= now())
     RETURNING epoch";

/// What every kind of run a worker takes must also be: in its queues ($1; none: every queue), and of a workflow
/// that runs fewer than its `max_concurrent` on workers now.
macro_rules! claim_allowed {
    () => {
        "($1::text[] IS NULL OR queue = ANY($1::text[]))
         AND (max_concurrent IS NULL
              OR (SELECT count(*) FROM runs l WHERE l.workflow_name = runs.workflow_name AND l.status = 'running'
                    AND l.owner IS NOT NULL AND l.lease_until > now()) < max_concurrent)"
    };
}
/// The run a worker takes next, locked for the claim's transaction (`FOR UPDATE SKIP LOCKED`): one in the worker's
/// queues ($1; none: every queue) whose workflow runs fewer than its `max_concurrent` on workers now, as this
/// statement's snapshot sees it (`CLAIM_LIMITED` checks it again under the workflow's lock).
///
/// Runs already going on come before runs that have not started, so that a worker dying, or a person deciding, never
/// sends a run to the back of a backlog: first one taken over (`running`, its lease run out: its worker stopped
/// answering), then a paused one something woke (a decision or a cancellation, `wake`; an approval's deadline,
/// `wake_at`), then a paused one a dead worker still holds while something asked of it was not applied, then a
/// `ready` one. Within each, a person's runs (`priority`) first, then the oldest.
///
/// A paused run a dead worker holds (its lease ran out) is taken again when a decision kept for it has not been
/// applied (that worker died between taking the woken run, which clears `wake`, and applying the decision), or when
/// its log has an input beyond its last event (an input is logged before the events it makes: that worker logged the
/// decision and died, or lost its database, before it logged what the decision did; a PostgreSQL restart in that
/// moment once left a run paused for good). Taking it again rebuilds it from its log, which applies the input. A
/// paused run nothing is asked of is left alone.
///
/// Each kind is a `LIMIT 1` of its own on an index of its own (`runs_running_by_name`, `runs_woken`, `runs_waking`,
/// `runs_paused_held`, `runs_ready`), and the statement reads the next kind only when the one before found nothing
/// (a `WITH` query is run only as far as its reader asks): a claim costs the same with a million ended runs in the
/// table as with none. (One `WHERE` over every kind could not use any of them: each claim read the whole table, and
/// a worker took 41 runs/s from a backlog of 1,000 where it takes 180.)
macro_rules! claim_pick {
    () => {
        concat!(
            "WITH taken_over AS (
       SELECT id, workflow_name, max_concurrent, owner AS taken_from FROM runs
       WHERE status = 'running' AND (lease_until IS NULL OR lease_until <= now()) AND ",
            claim_allowed!(),
            " ORDER BY priority DESC, started_at, id LIMIT 1 FOR UPDATE SKIP LOCKED),
     woken AS (
       SELECT id, workflow_name, max_concurrent, NULL::text AS taken_from FROM runs
       WHERE status = 'paused' AND wake AND (owner IS NULL OR lease_until <= now()) AND ",
            claim_allowed!(),
            " ORDER BY priority DESC, started_at, id LIMIT 1 FOR UPDATE SKIP LOCKED),
     due AS (
       SELECT id, workflow_name, max_concurrent, NULL::text AS taken_from FROM runs
       WHERE status = 'paused' AND wake_at <= now() AND (owner IS NULL OR lease_until <= now()) AND ",
            claim_allowed!(),
            " ORDER BY priority DESC, started_at, id LIMIT 1 FOR UPDATE SKIP LOCKED),
     unapplied AS (
       SELECT id, workflow_name, max_concurrent, NULL::text AS taken_from FROM runs
       WHERE status = 'paused' AND owner IS NOT NULL AND lease_until <= now()
         AND (EXISTS (SELECT 1 FROM decisions d WHERE d.run_id = runs.id
                        AND d.round >= (SELECT count(*) FROM inputs i WHERE i.run_id = runs.id
                                          AND i.input->>'input' IN ('decided', 'timedOut')
                                          AND i.input->>'node' = d.node))
              OR EXISTS (SELECT 1 FROM inputs i WHERE i.run_id = runs.id
                           AND (i.input->>'seq')::int8 > (SELECT coalesce(max(e.seq), 0) FROM events e
                                                           WHERE e.run_id = runs.id)))
         AND ",
            claim_allowed!(),
            " ORDER BY priority DESC, started_at, id LIMIT 1 FOR UPDATE SKIP LOCKED),
     ready AS (
       SELECT id, workflow_name, max_concurrent, NULL::text AS taken_from FROM runs
       WHERE status = 'ready' AND ",
            claim_allowed!(),
            " ORDER BY priority DESC, started_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
     SELECT * FROM taken_over UNION ALL SELECT * FROM woken UNION ALL SELECT * FROM due
       UNION ALL SELECT * FROM unapplied UNION ALL SELECT * FROM ready
     LIMIT 1"
        )
    };
}
/// The next run, as the macro says.
const CLAIM_PICK: &str = claim_pick!();

/// The common claim in one statement: picks as `CLAIM_PICK` does and, when the run's workflow has no limit, takes it
/// in the same statement (its epoch); one with a limit is only named (no epoch), for `claim_from` to take under the
/// workflow's lock.
const CLAIM_FAST: &str = concat!(
    "WITH pick AS (",
    claim_pick!(),
    "),
     taken AS (
       UPDATE runs SET status = 'running', owner = $2, epoch = epoch + 1, updated_at = now(),
         wake = false, wake_at = NULL, lease_until = now() + $3::int8 * interval '1 millisecond'
       FROM pick WHERE runs.id = pick.id AND pick.max_concurrent IS NULL
       RETURNING runs.id, runs.epoch)
     SELECT pick.id, pick.taken_from, taken.epoch FROM pick LEFT JOIN taken ON taken.id = pick.id"
);

/// The workflow's lock, held until the claim's transaction ends: claims of runs with a limit take it before they
/// count, one workflow name at a time.
const CLAIM_LOCK: &str = "SELECT pg_advisory_xact_lock(1937339233, hashtext($1))";

/// How many runs of the workflow $1 workers run now (a live lease), counted after its lock was taken: the statement's
/// snapshot is taken after every claim that held the lock before committed.
const CLAIM_LIMITED: &str = "SELECT count(*) FROM runs WHERE workflow_name = $1 AND status = 'running'
       AND owner IS NOT NULL AND lease_until > statement_timestamp()";

/// Takes the picked run (locked by `CLAIM_PICK` in the same transaction).
const CLAIM_TAKE: &str = "UPDATE runs SET status = 'running', owner = $2, epoch = epoch + 1, updated_at = now(),
       wake = false, wake_at = NULL, lease_until = statement_timestamp() + $3::int8 * interval '1 millisecond'
     WHERE id = $1
     RETURNING epoch";

/// How many times a claim looks again after it found the workflow of the run it picked at its limit (another
/// worker's claim committed meanwhile): each look sees those claims, and picks another run.
const CLAIM_TRIES: usize = 8;

/// A run a worker took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub id: String,
    /// The epoch every write to it must name.
    pub epoch: i64,
    /// The holder whose lease had run out while the run was `running`: the run is taken over from it.
    pub taken_over_from: Option<String>,
}

impl PgStore {
    /// Records a run as it starts here (`running`, claimed by this store's owner at epoch 1), before its first event.
    pub async fn create(&self, run: &NewRun<'_>) -> Result<Claim, PgError> {
        let epoch = self.insert(run, Some(lease_ms(self.lease)?)).await?;
        Ok(self.hold(run.id, epoch))
    }

    /// Takes the oldest run that is `ready`, or `running` with an expired lease, for `worker` until `lease` from now:
    /// its id and the epoch every write to it must name. `None` when there is nothing to take.
    pub async fn claim_ready(&self, worker: &str, lease: Duration) -> Result<Option<(String, i64)>, PgError> {
        Ok(self.claim_from(worker, lease, None).await?.map(|c| (c.id, c.epoch)))
    }

    /// Takes the next run of `queues` (none: of every queue) for `worker` until `lease` from now, as the module says:
    /// a person's runs first, then the oldest, never beyond a workflow's `max_concurrent_runs`. `None` when there is
    /// nothing to take.
    pub async fn claim_from(
        &self,
        worker: &str,
        lease: Duration,
        queues: Option<&[String]>,
    ) -> Result<Option<Claimed>, PgError> {
        let (worker, lease, queues) = (worker.to_string(), lease_ms(lease)?, queues.map(<[String]>::to_vec));
        self.call(|s| async move {
            let mut session = s.leases.session(&s.db).await?;
            // Most runs have no limit: taken in one statement.
            let fast = session.statement(CLAIM_FAST).await.in_db(&s)?;
            match session.client.query_opt(&fast, &[&queues, &worker, &lease]).await.in_db(&s)? {
                None => return Ok(None),
                Some(row) => {
                    if let Some(epoch) = row.get::<_, Option<i64>>(2) {
                        return Ok(Some(Claimed { id: row.get(0), epoch, taken_over_from: row.get(1) }));
                    }
                }
            }
            // A run with a limit: counted again under its workflow's lock.
            let (pick, lock, limited, take) = (
                session.statement(CLAIM_PICK).await.in_db(&s)?,
                session.statement(CLAIM_LOCK).await.in_db(&s)?,
                session.statement(CLAIM_LIMITED).await.in_db(&s)?,
                session.statement(CLAIM_TAKE).await.in_db(&s)?,
            );
            for _ in 0..CLAIM_TRIES {
                let tx = session.client.transaction().await.in_db(&s)?;
                let Some(row) = tx.query_opt(&pick, &[&queues]).await.in_db(&s)? else {
                    tx.commit().await.in_db(&s)?;
                    return Ok(None);
                };
                let (id, name, max, from): (String, String, Option<i32>, Option<String>) =
                    (row.get(0), row.get(1), row.get(2), row.get(3));
                if let Some(max) = max {
                    tx.query_one(&lock, &[&name]).await.in_db(&s)?;
                    let running: i64 = tx.query_one(&limited, &[&name]).await.in_db(&s)?.get(0);
                    if running >= i64::from(max) {
                        // Another claim took the last place: look again, seeing it.
                        tx.rollback().await.in_db(&s)?;
                        continue;
                    }
                }
                let epoch: i64 = tx.query_one(&take, &[&id, &worker, &lease]).await.in_db(&s)?.get(0);
                tx.commit().await.in_db(&s)?;
                return Ok(Some(Claimed { id, epoch, taken_over_from: from }));
            }
            Ok(None)
        })
        .await
    }

    /// Takes the run `id` for this store's owner (to resume it): it must be ready, paused, or running with an
    /// expired lease. The claim keeps its lease alive until dropped.
    pub async fn claim_run(&self, id: &str) -> Result<Claim, PgError> {
        let (run, owner, lease) = (id.to_string(), self.owner.to_string(), lease_ms(self.lease)?);
        let epoch = self
            .call(|s| async move {
                let mut session = s.leases.session(&s.db).await?;
                let claim = session.statement(CLAIM_RUN).await.in_db(&s)?;
                let row = session.client.query_opt(&claim, &[&run, &owner, &lease]).await.in_db(&s)?;
                Ok(row.map(|r| r.get::<_, i64>(0)))
            })
            .await?;
        match epoch {
            Some(epoch) => Ok(self.hold(id, epoch)),
            None => {
                let (row, lease) = self.leased(id).await?;
                Err(if row.status.ended() {
                    PgError::Ended { id: id.to_string(), status: row.status.as_str() }
                } else {
                    // Another process claimed it first.
                    PgError::Held { id: id.to_string(), owner: lease.owner.unwrap_or_else(|| "another process".into()) }
                })
            }
        }
    }

    /// Takes the oldest run that is ready, or running with an expired lease, for this store's owner: its id and the
    /// claim, which keeps its lease alive until dropped. `None` when there is nothing to take.
    pub async fn claim_next(&self) -> Result<Option<(Claimed, Claim)>, PgError> {
        let claimed = self.claim_from(&self.owner, self.lease, self.queues.as_deref()).await?;
        Ok(claimed.map(|claimed| {
            let claim = self.hold(&claimed.id, claimed.epoch);
            let claim = match &claimed.taken_over_from {
                Some(from) => claim.taking_over(from.clone(), Some(self.owner.to_string())),
                None => claim,
            };
            (claimed, claim)
        }))
    }

    /// The claim of `run` at `epoch`: a heartbeat thread extends its lease every third of it until the claim is
    /// dropped, which gives the run up; its log is fenced by `epoch`.
    fn hold(&self, run: &str, epoch: i64) -> Claim {
        let (lost_tx, lost_rx) = tokio::sync::watch::channel(false);
        let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
        let (nudge_tx, nudge_rx) = tokio::sync::watch::channel(0u64);
        let lost_tx = Arc::new(lost_tx);
        let log = PgRunLog { signal: Some(lost_tx.clone()), ..self.run_log(run, epoch) };
        // A message beats at once (something was asked of the run); the senders going (the claim dropped) stop it.
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        self.shared.held.lock().unwrap().insert((run.to_string(), epoch), stop.clone());
        let (store, id, lease) = (self.clone(), run.to_string(), self.lease);
        let beat = std::thread::Builder::new()
            .name("switchyard-lease".into())
            .spawn(move || {
                // Ends when the claim is dropped (its senders go), or once the lease is lost.
                while !matches!(stopped.recv_timeout(lease / 3), Err(std::sync::mpsc::RecvTimeoutError::Disconnected)) {
                    match store.heartbeat(&id, epoch, lease).wait() {
                        Ok(Beat::Held { cancel_requested, woken }) => {
                            if cancel_requested {
                                cancel_tx.send_replace(true);
                            }
                            if woken {
                                nudge_tx.send_modify(|n| *n += 1);
                            }
                        }
                        Ok(Beat::Lost) => {
                            lost_tx.send_replace(true);
                            return;
                        }
                        // The database did not answer: the next beat tries again, before the lease runs out.
                        Err(_) => {}
                    }
                }
            })
            .ok();
        let guard = LeaseGuard {
            store: self.clone(),
            run: run.to_string(),
            epoch,
            stop: Some(stop),
            beat,
            abandoned: false,
            wake_at_ms: None,
        };
        Claim::lease(Box::new(guard), Arc::new(log), Signal::watching(lost_rx), Signal::watching(cancel_rx), nudge_rx)
    }
    /// Extends the lease to `lease` from now, while `epoch` holds, and says whether the run's cancellation was asked
    /// for meanwhile; lost when another claim ended the epoch.
    pub async fn heartbeat(&self, run: &str, epoch: i64, lease: Duration) -> Result<Beat, PgError> {
        let (run, lease) = (run.to_string(), lease_ms(lease)?);
        self.call(|s| async move {
            let mut session = s.leases.session(&s.db).await?;
            let beat = session
                .statement(
                    "UPDATE runs SET lease_until = now() + $3::int8 * interval '1 millisecond'
                     WHERE id = $1 AND epoch = $2 AND owner IS NOT NULL
                     RETURNING cancel_requested, wake",
                )
                .await
                .in_db(&s)?;
            let row = session.client.query_opt(&beat, &[&run, &epoch, &lease]).await.in_db(&s)?;
            Ok(match row {
                Some(row) => Beat::Held { cancel_requested: row.get(0), woken: row.get(1) },
                None => Beat::Lost,
            })
        })
        .await
    }

    /// Gives the run up, while `epoch` holds: no owner, no lease. A run still `running` becomes `ready`, for another
    /// worker to take at once; so does one that paused while a decision or a cancellation came for it (`wake`). One
    /// that paused otherwise stays so, to be taken again at `wake_at_ms` (an approval's deadline) if given; one that
    /// ended stays so. False when another claim had ended the epoch.
    pub async fn release(&self, run: &str, epoch: i64, wake_at_ms: Option<i64>) -> Result<bool, PgError> {
        let run = run.to_string();
        self.call(|s| async move {
            let mut session = s.leases.session(&s.db).await?;
            let release = session
                .statement(
                    "WITH given AS (
                       UPDATE runs SET owner = NULL, lease_until = NULL, updated_at = now(),
                         status = CASE WHEN status = 'running' OR (status = 'paused' AND wake) THEN 'ready'
                                       ELSE status END,
                         wake_at = CASE WHEN status = 'paused' AND $4::int8 IS NOT NULL
                                        THEN to_timestamp($4::int8 / 1000.0) END
                       WHERE id = $1 AND epoch = $2 AND owner IS NOT NULL
                       RETURNING id, status)
                     SELECT CASE WHEN status = 'ready' THEN pg_notify($3, id) END IS NULL FROM given",
                )
                .await
                .in_db(&s)?;
            let given = session.client.query(&release, &[&run, &epoch, &READY_CHANNEL, &wake_at_ms]).await;
            Ok(given.in_db(&s)?.len() == 1)
        })
        .await
    }

    /// Who holds the run, at which epoch, for how long yet.
    pub async fn lease(&self, run: &str) -> Result<Lease, PgError> {
        self.leased(run).await.map(|(_, lease)| lease)
    }
}

/// Keeps a claim's lease alive (its heartbeat thread) and gives the run up when dropped.
struct LeaseGuard {
    store: PgStore,
    run: String,
    epoch: i64,
    stop: Option<std::sync::mpsc::Sender<()>>,
    beat: Option<std::thread::JoinHandle<()>>,
    abandoned: bool,
    wake_at_ms: Option<i64>,
}

/// What a heartbeat found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beat {
    /// The claim holds; someone may have asked that the run be cancelled, or asked something else of it since it
    /// was claimed (`woken`: a decision; `team::Requests`).
    Held { cancel_requested: bool, woken: bool },
    /// Another claim ended its epoch.
    Lost,
}

impl LeaseGuard {
    fn stop_beating(&mut self) {
        self.store.shared.held.lock().unwrap().remove(&(self.run.clone(), self.epoch));
        drop(self.stop.take());
        if let Some(beat) = self.beat.take() {
            let _ = beat.join();
        }
    }
}

impl Leased for LeaseGuard {
    fn abandon(&mut self) {
        self.stop_beating();
        self.abandoned = true;
    }

    fn wake_at(&mut self, at_ms: i64) {
        self.wake_at_ms = Some(at_ms);
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        // The heartbeat stops first, so that it never extends a lease given up.
        self.stop_beating();
        // Refused (false) when another claim ended the epoch: the run is someone else's, nothing to give up. Failed
        // (the database is away): the lease runs out by itself.
        if !self.abandoned {
            let _ = self.store.release(&self.run, self.epoch, self.wake_at_ms).wait();
        }
    }
}

/// A lease in milliseconds, as the statements take it.
pub(super) fn lease_ms(lease: Duration) -> Result<i64, PgError> {
    if lease.is_zero() || lease > MAX_LEASE {
        return Err(PgError::BadLease { ms: lease.as_millis() });
    }
    Ok(lease.as_millis().max(1) as i64)
}
