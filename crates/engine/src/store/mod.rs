//! The run store: where runs are kept so that a run survives the process that ran it — the workflow document and
//! options it started with, its status, its events and its inputs (`run::input`). [`Store`] is the store as the
//! session uses it, whichever database keeps the runs: an SQLite file ([`sqlite`]: one machine; the desktop's and the
//! command line's default) or PostgreSQL (`postgres`, feature `postgres`: runs shared by workers on many machines).
//! [`open`] picks one from what a person typed (`--db`). Both speak this module's vocabulary: [`RunRow`],
//! [`StoredStatus`], [`StoredRun`], [`NewRun`], [`Claim`], [`Requests`], [`Prune`] and [`Pruned`].
//!
//! Invariants (every store):
//! - A run's row is written when it starts (status `running`), or is submitted for a worker, before its first event.
//! - Events and inputs are committed as the scheduler produces them, before any observer sees them (the emitter
//!   writes the log first), so nothing a person saw can be missing from the log.
//! - A run is worked only under a [`Claim`]: a file lock (SQLite) or a lease with a fencing epoch (PostgreSQL), given
//!   up when the claim is dropped. A run whose row says `running` but that nobody holds was interrupted.
//! - The schema is versioned (`migrations`); a database written by a newer Switchyard is refused and never altered.
//! - A run's usage per model is counted the same way in every store ([`usage_json`]).
//! - Retention ([`Store::prune`]) deletes only runs that ended, with their events, inputs and decisions, a batch of
//!   runs per transaction, and never a run that someone holds. A webhook delivery key or a schedule firing outlives
//!   the run it started (PostgreSQL): it is pruned later, on its own, once its run is gone.
//!
//! The folder: `mod.rs` (this: the trait and the vocabulary), `sqlite.rs` (the SQLite [`RunStore`]),
//! `migrations/` (both stores' schemas as `.sql` files, and the rules for applying them), `postgres/` (the
//! PostgreSQL store, a module per job).

mod migrations;
#[cfg(feature = "postgres")]
pub mod postgres;
mod sqlite;

pub use sqlite::RunStore;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::events::Event;
use crate::log::RunLog;
use crate::result::Usage;
use crate::run::{Recording, RunOptions};
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
    #[error(
        "`{prefix}` begins the ids of several runs ({}): give more of the id",
        candidates.join(", ")
    )]
    AmbiguousRun { prefix: String, candidates: Vec<String> },
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
    Postgres(#[from] postgres::PgError),
}

impl StoreError {
    /// The run asked for is not in the store, whichever store said so.
    pub fn is_no_such_run(&self) -> bool {
        match self {
            StoreError::NoSuchRun { .. } => true,
            #[cfg(feature = "postgres")]
            StoreError::Postgres(postgres::PgError::NoSuchRun { .. }) => true,
            _ => false,
        }
    }

    /// A stable code for the window and scripts.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Open { .. } => "STORE_OPEN",
            StoreError::TooNew { .. } => "STORE_TOO_NEW",
            StoreError::Corrupt { .. } => "STORE_CORRUPT",
            StoreError::Query { .. } => "STORE_QUERY",
            StoreError::NoSuchRun { .. } => "NO_SUCH_RUN",
            StoreError::AmbiguousRun { .. } => "AMBIGUOUS_RUN_ID",
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
    pub(crate) fn from_db(status: &str, live: bool) -> StoredStatus {
        match status {
            "ready" => StoredStatus::Ready,
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
    /// The prices it was costed with, by `provider/model`: those it kept when it started (`RunOptions::prices`, the
    /// settings of the process that started it, for the models it can use). None for a run recorded before runs
    /// kept their prices.
    #[serde(default)]
    pub prices: Option<BTreeMap<String, crate::usage::Price>>,
    /// US dollars, rounded (`usage::round`), at its kept prices, else at the viewer's settings (`session::priced`);
    /// none when a model that used tokens has no price, or before the session priced it.
    pub cost: Option<f64>,
    /// The cost as every front end writes it (`usage::dollars`: `$0.00003`); none when the cost is.
    #[serde(default)]
    pub cost_text: Option<String>,
    /// Which prices the cost is at: `kept` (the run's own) or `current` (the viewer's settings now: a run recorded
    /// before runs kept their prices); none before the session priced it.
    #[serde(default)]
    pub priced: Option<crate::usage::Priced>,
    /// The evaluation it was a case of, if any.
    pub eval: Option<String>,
    /// The run it is a fork of (`run --fork RUN`, the Last run tab's Fork from here), if it is one.
    #[serde(default)]
    pub forked_from: Option<String>,
    /// How it was started and by whom (a server's runs; a run started on this machine is `local`, by nobody named).
    #[serde(default)]
    pub origin: Origin,
    /// Who asked that it be cancelled (a token's name), when someone did through a server.
    #[serde(default)]
    pub cancelled_by: Option<String>,
    /// The version of the served workflow it was started from (a server's runs, `GET /api/workflows/NAME/versions`);
    /// none for a run started from a file of its own.
    #[serde(default)]
    pub version: Option<i32>,
    /// The queue it waits in, or waited in, for a worker (a server's runs: `queue` of its trigger or workflow, else
    /// `default`); none for a run of this machine's own store.
    #[serde(default)]
    pub queue: Option<String>,
    /// While it is `ready`: how many runs of its queue a worker takes before it ("waiting for a worker (N ahead)").
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(type = Option<u32>))]
    pub ahead: Option<u64>,
    /// While it is `ready`: "waiting for a worker (N ahead)", as every front end says it ([`RunRow::waiting`]).
    #[serde(default)]
    pub waiting: Option<String>,
    /// The run it is a child run of, and the node there that ran it (a `workflow` node, or an agent calling a
    /// workflow tool: docs/subworkflows.md); none for a run started on its own.
    #[serde(default)]
    pub parent: Option<RunParent>,
}

/// Where a child run is in its parent, as a run's row gives it: History nests a child under its parent by it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RunParent {
    pub run: String,
    pub node: String,
    /// Its `for_each` item, when the node ran one child per item.
    #[serde(default)]
    pub item: Option<u32>,
}

impl RunParent {
    /// From a row's parent columns: a parent only when its run and node are there.
    pub(crate) fn of(run: Option<String>, node: Option<String>, item: Option<i64>) -> Option<RunParent> {
        Some(RunParent { run: run?, node: node?, item: item.and_then(|i| u32::try_from(i).ok()) })
    }

    /// Where in the parent it is, as the parent's events name it: `summarize`, or `fan[3]` for an item.
    pub fn at(&self) -> String {
        match self.item {
            Some(i) => format!("{}[{i}]", self.node),
            None => self.node.clone(),
        }
    }
}

/// How a run was started: through a server's API, a webhook, a schedule or `/mcp`, or on a machine of its own
/// (`local`: the command line, the desktop app, `mcp serve`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum Via {
    #[default]
    Local,
    Api,
    Webhook,
    Schedule,
    Mcp,
}

impl Via {
    pub const ALL: [Via; 5] = [Via::Local, Via::Api, Via::Webhook, Via::Schedule, Via::Mcp];

    /// As the store, `--json` and the API write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Local => "local",
            Via::Api => "api",
            Via::Webhook => "webhook",
            Via::Schedule => "schedule",
            Via::Mcp => "mcp",
        }
    }

    /// Read back as the store writes it; a word it never writes is `local`.
    pub fn parse(word: &str) -> Via {
        Via::ALL.into_iter().find(|v| v.as_str() == word).unwrap_or_default()
    }
}

/// Who started a run, and how (docs/server.md, "Identities"): `by` is the token's name for the API and `/mcp`, the
/// webhook's or the schedule's name for those; none for a local run (the machine's own, no one is named).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Origin {
    pub via: Via,
    #[serde(default)]
    pub by: Option<String>,
}

impl Origin {
    /// The trigger that started the run, by its name (a webhook's, a schedule's), if one did.
    pub fn trigger(&self) -> Option<&str> {
        match self.via {
            Via::Webhook => self.by.as_deref(),
            // A schedule's run is started by `WORKFLOW/NAME`; a schedule's name holds no `/`.
            Via::Schedule => self.by.as_deref().map(|by| by.rsplit_once('/').map_or(by, |(_, name)| name)),
            _ => None,
        }
    }

    /// Whether a person started it and waits for it (the API, the browser, `/mcp`): such runs go before the others
    /// in their queue.
    pub fn interactive(&self) -> bool {
        matches!(self.via, Via::Api | Via::Mcp)
    }

    /// Started `via` by `by`.
    pub fn new(via: Via, by: impl Into<String>) -> Origin {
        Origin { via, by: Some(by.into()) }
    }

    /// How `show` and History say it: "by alice via the API", "by nightly via a schedule"; none for a local run.
    pub fn said(&self) -> Option<String> {
        let via = match self.via {
            Via::Local => return None,
            Via::Api => "the API",
            Via::Webhook => "a webhook",
            Via::Schedule => "a schedule",
            Via::Mcp => "MCP",
        };
        Some(match &self.by {
            Some(by) => format!("by {by} via {via}"),
            None => format!("via {via}"),
        })
    }
}

impl RunRow {
    /// How a run that waits for a worker is said everywhere (`runs`, `show`, History): "waiting for a worker (N
    /// ahead)", with its queue when it is not `default`; none for a run that does not wait for one.
    pub fn waiting(&self) -> Option<String> {
        if self.status != StoredStatus::Ready {
            return None;
        }
        let queue = match self.queue.as_deref() {
            Some(q) if q != crate::document::DEFAULT_QUEUE => format!(" in queue `{q}`"),
            _ => String::new(),
        };
        Some(match self.ahead {
            Some(ahead) => format!("waiting for a worker ({ahead} ahead){queue}"),
            None => format!("waiting for a worker{queue}"),
        })
    }

    pub(crate) fn counted(mut self) -> RunRow {
        self.tokens = crate::usage::tokens(&self.usage);
        self.waiting = self.waiting();
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
    /// Read once where it leaves the database: a kept decision that does not read is the store's error.
    pub decision: crate::result::Decision,
}

/// What people asked of a run, through the store, that whoever works it must carry out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Requests {
    pub cancel: bool,
    /// Who asked for the cancellation (a token's name), when it was asked for by someone named.
    pub cancelled_by: Option<String>,
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
    /// How it is started and by whom (`Origin::default()`: on this machine).
    pub origin: Origin,
    /// The version of the served workflow it starts from (a server's registry); none for a file of its own.
    pub version: Option<i32>,
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
    /// The holder whose lease ran out while the run was running, and who took it over (`Claim::taking_over`).
    taken_over: Option<(String, Option<String>)>,
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
        Claim { held: Held::Lease(guard), log: Some(log), lost, cancel, nudges: Some(nudges), taken_over: None }
    }

    /// The same claim, of a run taken over from `from`, whose lease ran out while the run was running, by `by`: the
    /// run's history says so when it goes on (`workflow:taken-over`).
    pub fn taking_over(mut self, from: String, by: Option<String>) -> Claim {
        self.taken_over = Some((from, by));
        self
    }

    /// Whom the run was taken over from, and by whom, when it was (`Claim::taking_over`).
    pub fn taken_over(&self) -> Option<&(String, Option<String>)> {
        self.taken_over.as_ref()
    }

    /// A claim that is a lock file (`path`, open as `lock`): released, and the file removed, when dropped.
    pub(crate) fn file_lock(lock: File, path: PathBuf) -> Claim {
        Claim {
            held: Held::File { _lock: lock, path },
            log: None,
            lost: Signal::default(),
            cancel: Signal::default(),
            nudges: None,
            taken_over: None,
        }
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
    /// A page of runs, newest first: those `query` asks for (keyset paging: `query.before` is the last run of the
    /// page before). Both stores return the same rows in the same order.
    fn find(&self, query: &RunQuery) -> Result<Vec<RunRow>, StoreError> {
        let rows = self.list()?;
        let skip = match &query.before {
            Some(before) => 1 + rows.iter().position(|r| &r.id == before).ok_or_else(|| self.no_such_run(before))?,
            None => 0,
        };
        let family = query.family(&rows);
        let in_family = |r: &RunRow| family.as_ref().is_none_or(|f| f.contains(&r.id));
        Ok(rows.into_iter().skip(skip).filter(|r| query.matches(r) && in_family(r)).take(query.limit).collect())
    }
    /// The run whose id is `id`, or, when none is, the one run whose id begins with it (the short ids History
    /// prints). Several: `AMBIGUOUS_RUN_ID`, naming them; none: `NO_SUCH_RUN`.
    fn resolve(&self, id: &str) -> Result<String, StoreError> {
        match self.get(id) {
            Ok(row) => Ok(row.id),
            Err(StoreError::NoSuchRun { .. }) if !id.is_empty() => {
                let query = RunQuery { id_prefix: Some(id.to_string()), ..RunQuery::page(CANDIDATES + 1) };
                let found = self.find(&query)?.into_iter().map(|r| r.id).collect();
                resolved(found).map_err(|several| match several {
                    Some(candidates) => StoreError::AmbiguousRun { prefix: id.to_string(), candidates },
                    None => self.no_such_run(id),
                })
            }
            Err(e) => Err(e),
        }
    }
    /// The refusal of an id no run has, naming this store.
    fn no_such_run(&self, id: &str) -> StoreError {
        StoreError::NoSuchRun { path: PathBuf::from(self.location()), id: id.to_string() }
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
    /// Deletes the runs `prune` names (ended before its cutoff, with one of its statuses, held by nobody), with
    /// their events, inputs and decisions, [`PRUNE_BATCH`] runs per transaction; then the delivery keys and firings
    /// it names. With `dry_run`, deletes nothing and counts what it would delete.
    fn prune(&self, prune: &Prune) -> Result<Pruned, StoreError>;
    /// The child runs of `run` (its `workflow` nodes', docs/subworkflows.md), by node, iteration and item: both
    /// stores keep each child's link in columns of their own.
    fn children(&self, run: &str) -> Result<Vec<ChildRun>, StoreError>;
}

/// A child run of a run: its id and where in its parent it is.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildRun {
    pub id: String,
    pub link: crate::run::ParentLink,
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
    fn find(&self, query: &RunQuery) -> Result<Vec<RunRow>, StoreError> {
        (**self).find(query)
    }
    fn resolve(&self, id: &str) -> Result<String, StoreError> {
        (**self).resolve(id)
    }
    fn no_such_run(&self, id: &str) -> StoreError {
        (**self).no_such_run(id)
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
    fn prune(&self, prune: &Prune) -> Result<Pruned, StoreError> {
        (**self).prune(prune)
    }
    fn children(&self, run: &str) -> Result<Vec<ChildRun>, StoreError> {
        (**self).children(run)
    }
}

/// How many runs one transaction of a prune deletes at most: a large prune holds no lock for long, and a run being
/// read meanwhile is either all there or all gone.
pub const PRUNE_BATCH: usize = 200;

/// How long a webhook delivery key and a schedule firing are kept after they were received unless told otherwise
/// (`--keep-deliveries`): longer than runs usually are, so that a late redelivery of a pruned run's key still starts
/// nothing.
pub const KEEP_DELIVERIES: &str = "90d";

/// What a prune deletes ([`Store::prune`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Prune {
    /// Runs that ended before this instant.
    pub ended_before: chrono::DateTime<chrono::Utc>,
    /// Only runs with one of these statuses, each an ended one ([`prunable_status`]); none given: every ended one.
    pub statuses: Vec<StoredStatus>,
    /// Webhook delivery keys received, and schedule firings due, before this instant, once their run is gone
    /// (PostgreSQL; the SQLite store keeps neither).
    pub keys_before: chrono::DateTime<chrono::Utc>,
    /// Delete nothing; count what would go.
    pub dry_run: bool,
}

impl Prune {
    /// The statuses as the stores' rows keep them: the ones asked for, else every ended one.
    pub(crate) fn db_statuses(&self) -> Vec<String> {
        [StoredStatus::Completed, StoredStatus::Failed, StoredStatus::Cancelled]
            .into_iter()
            .filter(|s| self.statuses.is_empty() || self.statuses.contains(s))
            .map(|s| s.as_str().to_string())
            .collect()
    }
}

/// What a prune deleted, or, for a dry run, would delete.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pruned {
    pub runs: u64,
    pub events: u64,
    /// Webhook delivery keys (PostgreSQL).
    pub deliveries: u64,
    /// Schedule firings (PostgreSQL).
    pub firings: u64,
}

impl Pruned {
    /// What went (or would go), in words: "3 runs that ended before 2026-10-29T10:00:00Z (completed, failed,
    /// cancelled), with 41 events", then the delivery keys and firings when there were any.
    pub fn said(&self, prune: &Prune) -> String {
        let counted = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let at = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let mut said = format!(
            "{} that ended before {} ({}), with {}",
            counted(self.runs, "run", "runs"),
            at(prune.ended_before),
            prune.db_statuses().join(", "),
            counted(self.events, "event", "events")
        );
        if self.deliveries + self.firings > 0 {
            said += &format!(
                "; {} and {} from before {} whose runs are gone",
                counted(self.deliveries, "webhook delivery key", "webhook delivery keys"),
                counted(self.firings, "schedule firing", "schedule firings"),
                at(prune.keys_before)
            );
        }
        said
    }
}

/// How many runs an ambiguous id prefix names at most in its refusal.
pub const CANDIDATES: usize = 5;

/// Which runs a listing asks for ([`Store::find`]): a page of them, newest first, filtered. Every filter is optional;
/// each one given must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct RunQuery {
    /// At most this many.
    pub limit: usize,
    /// Only runs listed after this one (the last run of the page before): the next page. Keyset paging, so a page
    /// is as quick to read at the 1,000th run as at the first, and runs started meanwhile shift nothing.
    pub before: Option<String>,
    /// Only runs with one of these statuses (none given: any).
    pub status: Vec<StoredStatus>,
    /// Only runs of the workflow of this name (in any case), or started from this file (as `runs` shows it).
    pub workflow: Option<String>,
    /// Only runs started at or after this instant.
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// Only runs started before this instant.
    pub until: Option<chrono::DateTime<chrono::Utc>>,
    /// Only runs whose id begins with this.
    pub id_prefix: Option<String>,
    /// Only runs whose id begins with this, or whose workflow's name or file has it in them (in any case): what a
    /// person types in History's search box.
    pub search: Option<String>,
    /// With `workflow`: its runs' child runs too, at any depth, whatever their own workflow (History lists a parent's
    /// children under it).
    pub with_children: bool,
}

impl RunQuery {
    /// The newest `limit` runs, unfiltered.
    pub fn page(limit: usize) -> RunQuery {
        RunQuery {
            limit,
            before: None,
            status: Vec::new(),
            workflow: None,
            since: None,
            until: None,
            id_prefix: None,
            search: None,
            with_children: false,
        }
    }

    /// With `with_children`, the runs of `rows` that are the workflow's or below one of its runs, by their rows'
    /// `parent`; none when the query does not ask for children (every run that [`RunQuery::matches`] stands).
    pub fn family(&self, rows: &[RunRow]) -> Option<std::collections::HashSet<String>> {
        let workflow = self.workflow.as_ref().filter(|_| self.with_children)?;
        let mut family: std::collections::HashSet<String> =
            rows.iter().filter(|r| own_workflow(r, workflow)).map(|r| r.id.clone()).collect();
        loop {
            let before = family.len();
            for r in rows {
                if r.parent.as_ref().is_some_and(|p| family.contains(&p.run)) {
                    family.insert(r.id.clone());
                }
            }
            if family.len() == before {
                return Some(family);
            }
        }
    }

    /// Whether `row` is one the query asks for (every filter but `before` and `limit`).
    pub fn matches(&self, row: &RunRow) -> bool {
        let started = chrono::DateTime::parse_from_rfc3339(&row.started).ok().map(|t| t.with_timezone(&chrono::Utc));
        (self.status.is_empty() || self.status.contains(&row.status))
            // A child of another workflow stands here when children are asked for: its ancestry is the store's to
            // check (in its query, or with `family`).
            && self.workflow.as_ref().is_none_or(|w| own_workflow(row, w) || (self.with_children && row.parent.is_some()))
            && self.since.is_none_or(|since| started.is_some_and(|t| t >= since))
            && self.until.is_none_or(|until| started.is_some_and(|t| t < until))
            && self.id_prefix.as_ref().is_none_or(|p| row.id.starts_with(p.as_str()))
            && self.search.as_ref().is_none_or(|text| {
                let text = text.to_lowercase();
                row.id.to_lowercase().starts_with(&text)
                    || row.workflow.to_lowercase().contains(&text)
                    || row.workflow_ref.as_deref().is_some_and(|f| f.to_lowercase().contains(&text))
            })
    }

    /// The statuses as the stores' rows keep them: `running` for both running and interrupted runs (which of the
    /// two depends on whether anyone holds the run).
    pub(crate) fn db_statuses(&self) -> Vec<String> {
        let mut statuses: Vec<String> = self
            .status
            .iter()
            .map(|s| match s {
                StoredStatus::Interrupted => "running",
                s => s.as_str(),
            })
            .map(str::to_string)
            .collect();
        statuses.sort();
        statuses.dedup();
        statuses
    }
}

message_error!(
    /// A `--status`, `?status=`, `--since` or `?since=` (and `until`) that does not parse: what it takes.
    QueryWordError
);

/// A run query as a person or a request spells it — History's filter, `switchyard runs`' flags, `GET /api/runs`'
/// parameters — in words [`RunFilter::query`] reads: one meaning for each, wherever it is typed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase", default)]
pub struct RunFilter {
    /// At most this many, newest first.
    pub limit: Option<u32>,
    /// The next page: runs listed after this run (the id of the last run of the page before).
    pub before: Option<String>,
    /// Only runs with one of these statuses (`ready`, `running`, `paused`, `interrupted`, `completed`, `failed`,
    /// `cancelled`); none: any.
    pub status: Vec<String>,
    /// Only runs of the workflow of this name (in any case), or started from this file.
    pub workflow: Option<String>,
    /// Only runs started at or after this time: RFC 3339, a day (`2026-11-28`, UTC), or an age (`30m`, `2h`, `7d`).
    pub since: Option<String>,
    /// Only runs started before this time (as `since`).
    pub until: Option<String>,
    /// Only runs whose id begins with this (the short ids History shows).
    pub id: Option<String>,
    /// Only runs whose id begins with this, or whose workflow's name or file has it in them (in any case).
    pub search: Option<String>,
    /// With `workflow`: its runs' child runs too, at any depth (History lists them under their parent).
    pub with_children: bool,
}

impl RunFilter {
    /// The store's query (`limit` when the filter gives none), or the field whose words it cannot read and why.
    pub fn query(self, limit: usize) -> Result<RunQuery, (&'static str, QueryWordError)> {
        let instant = |field: &'static str, t: Option<String>| {
            t.filter(|t| !t.trim().is_empty()).map(|t| parse_instant(&t).map_err(|why| (field, why))).transpose()
        };
        let status = self
            .status
            .iter()
            .filter(|s| !s.trim().is_empty())
            .map(|s| parse_status(s).map_err(|why| ("status", why)))
            .collect::<Result<_, _>>()?;
        let given = |t: Option<String>| t.filter(|t| !t.trim().is_empty());
        Ok(RunQuery {
            limit: self.limit.map_or(limit, |l| l as usize),
            before: given(self.before),
            status,
            workflow: given(self.workflow),
            since: instant("since", self.since)?,
            until: instant("until", self.until)?,
            id_prefix: given(self.id),
            search: given(self.search.map(|s| s.trim().to_string())),
            with_children: self.with_children,
        })
    }
}

/// Whether `row` is a run of `workflow`: of the workflow of that name (in any case), or started from that file.
fn own_workflow(row: &RunRow, workflow: &str) -> bool {
    row.workflow.to_lowercase() == workflow.to_lowercase() || row.workflow_ref.as_deref() == Some(workflow)
}

/// Parses a status as `--status` and `?status=` name it.
pub fn parse_status(text: &str) -> Result<StoredStatus, QueryWordError> {
    let all = [
        StoredStatus::Ready,
        StoredStatus::Running,
        StoredStatus::Paused,
        StoredStatus::Interrupted,
        StoredStatus::Completed,
        StoredStatus::Failed,
        StoredStatus::Cancelled,
    ];
    all.into_iter().find(|s| s.as_str() == text.trim()).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|s| s.as_str()).collect();
        QueryWordError(format!("`{}` is no run status: one of {}", text.trim(), names.join(", ")))
    })
}

/// Parses a status a prune may take (`prune --status`): an ended one. A run that may still go on is never pruned.
pub fn prunable_status(text: &str) -> Result<StoredStatus, QueryWordError> {
    let status = parse_status(text)?;
    if !status.ended() {
        return Err(QueryWordError(format!(
            "`{}` runs are never pruned, since they may still go on: give completed, failed or cancelled (or \
             leave --status out for all three)",
            status.as_str()
        )));
    }
    Ok(status)
}

/// Parses an age as `--older-than` (on a server) and the ages of `--since` take it: `90s`, `30m`, `2h`, `7d`.
pub fn parse_age(text: &str) -> Result<chrono::TimeDelta, QueryWordError> {
    let text = text.trim();
    let age = text.find(|c: char| !c.is_ascii_digit()).filter(|at| *at > 0).and_then(|at| {
        let n: i64 = text[..at].parse().ok()?;
        let seconds = match &text[at..] {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return None,
        };
        chrono::TimeDelta::try_seconds(n.checked_mul(seconds)?)
    });
    age.ok_or_else(|| {
        QueryWordError(format!(
            "`{text}` is no age: give a number of seconds, minutes, hours or days (90s, 30m, 2h, 7d)"
        ))
    })
}

/// Parses an instant as `--since` and `?since=` take it: RFC 3339 (`2026-11-28T10:00:00Z`), a day
/// (`2026-11-28`, its start in UTC), or a time before now (`90s`, `30m`, `2h`, `7d`).
pub fn parse_instant(text: &str) -> Result<chrono::DateTime<chrono::Utc>, QueryWordError> {
    parse_instant_at(text, chrono::Utc::now())
}

/// [`parse_instant`], an age counted back from `now`.
pub fn parse_instant_at(
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<chrono::DateTime<chrono::Utc>, QueryWordError> {
    let text = text.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    if let Ok(day) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(day.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc());
    }
    let ago = parse_age(text).ok().and_then(|age| now.checked_sub_signed(age));
    ago.ok_or_else(|| {
        QueryWordError(format!(
            "`{text}` is no time: give RFC 3339 (2026-11-28T10:00:00Z), a day (2026-11-28), or an age (30m, 2h, 7d)"
        ))
    })
}

/// The one run `found` (the ids beginning with a prefix, at most `CANDIDATES + 1`) names; several: `Err(Some)`
/// with the candidates to name (`…` for more); none: `Err(None)`.
pub(crate) fn resolved(mut found: Vec<String>) -> Result<String, Option<Vec<String>>> {
    match found.len() {
        0 => Err(None),
        1 => Ok(found.remove(0)),
        _ => {
            if found.len() > CANDIDATES {
                found.truncate(CANDIDATES);
                found.push("…".into());
            }
            Err(Some(found))
        }
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
        return Ok(Arc::new(postgres::PgStore::open(db)?));
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
