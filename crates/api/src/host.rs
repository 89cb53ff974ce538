//! What differs between the shells a command runs in: the desktop app (its window, its files, runs in its own
//! process) and the server (its served workflows, a shared store, runs submitted for workers). A command asks its
//! `Host`; a host answers `NOT_ON_SERVER` for what it does not have (the defaults below).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use switchyard_engine::code::consent::Consent;
use switchyard_engine::eval;
use switchyard_engine::events::Event;
use switchyard_engine::format::Format;
use switchyard_engine::mcp::{McpServerConfig, McpTool};
use switchyard_engine::providers::{DefaultModel, Settings};
use switchyard_engine::remote::Remote;
use switchyard_engine::store::{RunFilter, RunQuery, RunRow, StoredRun};
use switchyard_engine::validate;
use switchyard_engine::views::{Opened, Resumed, RunSummary, Startup};
use switchyard_engine::Workflow;

use crate::types::{EvalSuiteView, Prefs, RunArgs, SavedCase, SettingsState};
use crate::CommandError;

/// What a command needs of its host beyond what every host has. The list of commands names it for each command;
/// a host that lacks it refuses the command before reading its arguments (`Host::offers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing more: every host answers it.
    Any,
    /// A person's own files: saving a workflow, the answers file beside it, trusting its code.
    Files,
    /// This machine's settings.
    Settings,
    /// Runs carried on by this process: resuming, replaying.
    RunsHere,
    /// Evaluation files and their runs.
    Evals,
    /// What only the desktop app has (a server's runs beside its own, following another process's run, its
    /// window's preferences).
    Desktop,
}

/// Where a command's stream of values goes (a run's events, an evaluation's case reports): the window's channel in
/// the desktop app; nowhere on the server, where the browser follows a run's event stream instead.
pub struct Events<T>(Option<Arc<dyn Fn(T) -> bool + Send + Sync>>);

impl<T> Clone for Events<T> {
    fn clone(&self) -> Self {
        Events(self.0.clone())
    }
}

impl<T> Events<T> {
    /// Values go to `send`, which says false once no one listens.
    pub fn to(send: impl Fn(T) -> bool + Send + Sync + 'static) -> Events<T> {
        Events(Some(Arc::new(send)))
    }

    /// Values go nowhere.
    pub fn none() -> Events<T> {
        Events(None)
    }

    /// Sends one value; false when no one listens (or no one was ever there).
    pub fn send(&self, value: T) -> bool {
        self.0.as_ref().is_some_and(|send| send(value))
    }
}

/// A shell's part in the commands. The defaults are what a host without the capability answers.
#[async_trait]
pub trait Host: Send + Sync {
    /// Whether this host has what a command needs (`command` names it in the refusal).
    fn offers(&self, needs: Needs, command: &str) -> Result<(), CommandError> {
        let _ = (needs, command);
        Ok(())
    }

    // Stored runs, read as the host's store is read: awaited on the server (PostgreSQL's async calls), off the
    // runtime's threads on the desktop (SQLite's calls block).

    /// The runs History lists, newest first: those `query` asks for.
    async fn stored_runs(&self, query: RunQuery) -> Result<Vec<RunRow>, CommandError>;

    /// A stored run, whole: to open it, or read its conversations.
    async fn stored_run(&self, run_id: String) -> Result<StoredRun, CommandError>;

    /// A stored run's events, in order.
    async fn stored_events(&self, run_id: String) -> Result<Vec<Event>, CommandError>;

    /// The server a run was listed from, if it was: commands about it go there.
    fn remote_of(&self, _run_id: &str) -> Option<Remote> {
        None
    }

    // Documents.

    /// A workflow document by its path (on the server: one of its served workflows, by file or name).
    async fn open_file(&self, path: String) -> Result<Opened, CommandError>;

    async fn save_file(&self, _path: String, _workflow: Workflow) -> Result<(), CommandError> {
        Err(CommandError::not_on_server(Needs::Files, None))
    }

    /// What the window opens when it starts.
    async fn startup_file(&self) -> Result<Option<Startup>, CommandError>;

    /// The answers file beside a workflow, when there is one.
    fn script_beside(&self, _workflow_path: String) -> Option<String> {
        None
    }

    // Checks.

    /// The validator's options for this host (its providers, tools and default model, or none), built by
    /// `session::validation_options`; `format`: the system the document was read from; `workflow_path`: the open
    /// file, by which `workflow` nodes' children are found (a host that reads no files a request names ignores it).
    async fn validation_options(
        &self,
        scripted: bool,
        format: Option<Format>,
        workflow_path: Option<String>,
    ) -> Result<validate::Options, CommandError>;

    async fn default_model(&self) -> Result<DefaultModel, CommandError>;

    async fn code_consent(&self, workflow: Workflow, workflow_path: Option<String>) -> Result<Consent, CommandError>;

    async fn trust_code(&self, _fingerprint: String, _workflow_path: Option<String>) -> Result<(), CommandError> {
        Err(CommandError::not_on_server(Needs::Files, None))
    }

    async fn probe_mcp(&self, _name: String, _server: McpServerConfig) -> Result<Vec<McpTool>, CommandError> {
        Err(CommandError::not_on_server(Needs::Settings, None))
    }

    // Runs.

    /// Starts a run (the desktop) or submits it for a worker (the server); its id.
    async fn start_run(&self, request: RunArgs, events: Events<Vec<Event>>) -> Result<String, CommandError>;

    async fn resume_run(&self, _run_id: String, _events: Events<Vec<Event>>) -> Result<Resumed, CommandError> {
        Err(CommandError::not_on_server(Needs::RunsHere, None))
    }

    async fn replay_run(&self, _run_id: String, _events: Events<Vec<Event>>) -> Result<Resumed, CommandError> {
        Err(CommandError::not_on_server(Needs::RunsHere, None))
    }

    /// A person's decision on a pending approval (the desktop: to the run in this process; the server: kept for
    /// the worker).
    async fn decide(&self, run_id: String, node: String, decision: String, note: String) -> Result<(), CommandError>;

    async fn cancel_run(&self, run_id: String) -> Result<(), CommandError>;

    /// The runs this process runs now.
    fn live_runs(&self) -> Vec<String> {
        Vec::new()
    }

    async fn server_runs(&self, _filter: RunFilter) -> Result<Vec<RunSummary>, CommandError> {
        Err(CommandError::not_on_server(Needs::Desktop, None))
    }

    async fn follow_run(&self, _run_id: String, _after: u32, _events: Events<Vec<Event>>) -> Result<(), CommandError> {
        Err(CommandError::not_on_server(Needs::Desktop, None))
    }

    // Evaluations.

    async fn save_test_case(&self, _run_id: String, _workflow_path: Option<String>) -> Result<SavedCase, CommandError> {
        Err(CommandError::not_on_server(Needs::Evals, None))
    }

    async fn eval_suite(&self, _workflow_path: String) -> Result<EvalSuiteView, CommandError> {
        Err(CommandError::not_on_server(Needs::Evals, None))
    }

    async fn run_evals(
        &self,
        _workflow_path: String,
        _case_id: Option<String>,
        _offline: bool,
        _on_case: Events<eval::CaseReport>,
    ) -> Result<eval::Report, CommandError> {
        Err(CommandError::not_on_server(Needs::Evals, None))
    }

    // Settings and preferences.

    /// The settings to edit, and why the file could not be used when it could not.
    fn get_settings(&self) -> SettingsState {
        SettingsState { settings: Settings::default(), problem: None }
    }

    fn save_settings(&self, _settings: Settings) -> Result<(), CommandError> {
        Err(CommandError::not_on_server(Needs::Settings, None))
    }

    fn load_prefs(&self) -> Prefs {
        Prefs::default()
    }

    fn save_prefs(&self, _prefs: Prefs) -> Result<(), CommandError> {
        Err(CommandError::not_on_server(Needs::Desktop, None))
    }
}

/// Each agent's turns by node, as the Last run tab's Conversation shows them.
pub type Turns = BTreeMap<String, Vec<switchyard_engine::views::TurnView>>;
