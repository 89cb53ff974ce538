//! The run store on PostgreSQL (feature `postgres`): the runs, events and inputs of the SQLite store (`store.rs`),
//! kept in one database that several worker processes share, with leases so that each run is worked by one of them.
//!
//! Invariants:
//! - The tables are the SQLite store's (`runs`, `events`, `inputs`), and a run also has an `owner` (the worker working
//!   it), a `lease_until` and an `epoch`. Its status is the engine's, or `ready` (waiting for a worker).
//! - The schema is versioned in `switchyard_schema`, one row per migration applied; migrations run in one transaction
//!   under an advisory lock, so workers that start together apply each once, and a database written by a newer
//!   Switchyard is refused before anything is written to it.
//! - A claim (`claim_ready`) is one statement: it takes a run that is `ready`, or `running` with an expired lease, or
//!   `paused` and woken (a decision or cancellation came, or an approval's deadline passed) and held by nobody (or
//!   by a worker whose lease expired: it died between pausing the run and giving it up), skipping rows another
//!   transaction holds, sets its owner and lease and increases its epoch. So two claimers never
//!   get the same run, and each claim of a run has an epoch higher than every earlier one.
//! - Every write names the epoch it was claimed with and commits only while the run still has it: a batch locks the
//!   run's row first (the conditional `UPDATE`), so a claim that bumps the epoch comes entirely before or after it. A
//!   write from an epoch that no longer holds is refused whole (`PgError::StaleEpoch`) and counted. Only a claim ends
//!   an epoch: a worker whose lease expired but that nobody took over may still write and heartbeat.
//! - Leases are measured on the database's clock (`now()`), never a worker's, so clocks that differ between machines
//!   do not matter.
//! - A batch is one transaction: its events, inputs and status, all or none. `(run_id, seq)` is the events' primary
//!   key: an event numbered twice is refused (`PgError::DuplicateSeq`), with its batch.
//! - Each committed batch sends one NOTIFY on [`CHANNEL`] (payload: the run id), from inside its transaction, so
//!   listeners hear only of what committed. One per batch, not per event: NOTIFY takes a global lock at commit. A
//!   notification sent while nobody listens is lost, so listeners poll as well.
//! - A run that becomes `ready` (created for workers, or given up while running) is announced on [`READY_CHANNEL`]
//!   (payload: the run id), from the statement that makes it so: idle workers wake on it ([`PgStore::listen`]).
//! - A decision or a cancellation for a run that someone holds is announced on [`WAKE_CHANNEL`] (payload: the run
//!   id): a holder that listens ([`PgStore::listen_wakes`]) beats its heartbeat at once, which reads what was asked,
//!   rather than at the next third of its lease. Announcements can be missed; the heartbeat reads it anyway.
//! - The store is a [`Store`] as the SQLite one is: its claims ([`Claim`]) are leases, kept alive by a heartbeat on a
//!   thread of their own (on the `leases` connection, so it never waits behind a batch) and given up when dropped;
//!   their log is the claim's [`PgRunLog`]. A log whose write failed writes nothing more and says the claim is lost:
//!   a run whose log has a gap must not go on writing after it, so it stops, and whoever claims it next continues
//!   from what the log holds.
//! - Every call may be made from any thread: a plain one, or inside a tokio runtime of either flavour (`block`).
//! - A call that fails because the connection broke, or took longer than 30 s (`PG_TIMEOUT`), is not retried: a
//!   batch might have committed before its answer was lost. The next call connects again if the connection broke.
//!
//! Why `tokio-postgres` under a runtime of the store's own rather than the synchronous `postgres` crate: `postgres` is
//! `tokio-postgres` driven by `Runtime::block_on` on a runtime it keeps, and `block_on` panics on a thread that is
//! already inside a runtime ("Cannot start a runtime from within a runtime"). The engine calls its store and run log
//! from such threads (the shells' `#[tokio::main]`, `#[tokio::test]`), and the committer that calls `write_batch` is
//! a plain thread: the store must work from both. Wrapping calls in `tokio::task::block_in_place` would only move the
//! panic: it works on a multi-thread runtime and panics on a current-thread one. Instead the store keeps its
//! connections on a private one-thread runtime; a call hands its work to that runtime and waits for the answer on a
//! std channel, which enters no runtime on the caller's thread. The caller's thread is blocked while it waits, as
//! with the SQLite store; the async work underneath is what a future `worker` can await without blocking.

use std::collections::BTreeMap;
use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustc_hash::FxHashMap;
use serde::Serialize;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, IsolationLevel, NoTls, Statement};

use crate::events::Event;
use crate::log::{LogError, LogItem, RunLog};
use crate::result::{RunStatus, Usage};
use crate::run::{Recorded, Recording, RunOptions};
use crate::store::{Claim, Lease as Leased, NewRun, RunRow, Signal, Store, StoreError, StoredRun, StoredStatus};
use crate::Workflow;

#[path = "team.rs"]
pub mod team;

/// The channel each committed batch is announced on (payload: the run id).
pub const CHANNEL: &str = "switchyard_runs";

/// The channel a run that became `ready` is announced on (payload: the run id): what idle workers listen to.
pub const READY_CHANNEL: &str = "switchyard_ready";

/// Where a decision or a cancellation for a held run is announced (payload: the run id), for its holder.
pub const WAKE_CHANNEL: &str = "switchyard_wake";

/// The lease a claim takes unless told otherwise ([`PgStore::with_lease`]): how long a run whose process died waits
/// before a worker takes it over.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The longest a call waits for the database; then it fails with `PG_TIMEOUT`.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest lease a claim or heartbeat may ask for.
const MAX_LEASE: Duration = Duration::from_secs(24 * 3600);

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

/// What a run is as the database keeps it: the engine's statuses, `ready` (waiting for a worker), and `interrupted`
/// for a run whose row says `running` but whose lease expired (a worker will claim it again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PgStatus {
    Ready,
    Running,
    Paused,
    Interrupted,
    Completed,
    Failed,
    Cancelled,
}

impl PgStatus {
    fn from_db(status: &str, live: bool) -> PgStatus {
        match status {
            "ready" => PgStatus::Ready,
            "running" if live => PgStatus::Running,
            "running" => PgStatus::Interrupted,
            "paused" => PgStatus::Paused,
            "completed" => PgStatus::Completed,
            "cancelled" => PgStatus::Cancelled,
            _ => PgStatus::Failed,
        }
    }

    /// Whether the run has ended (completed, failed or cancelled): nothing more is written to it.
    pub fn ended(self) -> bool {
        matches!(self, PgStatus::Completed | PgStatus::Failed | PgStatus::Cancelled)
    }

    /// As the history shows it.
    pub fn stored(self) -> StoredStatus {
        match self {
            PgStatus::Ready => StoredStatus::Ready,
            PgStatus::Running => StoredStatus::Running,
            PgStatus::Paused => StoredStatus::Paused,
            PgStatus::Interrupted => StoredStatus::Interrupted,
            PgStatus::Completed => StoredStatus::Completed,
            PgStatus::Failed => StoredStatus::Failed,
            PgStatus::Cancelled => StoredStatus::Cancelled,
        }
    }
}

/// One run of the history (the SQLite store's `RunRow`, with the status as the database keeps it and its lease).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PgRunRow {
    pub id: String,
    /// The workflow's name.
    pub workflow: String,
    /// The file it was run from, when it had one.
    pub workflow_ref: Option<String>,
    pub answers_path: Option<String>,
    pub status: PgStatus,
    /// RFC 3339, UTC, milliseconds.
    pub started: String,
    /// From start to end, or to now while it runs or waits (to its last event when it was interrupted).
    pub duration_ms: u64,
    /// Approvals it waits for.
    pub pending: Vec<String>,
    pub lease: Lease,
    /// Tokens its model calls used, per `provider/model` (kept when it pauses or ends).
    pub usage: BTreeMap<String, Usage>,
    /// The evaluation it was a case of, if any.
    pub eval: Option<String>,
}

impl PgRunRow {
    /// The row as every store gives it.
    pub fn into_row(self) -> RunRow {
        RunRow {
            id: self.id,
            workflow: self.workflow,
            workflow_ref: self.workflow_ref,
            answers_path: self.answers_path,
            status: self.status.stored(),
            started: self.started,
            duration_ms: self.duration_ms,
            pending: self.pending,
            usage: self.usage,
            tokens: 0,
            cost: None,
            eval: self.eval,
        }
        .counted()
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

/// What a rebuild of a stored run needs (the SQLite store's `StoredRun`).
pub struct PgStoredRun {
    pub row: PgRunRow,
    pub workflow: Workflow,
    pub options: RunOptions,
    pub recording: Recording,
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
}

struct Shared {
    db: String,
    /// Reads and batches.
    main: Conn,
    /// Claims, heartbeats and releases, so that a heartbeat never waits behind a large batch or a long read.
    leases: Conn,
    stale_writes: AtomicU64,
    /// The heartbeat of each claim this store holds, by (run, epoch): a message beats it at once.
    held: std::sync::Mutex<FxHashMap<(String, i64), std::sync::mpsc::Sender<()>>>,
}

struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    /// Dropping a runtime inside another one's task panics; shutting it down in the background does not.
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// One connection, opened on first use and again after it broke, with the statements prepared on it.
struct Conn {
    config: Config,
    session: tokio::sync::Mutex<Option<Session>>,
}

struct Session {
    client: Client,
    statements: FxHashMap<&'static str, Statement>,
}

impl Session {
    /// The statement for `sql`, prepared once per connection: a statement used again costs one round trip, not two.
    async fn statement(&mut self, sql: &'static str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    /// A read-only transaction that sees one snapshot: what it reads agrees, whatever commits meanwhile.
    async fn snapshot(&mut self) -> Result<tokio_postgres::Transaction<'_>, tokio_postgres::Error> {
        self.client.build_transaction().isolation_level(IsolationLevel::RepeatableRead).read_only(true).start().await
    }
}

impl Conn {
    /// The session, connecting when there is none or it broke. Runs on the store's runtime.
    async fn session(&self, db: &str) -> Result<tokio::sync::MappedMutexGuard<'_, Session>, PgError> {
        let mut guard = self.session.lock().await;
        if guard.as_ref().is_none_or(|s| s.client.is_closed()) {
            *guard = None;
            let (client, connection) = self
                .config
                .connect(NoTls)
                .await
                .map_err(|e| PgError::Connect { db: db.to_string(), detail: error_text(&e) })?;
            // The connection is driven by a task of its own; it ends when the client is dropped or the server goes.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            *guard = Some(Session { client, statements: FxHashMap::default() });
        }
        Ok(tokio::sync::MutexGuard::map(guard, |s| s.as_mut().expect("connected just above")))
    }
}

/// The schema, one migration per version, applied in order. Migrations are only ever appended.
const MIGRATIONS: &[&str] = &[
    // 1: runs (with the lease columns workers need), their events and inputs. JSON columns keep the text as written
    // (not `jsonb`, which reorders keys): a run's events read back exactly as they were emitted.
    "CREATE TABLE runs (
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
     CREATE INDEX inputs_run ON inputs (run_id, id);",
    // 2: level with SQLite's migration 3: the tokens each model used in a run (for its cost), the evaluation a run
    // was a case of, and evaluations' reports.
    "ALTER TABLE runs ADD COLUMN usage json;
     ALTER TABLE runs ADD COLUMN eval_id text;
     CREATE TABLE evals (
         id text PRIMARY KEY,
         file text NOT NULL,
         workflow text NOT NULL,
         started_at text NOT NULL,
         report text NOT NULL
     );
     CREATE INDEX evals_file ON evals (file, started_at);",
    // 3: what a team server keeps (`postgres::team`): decisions and cancellations waiting for a worker (`wake` says a
    // worker must look at the run again; `wake_at` when a parked run's approval times out), API tokens (hashed),
    // webhook deliveries by idempotency key, schedule firings, and every version of the workflows it serves. A
    // delivery's or a firing's key is inserted before its run, in the same transaction (the foreign key is checked
    // at commit), and goes with the run when it is deleted.
    "ALTER TABLE runs ADD COLUMN wake boolean NOT NULL DEFAULT false;
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
     );",
];

/// The schema version this build writes.
pub fn latest() -> i64 {
    MIGRATIONS.len() as i64
}

/// Serializes migrations across every process that opens the database (an arbitrary constant: "switchyd").
const MIGRATION_LOCK: i64 = 0x7377_6974_6368_7964;

/// The columns `Shared::row` reads, as one literal (for `concat!`). JSON is read in SQL (`->>`) only after `\u0000`
/// is replaced (by U+FFFD): PostgreSQL refuses to turn that escape into text, and would fail every query that reads
/// the one event holding it (a model's or a script's output may) — the whole listing, for everyone.
macro_rules! row_select {
    () => {
        "SELECT id, workflow_path, script_path, status, workflow_name,
           to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
           (extract(epoch FROM started_at) * 1000)::int8,
           (extract(epoch FROM coalesce(ended_at, now())) * 1000)::int8,
           (extract(epoch FROM updated_at) * 1000)::int8,
           pending::text,
           owner IS NOT NULL AND lease_until > now(),
           owner, epoch, (extract(epoch FROM lease_until - now()) * 1000)::int8,
           CASE WHEN status = 'running'
                THEN (SELECT replace(event::text, '\\u0000', '\\ufffd')::json->>'ts'
                      FROM events e WHERE e.run_id = runs.id ORDER BY seq DESC LIMIT 1) END,
           usage::text, eval_id
         FROM runs"
    };
}

const RECENT: &str = concat!(row_select!(), " ORDER BY started_at DESC, id DESC LIMIT $1");
const GET: &str = concat!(row_select!(), " WHERE id = $1");
const EVENTS: &str = "SELECT event::text FROM events WHERE run_id = $1 ORDER BY seq";
const INPUTS: &str = "SELECT input::text FROM inputs WHERE run_id = $1 ORDER BY id";

/// Takes one run by its id (to resume it): one that is ready, paused, or running with an expired lease, and nobody
/// holds. Concurrent claims queue on the row's lock, and each re-checks the condition on the row as the one before
/// left it, so only the first gets it.
const CLAIM_RUN: &str = "UPDATE runs SET status = 'running', owner = $2, epoch = epoch + 1, updated_at = now(),
       wake = false, wake_at = NULL, lease_until = now() + $3::int8 * interval '1 millisecond'
     WHERE id = $1 AND status IN ('ready', 'paused', 'running') AND (owner IS NULL OR lease_until <= now())
     RETURNING epoch";

/// A paused run is taken when something woke it (a decision, a cancellation, a deadline); and when a worker still
/// holds it past its lease while a decision kept for it has not been applied: that worker died between taking the
/// woken run (which clears `wake`) and applying the decision. A paused run nothing is asked of is left alone.
const CLAIM_READY: &str = "UPDATE runs SET status = 'running', owner = $1, epoch = epoch + 1, updated_at = now(),
       wake = false, wake_at = NULL, lease_until = now() + $2::int8 * interval '1 millisecond'
     WHERE id = (SELECT id FROM runs
                 WHERE status = 'ready' OR (status = 'running' AND (lease_until IS NULL OR lease_until <= now()))
                    OR (status = 'paused' AND (owner IS NULL OR lease_until <= now())
                        AND (wake OR wake_at <= now()
                             OR owner IS NOT NULL AND EXISTS (
                                  SELECT 1 FROM decisions d WHERE d.run_id = runs.id
                                    AND d.round >= (SELECT count(*) FROM inputs i WHERE i.run_id = runs.id
                                                      AND i.input->>'input' IN ('decided', 'timedOut')
                                                      AND i.input->>'node' = d.node))))
                 ORDER BY started_at, id
                 LIMIT 1
                 FOR UPDATE SKIP LOCKED)
     RETURNING id, epoch";

/// The fence: takes the run's row lock for the rest of the transaction, and only while the epoch holds.
const FENCE: &str = "UPDATE runs SET updated_at = now(),
       status = coalesce($3, status),
       pending = coalesce($4::text::json, pending),
       ended_at = CASE WHEN $3::text IS NULL THEN ended_at WHEN $5 THEN now() ELSE NULL END
     WHERE id = $1 AND epoch = $2 AND owner IS NOT NULL";

const INSERT_EVENTS: &str = "INSERT INTO events (run_id, seq, event)
     SELECT $1, seq, event::json FROM unnest($2::int8[], $3::text[]) AS t (seq, event)";

/// Inputs keep their order: identities are given in the order the rows are produced.
const INSERT_INPUTS: &str = "INSERT INTO inputs (run_id, input)
     SELECT $1, input::json FROM unnest($2::text[]) WITH ORDINALITY AS t (input, n) ORDER BY n";

/// Inserts a run: `ready` and announced on [`READY_CHANNEL`] when no lease is given ($8), else `running`, held by
/// $9 at epoch 1. One statement, so one transaction: the run and its announcement commit together.
const INSERT_RUN: &str = "WITH new AS (
       INSERT INTO runs (id, workflow_path, script_path, status, workflow_name, document, options,
                         eval_id, owner, epoch, lease_until)
       VALUES ($1, $2, $3, CASE WHEN $8::int8 IS NULL THEN 'ready' ELSE 'running' END, $4,
               $5::text::json, $6::text::json, $7,
               CASE WHEN $8::int8 IS NULL THEN NULL ELSE $9 END,
               CASE WHEN $8::int8 IS NULL THEN 0 ELSE 1 END,
               now() + $8::int8 * interval '1 millisecond')
       RETURNING id, status, epoch)
     SELECT epoch, CASE WHEN status = 'ready' THEN pg_notify($10, id) END IS NULL FROM new";

/// A run's row as it is inserted (`INSERT_RUN`).
struct NewRow {
    id: String,
    workflow_ref: String,
    answers_path: Option<String>,
    name: String,
    document: String,
    options: String,
    eval_id: Option<String>,
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
        };
        store.block(|s| async move { s.migrate().await })?;
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

    /// Runs `work` on the store's runtime and waits for it on this thread, which may be any thread: no runtime is
    /// entered here, so it works inside a current-thread or multi-thread runtime and outside any.
    fn block<T, F, Fut>(&self, work: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Shared>) -> Fut,
        Fut: Future<Output = Result<T, PgError>> + Send + 'static,
    {
        let Some(runtime) = self.runtime.0.as_ref() else {
            return Err(PgError::Internal { detail: "its runtime was shut down".into() });
        };
        let (shared, work) = (self.shared.clone(), work(self.shared.clone()));
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            // Bound first, so that the work (and the connection it holds) is dropped before the match.
            let outcome = tokio::time::timeout(CALL_TIMEOUT, work).await;
            // A server that hangs leaves the connection open but useless, and one that ended the session (a
            // restart) may not have been seen closed yet: either way the next call connects anew.
            if matches!(outcome, Err(_) | Ok(Err(PgError::Connect { .. }))) {
                for conn in [&shared.main, &shared.leases] {
                    if let Ok(mut session) = conn.session.try_lock() {
                        *session = None;
                    }
                }
            }
            let answer = outcome.unwrap_or_else(|_| Err(PgError::Timeout { db: shared.db.clone() }));
            let _ = tx.send(answer);
        });
        // The sender is dropped unanswered only if the task panicked.
        rx.recv().unwrap_or_else(|_| Err(PgError::Internal { detail: "the task panicked".into() }))
    }

    /// Records a run, `ready` for a worker to claim, and announces it on [`READY_CHANNEL`].
    pub fn create(&self, run: &NewRun) -> Result<(), PgError> {
        self.insert(run, None).map(|_| ())
    }

    /// Records a run as it starts here (`running`, claimed by this store's owner at epoch 1), before its first event.
    pub fn create_claimed(&self, run: &NewRun) -> Result<Claim, PgError> {
        let epoch = self.insert(run, Some(lease_ms(self.lease)?))?;
        Ok(self.hold(run.id, epoch))
    }

    /// Inserts the run: `ready` and announced, or, given a lease, `running` and held by this store's owner. Its epoch.
    fn insert(&self, run: &NewRun, lease: Option<i64>) -> Result<i64, PgError> {
        let row = self.new_row(run)?;
        let owner = self.owner.to_string();
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let insert = session.statement(INSERT_RUN).await.map_err(|e| s.query_error(e))?;
            s.insert_run(&session.client, &insert, &row, lease, &owner).await
        })
    }

    /// A run's row as it is inserted, written on the caller's thread.
    fn new_row(&self, run: &NewRun) -> Result<NewRow, PgError> {
        let unwritable = |what: &str, e: serde_json::Error| PgError::Query {
            db: self.shared.db.clone(),
            detail: format!("cannot write the {what} of run `{}`: {e}", run.id),
        };
        Ok(NewRow {
            id: run.id.to_string(),
            workflow_ref: run.workflow_ref.unwrap_or("").to_string(),
            answers_path: run.answers_path.map(str::to_string),
            name: run.workflow.name.clone(),
            document: serde_json::to_string(run.workflow).map_err(|e| unwritable("workflow", e))?,
            options: serde_json::to_string(run.options).map_err(|e| unwritable("options", e))?,
            eval_id: run.eval_id.map(str::to_string),
        })
    }

    /// Runs, newest first.
    pub fn list(&self) -> Result<Vec<PgRunRow>, PgError> {
        self.recent(usize::MAX)
    }

    /// The newest `limit` runs, newest first.
    pub fn recent(&self, limit: usize) -> Result<Vec<PgRunRow>, PgError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let recent = session.statement(RECENT).await.map_err(|e| s.query_error(e))?;
            let rows = session.client.query(&recent, &[&limit]).await.map_err(|e| s.query_error(e))?;
            rows.iter().map(|r| s.row(r)).collect()
        })
    }

    /// One run of the history.
    pub fn get(&self, id: &str) -> Result<PgRunRow, PgError> {
        let id = id.to_string();
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            s.get(&mut session, &id).await
        })
    }

    /// Everything needed to continue, replay or reuse a run, read in one snapshot: its inputs and events agree.
    pub fn load(&self, id: &str) -> Result<PgStoredRun, PgError> {
        let id = id.to_string();
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let q = |e| s.query_error(e);
            let get = session.statement(GET).await.map_err(q)?;
            let copies = session.statement("SELECT document::text, options::text FROM runs WHERE id = $1").await;
            let (copies, events, inputs) = (
                copies.map_err(q)?,
                session.statement(EVENTS).await.map_err(q)?,
                session.statement(INPUTS).await.map_err(q)?,
            );
            let tx = session.snapshot().await.map_err(q)?;
            let Some(raw) = tx.query_opt(&get, &[&id]).await.map_err(q)? else {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id });
            };
            let row = s.row(&raw)?;
            let copies = tx.query_one(&copies, &[&id]).await.map_err(q)?;
            let workflow = serde_json::from_str(copies.get::<_, &str>(0))
                .map_err(|e| s.unreadable(&id, "workflow copy", e.to_string()))?;
            let options = serde_json::from_str(copies.get::<_, &str>(1))
                .map_err(|e| s.unreadable(&id, "options", e.to_string()))?;
            let inputs = s.column(&tx, &inputs, &id, "input").await?;
            let events = s.column(&tx, &events, &id, "event").await?;
            tx.commit().await.map_err(q)?;
            Ok(PgStoredRun { row, workflow, options, recording: Recording { inputs, events } })
        })
    }

    /// A run's events in order (none for an unknown run, as with the SQLite store).
    pub fn events(&self, run_id: &str) -> Result<Vec<Event>, PgError> {
        let id = run_id.to_string();
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let events = session.statement(EVENTS).await.map_err(|e| s.query_error(e))?;
            s.column(&session.client, &events, &id, "event").await
        })
    }

    /// A run's inputs in the order they were recorded.
    pub fn inputs(&self, run_id: &str) -> Result<Vec<Recorded>, PgError> {
        let id = run_id.to_string();
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let inputs = session.statement(INPUTS).await.map_err(|e| s.query_error(e))?;
            s.column(&session.client, &inputs, &id, "input").await
        })
    }

    /// Takes the oldest run that is `ready`, or `running` with an expired lease, for `worker` until `lease` from now:
    /// its id and the epoch every write to it must name. `None` when there is nothing to take.
    pub fn claim_ready(&self, worker: &str, lease: Duration) -> Result<Option<(String, i64)>, PgError> {
        let (worker, lease) = (worker.to_string(), lease_ms(lease)?);
        self.block(|s| async move {
            let mut session = s.leases.session(&s.db).await?;
            let claim = session.statement(CLAIM_READY).await.map_err(|e| s.query_error(e))?;
            let row = session.client.query_opt(&claim, &[&worker, &lease]).await.map_err(|e| s.query_error(e))?;
            Ok(row.map(|r| (r.get(0), r.get(1))))
        })
    }

    /// Takes the run `id` for this store's owner (to resume it): it must be ready, paused, or running with an
    /// expired lease. The claim keeps its lease alive until dropped.
    pub fn claim_run(&self, id: &str) -> Result<Claim, PgError> {
        let (run, owner, lease) = (id.to_string(), self.owner.to_string(), lease_ms(self.lease)?);
        let epoch = self.block(|s| async move {
            let mut session = s.leases.session(&s.db).await?;
            let claim = session.statement(CLAIM_RUN).await.map_err(|e| s.query_error(e))?;
            let row = session.client.query_opt(&claim, &[&run, &owner, &lease]).await.map_err(|e| s.query_error(e))?;
            Ok(row.map(|r| r.get::<_, i64>(0)))
        })?;
        match epoch {
            Some(epoch) => Ok(self.hold(id, epoch)),
            None => {
                let row = self.get(id)?;
                Err(if row.status.ended() {
                    PgError::Ended { id: id.to_string(), status: row.status.stored().as_str() }
                } else {
                    // Another process claimed it first.
                    PgError::Held {
                        id: id.to_string(),
                        owner: row.lease.owner.unwrap_or_else(|| "another process".into()),
                    }
                })
            }
        }
    }

    /// Takes the oldest run that is ready, or running with an expired lease, for this store's owner: its id and the
    /// claim, which keeps its lease alive until dropped. `None` when there is nothing to take.
    pub fn claim_next(&self) -> Result<Option<(String, Claim)>, PgError> {
        let claimed = self.claim_ready(&self.owner, self.lease)?;
        Ok(claimed.map(|(id, epoch)| {
            let claim = self.hold(&id, epoch);
            (id, claim)
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
                    match store.heartbeat(&id, epoch, lease) {
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

    /// Listens on `channel` on a connection of its own (connecting first, so that a database that cannot be reached
    /// is said now), telling `heard` of each announcement, until `stopped`: `keep_listening`.
    fn keep_listening_on(
        &self,
        channel: &'static str,
        heard: Heard,
        stopped: tokio::sync::oneshot::Receiver<()>,
    ) -> Result<(), PgError> {
        self.block(|s| async move {
            let first = listening(&s, channel, heard.clone()).await?;
            tokio::spawn(keep_listening(s, channel, first, heard, stopped));
            Ok(())
        })
    }

    /// Listens for runs that become ready ([`READY_CHANNEL`]) on a connection of its own, connecting again when it
    /// breaks (and waking the listener then, since it may have missed one), until the listener is dropped.
    pub fn listen(&self) -> Result<Listener, PgError> {
        let woken = Arc::new(tokio::sync::Notify::new());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let wake = woken.clone();
        let heard: Heard = Arc::new(move |_: Option<&str>| wake.notify_one());
        self.keep_listening_on(READY_CHANNEL, heard, stopped)?;
        Ok(Listener { woken, _stop: stop })
    }

    /// Listens for what is asked of the runs this store holds ([`WAKE_CHANNEL`]) on a connection of its own, until
    /// the listener is dropped: the heartbeat of the run named beats at once. After the connection broke and came
    /// back, every held run's heartbeat beats (one may have been missed).
    pub fn listen_wakes(&self) -> Result<WakeListener, PgError> {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = self.shared.clone();
        let heard: Heard = Arc::new(move |run: Option<&str>| {
            for ((id, _), beat) in shared.held.lock().unwrap().iter() {
                if run.is_none_or(|run| run == id) {
                    let _ = beat.send(());
                }
            }
        });
        self.keep_listening_on(WAKE_CHANNEL, heard, stopped)?;
        Ok(WakeListener { _stop: stop })
    }

    /// Follows every run's committed batches ([`CHANNEL`]) on a connection of its own: each announcement's run id,
    /// and `None` after the connection broke and came back (anything may have been committed meanwhile). Lagging
    /// receivers lose announcements (and are told so by the channel), so followers read from the log, not from this.
    pub fn follow(&self) -> Result<Follower, PgError> {
        let (tx, _) = tokio::sync::broadcast::channel(4096);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let sender = tx.clone();
        let heard: Heard = Arc::new(move |run: Option<&str>| {
            let _ = sender.send(run.map(str::to_string));
        });
        self.keep_listening_on(CHANNEL, heard, stopped)?;
        Ok(Follower { tx, _stop: Arc::new(stop) })
    }

    /// Extends the lease to `lease` from now, while `epoch` holds, and says whether the run's cancellation was asked
    /// for meanwhile; lost when another claim ended the epoch.
    pub fn heartbeat(&self, run: &str, epoch: i64, lease: Duration) -> Result<Beat, PgError> {
        let (run, lease) = (run.to_string(), lease_ms(lease)?);
        self.block(|s| async move {
            let mut session = s.leases.session(&s.db).await?;
            let beat = session
                .statement(
                    "UPDATE runs SET lease_until = now() + $3::int8 * interval '1 millisecond'
                     WHERE id = $1 AND epoch = $2 AND owner IS NOT NULL
                     RETURNING cancel_requested, wake",
                )
                .await
                .map_err(|e| s.query_error(e))?;
            let row = session.client.query_opt(&beat, &[&run, &epoch, &lease]).await.map_err(|e| s.query_error(e))?;
            Ok(match row {
                Some(row) => Beat::Held { cancel_requested: row.get(0), woken: row.get(1) },
                None => Beat::Lost,
            })
        })
    }

    /// Gives the run up, while `epoch` holds: no owner, no lease. A run still `running` becomes `ready`, for another
    /// worker to take at once; so does one that paused while a decision or a cancellation came for it (`wake`). One
    /// that paused otherwise stays so, to be taken again at `wake_at_ms` (an approval's deadline) if given; one that
    /// ended stays so. False when another claim had ended the epoch.
    pub fn release(&self, run: &str, epoch: i64, wake_at_ms: Option<i64>) -> Result<bool, PgError> {
        let run = run.to_string();
        self.block(|s| async move {
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
                .map_err(|e| s.query_error(e))?;
            let given = session.client.query(&release, &[&run, &epoch, &READY_CHANNEL, &wake_at_ms]).await;
            Ok(given.map_err(|e| s.query_error(e))?.len() == 1)
        })
    }

    /// Who holds the run, at which epoch, for how long yet.
    pub fn lease(&self, run: &str) -> Result<Lease, PgError> {
        self.get(run).map(|row| row.lease)
    }

    /// Writes a batch as one transaction, only while `epoch` holds: events, inputs and the last status in it, and
    /// one notification. Refused whole (nothing kept) when the epoch no longer holds, an event is foreign to the run,
    /// or an event's number is taken.
    pub fn write_batch(&self, run: &str, epoch: i64, items: &[LogItem]) -> Result<(), PgError> {
        let mut batch = Batch { run: run.to_string(), epoch, ..Batch::default() };
        let unwritable = |what: &str, e: serde_json::Error| PgError::Query {
            db: self.shared.db.clone(),
            detail: format!("cannot write the {what} of run `{run}`: {e}"),
        };
        for item in items {
            match item {
                LogItem::Event(e) if e.run != run => {
                    return Err(PgError::ForeignEvent { run: run.to_string(), other: e.run.clone(), seq: e.seq });
                }
                LogItem::Event(e) => {
                    let Ok(seq) = i64::try_from(e.seq) else {
                        return Err(PgError::Query {
                            db: self.shared.db.clone(),
                            detail: format!("event #{} of run `{run}` is numbered past what a bigint holds", e.seq),
                        });
                    };
                    batch.seqs.push(seq);
                    batch.events.push(serde_json::to_string(e).map_err(|e| unwritable("event", e))?);
                }
                LogItem::Input(i) => batch.inputs.push(serde_json::to_string(i).map_err(|e| unwritable("input", e))?),
                // Only the last status stands: each one overwrites the row.
                LogItem::Status { status, pending } => {
                    let ended = matches!(status, RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled);
                    let pending = serde_json::to_string(pending).map_err(|e| unwritable("pending approvals", e))?;
                    batch.status = Some((status.as_str(), pending, ended));
                }
            }
        }
        self.block(|s| async move { s.write(batch).await })
    }

    /// The run log of one claimed run, for the emitter: every write it makes is fenced by `epoch`.
    pub fn run_log(&self, run: &str, epoch: i64) -> PgRunLog {
        PgRunLog {
            store: self.clone(),
            run: run.to_string(),
            epoch,
            lost: Arc::new(AtomicBool::new(false)),
            signal: None,
        }
    }
}

/// Beats the heartbeats of held runs when something is asked of them ([`PgStore::listen_wakes`]), until dropped.
pub struct WakeListener {
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Wakes an idle worker when a run becomes ready ([`PgStore::listen`]). Notifications can be missed (none is kept
/// for a listener that is reconnecting, and leases that expire announce nothing): workers poll as well.
pub struct Listener {
    woken: Arc<tokio::sync::Notify>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Listener {
    /// Completes at the next announcement (at once if one came since the last call).
    pub async fn notified(&self) {
        self.woken.notified().await
    }
}

/// Who hears a channel's announcements: the payload, or `None` when the connection came back after breaking.
type Heard = Arc<dyn Fn(Option<&str>) + Send + Sync>;

/// Follows committed batches ([`PgStore::follow`]); clones share the connection, which closes when the last goes.
#[derive(Clone)]
pub struct Follower {
    tx: tokio::sync::broadcast::Sender<Option<String>>,
    _stop: Arc<tokio::sync::oneshot::Sender<()>>,
}

impl Follower {
    /// Announcements from now on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Option<String>> {
        self.tx.subscribe()
    }
}

/// A connection that listens on `channel`: the client (which must be kept: dropping it closes the connection) and
/// the task that drives the connection and passes announcements to `heard`, which ends when it breaks.
async fn listening(
    s: &Shared,
    channel: &'static str,
    heard: Heard,
) -> Result<(Client, tokio::task::JoinHandle<()>), PgError> {
    let (client, mut connection) = s
        .main
        .config
        .connect(NoTls)
        .await
        .map_err(|e| PgError::Connect { db: s.db.clone(), detail: error_text(&e) })?;
    // Polling the connection for messages is also what drives it: the LISTEN below goes through this task.
    let driver = tokio::spawn(async move {
        while let Some(Ok(message)) = futures::future::poll_fn(|cx| connection.poll_message(cx)).await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message {
                heard(Some(n.payload()));
            }
        }
    });
    client.batch_execute(&format!("LISTEN {channel}")).await.map_err(|e| s.query_error(e))?;
    Ok((client, driver))
}

/// Keeps listening on `channel` until `stopped`; reconnects (once a second) when the connection breaks, and tells
/// `heard` then, since something may have been announced while it was down.
async fn keep_listening(
    s: Arc<Shared>,
    channel: &'static str,
    first: (Client, tokio::task::JoinHandle<()>),
    heard: Heard,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let mut current = Some(first);
    loop {
        match current.take() {
            Some((client, mut driver)) => {
                tokio::select! {
                    _ = &mut stopped => return,
                    _ = &mut driver => {
                        drop(client);
                        heard(None);
                    }
                }
            }
            None => {
                tokio::select! {
                    _ = &mut stopped => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {
                        current = listening(&s, channel, heard.clone()).await.ok();
                        if current.is_some() {
                            heard(None);
                        }
                    }
                }
            }
        }
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
            let _ = self.store.release(&self.run, self.epoch, self.wake_at_ms);
        }
    }
}

impl Store for PgStore {
    fn location(&self) -> String {
        self.shared.db.clone()
    }
    fn create(&self, run: &NewRun) -> Result<Claim, StoreError> {
        Ok(self.create_claimed(run)?)
    }
    fn submit(&self, run: &NewRun) -> Result<(), StoreError> {
        Ok(PgStore::create(self, run)?)
    }
    fn claim(&self, id: &str) -> Result<Claim, StoreError> {
        Ok(self.claim_run(id)?)
    }
    fn list(&self) -> Result<Vec<RunRow>, StoreError> {
        Ok(PgStore::list(self)?.into_iter().map(PgRunRow::into_row).collect())
    }
    fn recent(&self, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        Ok(PgStore::recent(self, limit)?.into_iter().map(PgRunRow::into_row).collect())
    }
    fn get(&self, id: &str) -> Result<RunRow, StoreError> {
        Ok(PgStore::get(self, id)?.into_row())
    }
    fn load(&self, id: &str) -> Result<StoredRun, StoreError> {
        let PgStoredRun { row, workflow, options, recording } = PgStore::load(self, id)?;
        Ok(StoredRun { row: row.into_row(), workflow, options, recording })
    }
    fn events(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        Ok(PgStore::events(self, id)?)
    }
    fn events_after(&self, id: &str, after: u64) -> Result<Vec<Event>, StoreError> {
        Ok(PgStore::events_after(self, id, after, u32::MAX >> 1)?)
    }
    /// The claim's own log, fenced by its epoch. A claim always has one here; were it given one of another store,
    /// its writes are refused rather than written around the fence.
    fn run_log(self: Arc<Self>, claim: &Claim) -> Arc<dyn RunLog> {
        claim.log().unwrap_or_else(|| Arc::new(Unclaimed))
    }
    fn requests(&self, id: &str) -> Result<crate::store::Requests, StoreError> {
        Ok(PgStore::requests(self, id)?)
    }
}

/// The log of a run nobody claimed: refuses every write.
struct Unclaimed;

impl RunLog for Unclaimed {
    fn append(&self, event: &Event) -> Result<(), LogError> {
        Err(LogError(format!("[RUN_NOT_CLAIMED] run `{}` was not claimed; nothing of it was written", event.run)))
    }
    fn write_batch(&self, run: &str, _items: &[LogItem]) -> Result<(), LogError> {
        Err(LogError(format!("[RUN_NOT_CLAIMED] run `{run}` was not claimed; nothing of it was written")))
    }
}

/// A batch, serialized on the caller's thread and moved to the store's runtime.
#[derive(Default)]
struct Batch {
    run: String,
    epoch: i64,
    seqs: Vec<i64>,
    events: Vec<String>,
    inputs: Vec<String>,
    /// The status, pending approvals (JSON) and whether it ended.
    status: Option<(&'static str, String, bool)>,
}

impl Shared {
    /// A failed statement: `Connect` when the connection broke under it (the server restarted or went away: asked
    /// again, the call connects anew and may succeed), else `Query`.
    fn query_error(&self, e: tokio_postgres::Error) -> PgError {
        if connection_lost(&e) {
            return PgError::Connect {
                db: self.db.clone(),
                detail: format!("the connection was lost ({}); the next call connects again", error_text(&e)),
            };
        }
        PgError::Query { db: self.db.clone(), detail: error_text(&e) }
    }

    fn unreadable(&self, run: &str, what: &'static str, detail: String) -> PgError {
        PgError::Unreadable { db: self.db.clone(), run: run.to_string(), what, detail }
    }

    /// Creates the schema, or brings it up to date, in one transaction under an advisory lock.
    async fn migrate(&self) -> Result<(), PgError> {
        let mut session = self.main.session(&self.db).await?;
        let tx = session.client.transaction().await.map_err(|e| self.query_error(e))?;
        let found = async {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS switchyard_schema (
                     version integer PRIMARY KEY,
                     applied_at timestamptz NOT NULL DEFAULT now()
                 )",
            )
            .await?;
            let row = tx.query_one("SELECT coalesce(max(version), 0)::int8 FROM switchyard_schema", &[]).await?;
            Ok::<i64, tokio_postgres::Error>(row.get(0))
        }
        .await
        .map_err(|e| self.query_error(e))?;
        if found > latest() {
            // Dropping the transaction rolls it back: nothing was written.
            return Err(PgError::TooNew { db: self.db.clone(), found, known: latest() });
        }
        let migrate_error = |e: tokio_postgres::Error| PgError::Migrate {
            db: self.db.clone(),
            from: found,
            to: latest(),
            detail: error_text(&e),
        };
        for (version, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            tx.batch_execute(sql).await.map_err(migrate_error)?;
            let version = version as i32 + 1;
            tx.execute("INSERT INTO switchyard_schema (version) VALUES ($1)", &[&version])
                .await
                .map_err(migrate_error)?;
        }
        tx.commit().await.map_err(migrate_error)
    }

    async fn get(&self, session: &mut Session, id: &str) -> Result<PgRunRow, PgError> {
        let get = session.statement(GET).await.map_err(|e| self.query_error(e))?;
        let row = session.client.query_opt(&get, &[&id]).await.map_err(|e| self.query_error(e))?;
        match row {
            Some(row) => self.row(&row),
            None => Err(PgError::NoSuchRun { db: self.db.clone(), id: id.to_string() }),
        }
    }

    /// A row of `ROW_SELECT`.
    fn row(&self, r: &tokio_postgres::Row) -> Result<PgRunRow, PgError> {
        let get = |e: tokio_postgres::Error| self.query_error(e);
        let (id, status): (String, String) = (r.try_get(0).map_err(get)?, r.try_get(3).map_err(get)?);
        let live: bool = r.try_get(10).map_err(get)?;
        let status = PgStatus::from_db(&status, live);
        let (started, ended, updated): (i64, i64, i64) =
            (r.try_get(6).map_err(get)?, r.try_get(7).map_err(get)?, r.try_get(8).map_err(get)?);
        // An interrupted run's time stops at its last sign of life: its last event.
        let until = match status {
            PgStatus::Interrupted => r
                .try_get::<_, Option<&str>>(14)
                .map_err(get)?
                .and_then(|ts| chrono::DateTime::parse_from_rfc3339(ts).ok())
                .map_or(updated, |t| t.timestamp_millis()),
            _ => ended,
        };
        let pending: &str = r.try_get(9).map_err(get)?;
        let pending =
            serde_json::from_str(pending).map_err(|e| self.unreadable(&id, "pending approvals", e.to_string()))?;
        let workflow_path: String = r.try_get(1).map_err(get)?;
        Ok(PgRunRow {
            workflow: r.try_get(4).map_err(get)?,
            workflow_ref: Some(workflow_path).filter(|p| !p.is_empty()),
            answers_path: r.try_get(2).map_err(get)?,
            status,
            started: r.try_get(5).map_err(get)?,
            duration_ms: (until - started).max(0) as u64,
            pending,
            lease: Lease {
                owner: r.try_get(11).map_err(get)?,
                epoch: r.try_get(12).map_err(get)?,
                expires_in_ms: r.try_get(13).map_err(get)?,
            },
            usage: r
                .try_get::<_, Option<&str>>(15)
                .map_err(get)?
                .map(serde_json::from_str)
                .transpose()
                .map_err(|e| self.unreadable(&id, "usage", e.to_string()))?
                .unwrap_or_default(),
            eval: r.try_get(16).map_err(get)?,
            id,
        })
    }

    /// Inserts `row` with `insert` (`INSERT_RUN`) on `client` (a connection, or a transaction that also does
    /// something else): its epoch.
    async fn insert_run(
        &self,
        client: &impl tokio_postgres::GenericClient,
        insert: &Statement,
        row: &NewRow,
        lease: Option<i64>,
        owner: &str,
    ) -> Result<i64, PgError> {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 10] = [
            &row.id,
            &row.workflow_ref,
            &row.answers_path,
            &row.name,
            &row.document,
            &row.options,
            &row.eval_id,
            &lease,
            &owner,
            &READY_CHANNEL,
        ];
        match client.query_one(insert, &params).await {
            Ok(r) => Ok(r.get::<_, i64>(0)),
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                Err(PgError::RunExists { db: self.db.clone(), id: row.id.clone() })
            }
            Err(e) => Err(self.query_error(e)),
        }
    }

    /// The JSON column of `statement`'s rows for `run`, read back.
    async fn column<T: serde::de::DeserializeOwned>(
        &self,
        client: &impl tokio_postgres::GenericClient,
        statement: &Statement,
        run: &str,
        what: &'static str,
    ) -> Result<Vec<T>, PgError> {
        let rows = client.query(statement, &[&run]).await.map_err(|e| self.query_error(e))?;
        rows.iter()
            .map(|r| {
                let text: &str = r.try_get(0).map_err(|e| self.query_error(e))?;
                serde_json::from_str(text).map_err(|e| self.unreadable(run, what, e.to_string()))
            })
            .collect()
    }

    async fn write(&self, batch: Batch) -> Result<(), PgError> {
        let mut session = self.main.session(&self.db).await?;
        let q = |e| self.query_error(e);
        let fence = session.statement(FENCE).await.map_err(q)?;
        let insert_events = session.statement(INSERT_EVENTS).await.map_err(q)?;
        let insert_inputs = session.statement(INSERT_INPUTS).await.map_err(q)?;
        let epoch_now = session.statement("SELECT epoch FROM runs WHERE id = $1").await.map_err(q)?;
        let notify = session.statement("SELECT pg_notify($1, $2)").await.map_err(q)?;
        let run = &batch.run;
        let tx = session.client.transaction().await.map_err(q)?;
        let (status, pending, ended) = match &batch.status {
            Some((status, pending, ended)) => (Some(*status), Some(pending.as_str()), *ended),
            None => (None, None, false),
        };
        // First, so that the row stays locked until the commit: no claim can come between the check and the commit.
        let fenced = tx.execute(&fence, &[run, &batch.epoch, &status, &pending, &ended]).await.map_err(q)?;
        if fenced == 0 {
            return match tx.query_opt(&epoch_now, &[run]).await.map_err(q)? {
                None => Err(PgError::NoSuchRun { db: self.db.clone(), id: run.clone() }),
                Some(row) => {
                    self.stale_writes.fetch_add(1, Ordering::Relaxed);
                    Err(PgError::StaleEpoch { run: run.clone(), epoch: batch.epoch, current: row.get(0) })
                }
            };
        }
        let refused = |e: tokio_postgres::Error| match e.as_db_error() {
            Some(db) if db.code() == &SqlState::UNIQUE_VIOLATION && db.constraint() == Some("events_pkey") => {
                PgError::DuplicateSeq { run: run.clone(), detail: db.detail().unwrap_or("").to_string() }
            }
            _ => self.query_error(e),
        };
        if !batch.events.is_empty() {
            tx.execute(&insert_events, &[run, &batch.seqs, &batch.events]).await.map_err(refused)?;
        }
        if !batch.inputs.is_empty() {
            tx.execute(&insert_inputs, &[run, &batch.inputs]).await.map_err(refused)?;
        }
        // What its model calls used, counted when it pauses or ends (a handful of times per run), as SQLite does.
        if batch.status.as_ref().is_some_and(|(status, _, _)| *status != "running") {
            let copies = tx
                .query_one("SELECT document::text, options::text FROM runs WHERE id = $1", &[run])
                .await
                .map_err(q)?;
            let used: Vec<String> = tx
                .query("SELECT event::text FROM events WHERE run_id = $1 AND event::text LIKE '%\"usage\"%'", &[run])
                .await
                .map_err(q)?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let usage = crate::store::usage_json(copies.get(0), copies.get(1), &used);
            tx.execute("UPDATE runs SET usage = $2::text::json WHERE id = $1", &[run, &usage]).await.map_err(q)?;
        }
        tx.execute(&notify, &[&CHANNEL, run]).await.map_err(q)?;
        tx.commit().await.map_err(q)
    }
}

/// A claimed run's log, for the emitter's committer: the [`RunLog`] of the PostgreSQL store. Every write is fenced by
/// the epoch of the claim; there is deliberately no log on the store itself, which would write around the fence.
#[derive(Clone)]
pub struct PgRunLog {
    store: PgStore,
    run: String,
    epoch: i64,
    lost: Arc<AtomicBool>,
    /// Told when the log is lost, for the claim's holder (`Claim::lost`).
    signal: Option<Arc<tokio::sync::watch::Sender<bool>>>,
}

impl PgRunLog {
    /// Whether a write failed — refused because another worker took the run over, or the database failed — so that
    /// this log writes nothing more: the run should stop here.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    fn write(&self, run: &str, items: &[LogItem]) -> Result<(), LogError> {
        if run != self.run {
            return Err(LogError(format!(
                "[RUN_LOG_FOREIGN_EVENT] the log of run `{}` was given run `{run}`",
                self.run
            )));
        }
        // After a failed batch, a later one must not commit: the log would have a gap the run never had.
        if self.lost() {
            return Err(LogError(format!(
                "[RUN_LOG_STOPPED] run `{run}`: an earlier write failed, so nothing more is written by this claim"
            )));
        }
        self.store.write_batch(run, self.epoch, items).map_err(|e| {
            self.lost.store(true, Ordering::Relaxed);
            if let Some(signal) = &self.signal {
                signal.send_replace(true);
            }
            LogError(format!("[{}] {e}", e.code()))
        })
    }
}

impl RunLog for PgRunLog {
    /// One transaction for the whole batch, fenced by the claim's epoch.
    fn write_batch(&self, run: &str, items: &[LogItem]) -> Result<(), LogError> {
        self.write(run, items)
    }

    fn append(&self, event: &Event) -> Result<(), LogError> {
        self.write(&event.run, &[LogItem::Event(event.clone())])
    }

    fn record_input(&self, run: &str, input: &Recorded) -> Result<(), LogError> {
        self.write(run, &[LogItem::Input(input.clone())])
    }

    fn run_status(&self, run: &str, status: RunStatus, pending: &[String]) -> Result<(), LogError> {
        self.write(run, &[LogItem::Status { status, pending: pending.to_vec() }])
    }
}

/// A lease in milliseconds, as the statements take it.
fn lease_ms(lease: Duration) -> Result<i64, PgError> {
    if lease.is_zero() || lease > MAX_LEASE {
        return Err(PgError::BadLease { ms: lease.as_millis() });
    }
    Ok(lease.as_millis().max(1) as i64)
}

/// `host:port/dbname`, for messages: never the password.
fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}/{}", config.get_dbname().unwrap_or(config.get_user().unwrap_or("postgres")))
}

/// Whether `e` says the connection broke rather than that the statement was refused: the connection is closed, the
/// server ended the session (SQLSTATE 57P01 "terminating connection due to administrator command" at a restart,
/// 57P02 a crash, 57P03 starting up), any connection exception (class 08), or the socket failed.
fn connection_lost(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        }
        None => std::error::Error::source(e).is_some_and(|source| source.is::<std::io::Error>()),
    }
}

/// The server's message when there is one (tokio-postgres's own `Display` says only "db error").
fn error_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.to_string(),
        None if e.to_string().contains("password missing") => "the server asks for a password and none was given: put \
             it in the URL (postgres://user:PASSWORD@host/db), in $PGPASSWORD, or in ~/.pgpass (or the file \
             $PGPASSFILE names)"
            .to_string(),
        None => e.to_string(),
    }
}

/// The password libpq would use for `config` when its URL gives none: `$PGPASSWORD`, else the first matching line
/// (`host:port:database:user:password`, `*` matching anything) of `$PGPASSFILE` or `~/.pgpass`.
fn password_for(config: &Config) -> Option<String> {
    if let Ok(password) = std::env::var("PGPASSWORD") {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user().map(str::to_string).or_else(|| std::env::var("USER").ok()).unwrap_or_default();
    let database = config.get_dbname().map_or_else(|| user.clone(), str::to_string);
    pgpass_match(&text, [&host, &port, &database, &user])
}

/// The password of the first line of a password file matching host, port, database and user.
fn pgpass_match(text: &str, wanted: [&str; 4]) -> Option<String> {
    text.lines().filter(|l| !l.trim_start().starts_with('#')).find_map(|line| {
        // Fields are split on `:` not preceded by `\`, and `\:`/`\\` stand for `:`/`\`.
        let mut fields = vec![String::new()];
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => fields.last_mut().expect("one at least").extend(chars.next()),
                ':' if fields.len() < 5 => fields.push(String::new()),
                c => fields.last_mut().expect("one at least").push(c),
            }
        }
        if fields.len() != 5 {
            return None;
        }
        let matches = fields[..4].iter().zip(wanted).all(|(field, want)| field == "*" || field == want);
        matches.then(|| fields[4].clone())
    })
}

#[cfg(test)]
mod tests {
    use super::pgpass_match;

    #[test]
    fn a_password_file_line_matches_with_wildcards_and_escapes() {
        let text = "# comment\nother:5432:db:me:nope\n127.0.0.1:*:switchyard:me:s3\\:cret\n*:*:*:*:fallback\n";
        assert_eq!(pgpass_match(text, ["127.0.0.1", "5433", "switchyard", "me"]).as_deref(), Some("s3:cret"));
        assert_eq!(pgpass_match(text, ["db.example", "5432", "x", "y"]).as_deref(), Some("fallback"));
        assert_eq!(pgpass_match("h:1:d:u\n", ["h", "1", "d", "u"]), None, "four fields is no line");
    }
}
