//! The durable run log: a SQLite file holding every event of every run and the snapshot of each paused run, so a
//! paused run survives a restart and can be resumed from the command line or the app.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use crate::events::{Event, RunLog};
use crate::run::Snapshot;

/// A run as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub id: String,
    pub workflow_path: String,
    pub script_path: Option<String>,
    pub status: String,
    pub snapshot: Option<Snapshot>,
}

/// Where Switchyard keeps its data (the run store, the app's preferences): `$SWITCHYARD_HOME`, else
/// `$XDG_DATA_HOME/switchyard`, else `~/.local/share/switchyard`.
pub fn data_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("SWITCHYARD_HOME") {
        return PathBuf::from(home);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("switchyard")
}

/// `runs.sqlite` in the [`data_dir`].
pub fn default_path() -> PathBuf {
    data_dir().join("runs.sqlite")
}

pub struct RunStore {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl RunStore {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<RunStore, String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let conn = Connection::open(path).map_err(|e| format!("cannot open the run store {}: {e}", path.display()))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=NORMAL;
             CREATE TABLE IF NOT EXISTS runs (
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
        )
        .map_err(|e| format!("cannot prepare the run store {}: {e}", path.display()))?;
        Ok(RunStore { conn: Mutex::new(conn), path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records (or updates) a run's status and, when paused, its snapshot.
    pub fn save(
        &self,
        id: &str,
        workflow_path: &str,
        script_path: Option<&str>,
        status: &str,
        snapshot: Option<&Snapshot>,
    ) -> Result<(), String> {
        let snapshot = snapshot.map(|s| serde_json::to_string(s).expect("snapshots serialize"));
        self.conn
            .lock()
            .unwrap()
            .execute(
                "INSERT INTO runs (id, workflow_path, script_path, status, snapshot) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(id) DO UPDATE SET workflow_path=?2, script_path=?3, status=?4, snapshot=?5,
                   updated_at=strftime('%Y-%m-%dT%H:%M:%fZ','now')",
                params![id, workflow_path, script_path, status, snapshot],
            )
            .map(|_| ())
            .map_err(|e| format!("cannot save run {id}: {e}"))
    }

    pub fn load(&self, id: &str) -> Result<Option<StoredRun>, String> {
        let conn = self.conn.lock().unwrap();
        let row = conn
            .query_row(
                "SELECT id, workflow_path, script_path, status, snapshot FROM runs WHERE id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get::<_, Option<String>>(4)?)),
            )
            .optional()
            .map_err(|e| format!("cannot read run {id}: {e}"))?;
        let Some((id, workflow_path, script_path, status, snapshot)) = row else {
            return Ok(None);
        };
        let snapshot = match snapshot {
            Some(s) => Some(serde_json::from_str(&s).map_err(|e| format!("run {id} has an unreadable snapshot: {e}"))?),
            None => None,
        };
        Ok(Some(StoredRun { id, workflow_path, script_path, status, snapshot }))
    }

    /// Runs, newest first: (id, status, workflow path).
    pub fn list(&self) -> Result<Vec<(String, String, String)>, String> {
        let conn = self.conn.lock().unwrap();
        let mut stmt = conn
            .prepare("SELECT id, status, workflow_path FROM runs ORDER BY updated_at DESC")
            .map_err(|e| e.to_string())?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).map_err(|e| e.to_string())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())
    }

    pub fn events(&self, run_id: &str) -> Result<Vec<Event>, String> {
        let conn = self.conn.lock().unwrap();
        let mut stmt =
            conn.prepare("SELECT event FROM events WHERE run_id = ?1 ORDER BY seq").map_err(|e| e.to_string())?;
        let rows = stmt.query_map(params![run_id], |r| r.get::<_, String>(0)).map_err(|e| e.to_string())?;
        rows.map(|r| {
            let text = r.map_err(|e| e.to_string())?;
            serde_json::from_str(&text).map_err(|e| format!("unreadable event in run {run_id}: {e}"))
        })
        .collect()
    }
}

impl RunLog for RunStore {
    fn append(&self, event: &Event) -> Result<(), String> {
        let text = serde_json::to_string(event).map_err(|e| e.to_string())?;
        self.conn
            .lock()
            .unwrap()
            .execute(
                "INSERT INTO events (run_id, seq, event) VALUES (?1, ?2, ?3)",
                params![event.run, event.seq as i64, text],
            )
            .map(|_| ())
            .map_err(|e| format!("cannot write to the run log {}: {e}", self.path.display()))
    }
}
