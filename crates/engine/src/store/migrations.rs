//! The run store's schema, one migration per version (`PRAGMA user_version`), applied in order by
//! `rusqlite_migration`. Migrations are only ever appended: a released one never changes.

use std::path::Path;

use rusqlite::Connection;
use rusqlite_migration::{Migrations, M};

use super::StoreError;

fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        // 1: the first store (its tables may exist already in files written before versions were kept).
        M::up(
            "CREATE TABLE IF NOT EXISTS runs (
                 id TEXT PRIMARY KEY,
                 workflow_path TEXT NOT NULL,
                 script_path TEXT,
                 status TEXT NOT NULL,
                 snapshot TEXT,
                 updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
             );
             CREATE TABLE IF NOT EXISTS events (
                 run_id TEXT NOT NULL,
                 seq INTEGER NOT NULL,
                 event TEXT NOT NULL,
                 PRIMARY KEY (run_id, seq)
             );",
        ),
        // 2: runs keep the document and options they started with, their times and pending approvals; inputs; events
        // clustered by run (one b-tree, not a table and an index: half the writes per event).
        M::up(
            "ALTER TABLE runs ADD COLUMN workflow_name TEXT;
             ALTER TABLE runs ADD COLUMN document TEXT;
             ALTER TABLE runs ADD COLUMN options TEXT;
             ALTER TABLE runs ADD COLUMN started_at TEXT;
             ALTER TABLE runs ADD COLUMN ended_at TEXT;
             ALTER TABLE runs ADD COLUMN pending TEXT;
             CREATE TABLE inputs (
                 id INTEGER PRIMARY KEY,
                 run_id TEXT NOT NULL,
                 input TEXT NOT NULL
             );
             CREATE INDEX inputs_run ON inputs (run_id, id);
             CREATE INDEX runs_started ON runs (started_at);
             CREATE TABLE events_by_run (
                 run_id TEXT NOT NULL,
                 seq INTEGER NOT NULL,
                 event TEXT NOT NULL,
                 PRIMARY KEY (run_id, seq)
             ) WITHOUT ROWID;
             INSERT INTO events_by_run SELECT run_id, seq, event FROM events;
             DROP TABLE events;
             ALTER TABLE events_by_run RENAME TO events;",
        ),
        // 3: the tokens each model used in a run (for its cost), the evaluation a run was a case of, and evaluations'
        // reports (a baseline to compare with).
        M::up(
            "ALTER TABLE runs ADD COLUMN usage TEXT;
             ALTER TABLE runs ADD COLUMN eval_id TEXT;
             CREATE TABLE evals (
                 id TEXT PRIMARY KEY,
                 file TEXT NOT NULL,
                 workflow TEXT NOT NULL,
                 started_at TEXT NOT NULL,
                 report TEXT NOT NULL
             );
             CREATE INDEX evals_file ON evals (file, started_at);",
        ),
    ])
}

/// The schema version this build writes.
pub fn latest() -> i64 {
    3
}

/// Checks the file is a store this build can use, then applies the migrations it lacks. A file from a newer build
/// is refused before anything is written to it.
pub(super) fn bring_up_to_date(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let corrupt = |e: rusqlite::Error| StoreError::Corrupt { path: path.to_path_buf(), detail: e.to_string() };
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(corrupt)?;
    if found > latest() {
        return Err(StoreError::TooNew { path: path.to_path_buf(), found, known: latest() });
    }
    // Reading the schema finds a file that is not a database, or a truncated one.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)).map_err(corrupt)?;
    conn.pragma_update(None, "journal_mode", "WAL").map_err(corrupt)?;
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(corrupt)?;
    // A checkpoint (which syncs the database file) every 16 MB of log rather than every 4 MB: a run's log is
    // committed in small batches, and each checkpoint costs a sync.
    conn.pragma_update(None, "wal_autocheckpoint", 4096).map_err(corrupt)?;
    if found < latest() {
        migrations().to_latest(conn).map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            detail: format!("cannot bring its schema from version {found} to {}: {e}", latest()),
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migrations_are_valid_and_end_at_the_latest_version() {
        migrations().validate().unwrap();
        let mut conn = Connection::open_in_memory().unwrap();
        migrations().to_latest(&mut conn).unwrap();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, latest());
    }
}
