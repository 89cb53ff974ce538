//! What the app's commands return, whichever shell answers them: the desktop shell over its own store, or the
//! server over PostgreSQL (`POST /api/commands/NAME`). One definition of each, so the generated TypeScript client
//! reads the same shapes from both transports.
//!
//! Invariant: these are views built from the document model and the run store; nothing here runs or writes.

use serde::{Deserialize, Serialize};

use crate::events::Event;
use crate::format::{Format, Loaded};
use crate::store::{RunRow, StoredRun, StoredStatus};
use crate::Workflow;

/// A document as the window receives it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Opened {
    pub workflow: Workflow,
    /// The format it was read as: switchyard, agentflow, sweny, …
    pub format: String,
    /// What an importer approximated.
    pub notes: Vec<String>,
    pub path: Option<String>,
}

impl Opened {
    /// A document read from `path` (none: pasted text).
    pub fn loaded(loaded: Loaded, path: Option<String>) -> Opened {
        Opened { workflow: loaded.workflow, format: loaded.format.name().into(), notes: loaded.notes, path }
    }

    /// The document a stored run started with (not the file as it is now), and the file it names.
    pub fn stored(stored: &StoredRun) -> Opened {
        let (path, format) = match &stored.row.workflow_ref {
            Some(r) => match r.rsplit_once('#') {
                Some((p, f)) if Format::from_name(f).is_some() => (Some(p.to_string()), f.to_string()),
                _ => (Some(r.clone()), "switchyard".to_string()),
            },
            None => (None, "switchyard".to_string()),
        };
        Opened { workflow: stored.workflow.clone(), format, notes: Vec::new(), path }
    }
}

/// A stored run as the window shows it: the document it ran and its events.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct OpenedRun {
    pub document: Opened,
    pub events: Vec<Event>,
    pub row: RunRow,
}

impl OpenedRun {
    pub fn new(stored: StoredRun) -> OpenedRun {
        OpenedRun { document: Opened::stored(&stored), events: stored.recording.events, row: stored.row }
    }
}

/// A run in History.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    #[serde(flatten)]
    pub row: RunRow,
    /// The window that lists it runs it now (a server's runs are run by its workers: never).
    pub live: bool,
    /// The server it is on (`HOST:PORT`), when the desktop app lists a server's runs beside its own; none for the
    /// runs of the store the shell itself reads.
    #[serde(default)]
    pub server: Option<String>,
}

/// A run as `switchyard runs --json` and a server's `GET /api/runs` list it: one shape for both.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedRun {
    pub id: String,
    /// The file it was run from (`path`, or `path#format` when its format was forced), else the workflow's name.
    pub workflow: String,
    /// The workflow's name.
    pub name: String,
    pub status: StoredStatus,
    /// RFC 3339.
    pub started: String,
    pub duration_ms: u64,
    /// Approvals it waits for.
    pub pending: Vec<String>,
    pub tokens: u64,
    /// US dollars at the settings' prices; none when a model that used tokens has no price.
    pub cost: Option<f64>,
    /// The evaluation it was a case of, if any.
    pub eval: Option<String>,
}

impl From<RunRow> for ListedRun {
    fn from(row: RunRow) -> ListedRun {
        ListedRun {
            workflow: row.workflow_ref.unwrap_or_else(|| row.workflow.clone()),
            name: row.workflow,
            id: row.id,
            status: row.status,
            started: row.started,
            duration_ms: row.duration_ms,
            pending: row.pending,
            tokens: row.tokens,
            cost: row.cost,
            eval: row.eval,
        }
    }
}

/// A run that goes on, and the document it goes on with.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Resumed {
    pub run_id: String,
    pub document: Opened,
}

/// What the window opens when it starts: a file, and the answers file beside it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Startup {
    pub path: String,
    /// The example's answers file, so it runs offline with no account (none on a server: its runs take the
    /// server's).
    pub answers_path: Option<String>,
}
