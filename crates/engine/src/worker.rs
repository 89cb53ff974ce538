//! A worker (`switchyard worker`, feature `postgres`): takes runs from a PostgreSQL run store that other workers and
//! people share, and runs them through the session, as any front end does.
//!
//! Invariants:
//! - A run is taken with a claim (`PgStore::claim_next`: one statement, a lease and a fencing epoch) and worked only
//!   while the claim holds: its heartbeat keeps the lease alive, its log commits only while the epoch holds. When the
//!   claim is lost (another worker took the run over after the lease ran out, or a write failed), the run stops here
//!   at once: whatever this worker would write next is refused anyway.
//! - At most `jobs` runs at once. A free slot takes the oldest ready run (or one whose lease expired); with nothing to
//!   take, the worker waits for an announcement (`PgStore::listen`) or the poll interval, whichever comes first:
//!   announcements can be missed, and an expired lease announces nothing.
//! - A decision or a cancellation for a run it holds is heard at once (`PgStore::listen_wakes`), or at the run's
//!   next heartbeat when the announcement was missed.
//! - A run goes on from its log (`session::drive`, taking what was asked of it through the store): nodes that
//!   completed are not run again; nodes that were in flight when its last worker died run again.
//! - A run that pauses (it waits for a person) is parked: its status says so and the claim is given up, so the slot
//!   is free. A run that cannot be opened or rebuilt here is abandoned: tried again only after its lease. That
//!   includes a run this worker cannot run: its answers file cannot be read here, or a model it needs names a
//!   provider this worker's settings do not configure (`UNKNOWN_PROVIDER`): another worker that has it takes it.
//! - It registers as it starts (`PgStore::register_worker`: its name, queues, slots and lease) and answers every third
//!   of its lease (`worker_beat`) until it stops (`worker_stopped`), so `switchyard workers` lists it.
//! - On shutdown the worker takes nothing more, lets its runs finish (or pause) for `grace`, then stops the rest and
//!   gives them up: they are `ready` at once for another worker, which runs their in-flight nodes again.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::result::RunStatus;
use crate::session::{self, Drive, SessionError, Sinks};
use crate::store::postgres::PgStore;
use crate::store::{Store, StoreError};

/// How a worker works.
#[derive(Debug, Clone)]
pub struct Options {
    /// Runs at once.
    pub jobs: usize,
    /// How often it looks for runs when nothing is announced.
    pub poll: Duration,
    /// How long its runs may take to finish once it is told to stop, before they are given up.
    pub grace: Duration,
    /// Code steps run without the trust file's consent (`--allow-code`).
    pub allow_code: bool,
}

impl Options {
    /// The poll interval for a lease: half of it (so an expired lease is noticed within half a lease), from 100 ms
    /// to 5 s.
    pub fn poll_for(lease: Duration) -> Duration {
        (lease / 2).clamp(Duration::from_millis(100), Duration::from_secs(5))
    }
}

/// What a worker tells its shell, as it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// It took a run; `taken_over_from` held it until its lease ran out while it ran (it stopped answering).
    Claimed { run: String, taken_over_from: Option<String> },
    /// A run ended (completed, failed or cancelled) here.
    Ended { run: String, status: RunStatus, log_error: Option<String> },
    /// A run waits for a person: parked, and given up.
    Parked { run: String, pending: Vec<String> },
    /// Another worker took the run over, or its log could not be written: it stopped here.
    Lost { run: String },
    /// A run could not be opened or continued here; it is left for its lease to run out.
    Abandoned { run: String, code: &'static str, message: String },
    /// The worker was told to stop while the run went on: given up, for another worker.
    Released { run: String },
    /// Looking for runs failed (the database is away): it tries again at the next poll.
    Unavailable { code: &'static str, message: String },
    /// Nothing to take: it waits for an announcement or the next poll (said once each time it runs out of work).
    Idle,
    /// It was told to stop: it takes nothing more and lets this many runs finish.
    Stopping { running: usize },
}

/// How a worker ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Runs it took.
    pub claimed: u64,
    /// Writes the database refused because their claim no longer held.
    pub stale_writes: u64,
}

/// Why a worker cannot start.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("a worker takes runs from a PostgreSQL run store (postgres://…), not {given}")]
    NotPostgres { given: String },
    #[error("--jobs 0: a worker runs at least one run at a time")]
    NoJobs,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl WorkerError {
    pub fn code(&self) -> &'static str {
        match self {
            WorkerError::NotPostgres { .. } => "WORKER_NEEDS_POSTGRES",
            WorkerError::NoJobs => "WORKER_NO_JOBS",
            WorkerError::Store(e) => e.code(),
        }
    }
}

/// Opens the store a worker takes runs from: `db` must be a PostgreSQL URL; claims last `lease`.
pub fn open(db: &str, lease: Duration) -> Result<PgStore, WorkerError> {
    if !(db.starts_with("postgres://") || db.starts_with("postgresql://")) {
        return Err(WorkerError::NotPostgres { given: db.to_string() });
    }
    let store = PgStore::open(db).map_err(StoreError::from)?;
    Ok(store.with_lease(lease).map_err(StoreError::from)?)
}

/// Works runs from `store` until `shutdown` completes, then stops as the module says. `report` hears what happens.
pub async fn work(
    store: PgStore,
    options: Options,
    report: Arc<dyn Fn(Report) + Send + Sync>,
    shutdown: impl Future<Output = ()>,
) -> Result<Summary, WorkerError> {
    if options.jobs == 0 {
        return Err(WorkerError::NoJobs);
    }
    let listener = store.listen().await.map_err(StoreError::from)?;
    // What is asked of the runs it holds (a decision, a cancellation) reaches them at once, not at the next beat.
    let _wakes = store.listen_wakes().await.map_err(StoreError::from)?;
    // It says who it is, then answers every third of its lease while it works (`switchyard workers`).
    store.register_worker(options.jobs).await.map_err(StoreError::from)?;
    let beating = store.clone();
    let heartbeat = tokio::spawn(async move {
        let every = beating.lease_length() / 3;
        loop {
            tokio::time::sleep(every).await;
            // The database did not answer: the next beat tries again.
            let _ = beating.worker_beat().await;
        }
    });
    let shared: Arc<dyn Store> = Arc::new(store.clone());
    let slots = Arc::new(tokio::sync::Semaphore::new(options.jobs));
    let (stop_runs, stopping) = tokio::sync::watch::channel(false);
    let mut runs = tokio::task::JoinSet::new();
    let mut summary = Summary::default();
    let mut idle = false;
    tokio::pin!(shutdown);
    loop {
        while runs.try_join_next().is_some() {}
        let slot = tokio::select! {
            biased;
            _ = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let next = store.claim_next().await;
        match next {
            Ok(Some((claimed, claim))) => {
                let run = claimed.id;
                summary.claimed += 1;
                idle = false;
                report(Report::Claimed { run: run.clone(), taken_over_from: claimed.taken_over_from });
                let job = Job { store: shared.clone(), run, report: report.clone(), allow_code: options.allow_code };
                let stopping = stopping.clone();
                runs.spawn(async move {
                    job.work(claim, stopping).await;
                    drop(slot);
                });
                // Another may be ready: look again at once.
                continue;
            }
            Ok(None) if !idle => {
                idle = true;
                report(Report::Idle);
            }
            Ok(None) => {}
            Err(e) => report(Report::Unavailable { code: e.code(), message: e.to_string() }),
        }
        drop(slot);
        tokio::select! {
            biased;
            _ = &mut shutdown => break,
            _ = listener.notified() => {}
            _ = tokio::time::sleep(options.poll) => {}
        }
    }
    // Runs that ended since the loop last looked are not going on.
    while runs.try_join_next().is_some() {}
    report(Report::Stopping { running: runs.len() });
    let finished = tokio::time::timeout(options.grace, async { while runs.join_next().await.is_some() {} }).await;
    if finished.is_err() {
        stop_runs.send_replace(true);
        while runs.join_next().await.is_some() {}
    }
    heartbeat.abort();
    // Said when it can be: a worker whose database is away is listed as not answering instead.
    let _ = store.worker_stopped().await;
    summary.stale_writes = store.stale_writes();
    Ok(summary)
}

/// One claimed run.
struct Job {
    store: Arc<dyn Store>,
    run: String,
    report: Arc<dyn Fn(Report) + Send + Sync>,
    allow_code: bool,
}

impl Job {
    async fn work(self, claim: crate::store::Claim, mut stopping: tokio::sync::watch::Receiver<bool>) {
        let lost = claim.lost();
        let (store, run, allow_code) = (self.store.clone(), self.run.clone(), self.allow_code);
        // Opening reads the run and the settings: blocking work, off the runtime's threads.
        let opened = tokio::task::spawn_blocking(move || session::open_claimed(store, &run, claim, allow_code))
            .await
            .expect("opening a run does not panic");
        let resuming = match opened {
            Ok(resuming) => resuming,
            Err(e) => return self.abandoned(&e),
        };
        let drive = Drive::stored(resuming).taking_requests();
        let carried = async { Ok::<_, SessionError>(session::drive(drive, Sinks::default()).await?.finish().await) };
        let run = self.run.clone();
        // Dropping the run (lost, or stopped) drops its claim: given up, or refused when it is someone else's now.
        tokio::select! {
            outcome = carried => match outcome {
                // Its log stopped taking writes before the end: what it did after that is not kept.
                Ok(_) if lost.happened() => (self.report)(Report::Lost { run }),
                Ok(outcome) if outcome.result.status == RunStatus::Paused => {
                    let pending = outcome.result.pending.iter().map(|p| p.node.clone()).collect();
                    (self.report)(Report::Parked { run, pending })
                }
                Ok(outcome) => {
                    let (status, log_error) = (outcome.result.status, outcome.log_error);
                    (self.report)(Report::Ended { run, status, log_error })
                }
                Err(e) => self.abandoned(&e),
            },
            _ = lost.clone().wait() => (self.report)(Report::Lost { run }),
            _ = stopping.wait_for(|s| *s) => (self.report)(Report::Released { run }),
        }
    }

    fn abandoned(&self, e: &SessionError) {
        (self.report)(Report::Abandoned { run: self.run.clone(), code: e.code(), message: e.to_string() });
    }
}
