//! The fenced run log: a claimed run's events, inputs and status, written in batches only while its claim holds.
//!
//! Invariants:
//! - Every write names the epoch it was claimed with and commits only while the run still has it: a batch locks the
//!   run's row first (the conditional `UPDATE`), so a claim that bumps the epoch comes entirely before or after it. A
//!   write from an epoch that no longer holds is refused whole (`PgError::StaleEpoch`) and counted.
//! - A batch is one transaction: its events, inputs and status, all or none. `(run_id, seq)` is the events' primary
//!   key: an event numbered twice is refused (`PgError::DuplicateSeq`), with its batch.
//! - Each committed batch sends one NOTIFY on [`CHANNEL`] (payload: the run id), from inside its transaction, so
//!   listeners hear only of what committed. One per batch, not per event: NOTIFY takes a global lock at commit.
//! - A log whose write failed writes nothing more and says the claim is lost: a run whose log has a gap must not go
//!   on writing after it, so it stops, and whoever claims it next continues from what the log holds.
//! - There is no log on the store itself, which would write around the fence: a run nobody claimed is refused.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio_postgres::error::SqlState;

use super::connection::{InDb, Shared, Wait};
use super::{PgError, PgStore, CHANNEL};
use crate::events::Event;
use crate::log::{LogError, LogItem, RunLog};
use crate::result::RunStatus;
use crate::run::Recorded;

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

impl PgStore {
    /// Writes a batch as one transaction, only while `epoch` holds: events, inputs and the last status in it, and
    /// one notification. Refused whole (nothing kept) when the epoch no longer holds, an event is foreign to the run,
    /// or an event's number is taken.
    pub async fn write_batch(&self, run: &str, epoch: i64, items: &[LogItem]) -> Result<(), PgError> {
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
        self.call(|s| async move { s.write(batch).await }).await
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

/// The log of a run nobody claimed: refuses every write.
pub(super) struct Unclaimed;

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
    async fn write(&self, batch: Batch) -> Result<(), PgError> {
        let mut session = self.main.session(&self.db).await?;
        let fence = session.statement(FENCE).await.in_db(self)?;
        let insert_events = session.statement(INSERT_EVENTS).await.in_db(self)?;
        let insert_inputs = session.statement(INSERT_INPUTS).await.in_db(self)?;
        let epoch_now = session.statement("SELECT epoch FROM runs WHERE id = $1").await.in_db(self)?;
        let notify = session.statement("SELECT pg_notify($1, $2)").await.in_db(self)?;
        let run = &batch.run;
        let tx = session.client.transaction().await.in_db(self)?;
        let (status, pending, ended) = match &batch.status {
            Some((status, pending, ended)) => (Some(*status), Some(pending.as_str()), *ended),
            None => (None, None, false),
        };
        // First, so that the row stays locked until the commit: no claim can come between the check and the commit.
        let fenced = tx.execute(&fence, &[run, &batch.epoch, &status, &pending, &ended]).await.in_db(self)?;
        if fenced == 0 {
            return match tx.query_opt(&epoch_now, &[run]).await.in_db(self)? {
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
                .in_db(self)?;
            let used: Vec<String> = tx
                .query("SELECT event::text FROM events WHERE run_id = $1 AND event::text LIKE '%\"usage\"%'", &[run])
                .await
                .in_db(self)?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let usage = crate::store::usage_json(copies.get(0), copies.get(1), &used);
            tx.execute("UPDATE runs SET usage = $2::text::json WHERE id = $1", &[run, &usage]).await.in_db(self)?;
        }
        tx.execute(&notify, &[&CHANNEL, run]).await.in_db(self)?;
        tx.commit().await.in_db(self)
    }
}

/// A claimed run's log, for the emitter's committer: the [`RunLog`] of the PostgreSQL store. Every write is fenced by
/// the epoch of the claim; there is deliberately no log on the store itself, which would write around the fence.
#[derive(Clone)]
pub struct PgRunLog {
    pub(super) store: PgStore,
    pub(super) run: String,
    pub(super) epoch: i64,
    pub(super) lost: Arc<AtomicBool>,
    /// Told when the log is lost, for the claim's holder (`Claim::lost`).
    pub(super) signal: Option<Arc<tokio::sync::watch::Sender<bool>>>,
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
        self.store.write_batch(run, self.epoch, items).wait().map_err(|e| {
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
