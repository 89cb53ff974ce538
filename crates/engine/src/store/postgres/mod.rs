//! The run store on PostgreSQL (feature `postgres`): the runs, events and inputs of the SQLite store
//! (`store::sqlite`), kept in one database that several worker processes share, with leases so that each run is
//! worked by one of them.
//!
//! Invariants:
//! - The store is a [`Store`] as the SQLite one is, and speaks the store's vocabulary (`RunRow`, `StoredStatus`,
//!   `StoredRun`): its claims ([`Claim`]) are leases (`claims`), their log is the claim's fenced [`PgRunLog`] (`log`).
//! - Every error has a stable code ([`PgError::code`]), the SQLite store's where the meaning is the same; messages name
//!   the database (`host:port/db`), never its password.
//!
//! The folder, a module per job, each with the invariants it keeps:
//! - `connection`: the connections and the store's private runtime, which every call goes through; timeouts.
//! - `schema`: the tables, versioned in `switchyard_schema`, migrated under an advisory lock.
//! - `runs`: a run recorded (submitted for a worker) and read back (rows, stored runs, events, inputs).
//! - `claims`: claims and leases (one statement per claim, a fencing epoch, a heartbeat), given up when dropped.
//! - `log`: the fenced run log: a batch is one transaction, committed only while its epoch holds.
//! - `listeners`: `LISTEN/NOTIFY`: runs that became ready, wakes for held runs, committed batches.
//! - `team`: what a team server keeps beside the runs (decisions, tokens, deliveries, firings, workflow versions).
//! - `prune`: retention: ended runs deleted a batch at a time, then the delivery keys and firings that outlived them.
//! - `workers`: the workers that take runs: each says who it is as it starts and answers while it runs.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_postgres::Config;

use crate::events::Event;
use crate::log::RunLog;
use crate::store::{Claim, NewRun, Prune, Pruned, RunQuery, RunRow, Store, StoreError, StoredRun};

mod claims;
mod connection;
mod listeners;
mod log;
mod prune;
mod runs;
pub use runs::Counts;
mod schema;
pub mod team;
mod workers;
pub use workers::WorkerRow;

pub use claims::{Beat, Claimed};
pub use listeners::{Follower, Listener, WakeListener};
pub use log::PgRunLog;
pub use schema::latest;

use claims::lease_ms;
pub use connection::Wait;
use connection::{describe, password_for, Conn, OwnRuntime, Shared, CALL_TIMEOUT};
use log::Unclaimed;

/// The channel each committed batch is announced on (payload: the run id).
pub const CHANNEL: &str = "switchyard_runs";

/// The channel a run that became `ready` is announced on (payload: the run id): what idle workers listen to.
pub const READY_CHANNEL: &str = "switchyard_ready";

/// Where a decision or a cancellation for a held run is announced (payload: the run id), for its holder.
pub const WAKE_CHANNEL: &str = "switchyard_wake";

/// The lease a claim takes unless told otherwise ([`PgStore::with_lease`]): how long a run whose process died waits
/// before a worker takes it over.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// Why the PostgreSQL run store cannot do what was asked. Messages name the database (never its password).
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error("the run database URL is not valid: {detail}")]
    Url { detail: String },
    #[error("cannot connect to the run database {db}: {detail}")]
    Connect { db: String, detail: String },
    #[error(
        "the run database {db} was written by a newer Switchyard (schema {found}; this one knows up to {known}); it \
         was left untouched: upgrade Switchyard"
    )]
    TooNew { db: String, found: i64, known: i64 },
    #[error("cannot bring the run database {db} from schema {from} to {to}: {detail}")]
    Migrate { db: String, from: i64, to: i64, detail: String },
    #[error("run database {db}: {detail}")]
    Query { db: String, detail: String },
    #[error("the run database {db} did not answer within {} s", CALL_TIMEOUT.as_secs())]
    Timeout { db: String },
    #[error("no run `{id}` in the run database {db}")]
    NoSuchRun { db: String, id: String },
    #[error(
        "`{prefix}` begins the ids of several runs ({}): give more of the id",
        candidates.join(", ")
    )]
    AmbiguousRun { prefix: String, candidates: Vec<String> },
    #[error("run `{id}` is in the run database {db} already")]
    RunExists { db: String, id: String },
    #[error("run `{id}` is held by {owner} (its lease has not expired)")]
    Held { id: String, owner: String },
    #[error("run `{id}` has ended ({status}); there is nothing to claim")]
    Ended { id: String, status: &'static str },
    #[error(
        "run `{run}` is no longer this worker's: it was claimed with epoch {epoch} and is now at epoch {current}; \
         the write was refused and nothing of it kept"
    )]
    StaleEpoch { run: String, epoch: i64, current: i64 },
    #[error("run `{run}`: an event of this number is in the run log already ({detail}); the batch was refused")]
    DuplicateSeq { run: String, detail: String },
    #[error("the log of run `{run}` was given event #{seq} of run `{other}`; the batch was refused")]
    ForeignEvent { run: String, other: String, seq: u64 },
    #[error("run `{run}` in the run database {db} has an unreadable {what}: {detail}")]
    Unreadable { db: String, run: String, what: &'static str, detail: String },
    #[error("a lease of {ms} ms: a lease is from 1 ms to 24 h")]
    BadLease { ms: u128 },
    #[error("the run store's connection task ended without an answer: {detail}")]
    Internal { detail: String },
    #[error("a token named `{name}` exists already (tokens are never reused; pick another name)")]
    TokenExists { name: String },
}

impl PgError {
    /// A stable code for the window and scripts (the SQLite store's where the meaning is the same).
    pub fn code(&self) -> &'static str {
        match self {
            PgError::Url { .. } => "PG_URL",
            PgError::Connect { .. } => "PG_CONNECT",
            PgError::TooNew { .. } => "STORE_TOO_NEW",
            PgError::Migrate { .. } => "PG_MIGRATE",
            PgError::Query { .. } => "STORE_QUERY",
            PgError::Timeout { .. } => "PG_TIMEOUT",
            PgError::NoSuchRun { .. } => "NO_SUCH_RUN",
            PgError::AmbiguousRun { .. } => "AMBIGUOUS_RUN_ID",
            PgError::RunExists { .. } => "RUN_EXISTS",
            PgError::Held { .. } => "RUN_IN_USE",
            PgError::Ended { .. } => "NOT_RESUMABLE",
            PgError::StaleEpoch { .. } => "RUN_EPOCH_STALE",
            PgError::DuplicateSeq { .. } => "RUN_LOG_DUPLICATE",
            PgError::ForeignEvent { .. } => "RUN_LOG_FOREIGN_EVENT",
            PgError::Unreadable { .. } => "STORE_UNREADABLE",
            PgError::BadLease { .. } => "PG_BAD_LEASE",
            PgError::Internal { .. } => "PG_INTERNAL",
            PgError::TokenExists { .. } => "TOKEN_EXISTS",
        }
    }
}

/// Who works a run, and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The worker that claimed it last, until it releases it.
    pub owner: Option<String>,
    /// How many times it was claimed.
    pub epoch: i64,
    /// Until the lease expires, on the database's clock; negative once it has.
    pub expires_in_ms: Option<i64>,
}

/// The run store on a PostgreSQL database. Cheap to clone: clones share the connections.
#[derive(Clone)]
pub struct PgStore {
    shared: Arc<Shared>,
    /// Kept apart from `shared`, which the runtime's tasks hold: the runtime must never be dropped by one of its own.
    runtime: Arc<OwnRuntime>,
    /// Who claims runs through this store (`host:pid` unless told), and for how long at a time.
    owner: Arc<str>,
    lease: Duration,
    /// The queues its claims take from (`claim_next`); none: every queue.
    queues: Option<Arc<[String]>>,
}

/// `host:pid`: who claims runs, as `runs` and other workers see it.
fn default_owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{}", std::process::id())
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`) and brings its schema up to date.
    pub fn open(url: &str) -> Result<PgStore, PgError> {
        let mut config = Config::from_str(url).map_err(|e| PgError::Url { detail: e.to_string() })?;
        let db = describe(&config);
        // As libpq does: a URL without a password takes $PGPASSWORD, else the matching line of the password file.
        if config.get_password().is_none() {
            if let Some(password) = password_for(&config) {
                config.password(password);
            }
        }
        config.application_name("switchyard");
        config.connect_timeout(Duration::from_secs(10));
        // A worker stopped inside a transaction would otherwise keep its rows locked; ours last milliseconds.
        let options = match config.get_options() {
            Some(given) => format!("{given} -c idle_in_transaction_session_timeout=10s"),
            None => "-c idle_in_transaction_session_timeout=10s".to_string(),
        };
        config.options(&options);
        // One thread is enough: it only moves bytes between the sockets and the callers, who wait anyway.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("switchyard-postgres")
            .enable_all()
            .build()
            .map_err(|e| PgError::Internal { detail: format!("cannot start its runtime: {e}") })?;
        let conn = |config: &Config| Conn { config: config.clone(), session: tokio::sync::Mutex::new(None) };
        let store = PgStore {
            shared: Arc::new(Shared {
                main: conn(&config),
                leases: conn(&config),
                db,
                stale_writes: AtomicU64::new(0),
                held: Default::default(),
            }),
            runtime: Arc::new(OwnRuntime(Some(runtime))),
            owner: Arc::from(default_owner()),
            lease: DEFAULT_LEASE,
            queues: None,
        };
        store.call(|s| async move { s.migrate().await }).wait()?;
        Ok(store)
    }

    /// The same store, whose claims take `lease` at a time.
    pub fn with_lease(mut self, lease: Duration) -> Result<PgStore, PgError> {
        lease_ms(lease)?;
        self.lease = lease;
        Ok(self)
    }

    /// The same store, whose claims name `owner`.
    pub fn with_owner(mut self, owner: &str) -> PgStore {
        self.owner = Arc::from(owner);
        self
    }

    /// The same store, whose claims (`claim_next`) take only from `queues` (none: from every queue).
    pub fn with_queues(mut self, queues: Option<Vec<String>>) -> PgStore {
        self.queues = queues.map(Arc::from);
        self
    }

    /// The queues its claims take from; none: every queue.
    pub fn queues(&self) -> Option<&[String]> {
        self.queues.as_deref()
    }

    /// Who claims runs through this store.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// How long a claim lasts without a heartbeat.
    pub fn lease_length(&self) -> Duration {
        self.lease
    }

    /// The database, as messages name it: `host:port/dbname`.
    pub fn database(&self) -> &str {
        &self.shared.db
    }

    /// Writes refused so far because their epoch no longer held.
    pub fn stale_writes(&self) -> u64 {
        self.shared.stale_writes.load(Ordering::Relaxed)
    }
}

/// The blocking adapter over the async core: what the session and the SQLite store's callers use.
impl Store for PgStore {
    fn location(&self) -> String {
        self.shared.db.clone()
    }
    fn create(&self, run: &NewRun) -> Result<Claim, StoreError> {
        Ok(PgStore::create(self, run).wait()?)
    }
    fn submit(&self, run: &NewRun) -> Result<(), StoreError> {
        Ok(PgStore::submit(self, run).wait()?)
    }
    fn claim(&self, id: &str) -> Result<Claim, StoreError> {
        Ok(self.claim_run(id).wait()?)
    }
    fn list(&self) -> Result<Vec<RunRow>, StoreError> {
        Ok(PgStore::list(self).wait()?)
    }
    fn recent(&self, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        Ok(PgStore::recent(self, limit).wait()?)
    }
    fn find(&self, query: &RunQuery) -> Result<Vec<RunRow>, StoreError> {
        Ok(PgStore::find(self, query).wait()?)
    }
    fn resolve(&self, id: &str) -> Result<String, StoreError> {
        Ok(PgStore::resolve(self, id).wait()?)
    }
    fn no_such_run(&self, id: &str) -> StoreError {
        PgError::NoSuchRun { db: self.shared.db.clone(), id: id.to_string() }.into()
    }
    fn get(&self, id: &str) -> Result<RunRow, StoreError> {
        Ok(PgStore::get(self, id).wait()?)
    }
    fn load(&self, id: &str) -> Result<StoredRun, StoreError> {
        Ok(PgStore::load(self, id).wait()?)
    }
    fn events(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        Ok(PgStore::events(self, id).wait()?)
    }
    fn events_after(&self, id: &str, after: u64) -> Result<Vec<Event>, StoreError> {
        Ok(PgStore::events_after(self, id, after, u32::MAX >> 1).wait()?)
    }
    /// The claim's own log, fenced by its epoch. A claim always has one here; were it given one of another store,
    /// its writes are refused rather than written around the fence.
    fn run_log(self: Arc<Self>, claim: &Claim) -> Arc<dyn RunLog> {
        claim.log().unwrap_or_else(|| Arc::new(Unclaimed))
    }
    fn requests(&self, id: &str) -> Result<crate::store::Requests, StoreError> {
        Ok(PgStore::requests(self, id).wait()?)
    }
    fn prune(&self, prune: &Prune) -> Result<Pruned, StoreError> {
        Ok(PgStore::prune(self, prune).wait()?)
    }
    fn children(&self, run: &str) -> Result<Vec<crate::store::ChildRun>, StoreError> {
        Ok(PgStore::children(self, run).wait()?)
    }
}
