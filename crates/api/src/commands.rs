//! Each command of the app, once: a plain function over its host and its typed parameters, returning the shapes of
//! `engine/src/views.rs` or a `CommandError`. The desktop's Tauri commands and the server's `POST
//! /api/commands/NAME` are generated wrappers around these (`list.rs`).

use switchyard_engine::code::consent::Consent;
use switchyard_engine::eval;
use switchyard_engine::events::Event;
use switchyard_engine::format::{self, Format};
use switchyard_engine::mcp::{McpServerConfig, McpTool};
use switchyard_engine::node_types::{self, NodeTypeSpec};
use switchyard_engine::providers::{DefaultModel, Settings};
use switchyard_engine::session;
use switchyard_engine::store::{RunFilter, RunQuery};
use switchyard_engine::validate::{self, Report};
use switchyard_engine::views::{self, Opened, OpenedRun, Resumed, RunSummary, Startup};
use switchyard_engine::Workflow;

use crate::host::{Events, Host, Turns};
use crate::types::{EvalSuiteView, Prefs, RunArgs, SavedCase, SettingsState};
use crate::{client, CommandError};

pub async fn open_file(host: &dyn Host, path: String) -> Result<Opened, CommandError> {
    host.open_file(path).await
}

pub async fn parse_document(_host: &dyn Host, text: String, format: Option<String>) -> Result<Opened, CommandError> {
    let forced = match format {
        Some(name) => Some(
            Format::from_name(&name)
                .ok_or_else(|| CommandError::new("UNKNOWN_FORMAT", format!("unknown format `{name}`")))?,
        ),
        None => None,
    };
    Ok(Opened::loaded(format::load_str(&text, forced, None)?, None))
}

pub async fn save_file(host: &dyn Host, path: String, workflow: Workflow) -> Result<(), CommandError> {
    host.save_file(path, workflow).await
}

pub async fn to_yaml(_host: &dyn Host, workflow: Workflow) -> Result<String, CommandError> {
    Ok(format::to_yaml(&workflow))
}

/// `format`: the system the document was read from (`sweny`, …): its own graph rules apply, as `switchyard validate`
/// applies them to that file (an unreachable node in a SWEny file is an error, as SWEny's loader refuses it).
pub async fn validate(
    host: &dyn Host,
    workflow: Workflow,
    scripted: bool,
    format: Option<String>,
    workflow_path: Option<String>,
) -> Result<Report, CommandError> {
    let format = format.as_deref().and_then(Format::from_name);
    let options = host.validation_options(scripted, format, workflow_path).await?;
    Ok(validate::validate(&workflow, &options))
}

pub async fn default_model(host: &dyn Host) -> Result<DefaultModel, CommandError> {
    host.default_model().await
}

pub async fn code_consent(
    host: &dyn Host,
    workflow: Workflow,
    workflow_path: Option<String>,
) -> Result<Consent, CommandError> {
    host.code_consent(workflow, workflow_path).await
}

pub async fn trust_code(
    host: &dyn Host,
    fingerprint: String,
    workflow_path: Option<String>,
) -> Result<(), CommandError> {
    host.trust_code(fingerprint, workflow_path).await
}

pub async fn probe_mcp(host: &dyn Host, name: String, server: McpServerConfig) -> Result<Vec<McpTool>, CommandError> {
    host.probe_mcp(name, server).await
}

pub async fn start_run(
    host: &dyn Host,
    request: RunArgs,
    on_events: Events<Vec<Event>>,
) -> Result<String, CommandError> {
    host.start_run(request, on_events).await
}

pub async fn resume_run(
    host: &dyn Host,
    run_id: String,
    on_events: Events<Vec<Event>>,
) -> Result<Resumed, CommandError> {
    host.resume_run(run_id, on_events).await
}

pub async fn decide(
    host: &dyn Host,
    run_id: String,
    node: String,
    decision: String,
    note: String,
) -> Result<(), CommandError> {
    match host.remote_of(&run_id) {
        Some(remote) => client::decide(&remote, run_id, node, decision, note).await,
        None => host.decide(run_id, node, decision, note).await,
    }
}

pub async fn cancel_run(host: &dyn Host, run_id: String) -> Result<(), CommandError> {
    match host.remote_of(&run_id) {
        Some(remote) => client::cancel_run(&remote, run_id).await,
        None => host.cancel_run(run_id).await,
    }
}

/// How many runs a list gives when its filter names no limit; the most it gives at once.
pub const RUNS_PAGE: usize = 100;
pub const MAX_RUNS_PAGE: usize = 1000;

/// The store's query a filter asks for, or why it names none (`INVALID_FILTER`, with the field).
pub fn run_query(filter: RunFilter) -> Result<RunQuery, CommandError> {
    let query = filter
        .query(RUNS_PAGE)
        .map_err(|(field, why)| CommandError::new("INVALID_FILTER", format!("the filter's {field}: {why}")))?;
    if query.limit > MAX_RUNS_PAGE {
        let why = format!("a limit of {} is over {MAX_RUNS_PAGE}: page with `before`", query.limit);
        return Err(CommandError::new("INVALID_FILTER", why));
    }
    Ok(query)
}

pub async fn list_runs(host: &dyn Host, filter: Option<RunFilter>) -> Result<Vec<RunSummary>, CommandError> {
    let query = run_query(filter.unwrap_or_default())?;
    let live = host.live_runs();
    let rows = session::priced_rows(host.stored_runs(query).await?);
    Ok(rows.into_iter().map(|row| RunSummary { live: live.contains(&row.id), row, server: None }).collect())
}

pub async fn run_events(host: &dyn Host, run_id: String) -> Result<Vec<Event>, CommandError> {
    if let Some(remote) = host.remote_of(&run_id) {
        return client::run_events(&remote, run_id).await;
    }
    host.stored_events(run_id).await
}

pub async fn run_turns(host: &dyn Host, run_id: String) -> Result<Turns, CommandError> {
    if let Some(remote) = host.remote_of(&run_id) {
        return client::run_turns(&remote, run_id).await;
    }
    Ok(views::turn_views(session::turns_in(host.stored_run(run_id).await?)))
}

pub async fn follow_run(
    host: &dyn Host,
    run_id: String,
    after: u32,
    on_events: Events<Vec<Event>>,
) -> Result<(), CommandError> {
    host.follow_run(run_id, after, on_events).await
}

pub async fn server_runs(host: &dyn Host, filter: Option<RunFilter>) -> Result<Vec<RunSummary>, CommandError> {
    let filter = filter.unwrap_or_default();
    run_query(filter.clone())?;
    host.server_runs(filter).await
}

pub async fn open_run(host: &dyn Host, run_id: String) -> Result<OpenedRun, CommandError> {
    if let Some(remote) = host.remote_of(&run_id) {
        return client::open_run(&remote, run_id).await;
    }
    let mut opened = OpenedRun::new(host.stored_run(run_id).await?);
    // Costed as History lists it: at the prices the run kept.
    opened.row = session::priced_row(opened.row);
    Ok(opened)
}

pub async fn replay_run(
    host: &dyn Host,
    run_id: String,
    on_events: Events<Vec<Event>>,
) -> Result<Resumed, CommandError> {
    host.replay_run(run_id, on_events).await
}

pub async fn save_test_case(
    host: &dyn Host,
    run_id: String,
    workflow_path: Option<String>,
) -> Result<SavedCase, CommandError> {
    host.save_test_case(run_id, workflow_path).await
}

pub async fn eval_suite(host: &dyn Host, workflow_path: String) -> Result<EvalSuiteView, CommandError> {
    host.eval_suite(workflow_path).await
}

pub async fn run_evals(
    host: &dyn Host,
    workflow_path: String,
    case_id: Option<String>,
    offline: bool,
    on_case: Events<eval::CaseReport>,
) -> Result<eval::Report, CommandError> {
    host.run_evals(workflow_path, case_id, offline, on_case).await
}

pub async fn get_settings(host: &dyn Host) -> Result<SettingsState, CommandError> {
    Ok(host.get_settings())
}

pub async fn save_settings(host: &dyn Host, settings: Settings) -> Result<(), CommandError> {
    host.save_settings(settings)
}

pub async fn startup_file(host: &dyn Host) -> Result<Option<Startup>, CommandError> {
    host.startup_file().await
}

pub async fn node_types(_host: &dyn Host) -> Result<Vec<NodeTypeSpec>, CommandError> {
    Ok(node_types::specs().to_vec())
}

pub async fn load_prefs(host: &dyn Host) -> Result<Prefs, CommandError> {
    Ok(host.load_prefs())
}

pub async fn save_prefs(host: &dyn Host, prefs: Prefs) -> Result<(), CommandError> {
    host.save_prefs(prefs)
}

pub async fn script_beside(host: &dyn Host, workflow_path: String) -> Result<Option<String>, CommandError> {
    Ok(host.script_beside(workflow_path))
}

/// What a command that never fails in the window answers when a host cannot answer it: what the window shows when
/// there is nothing (no file to open, the default preferences, the default settings with the problem).
pub trait Plain {
    fn instead(error: CommandError) -> Self;
}

impl<T> Plain for Option<T> {
    fn instead(_: CommandError) -> Self {
        None
    }
}

impl Plain for String {
    fn instead(_: CommandError) -> Self {
        String::new()
    }
}

impl<T> Plain for Vec<T> {
    fn instead(_: CommandError) -> Self {
        Vec::new()
    }
}

impl Plain for Prefs {
    fn instead(_: CommandError) -> Self {
        Prefs::default()
    }
}

impl Plain for SettingsState {
    fn instead(error: CommandError) -> Self {
        SettingsState { settings: Settings::default(), problem: Some(error) }
    }
}
