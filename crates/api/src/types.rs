//! The commands' own argument and result shapes (the engine's views are the rest: `engine/src/views.rs`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use specta::Type;
use switchyard_engine::eval;
use switchyard_engine::providers::Settings;
use switchyard_engine::run;
use switchyard_engine::session::{self, WorkflowRef};
use switchyard_engine::Workflow;

use crate::CommandError;

/// What the window asks to run: the arguments of `start_run` (the session's `RunRequest` is built from them).
#[derive(Serialize, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct RunArgs {
    /// The graph as it is now: later edits on the canvas do not change this run.
    pub workflow: Workflow,
    /// Where the document lives, so a paused run can be resumed after a restart.
    pub workflow_path: Option<String>,
    #[specta(type = Option<specta_typescript::Any>)]
    pub input: Option<serde_json::Value>,
    /// An offline run: answers, decisions and approvals from this answers file.
    pub answers_path: Option<String>,
    /// `provider/model` overriding the workflow's default.
    pub model: Option<String>,
    /// Run from a node: this stored run's results stand for every node upstream of `from_node`.
    pub reuse_run: Option<String>,
    pub from_node: Option<String>,
    /// A fork of a stored run (the Last run tab's Fork from here): a run from a node where the model said something
    /// else, as `switchyard run --fork RUN --at NODE[#TURN] --answer TEXT`. Not with `reuse_run`.
    #[serde(default)]
    pub fork: Option<ForkArgs>,
}

/// Where a fork gives its answer, and the answer: `turn` counts the node's model turns from 1 (none: the node's
/// result as a whole); the answer is text, or JSON for a node with an output schema.
#[derive(Serialize, Deserialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ForkArgs {
    /// The stored run forked.
    pub run: String,
    pub node: String,
    pub turn: Option<u32>,
    pub answer: String,
}

impl RunArgs {
    /// The session's request for these arguments; the workflow stays with the caller.
    pub fn request(self) -> Result<(Workflow, session::RunRequest), CommandError> {
        if self.fork.is_some() && (self.reuse_run.is_some() || self.from_node.is_some()) {
            return Err(CommandError::new(
                "REUSE_FAILED",
                "a run is either a fork or a run from a node with an earlier run's results, not both",
            ));
        }
        let request = session::RunRequest {
            workflow_ref: self.workflow_path.as_deref().map(|p| WorkflowRef::new(Path::new(p), None)),
            input: self.input,
            answers_path: self.answers_path.map(PathBuf::from),
            model: self.model,
            step_budget: None,
            reuse: self.reuse_run.zip(self.from_node),
            fork: self.fork.map(|f| (f.run, f.node, run::Fork { turn: f.turn, answer: f.answer })),
            // The app's consent is the trust file: the window asks (`code_consent`, `trust_code`) before it runs.
            allow_code: false,
            ..Default::default()
        };
        Ok((self.workflow, request))
    }
}

/// A stored run saved as a test case: the evaluation file it went into, the case's id and how many expectations it
/// holds.
#[derive(Debug, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SavedCase {
    pub path: String,
    pub case_id: String,
    pub expectations: u32,
    /// The run's model calls kept in the file's record (0 for a run on an answers file): the case asks again only
    /// the calls an edit changes.
    pub recorded_calls: u32,
}

/// A workflow's evaluation file as the Evals tab shows it.
#[derive(Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct EvalSuiteView {
    /// `NAME.evals.yaml` beside the workflow file.
    pub file: String,
    /// Whether it exists yet ("Save as test case" in History makes it).
    pub exists: bool,
    pub cases: Vec<EvalCaseView>,
    /// What the earlier evaluations of this file kept in the run store found (each case's latest), if any.
    pub last: Option<eval::Report>,
}

#[derive(Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct EvalCaseView {
    pub id: String,
    pub description: Option<String>,
    /// How many expectations it checks.
    pub expectations: u32,
}

/// The settings, and why the file could not be used when it could not: the window then shows the defaults and the
/// problem, and saving replaces the file.
#[derive(Serialize, Type)]
pub struct SettingsState {
    pub settings: Settings,
    pub problem: Option<CommandError>,
}

/// The themes the window has.
pub const THEMES: [&str; 2] = ["light", "dark"];

/// What the window remembers between sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[serde(rename_all = "camelCase", default)]
pub struct Prefs {
    /// Files opened or saved lately, newest first.
    pub recent_files: Vec<String>,
    /// `light` or `dark`.
    pub theme: String,
    /// Your name: who the decisions and cancellations made in this app name (`by` on `approval:received` and
    /// `workflow:end`, as a server names a token's). The desktop fills it with the OS user's name when none is kept;
    /// none on a server, whose token names who did what.
    pub your_name: Option<String>,
}

impl Default for Prefs {
    fn default() -> Prefs {
        Prefs { recent_files: Vec::new(), theme: THEMES[0].into(), your_name: None }
    }
}
