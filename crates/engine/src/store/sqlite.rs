//! The run store in one SQLite file (WAL) on this machine: the desktop's and the command line's default.
//!
//! Invariants:
//! - A process that runs a run holds a lock on it (a file lock the system releases when the process dies). A run
//!   whose row says `running` but whose lock nobody holds was interrupted: `status` reports it `interrupted`.
//! - The schema is versioned (`PRAGMA user_version`, `store::migrations`); a file written by a newer Switchyard is
//!   refused and never altered, and a file that is not a readable database is reported with its path.
//! - Several processes can use one store at once (WAL, and a busy timeout instead of "database is locked").
//! - A claim's log is the store itself: a file lock fences nothing, so every write goes straight to the file.
//! - A prune takes each run's lock before it deletes the run (a run someone holds is left), a batch per transaction.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};
use rusqlite_migration::{Migrations, M};

use super::migrations;
use super::{
    usage_json, ChildRun, Claim, NewRun, Prune, Pruned, RunQuery, RunRow, Store, StoreError, StoredEval, StoredRun,
    StoredStatus, PRUNE_BATCH,
};
use crate::events::Event;
use crate::log::{LogError, LogItem, RunLog};
use crate::result::RunStatus;
use crate::run::{Recorded, Recording};

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
    fn find(&self, query: &RunQuery) -> Result<Vec<RunRow>, StoreError> {
        RunStore::find(self, query)
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
        claim.log().unwrap_or(self)
    }
    fn prune(&self, prune: &Prune) -> Result<Pruned, StoreError> {
        RunStore::prune(self, prune)
    }
    fn children(&self, run: &str) -> Result<Vec<ChildRun>, StoreError> {
        RunStore::children(self, run)
    }
}

/// The SQLite schema's migrations (`store::migrations`), as `rusqlite_migration` applies them.
fn migrations() -> Migrations<'static> {
    Migrations::new(migrations::SQLITE.iter().map(|m| M::up(m.sql)).collect())
}

/// Checks the file is a store this build can use, then applies the migrations it lacks (`migrations::plan`), in one
/// transaction. A file from a newer build is refused before anything is written to it.
fn bring_up_to_date(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let corrupt = |e: rusqlite::Error| StoreError::Corrupt { path: path.to_path_buf(), detail: e.to_string() };
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(corrupt)?;
    let plan = migrations::plan(migrations::SQLITE, found).map_err(|newer| StoreError::TooNew {
        path: path.to_path_buf(),
        found: newer.found,
        known: newer.known,
    })?;
    // Reading the schema finds a file that is not a database, or a truncated one.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)).map_err(corrupt)?;
    conn.pragma_update(None, "journal_mode", "WAL").map_err(corrupt)?;
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(corrupt)?;
    // A checkpoint (which syncs the database file) every 16 MB of log rather than every 4 MB: a run's log is
    // committed in small batches, and each checkpoint costs a sync.
    conn.pragma_update(None, "wal_autocheckpoint", 4096).map_err(corrupt)?;
    if !plan.is_empty() {
        // `rusqlite_migration` applies the versions after `user_version`, in one transaction: the plan's steps.
        migrations().to_latest(conn).map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            detail: format!("cannot bring its schema from version {} to {}: {e}", plan.from, plan.to),
        })?;
    }
    Ok(())
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
        bring_up_to_date(&mut conn, path)?;
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
            Ok(()) => Ok(Claim::file_lock(file, path)),
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

    /// Deletes the runs that ended before `prune.ended_before` with one of its statuses, with their events and inputs,
    /// oldest first, [`PRUNE_BATCH`] runs per transaction; a run whose lock someone holds is left. With `dry_run`,
    /// counts them and deletes (and locks) nothing. Evaluations' reports are kept; their cases' runs go as any run.
    pub fn prune(&self, prune: &Prune) -> Result<Pruned, StoreError> {
        use rusqlite::types::Value as Sql;
        const KEY: &str = "coalesce(ended_at, updated_at)";
        let statuses = prune.db_statuses();
        let cutoff = prune.ended_before.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let mut pruned = Pruned::default();
        // Keyset over (end, rowid): a dry run, or a batch whose runs were held, never reads the same runs again.
        let mut after: Option<(String, i64)> = None;
        while !statuses.is_empty() {
            let mut sql = format!(
                "SELECT id, {KEY}, rowid FROM runs WHERE status IN ({}) AND {KEY} < ?",
                vec!["?"; statuses.len()].join(", ")
            );
            let mut args: Vec<Sql> = statuses.iter().cloned().map(Sql::Text).collect();
            args.push(Sql::Text(cutoff.clone()));
            if let Some((key, rowid)) = &after {
                sql += &format!(" AND ({KEY} > ? OR ({KEY} = ? AND rowid > ?))");
                args.extend([Sql::Text(key.clone()), Sql::Text(key.clone()), Sql::Integer(*rowid)]);
            }
            sql += &format!(" ORDER BY {KEY}, rowid LIMIT {PRUNE_BATCH}");
            let batch: Vec<(String, String, i64)> = {
                let conn = self.conn.lock().unwrap();
                let mut stmt = conn.prepare(&sql).map_err(|e| self.query_error(e))?;
                let rows = stmt
                    .query_map(rusqlite::params_from_iter(args), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .map_err(|e| self.query_error(e))?;
                rows.collect::<Result<_, _>>().map_err(|e| self.query_error(e))?
            };
            let Some((_, key, rowid)) = batch.last() else { break };
            after = Some((key.clone(), *rowid));
            let full = batch.len() == PRUNE_BATCH;
            // Held while the batch is deleted, so nobody takes one of its runs meanwhile; given up (and the lock
            // files removed) after.
            let mut claims = Vec::new();
            let mut ids = Vec::new();
            for (id, _, _) in batch {
                if prune.dry_run {
                    if !self.is_live(&id) {
                        ids.push(id);
                    }
                    continue;
                }
                match self.claim(&id) {
                    Ok(claim) => {
                        claims.push(claim);
                        ids.push(id);
                    }
                    Err(StoreError::InUse { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            if !ids.is_empty() {
                let marks = vec!["?"; ids.len()].join(", ");
                let mut conn = self.conn.lock().unwrap();
                let tx = conn.transaction().map_err(|e| self.query_error(e))?;
                let (runs, events) = {
                    let args = || rusqlite::params_from_iter(ids.iter());
                    let count = |table: &str, column: &str| {
                        let sql = format!("SELECT count(*) FROM {table} WHERE {column} IN ({marks})");
                        tx.query_row(&sql, args(), |r| r.get::<_, i64>(0)).map(|n| n as u64)
                    };
                    let delete = |table: &str, column: &str| {
                        let sql = format!("DELETE FROM {table} WHERE {column} IN ({marks})");
                        tx.execute(&sql, args()).map(|n| n as u64)
                    };
                    let counted = if prune.dry_run {
                        count("runs", "id").and_then(|runs| Ok((runs, count("events", "run_id")?)))
                    } else {
                        delete("events", "run_id").and_then(|events| {
                            delete("inputs", "run_id")?;
                            Ok((delete("runs", "id")?, events))
                        })
                    };
                    counted.map_err(|e| self.query_error(e))?
                };
                tx.commit().map_err(|e| self.query_error(e))?;
                pruned.runs += runs;
                pruned.events += events;
            }
            drop(claims);
            if !full {
                break;
            }
        }
        Ok(pruned)
    }

    /// Runs, newest first.
    pub fn list(&self) -> Result<Vec<RunRow>, StoreError> {
        let rows = {
            let conn = self.conn.lock().unwrap();
            let mut stmt = conn
                .prepare(&format!("{ROW_SELECT} ORDER BY coalesce(started_at, updated_at) DESC, rowid DESC"))
                .map_err(|e| self.query_error(e))?;
            let rows = stmt.query_map([], raw_row).map_err(|e| self.query_error(e))?;
            rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.query_error(e))?
        };
        Ok(rows.into_iter().map(|r| self.row(r)).collect())
    }

    /// A page of runs, newest first, as `query` asks for them (`Store::find`). Keyset paging on (start, rowid), the
    /// order `list` gives. Whether a `running` row is running or interrupted depends on its lock, so those two are
    /// told apart here, reading on until the page is full.
    pub fn find(&self, query: &RunQuery) -> Result<Vec<RunRow>, StoreError> {
        const KEY: &str = "coalesce(started_at, updated_at)";
        let mut after = match &query.before {
            Some(id) => Some(self.sort_key(id)?),
            None => None,
        };
        let instant = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let mut found = Vec::new();
        while found.len() < query.limit {
            use rusqlite::types::Value as Sql;
            let (mut sql, mut args) = (format!("{ROW_SELECT} WHERE 1 = 1"), Vec::<Sql>::new());
            if let Some((key, rowid)) = &after {
                sql += &format!(" AND ({KEY} < ? OR ({KEY} = ? AND rowid < ?))");
                args.extend([Sql::Text(key.clone()), Sql::Text(key.clone()), Sql::Integer(*rowid)]);
            }
            let statuses = query.db_statuses();
            if !statuses.is_empty() {
                sql += &format!(" AND status IN ({})", vec!["?"; statuses.len()].join(", "));
                args.extend(statuses.into_iter().map(Sql::Text));
            }
            if let Some(workflow) = &query.workflow {
                sql += if query.with_children {
                    // Its runs, and the runs below them by their parent links, at any depth.
                    " AND id IN (WITH RECURSIVE family(id) AS (
                         SELECT id FROM runs WHERE lower(workflow_name) = lower(?) OR workflow_path = ?
                         UNION SELECT c.id FROM runs c JOIN family f ON c.parent_run = f.id)
                       SELECT id FROM family)"
                } else {
                    " AND (lower(workflow_name) = lower(?) OR workflow_path = ?)"
                };
                args.extend([Sql::Text(workflow.clone()), Sql::Text(workflow.clone())]);
            }
            if let Some(since) = query.since {
                sql += &format!(" AND {KEY} >= ?");
                args.push(Sql::Text(instant(since)));
            }
            if let Some(until) = query.until {
                sql += &format!(" AND {KEY} < ?");
                args.push(Sql::Text(instant(until)));
            }
            if let Some(prefix) = &query.id_prefix {
                sql += " AND substr(id, 1, length(?)) = ?";
                args.extend([Sql::Text(prefix.clone()), Sql::Text(prefix.clone())]);
            }
            if let Some(text) = &query.search {
                // In any case as SQLite's `lower` folds it (ASCII); `matches` then checks what was read.
                sql += " AND (substr(lower(id), 1, length(?)) = ? OR instr(lower(workflow_name), ?) > 0
                          OR instr(lower(workflow_path), ?) > 0)";
                let text = text.to_lowercase();
                args.extend([text.clone(), text.clone(), text.clone(), text].map(Sql::Text));
            }
            let wanted = query.limit - found.len();
            sql += &format!(" ORDER BY {KEY} DESC, rowid DESC LIMIT ?");
            args.push(Sql::Integer(i64::try_from(wanted).unwrap_or(i64::MAX)));
            let raws = {
                let conn = self.conn.lock().unwrap();
                let mut stmt = conn.prepare(&sql).map_err(|e| self.query_error(e))?;
                let rows =
                    stmt.query_map(rusqlite::params_from_iter(args), raw_row).map_err(|e| self.query_error(e))?;
                rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.query_error(e))?
            };
            let (read, last) = (raws.len(), raws.last().map(|r| r.id.clone()));
            found.extend(raws.into_iter().map(|r| self.row(r)).filter(|r| query.matches(r)));
            match last {
                Some(last) if read == wanted => after = Some(self.sort_key(&last)?),
                _ => break,
            }
        }
        Ok(found)
    }

    /// Where run `id` is in the order runs are listed in.
    fn sort_key(&self, id: &str) -> Result<(String, i64), StoreError> {
        let conn = self.conn.lock().unwrap();
        conn.query_row("SELECT coalesce(started_at, updated_at), rowid FROM runs WHERE id = ?1", params![id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .map_err(|e| self.query_error(e))?
        .ok_or_else(|| StoreError::NoSuchRun { path: self.path.clone(), id: id.to_string() })
    }

    /// One run of the history.
    /// The child runs of `run` (its `workflow` nodes'), by node, iteration and item.
    pub fn children(&self, run: &str) -> Result<Vec<ChildRun>, StoreError> {
        let conn = self.conn.lock().unwrap();
        let mut select = conn
            .prepare(
                "SELECT id, parent_node, parent_iteration, parent_item, json_extract(options, '$.parent.call')
                 FROM runs WHERE parent_run = ?1 ORDER BY parent_node, parent_iteration, parent_item, 5",
            )
            .map_err(|e| self.query_error(e))?;
        let rows = select
            .query_map(params![run], |r| {
                let link = crate::run::ParentLink {
                    run: run.to_string(),
                    node: r.get(1)?,
                    iteration: r.get(2)?,
                    item: r.get::<_, Option<i64>>(3)?.map(|i| i as usize),
                    call: r.get(4)?,
                };
                Ok(ChildRun { id: r.get(0)?, link })
            })
            .map_err(|e| self.query_error(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.query_error(e))
    }

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
            prices: r.prices.and_then(|p| serde_json::from_str(&p).ok()),
            cost: None,
            cost_text: None,
            priced: None,
            eval: r.eval,
            forked_from: r.forked_from,
            // This machine's runs: started here, by nobody named, and cancelled here.
            origin: crate::store::Origin::default(),
            cancelled_by: None,
            // Started from a file of its own, not a server's served version.
            version: None,
            // Queues are a server's: this machine runs its own runs, none waits for a worker.
            queue: None,
            ahead: None,
            waiting: None,
            parent: r.parent,
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

/// `script_path` is the column's older name for the answers file's path. A fork names the run it forked in its
/// options (`reuse.run` beside `reuse.fork`); CASE is lazy, so options that are not JSON are never read as JSON.
const ROW_SELECT: &str = "SELECT id, workflow_path, script_path, status, coalesce(workflow_name, ''),
    coalesce(started_at, updated_at), ended_at, updated_at, coalesce(pending, '[]'), usage, eval_id,
    CASE WHEN json_valid(options) THEN
      CASE WHEN json_type(options, '$.reuse.fork') IS NOT NULL THEN json_extract(options, '$.reuse.run') END
    END,
    CASE WHEN json_valid(options) AND json_type(options, '$.prices') = 'object' THEN json_extract(options, '$.prices')
    END,
    CASE WHEN json_valid(options) THEN parent_run END, CASE WHEN json_valid(options) THEN parent_node END,
    CASE WHEN json_valid(options) THEN parent_item END FROM runs";

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
    forked_from: Option<String>,
    /// The prices the run kept (`RunOptions::prices`), as JSON.
    prices: Option<String>,
    parent: Option<crate::store::RunParent>,
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
        forked_from: r.get(11)?,
        prices: r.get(12)?,
        parent: crate::store::RunParent::of(r.get(13)?, r.get(14)?, r.get(15)?),
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::format::{self, Format};
    use crate::run::RunOptions;
    use crate::store::open;
    use crate::Workflow;

    fn workflow() -> Workflow {
        let text = "switchyard: 1\nname: stored\nnodes:\n  - {id: start, type: start}\n";
        format::load_str(text, Some(Format::Switchyard), None).unwrap().workflow
    }

    fn new_run<'a>(id: &'a str, wf: &'a Workflow, options: &'a RunOptions) -> NewRun<'a> {
        NewRun {
            id,
            workflow: wf,
            workflow_ref: Some("/tmp/wf.yaml"),
            answers_path: None,
            options,
            eval_id: None,
            origin: Default::default(),
            version: None,
        }
    }

    #[test]
    fn the_migrations_are_valid_and_end_at_the_latest_version() {
        migrations().validate().unwrap();
        let mut conn = Connection::open_in_memory().unwrap();
        migrations().to_latest(&mut conn).unwrap();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, migrations::latest(migrations::SQLITE));
    }

    /// `sqlite_master` of a new store as Switchyard built it before its migrations were `.sql` files: SQLite keeps
    /// each `CREATE` as it was written (an `ALTER TABLE … ADD COLUMN` appends to it), so a migration changed by a
    /// byte shows here.
    const SCHEMA_3: &str = include_str!("migrations/sqlite/schema-3.txt");
    /// The same after migration 4 (child runs' links).
    const SCHEMA_4: &str = include_str!("migrations/sqlite/schema-4.txt");

    #[test]
    fn a_new_store_has_the_schema_stores_written_before_have() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrations().to_version(&mut conn, 3).unwrap();
        assert_eq!(schema_of(&conn), SCHEMA_3, "migrations 1 to 3 build what stores written before have");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.sqlite");
        drop(RunStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        assert_eq!(schema_of(&conn), SCHEMA_4);
    }

    #[test]
    fn a_child_run_is_found_by_its_parent_from_the_link_its_options_keep() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(&dir.path().join("runs.sqlite")).unwrap();
        let wf = workflow();
        let link =
            |item| crate::run::ParentLink { run: "p".into(), node: "fan".into(), iteration: 1, item, call: None };
        for (id, item) in [("c1", Some(1)), ("c0", Some(0))] {
            let options = RunOptions { parent: Some(link(item)), ..RunOptions::default() };
            drop(store.create(&new_run(id, &wf, &options)).unwrap());
        }
        drop(store.create(&new_run("p", &wf, &RunOptions::default())).unwrap());
        let children = store.children("p").unwrap();
        assert_eq!(children.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["c0", "c1"], "by item");
        assert_eq!(children[1].link, link(Some(1)));
        assert!(store.children("c0").unwrap().is_empty());
    }

    /// `sqlite_master` as the schema tests compare it: the version, then each object.
    fn schema_of(conn: &Connection) -> String {
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        let mut schema = format!("{version}\n");
        let mut rows = conn
            .prepare("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
            .unwrap();
        let rows =
            rows.query_map([], |r| Ok([r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?].join("|"))).unwrap();
        for row in rows {
            schema.push_str(&row.unwrap());
            schema.push('\n');
        }
        schema
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
    fn a_fork_is_listed_with_the_run_it_forked_and_a_run_from_a_node_is_not() {
        use crate::run::{Fork, Reuse};
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(&dir.path().join("runs.sqlite")).unwrap();
        let wf = workflow();
        let reuse = |fork: Option<Fork>| RunOptions {
            reuse: Some(Reuse { run: "r0".into(), from: "start".into(), fork, ..Reuse::default() }),
            ..RunOptions::default()
        };
        let fork = reuse(Some(Fork { turn: Some(2), answer: "said \u{0} otherwise".into() }));
        let from_node = reuse(None);
        let plain = RunOptions::default();
        for (id, options) in [("fork", &fork), ("from", &from_node), ("plain", &plain)] {
            drop(store.create(&new_run(id, &wf, options)).unwrap());
        }
        let listed: BTreeMap<String, Option<String>> =
            store.list().unwrap().into_iter().map(|r| (r.id, r.forked_from)).collect();
        assert_eq!(listed["fork"].as_deref(), Some("r0"));
        assert_eq!((&listed["from"], &listed["plain"]), (&None, &None));
        assert_eq!(store.get("fork").unwrap().forked_from.as_deref(), Some("r0"));
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
