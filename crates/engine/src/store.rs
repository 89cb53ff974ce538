//! The durable run log: one SQLite file (WAL) holding every run — the workflow document and options it started
//! with, its status, its events and its inputs (`run::input`) — so that a run survives the process that ran it.
//!
//! Invariants:
//! - A run's row is written when it starts (status `running`), before its first event.
//! - Events and inputs are committed as the scheduler produces them, before any observer sees them (the emitter
//!   writes the log first), so nothing a person saw can be missing from the log.
//! - A process that runs a run holds a lock on it (a file lock the system releases when the process dies). A run
//!   whose row says `running` but whose lock nobody holds was interrupted: `status` reports it `interrupted`.
//! - The schema is versioned (`PRAGMA user_version`, `store::migrations`); a file written by a newer Switchyard is
//!   refused and never altered, and a file that is not a readable database is reported with its path.
//! - Several processes can use one store at once (WAL, and a busy timeout instead of "database is locked").
//!
//! [`Store`] is the run store as the session uses it, whichever database keeps the runs: this SQLite file (one
//! machine; the desktop's and the command line's default) or PostgreSQL (`crate::postgres`, feature `postgres`: runs
//! shared by workers on many machines). [`open`] picks one from what a person typed (`--db`).

mod migrations;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::events::Event;
use crate::log::{LogError, LogItem, RunLog};
use crate::result::{RunStatus, Usage};
use crate::run::{Recorded, Recording, RunOptions};
use crate::Workflow;

/// Why the run store cannot be used. Each message names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the run store {path}: {detail}")]
    Open { path: PathBuf, detail: String },
    #[error(
        "the run store {path} was written by a newer Switchyard (schema {found}; this one knows up to {known}); it \
         was left untouched: upgrade Switchyard, or set SWITCHYARD_HOME to use another folder"
    )]
    TooNew { path: PathBuf, found: i64, known: i64 },
    #[error(
        "the run store {path} is not a readable database ({detail}); move it aside and Switchyard starts a new one"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error("run store {path}: {detail}")]
    Query { path: PathBuf, detail: String },
    #[error("no run `{id}` in the run store {path}")]
    NoSuchRun { path: PathBuf, id: String },
    #[error("run `{id}` is in use by another process")]
    InUse { id: String },
    #[error("no evaluation `{id}` in the run store {path}")]
    NoSuchEval { path: PathBuf, id: String },
    #[error(
        "the run store {location} is this machine's alone, and no worker takes runs from it: a run for workers needs \
         a PostgreSQL run store (postgres://…)"
    )]
    NoWorkers { location: String },
    #[error(
        "{url} is a PostgreSQL run store, but this Switchyard was built without PostgreSQL support (the `postgres` \
         feature)"
    )]
    PostgresNotBuilt { url: String },
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Postgres(#[from] crate::postgres::PgError),
}

impl StoreError {
    /// A stable code for the window and scripts.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Open { .. } => "STORE_OPEN",
            StoreError::TooNew { .. } => "STORE_TOO_NEW",
            StoreError::Corrupt { .. } => "STORE_CORRUPT",
            StoreError::Query { .. } => "STORE_QUERY",
            StoreError::NoSuchRun { .. } => "NO_SUCH_RUN",
            StoreError::NoSuchEval { .. } => "NO_SUCH_EVAL",
            StoreError::InUse { .. } => "RUN_IN_USE",
            StoreError::NoWorkers { .. } => "NO_WORKERS",
            StoreError::PostgresNotBuilt { .. } => "POSTGRES_NOT_BUILT",
            #[cfg(feature = "postgres")]
            StoreError::Postgres(e) => e.code(),
        }
    }
}

/// A run's status as history shows it: the engine's statuses, and `interrupted` for a run whose process died.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum StoredStatus {
    /// Waits for a worker to take it (a store workers share: PostgreSQL).
    Ready,
    Running,
    Paused,
    Interrupted,
    Completed,
    Failed,
    Cancelled,
}

impl StoredStatus {
    fn from_db(status: &str, live: bool) -> StoredStatus {
        match status {
            "running" if live => StoredStatus::Running,
            "running" => StoredStatus::Interrupted,
            "paused" => StoredStatus::Paused,
            "completed" => StoredStatus::Completed,
            "cancelled" => StoredStatus::Cancelled,
            _ => StoredStatus::Failed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StoredStatus::Ready => "ready",
            StoredStatus::Running => "running",
            StoredStatus::Paused => "paused",
            StoredStatus::Interrupted => "interrupted",
            StoredStatus::Completed => "completed",
            StoredStatus::Failed => "failed",
            StoredStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the run can go on: it waits for decisions, its process died, or it waits for a worker (whoever
    /// resumes it first takes it).
    pub fn resumable(self) -> bool {
        matches!(self, StoredStatus::Paused | StoredStatus::Interrupted | StoredStatus::Ready)
    }

    /// Whether the run has ended: nothing more happens to it.
    pub fn ended(self) -> bool {
        matches!(self, StoredStatus::Completed | StoredStatus::Failed | StoredStatus::Cancelled)
    }
}

/// One run of the history.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct RunRow {
    pub id: String,
    /// The workflow's name.
    pub workflow: String,
    /// The file it was run from (`path`, or `path#format` when its format was forced), when it had one.
    pub workflow_ref: Option<String>,
    pub answers_path: Option<String>,
    pub status: StoredStatus,
    /// RFC 3339.
    pub started: String,
    /// From start to end, or to now while it runs or waits.
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub duration_ms: u64,
    /// Approvals it waits for.
    pub pending: Vec<String>,
    /// Tokens its model calls used, per `provider/model` (kept when it pauses or ends).
    pub usage: BTreeMap<String, Usage>,
    /// All of them.
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub tokens: u64,
    /// US dollars at the settings' prices (`session::priced`); none when a model that used tokens has no price, or
    /// before the session priced it.
    pub cost: Option<f64>,
    /// The evaluation it was a case of, if any.
    pub eval: Option<String>,
}

impl RunRow {
    pub(crate) fn counted(mut self) -> RunRow {
        self.tokens = crate::usage::tokens(&self.usage);
        self
    }
}

/// An evaluation's report as kept in the store (its JSON, as `switchyard eval --json` prints it): what a later
/// evaluation of the same file compares with.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEval {
    pub id: String,
    /// The evaluation file, as its absolute path.
    pub file: String,
    pub workflow: String,
    /// RFC 3339.
    pub started: String,
    pub report: String,
}

/// A decision kept in the store for whoever works the run (a server's API took it; `postgres::team`).
#[derive(Debug, Clone, PartialEq)]
pub struct KeptDecision {
    pub node: String,
    /// The round of the node's approval it settles (`record::settled` when it was sent).
    pub round: u32,
    /// `{decision, note}`, as `resume --decide` gives it.
    pub decision: serde_json::Value,
}

/// What people asked of a run, through the store, that whoever works it must carry out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Requests {
    pub cancel: bool,
    pub decisions: Vec<KeptDecision>,
}

/// What is kept of a run when it starts.
pub struct NewRun<'a> {
    pub id: &'a str,
    pub workflow: &'a Workflow,
    pub workflow_ref: Option<&'a str>,
    pub answers_path: Option<&'a str>,
    pub options: &'a RunOptions,
    /// The evaluation this run is a case of.
    pub eval_id: Option<&'a str>,
}

/// What a rebuild of a stored run needs: the document and options it started with, and its recording.
pub struct StoredRun {
    pub row: RunRow,
    pub workflow: Workflow,
    pub options: RunOptions,
    pub recording: Recording,
}

/// This process runs the run: held while the run is live, released (also when the process dies: by the system for
/// a file lock, when its lease expires for PostgreSQL) when dropped.
pub struct Claim {
    held: Held,
    /// The log the claimed run must be written to, when it is not the store itself (PostgreSQL: fenced by the
    /// claim's epoch).
    log: Option<Arc<dyn RunLog>>,
    lost: Signal,
    /// Said when someone asked, through the store, that the run be cancelled (PostgreSQL: seen at a heartbeat).
    cancel: Signal,
    /// Moves on each time the store says that something was asked of the run (a decision) while it is held.
    nudges: Option<tokio::sync::watch::Receiver<u64>>,
}

enum Held {
    /// A lock file, removed when released.
    File { _lock: File, path: PathBuf },
    /// A lease, kept alive while held and given up when dropped (`postgres::LeaseGuard`).
    Lease(Box<dyn Lease>),
}

/// A claim kept alive by a lease: given up when dropped, unless abandoned first.
pub(crate) trait Lease: Send + Sync {
    /// Stops keeping the lease alive without giving it up: it runs out by itself.
    fn abandon(&mut self);
    /// When the run is given up paused: the time (Unix milliseconds) at which a worker must take it again, for an
    /// approval that times out then.
    fn wake_at(&mut self, at_ms: i64);
}

impl Claim {
    /// A claim that is a lease: `guard` keeps it and gives it up when dropped; every write goes to `log`; `lost`
    /// says when another process took the run over.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn lease(
        guard: Box<dyn Lease>,
        log: Arc<dyn RunLog>,
        lost: Signal,
        cancel: Signal,
        nudges: tokio::sync::watch::Receiver<u64>,
    ) -> Claim {
        Claim { held: Held::Lease(guard), log: Some(log), lost, cancel, nudges: Some(nudges) }
    }

    /// Completes the next time the store says that something was asked of the run while this claim holds it (never,
    /// for a lock file): whoever works it then reads `Store::requests`.
    pub fn nudged(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let nudges = self.nudges.clone();
        async move {
            match nudges {
                Some(mut nudges) => {
                    if nudges.changed().await.is_err() {
                        std::future::pending::<()>().await
                    }
                }
                None => std::future::pending().await,
            }
        }
    }

    /// Says, before the claim is given up, that the paused run must be taken again at `at_ms` (Unix milliseconds):
    /// its first approval deadline. Nothing for a lock file: the process that holds it keeps the timer.
    pub fn wake_at(&mut self, at_ms: i64) {
        if let Held::Lease(lease) = &mut self.held {
            lease.wake_at(at_ms);
        }
    }

    /// Completes when someone asked, through the store, that the run be cancelled; never for a lock file.
    pub fn cancel_requested(&self) -> Signal {
        self.cancel.clone()
    }

    /// Lets go of the run without giving it up: a lease runs out by itself, so whoever claims the run next does so
    /// only after it (a run that cannot go on here is then tried again once per lease, not at once in a loop); a
    /// lock file is released at once.
    pub fn abandon(mut self) {
        if let Held::Lease(lease) = &mut self.held {
            lease.abandon();
        }
    }

    /// The log the claimed run must be written to, when it is not the store itself.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn log(&self) -> Option<Arc<dyn RunLog>> {
        self.log.clone()
    }

    /// Completes when the run is no longer this process's: another took it over, or its log could not be written
    /// (the run must stop: the log is what it goes on from). Never, for a run held by a lock file.
    pub fn lost(&self) -> Signal {
        self.lost.clone()
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Held::File { path, .. } = &self.held {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Completes when something happens to a claim: it is lost ([`Claim::lost`]), or its run's cancellation was asked
/// for ([`Claim::cancel_requested`]).
#[derive(Clone, Default)]
pub struct Signal(Option<tokio::sync::watch::Receiver<bool>>);

impl Signal {
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn watching(lost: tokio::sync::watch::Receiver<bool>) -> Signal {
        Signal(Some(lost))
    }

    /// Whether it happened already.
    pub fn happened(&self) -> bool {
        self.0.as_ref().is_some_and(|l| *l.borrow())
    }

    /// Waits until it happens (forever, if it never does).
    pub async fn wait(self) {
        match self.0 {
            Some(mut lost) => {
                if lost.wait_for(|l| *l).await.is_err() {
                    // Its sender is gone without losing it: the claim was given up, not lost.
                    std::future::pending::<()>().await
                }
            }
            None => std::future::pending().await,
        }
    }
}

/// The run store as the session uses it: runs, their events and inputs, and who runs each. Implemented by the
/// SQLite [`RunStore`] and by `postgres::PgStore`; both return the same rows and stored runs.
pub trait Store: Send + Sync {
    /// Where the runs are kept, as messages name it: a file's path, or `host:port/db`.
    fn location(&self) -> String;
    /// Records a run as it starts (status `running`), claimed by this process, before its first event.
    fn create(&self, run: &NewRun) -> Result<Claim, StoreError>;
    /// Records a run for a worker to start (status `ready`); only a store that workers share has them.
    fn submit(&self, _run: &NewRun) -> Result<(), StoreError> {
        Err(StoreError::NoWorkers { location: self.location() })
    }
    /// Takes a stored run for this process; fails when another live process has it.
    fn claim(&self, id: &str) -> Result<Claim, StoreError>;
    /// Runs, newest first.
    fn list(&self) -> Result<Vec<RunRow>, StoreError>;
    /// The newest `limit` runs, newest first (a store with many runs reads no more).
    fn recent(&self, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        Ok(self.list()?.into_iter().take(limit).collect())
    }
    fn get(&self, id: &str) -> Result<RunRow, StoreError>;
    /// Everything needed to continue, replay or reuse a run.
    fn load(&self, id: &str) -> Result<StoredRun, StoreError>;
    fn events(&self, id: &str) -> Result<Vec<Event>, StoreError>;
    /// A run's events numbered after `after`, in order: what a follower has not seen yet (it reads no more).
    fn events_after(&self, id: &str, after: u64) -> Result<Vec<Event>, StoreError>;
    /// The log a run claimed by `claim` is written to.
    fn run_log(self: Arc<Self>, claim: &Claim) -> Arc<dyn RunLog>;
    /// What people asked of a run through the store; nothing, for a store nobody else asks through.
    fn requests(&self, _id: &str) -> Result<Requests, StoreError> {
        Ok(Requests::default())
    }
}

/// A shared store is a store (the shells and evaluations keep theirs in an `Arc`).
impl<T: Store + ?Sized> Store for Arc<T> {
    fn location(&self) -> String {
        (**self).location()
    }
    fn create(&self, run: &NewRun) -> Result<Claim, StoreError> {
        (**self).create(run)
    }
    fn submit(&self, run: &NewRun) -> Result<(), StoreError> {
        (**self).submit(run)
    }
    fn claim(&self, id: &str) -> Result<Claim, StoreError> {
        (**self).claim(id)
    }
    fn list(&self) -> Result<Vec<RunRow>, StoreError> {
        (**self).list()
    }
    fn recent(&self, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        (**self).recent(limit)
    }
    fn get(&self, id: &str) -> Result<RunRow, StoreError> {
        (**self).get(id)
    }
    fn load(&self, id: &str) -> Result<StoredRun, StoreError> {
        (**self).load(id)
    }
    fn events(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        (**self).events(id)
    }
    fn events_after(&self, id: &str, after: u64) -> Result<Vec<Event>, StoreError> {
        (**self).events_after(id, after)
    }
    fn run_log(self: Arc<Self>, claim: &Claim) -> Arc<dyn RunLog> {
        Arc::clone(&*self).run_log(claim)
    }
    fn requests(&self, id: &str) -> Result<Requests, StoreError> {
        (**self).requests(id)
    }
}

impl Store for RunStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }
    fn create(&self, run: &NewRun) -> Result<Claim, StoreError> {
        RunStore::create(self, run)
    }
    fn claim(&self, id: &str) -> Result<Claim, StoreError> {
        RunStore::claim(self, id)
    }
    fn list(&self) -> Result<Vec<RunRow>, StoreError> {
        RunStore::list(self)
    }
    fn get(&self, id: &str) -> Result<RunRow, StoreError> {
        RunStore::get(self, id)
    }
    fn load(&self, id: &str) -> Result<StoredRun, StoreError> {
        RunStore::load(self, id)
    }
    fn events(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        RunStore::events(self, id)
    }
    fn events_after(&self, id: &str, after: u64) -> Result<Vec<Event>, StoreError> {
        RunStore::events_after(self, id, after)
    }
    /// The store itself: a file lock fences nothing, so every write goes straight to the file.
    fn run_log(self: Arc<Self>, claim: &Claim) -> Arc<dyn RunLog> {
        claim.log.clone().unwrap_or(self)
    }
}

/// Opens the run store `db` names: `postgres://…` (or `postgresql://…`) a PostgreSQL database, else an SQLite file
/// (`sqlite:PATH` or a plain path); none, the default file.
pub fn open(db: Option<&str>) -> Result<Arc<dyn Store>, StoreError> {
    let Some(db) = db.map(str::trim).filter(|d| !d.is_empty()) else {
        return Ok(Arc::new(RunStore::open(&default_path())?));
    };
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        return Ok(Arc::new(crate::postgres::PgStore::open(db)?));
        #[cfg(not(feature = "postgres"))]
        return Err(StoreError::PostgresNotBuilt { url: without_password(db) });
    }
    let path = db.strip_prefix("sqlite://").or_else(|| db.strip_prefix("sqlite:")).unwrap_or(db);
    Ok(Arc::new(RunStore::open(Path::new(path))?))
}

/// A database URL as messages show it: never its password.
#[cfg_attr(feature = "postgres", allow(dead_code))]
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    match rest.split_once('@') {
        Some((user, host)) => format!("{scheme}://{}@{host}", user.split(':').next().unwrap_or("")),
        None => url.to_string(),
    }
}

pub use crate::files::data_dir;

/// `runs.sqlite` in the [`data_dir`].
pub fn default_path() -> PathBuf {
    data_dir().join("runs.sqlite")
}

pub struct RunStore {
    conn: Mutex<Connection>,
    path: PathBuf,
}

const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ','now')";

impl RunStore {
    /// Opens (creating, or bringing up to date) the store at `path`.
    pub fn open(path: &Path) -> Result<RunStore, StoreError> {
        let open_error = |detail: String| StoreError::Open { path: path.to_path_buf(), detail };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| open_error(format!("cannot create {}: {e}", dir.display())))?;
        }
        let mut conn = Connection::open(path).map_err(|e| open_error(e.to_string()))?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(|e| open_error(e.to_string()))?;
        migrations::bring_up_to_date(&mut conn, path)?;
        Ok(RunStore { conn: Mutex::new(conn), path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn query_error(&self, e: impl std::fmt::Display) -> StoreError {
        let detail = e.to_string();
        if detail.contains("malformed") || detail.contains("not a database") {
            StoreError::Corrupt { path: self.path.clone(), detail }
        } else {
            StoreError::Query { path: self.path.clone(), detail }
        }
    }

    fn lock_path(&self, id: &str) -> PathBuf {
        let mut dir = self.path.clone().into_os_string();
        dir.push(".locks");
        PathBuf::from(dir).join(format!("{id}.lock"))
    }

    /// Takes the run for this process; fails when another live process has it.
    pub fn claim(&self, id: &str) -> Result<Claim, StoreError> {
        let path = self.lock_path(id);
        let io = |e: std::io::Error| StoreError::Open { path: path.clone(), detail: e.to_string() };
        std::fs::create_dir_all(path.parent().expect("a lock file has a folder")).map_err(io)?;
        let file = File::options().create(true).truncate(false).write(true).open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(Claim {
                held: Held::File { _lock: file, path },
                log: None,
                lost: Signal::default(),
                cancel: Signal::default(),
                nudges: None,
            }),
            Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::InUse { id: id.to_string() }),
            Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
        }
    }

    /// Whether a live process holds the run.
    fn is_live(&self, id: &str) -> bool {
        let Ok(file) = File::open(self.lock_path(id)) else { return false };
        matches!(file.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
    }

    /// Records a run as it starts (status `running`) and claims it for this process.
    pub fn create(&self, run: &NewRun) -> Result<Claim, StoreError> {
        let claim = self.claim(run.id)?;
        let document = serde_json::to_string(run.workflow).expect("workflows serialize");
        let options = serde_json::to_string(run.options).expect("run options serialize");
        self.conn
            .lock()
            .unwrap()
            .execute(
                &format!(
                    "INSERT INTO runs (id, workflow_path, script_path, status, workflow_name, document, options,
                       started_at, updated_at, eval_id) VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, {NOW}, {NOW}, ?7)"
                ),
                params![
                    run.id,
                    run.workflow_ref.unwrap_or(""),
                    run.answers_path,
                    run.workflow.name,
                    document,
                    options,
                    run.eval_id
                ],
            )
            .map_err(|e| self.query_error(e))?;
        Ok(claim)
    }

    /// Runs, newest first.
    pub fn list(&self) -> Result<Vec<RunRow>, StoreError> {
        let rows = {
            let conn = self.conn.lock().unwrap();
            let mut stmt = conn
                .prepare(&format!("{ROW_SELECT} ORDER BY started_at DESC, rowid DESC"))
                .map_err(|e| self.query_error(e))?;
            let rows = stmt.query_map([], raw_row).map_err(|e| self.query_error(e))?;
            rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.query_error(e))?
        };
        Ok(rows.into_iter().map(|r| self.row(r)).collect())
    }

    /// One run of the history.
    pub fn get(&self, id: &str) -> Result<RunRow, StoreError> {
        let raw = {
            let conn = self.conn.lock().unwrap();
            conn.query_row(&format!("{ROW_SELECT} WHERE id = ?1"), params![id], raw_row)
                .optional()
                .map_err(|e| self.query_error(e))?
        };
        raw.map(|r| self.row(r)).ok_or_else(|| StoreError::NoSuchRun { path: self.path.clone(), id: id.to_string() })
    }

    fn row(&self, r: RawRow) -> RunRow {
        let live = r.status == "running" && self.is_live(&r.id);
        let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok().map(|t| t.timestamp_millis());
        let started = parse(&r.started).unwrap_or(0);
        let ended = r.ended.as_deref().and_then(parse);
        let status = StoredStatus::from_db(&r.status, live);
        // An interrupted run's time stops at its last sign of life: its last event.
        let until = match status {
            StoredStatus::Interrupted => self.last_event_ms(&r.id).or(parse(&r.updated)).unwrap_or(started),
            _ => ended.unwrap_or_else(|| chrono::Utc::now().timestamp_millis()),
        };
        RunRow {
            id: r.id,
            workflow: r.name,
            workflow_ref: Some(r.workflow_path).filter(|p| !p.is_empty()),
            answers_path: r.answers_path,
            status,
            started: r.started,
            duration_ms: (until - started).max(0) as u64,
            pending: serde_json::from_str(&r.pending).unwrap_or_default(),
            tokens: 0,
            usage: r.usage.and_then(|u| serde_json::from_str(&u).ok()).unwrap_or_default(),
            cost: None,
            eval: r.eval,
        }
        .counted()
    }

    fn last_event_ms(&self, id: &str) -> Option<i64> {
        let conn = self.conn.lock().unwrap();
        let text: String = conn
            .query_row("SELECT event FROM events WHERE run_id = ?1 ORDER BY seq DESC LIMIT 1", params![id], |r| {
                r.get(0)
            })
            .ok()?;
        let event: Event = serde_json::from_str(&text).ok()?;
        chrono::DateTime::parse_from_rfc3339(&event.ts).ok().map(|t| t.timestamp_millis())
    }

    /// Everything needed to continue, replay or reuse a run.
    pub fn load(&self, id: &str) -> Result<StoredRun, StoreError> {
        let row = self.get(id)?;
        let (document, options): (Option<String>, Option<String>) = self
            .conn
            .lock()
            .unwrap()
            .query_row("SELECT document, options FROM runs WHERE id = ?1", params![id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.query_error(e))?;
        let unreadable = |what: &str, e: String| {
            StoreError::Query {
            path: self.path.clone(),
            detail: format!("run `{id}` has an unreadable {what} ({e}); it was recorded by an earlier Switchyard, which kept no copy of the workflow"),
        }
        };
        let workflow = serde_json::from_str(document.as_deref().unwrap_or(""))
            .map_err(|e| unreadable("workflow copy", e.to_string()))?;
        let options =
            serde_json::from_str(options.as_deref().unwrap_or("")).map_err(|e| unreadable("options", e.to_string()))?;
        let recording = Recording { inputs: self.inputs(id)?, events: self.events(id)? };
        Ok(StoredRun { row, workflow, options, recording })
    }

    pub fn events(&self, run_id: &str) -> Result<Vec<Event>, StoreError> {
        self.column_of(run_id, "SELECT event FROM events WHERE run_id = ?1 ORDER BY seq", "event")
    }

    /// A run's events numbered after `after`, in order.
    pub fn events_after(&self, run_id: &str, after: u64) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let sql = "SELECT event FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq";
        self.column_with(run_id, sql, params![run_id, after], "event")
    }

    pub fn inputs(&self, run_id: &str) -> Result<Vec<Recorded>, StoreError> {
        self.column_of(run_id, "SELECT input FROM inputs WHERE run_id = ?1 ORDER BY id", "input")
    }

    /// Keeps an evaluation's report.
    pub fn save_eval(&self, eval: &StoredEval) -> Result<(), StoreError> {
        self.conn
            .lock()
            .unwrap()
            .execute(
                "INSERT INTO evals (id, file, workflow, started_at, report) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![eval.id, eval.file, eval.workflow, eval.started, eval.report],
            )
            .map(|_| ())
            .map_err(|e| self.query_error(e))
    }

    /// The evaluations of one file, newest first.
    pub fn evals(&self, file: &str) -> Result<Vec<StoredEval>, StoreError> {
        let conn = self.conn.lock().unwrap();
        let mut stmt = conn
            .prepare(&format!("{EVAL_SELECT} WHERE file = ?1 ORDER BY started_at DESC, rowid DESC"))
            .map_err(|e| self.query_error(e))?;
        let rows = stmt.query_map(params![file], stored_eval).map_err(|e| self.query_error(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.query_error(e))
    }

    /// One evaluation.
    pub fn eval(&self, id: &str) -> Result<StoredEval, StoreError> {
        let conn = self.conn.lock().unwrap();
        conn.query_row(&format!("{EVAL_SELECT} WHERE id = ?1"), params![id], stored_eval)
            .optional()
            .map_err(|e| self.query_error(e))?
            .ok_or_else(|| StoreError::NoSuchEval { path: self.path.clone(), id: id.to_string() })
    }

    fn column_of<T: serde::de::DeserializeOwned>(
        &self,
        run_id: &str,
        sql: &str,
        what: &str,
    ) -> Result<Vec<T>, StoreError> {
        self.column_with(run_id, sql, params![run_id], what)
    }

    /// The JSON column `sql` selects with `params`, one value per row, for messages about run `run_id`.
    fn column_with<T: serde::de::DeserializeOwned>(
        &self,
        run_id: &str,
        sql: &str,
        params: &[&dyn rusqlite::ToSql],
        what: &str,
    ) -> Result<Vec<T>, StoreError> {
        let conn = self.conn.lock().unwrap();
        let mut stmt = conn.prepare_cached(sql).map_err(|e| self.query_error(e))?;
        let rows = stmt.query_map(params, |r| r.get::<_, String>(0)).map_err(|e| self.query_error(e))?;
        rows.map(|r| {
            let text = r.map_err(|e| self.query_error(e))?;
            serde_json::from_str(&text).map_err(|e| self.query_error(format!("unreadable {what} in run {run_id}: {e}")))
        })
        .collect()
    }
}

const EVAL_SELECT: &str = "SELECT id, file, workflow, started_at, report FROM evals";

fn stored_eval(r: &rusqlite::Row) -> rusqlite::Result<StoredEval> {
    Ok(StoredEval { id: r.get(0)?, file: r.get(1)?, workflow: r.get(2)?, started: r.get(3)?, report: r.get(4)? })
}

/// `script_path` is the column's older name for the answers file's path.
const ROW_SELECT: &str = "SELECT id, workflow_path, script_path, status, coalesce(workflow_name, ''),
    coalesce(started_at, updated_at), ended_at, updated_at, coalesce(pending, '[]'), usage, eval_id FROM runs";

struct RawRow {
    id: String,
    workflow_path: String,
    answers_path: Option<String>,
    status: String,
    name: String,
    started: String,
    ended: Option<String>,
    updated: String,
    pending: String,
    usage: Option<String>,
    eval: Option<String>,
}

fn raw_row(r: &rusqlite::Row) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: r.get(0)?,
        workflow_path: r.get(1)?,
        answers_path: r.get(2)?,
        status: r.get(3)?,
        name: r.get(4)?,
        started: r.get(5)?,
        ended: r.get(6)?,
        updated: r.get(7)?,
        pending: r.get(8)?,
        usage: r.get(9)?,
        eval: r.get(10)?,
    })
}

impl RunLog for RunStore {
    /// One transaction for the whole batch, with prepared statements: a commit per batch, not per event.
    fn write_batch(&self, run: &str, items: &[LogItem]) -> Result<(), LogError> {
        let failed = |e: rusqlite::Error| LogError(format!("cannot write to the run log {}: {e}", self.path.display()));
        let mut conn = self.conn.lock().unwrap();
        let tx = conn.transaction().map_err(failed)?;
        {
            let mut event =
                tx.prepare_cached("INSERT INTO events (run_id, seq, event) VALUES (?1, ?2, ?3)").map_err(failed)?;
            let mut input = tx.prepare_cached("INSERT INTO inputs (run_id, input) VALUES (?1, ?2)").map_err(failed)?;
            for item in items {
                match item {
                    LogItem::Event(e) => {
                        let text = serde_json::to_string(e).map_err(|e| LogError(e.to_string()))?;
                        event.execute(params![e.run, e.seq as i64, text]).map_err(failed)?;
                    }
                    LogItem::Input(i) => {
                        let text = serde_json::to_string(i).map_err(|e| LogError(e.to_string()))?;
                        input.execute(params![run, text]).map_err(failed)?;
                    }
                    LogItem::Status { status, pending } => {
                        set_status(&tx, run, *status, pending).map_err(failed)?;
                    }
                }
            }
        }
        tx.commit().map_err(failed)
    }

    fn append(&self, event: &Event) -> Result<(), LogError> {
        let text = serde_json::to_string(event).map_err(|e| LogError(e.to_string()))?;
        self.conn
            .lock()
            .unwrap()
            .execute(
                "INSERT INTO events (run_id, seq, event) VALUES (?1, ?2, ?3)",
                params![event.run, event.seq as i64, text],
            )
            .map(|_| ())
            .map_err(|e| LogError(format!("cannot write to the run log {}: {e}", self.path.display())))
    }

    fn record_input(&self, run: &str, input: &Recorded) -> Result<(), LogError> {
        let text = serde_json::to_string(input).map_err(|e| LogError(e.to_string()))?;
        self.conn
            .lock()
            .unwrap()
            .execute("INSERT INTO inputs (run_id, input) VALUES (?1, ?2)", params![run, text])
            .map(|_| ())
            .map_err(|e| LogError(format!("cannot write to the run log {}: {e}", self.path.display())))
    }

    fn run_status(&self, run: &str, status: RunStatus, pending: &[String]) -> Result<(), LogError> {
        set_status(&self.conn.lock().unwrap(), run, status, pending)
            .map_err(|e| LogError(format!("cannot write to the run log {}: {e}", self.path.display())))
    }
}

/// Keeps the run's status, and what its model calls used so far, whenever it changes (a run pauses, goes on or
/// ends: a handful of times per run, so the usage is counted from the log then rather than on every event).
fn set_status(conn: &Connection, run: &str, status: RunStatus, pending: &[String]) -> rusqlite::Result<()> {
    let ended = matches!(status, RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled);
    let pending = serde_json::to_string(pending).expect("strings serialize");
    let usage = if status == RunStatus::Running { None } else { usage_of(conn, run)? };
    conn.prepare_cached(&format!(
        "UPDATE runs SET status = ?2, pending = ?3, updated_at = {NOW},
           ended_at = CASE WHEN ?4 THEN {NOW} ELSE NULL END, usage = coalesce(?5, usage) WHERE id = ?1"
    ))?
    .execute(params![run, status.as_str(), pending, ended, usage])
    .map(|_| ())
}

/// The run's usage per model, as JSON (see [`usage_json`]).
fn usage_of(conn: &Connection, run: &str) -> rusqlite::Result<Option<String>> {
    let (document, options): (Option<String>, Option<String>) = conn
        .prepare_cached("SELECT document, options FROM runs WHERE id = ?1")?
        .query_row(params![run], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let mut stmt = conn.prepare_cached("SELECT event FROM events WHERE run_id = ?1 AND event LIKE '%\"usage\"%'")?;
    let events: Vec<String> = stmt.query_map(params![run], |r| r.get::<_, String>(0))?.filter_map(Result::ok).collect();
    Ok(Some(usage_json(document.as_deref(), options.as_deref(), &events)))
}

/// A run's usage per model, as JSON, from its copies of the workflow and options and the events that carry usage:
/// each node's model is the one its copy of the workflow names, else the run's (`--model`, or the default it found),
/// else the workflow's default. The same in every store.
pub(crate) fn usage_json(document: Option<&str>, options: Option<&str>, events: &[String]) -> String {
    let events: Vec<Event> = events.iter().filter_map(|t| serde_json::from_str(t).ok()).collect();
    // Parsed only when a node used tokens (`by_model` asks for its model then): a large workflow's copy costs
    // megabytes to parse, at every pause and end.
    let models = std::cell::OnceCell::new();
    let used = crate::usage::by_model(&events, |node| {
        let (named, default) = models.get_or_init(|| node_models(document, options));
        named.get(node).or(default.as_ref()).cloned()
    });
    serde_json::to_string(&used).expect("usage serializes")
}

/// Each node's model as the workflow's copy names it (looked up once per node), and the run's default.
fn node_models(document: Option<&str>, options: Option<&str>) -> (FxHashMap<String, String>, Option<String>) {
    let parse = |text: Option<&str>| text.and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok());
    let (document, options) = (parse(document).unwrap_or_default(), parse(options).unwrap_or_default());
    let default = options["model"].as_str().or(document["defaults"]["model"].as_str()).map(str::to_string);
    let named = document["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| Some((n["id"].as_str()?.to_string(), n["model"].as_str()?.to_string())))
        .collect();
    (named, default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{self, Format};

    fn workflow() -> Workflow {
        let text = "switchyard: 1\nname: stored\nnodes:\n  - {id: start, type: start}\n";
        format::load_str(text, Some(Format::Switchyard), None).unwrap().workflow
    }

    fn new_run<'a>(id: &'a str, wf: &'a Workflow, options: &'a RunOptions) -> NewRun<'a> {
        NewRun { id, workflow: wf, workflow_ref: Some("/tmp/wf.yaml"), answers_path: None, options, eval_id: None }
    }

    #[test]
    fn a_run_is_listed_running_while_its_process_holds_it_and_interrupted_after() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(&dir.path().join("runs.sqlite")).unwrap();
        let (wf, options) = (workflow(), RunOptions::default());
        let claim = store.create(&new_run("r1", &wf, &options)).unwrap();
        assert_eq!(store.get("r1").unwrap().status, StoredStatus::Running);
        assert!(matches!(store.claim("r1"), Err(StoreError::InUse { .. })), "a live run cannot be taken twice");
        drop(claim); // the process died without saying how the run ended
        let row = store.get("r1").unwrap();
        assert_eq!(row.status, StoredStatus::Interrupted);
        assert!(row.status.resumable());
        // Another store on the same file (another process) sees the same.
        let other = RunStore::open(store.path()).unwrap();
        assert_eq!(other.list().unwrap()[0].status, StoredStatus::Interrupted);
        // Once it ends, it is what its status says.
        store.run_status("r1", RunStatus::Completed, &[]).unwrap();
        assert_eq!(store.get("r1").unwrap().status, StoredStatus::Completed);
    }

    #[test]
    fn a_store_written_by_a_newer_switchyard_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;").unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let Err(error) = RunStore::open(&path) else { panic!("a newer store opened") };
        assert_eq!(error.code(), "STORE_TOO_NEW");
        let message = error.to_string();
        assert!(message.contains(&path.display().to_string()) && message.contains("schema 99"), "{message}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "the file was altered");
    }

    #[test]
    fn a_file_that_is_not_a_database_gives_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.sqlite");
        std::fs::write(
            &path,
            b"this is not a database, just some text that is long enough to fill a header".repeat(20),
        )
        .unwrap();
        let Err(error) = RunStore::open(&path) else { panic!("garbage opened as a store") };
        assert_eq!(error.code(), "STORE_CORRUPT");
        assert!(error.to_string().contains(&path.display().to_string()), "{error}");
        assert!(error.to_string().contains("move it aside"), "{error}");
    }

    #[test]
    fn a_store_from_before_schema_versions_is_brought_up_to_date_keeping_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE runs (id TEXT PRIMARY KEY, workflow_path TEXT NOT NULL, script_path TEXT,
                   status TEXT NOT NULL, snapshot TEXT, updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
                 CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (run_id, seq));
                 INSERT INTO runs (id, workflow_path, status) VALUES ('old', '/tmp/old.yaml', 'completed');",
            )
            .unwrap();
        }
        let store = RunStore::open(&path).unwrap();
        let row = store.get("old").unwrap();
        assert_eq!((row.status, row.workflow_ref.as_deref()), (StoredStatus::Completed, Some("/tmp/old.yaml")));
        // It kept no copy of its workflow, so it cannot be rebuilt; it says why.
        let Err(error) = store.load("old") else { panic!("an old run loaded") };
        assert!(error.to_string().contains("earlier Switchyard"), "{error}");
    }

    #[test]
    fn two_processes_write_runs_to_one_store_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.sqlite");
        RunStore::open(&path).unwrap();
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let store = RunStore::open(&path).unwrap();
                    let (wf, options) = (workflow(), RunOptions::default());
                    let id = format!("run-{w}");
                    let _claim = store.create(&new_run(&id, &wf, &options)).unwrap();
                    for seq in 1..=200u64 {
                        let kind = crate::events::EventKind::NodeSkipped { node: "start".into() };
                        store
                            .append(&Event { seq, run: id.clone(), ts: "2026-01-01T00:00:00.000Z".into(), kind })
                            .unwrap();
                    }
                    store.run_status(&id, RunStatus::Completed, &[]).unwrap();
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let store = RunStore::open(&path).unwrap();
        assert_eq!(store.list().unwrap().len(), 2);
        for w in 0..2 {
            assert_eq!(store.events(&format!("run-{w}")).unwrap().len(), 200);
        }
        // A follower reads only what it has not seen, through the trait every shell uses.
        let shared: &dyn Store = &store;
        let after: Vec<u64> = shared.events_after("run-1", 197).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(after, [198, 199, 200]);
        assert!(
            shared.events_after("run-1", 200).unwrap().is_empty() && shared.events_after("nope", 0).unwrap().is_empty()
        );
    }

    #[test]
    fn a_truncated_store_is_reported_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.sqlite");
        {
            let store = RunStore::open(&path).unwrap();
            let (wf, options) = (workflow(), RunOptions::default());
            let _claim = store.create(&new_run("r1", &wf, &options)).unwrap();
            for seq in 1..=2000u64 {
                let kind = crate::events::EventKind::NodeProgress { node: "start".into(), message: "x".repeat(200) };
                store.append(&Event { seq, run: "r1".into(), ts: "2026-01-01T00:00:00.000Z".into(), kind }).unwrap();
            }
        } // the last connection closes: the log is checkpointed into the file
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > 100_000, "the store should span many pages ({len} bytes)");
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len / 2).unwrap();
        let error = match RunStore::open(&path) {
            Err(e) => e,
            Ok(store) => match store.events("r1").and_then(|_| store.list()) {
                Err(e) => e,
                Ok(_) => panic!("a store cut in half read without error"),
            },
        };
        assert_eq!(error.code(), "STORE_CORRUPT", "{error}");
        assert!(error.to_string().contains(&path.display().to_string()), "{error}");
    }

    #[test]
    fn a_db_names_an_sqlite_file_or_a_postgres_database_and_messages_never_show_its_password() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("elsewhere/runs.sqlite");
        for given in [format!("sqlite:{}", path.display()), path.display().to_string()] {
            let store = open(Some(&given)).unwrap();
            assert_eq!(store.location(), path.display().to_string());
            assert!(store.list().unwrap().is_empty());
        }
        let Err(error) = open(Some("postgres://someone:secret@127.0.0.1:9/runs")) else { panic!("nothing listens") };
        let expected = if cfg!(feature = "postgres") { "PG_CONNECT" } else { "POSTGRES_NOT_BUILT" };
        assert_eq!(error.code(), expected, "{error}");
        let message = error.to_string();
        assert!(message.contains("127.0.0.1:9") && !message.contains("secret"), "{message}");
    }

    #[test]
    fn an_sqlite_store_takes_no_runs_for_workers() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(&dir.path().join("runs.sqlite")).unwrap();
        let (wf, options) = (workflow(), RunOptions::default());
        let Err(error) = Store::submit(&store, &new_run("r", &wf, &options)) else { panic!("submitted") };
        assert_eq!(error.code(), "NO_WORKERS");
        assert!(matches!(store.get("r"), Err(StoreError::NoSuchRun { .. })), "nothing was kept");
    }

    #[test]
    fn an_unknown_run_is_named_with_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(&dir.path().join("runs.sqlite")).unwrap();
        let Err(error) = store.load("nope") else { panic!() };
        assert_eq!(error.code(), "NO_SUCH_RUN");
        let message = error.to_string();
        assert!(message.contains("`nope`") && message.contains(&dir.path().display().to_string()), "{message}");
    }
}
