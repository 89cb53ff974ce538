//! The commands the window calls. Each is a thin adapter: arguments in, one engine call, a result out.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::json;
use specta::Type;
use switchyard_engine::answers::Answers;
use switchyard_engine::code::consent::{Consent, TrustStore};
use switchyard_engine::eval;
use switchyard_engine::events::Event;
use switchyard_engine::files;
use switchyard_engine::format::{self, Format};
use switchyard_engine::log::{Observer, RunLog};
use switchyard_engine::mcp::{McpServerConfig, McpTool};
use switchyard_engine::node_types::{self, NodeTypeSpec};
use switchyard_engine::providers::{self, DefaultModel, Settings};
use switchyard_engine::run::{RunController, RunHandle};
use switchyard_engine::session::{self, Sinks, WorkflowRef};
use switchyard_engine::store::{self, Claim, RunStore};
use switchyard_engine::validate::{self, Report};
use switchyard_engine::views::{self, Opened, OpenedRun, Resumed, RunSummary, Startup, TurnView};
use switchyard_engine::Workflow;
use tauri::ipc::Channel;
use tauri::State;

use crate::error::CommandError;
use crate::forward::Forwarder;
use crate::prefs::{self, Prefs};
use crate::remote::{self, Remotes};

/// Live runs by id, and the durable run store.
pub struct AppState {
    runs: Arc<Mutex<HashMap<String, RunController>>>,
    store: Result<Arc<RunStore>, CommandError>,
    /// What each MCP server listed the last time it was tested or its tools were listed (validation checks single
    /// tools against it without starting servers on every edit).
    mcp_tools: Mutex<std::collections::BTreeMap<String, Vec<String>>>,
    /// The default model as `default_model` last found it; `None` until it is asked (validation then does not warn
    /// about nodes that name no model), and forgotten when the settings are saved.
    default_model: Mutex<Option<DefaultModel>>,
    /// The run the window follows (`follow_run`), counted: a follower whose count is no longer this one stops.
    following: Arc<std::sync::atomic::AtomicU64>,
    /// The runs listed from a server (`server_runs`): commands about them go to it.
    remotes: Remotes,
}

impl AppState {
    pub fn open() -> AppState {
        AppState {
            runs: Arc::default(),
            store: RunStore::open(&store::default_path()).map(Arc::new).map_err(CommandError::from),
            mcp_tools: Mutex::default(),
            default_model: Mutex::default(),
            following: Arc::default(),
            remotes: Remotes::default(),
        }
    }

    fn store(&self) -> Result<&Arc<RunStore>, CommandError> {
        self.store.as_ref().map_err(Clone::clone)
    }

    fn controller(&self, run_id: &str) -> Result<RunController, CommandError> {
        self.runs
            .lock()
            .unwrap()
            .get(run_id)
            .cloned()
            .ok_or_else(|| CommandError::new("RUN_NOT_RUNNING", format!("run {run_id} is not running in this window")))
    }
}

// `async`: off the main thread. A command on it freezes the window's painting in WebKitGTK while it runs, and
// reading or validating a 5,000-node document takes a second in a debug build (`npm run bench:app`).
#[tauri::command(async)]
#[specta::specta]
pub fn open_file(path: String) -> Result<Opened, CommandError> {
    let loaded = format::load_file(Path::new(&path), None)?;
    Ok(Opened::loaded(loaded, Some(path)))
}

/// Reads pasted or dropped text; `format` forces one (`switchyard`, `agentflow`, `sweny`).
#[tauri::command(async)]
#[specta::specta]
pub fn parse_document(text: String, format: Option<String>) -> Result<Opened, CommandError> {
    let forced = match format {
        Some(name) => Some(
            Format::from_name(&name)
                .ok_or_else(|| CommandError::new("UNKNOWN_FORMAT", format!("unknown format `{name}`")))?,
        ),
        None => None,
    };
    Ok(Opened::loaded(format::load_str(&text, forced, None)?, None))
}

/// Saves canonical YAML (or JSON for a `.json` path), replacing the file atomically so a crash never leaves half a file.
#[tauri::command(async)]
#[specta::specta]
pub fn save_file(path: String, workflow: Workflow) -> Result<(), CommandError> {
    let path = PathBuf::from(path);
    let text = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
        format::to_json(&workflow)
    } else {
        format::to_yaml(&workflow)
    };
    files::write_atomically(&path, text.as_bytes())
        .map_err(|e| CommandError::new("WRITE_FAILED", format!("cannot write {}: {e}", path.display())))
}

/// Every node type as the engine defines it (handles, fields, labels): the palette, canvas and inspector read this.
#[tauri::command]
#[specta::specta]
pub fn node_types() -> Vec<NodeTypeSpec> {
    node_types::specs().to_vec()
}

#[tauri::command]
#[specta::specta]
pub fn to_yaml(workflow: Workflow) -> String {
    format::to_yaml(&workflow)
}

/// The one validator, with providers checked unless the run will be scripted.
#[tauri::command(async)]
#[specta::specta]
pub fn validate(
    state: State<'_, AppState>,
    workflow: Workflow,
    scripted: bool,
    format: Option<String>,
) -> Result<Report, CommandError> {
    let settings = Settings::load(&Settings::default_path()).map_err(CommandError::from);
    validate_with(&state, &workflow, scripted, format.as_deref(), settings)
}

/// `format`: the system the document was read from (`sweny`, …): its own graph rules apply, as `switchyard validate`
/// applies them to that file (an unreachable node in a SWEny file is an error, as SWEny's loader refuses it).
fn validate_with(
    state: &AppState,
    workflow: &Workflow,
    scripted: bool,
    format: Option<&str>,
    settings: Result<Settings, CommandError>,
) -> Result<Report, CommandError> {
    let settings = session::settings_for_check(settings, scripted)?;
    let mut options = session::validation_options(settings.as_ref(), scripted);
    options.format = format.and_then(switchyard_engine::format::Format::from_name);
    options.mcp_tools = state.mcp_tools.lock().unwrap().clone();
    options.mcp_tools.retain(|server, _| options.mcp_servers.as_ref().is_some_and(|s| s.contains(server)));
    // Known only once `default_model` has looked: until then nodes that name no model are not flagged.
    options.no_default_model = state.default_model.lock().unwrap().as_ref().is_some_and(|d| d.model.is_none());
    Ok(validate::validate(workflow, &options))
}

/// The model agents that name none use when neither the workflow nor the run names one: the settings'
/// `default_model`, else the first model a local model server lists, else none (with where it looked). Remembered
/// for `validate`, which then flags nodes that need a model when there is none (`NO_MODEL`).
#[tauri::command]
#[specta::specta]
pub async fn default_model(state: State<'_, AppState>) -> Result<DefaultModel, CommandError> {
    let settings = Settings::load(&Settings::default_path())?;
    let found = providers::discover_default_model(&settings).await;
    *state.default_model.lock().unwrap() = Some(found.clone());
    Ok(found)
}

/// What the window asks to run: the arguments of `start_run` (the session's `RunRequest` is built from them).
#[derive(Deserialize, Type)]
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
}

/// The code steps a run of this document would execute and whether this version of their code is trusted: the
/// window shows them and asks before the run when it is not.
#[tauri::command]
#[specta::specta]
pub fn code_consent(workflow: Workflow, workflow_path: Option<String>) -> Result<Consent, CommandError> {
    let workflow_ref = workflow_path.as_deref().map(|p| WorkflowRef::new(Path::new(p), None));
    let (_, consent) = session::code_for(&workflow, workflow_ref.as_ref(), false, &TrustStore::default_location())?;
    Ok(consent)
}

/// Starts an MCP server from the settings being edited and lists its tools: the Settings dialog's Test.
#[tauri::command]
#[specta::specta]
pub async fn probe_mcp(
    state: State<'_, AppState>,
    name: String,
    server: McpServerConfig,
) -> Result<Vec<McpTool>, CommandError> {
    let tools = switchyard_engine::mcp::probe(&name, &server)
        .await
        .map_err(|e| CommandError::new("MCP_UNAVAILABLE", e.to_string()))?;
    state.mcp_tools.lock().unwrap().insert(name, tools.iter().map(|t| t.name.clone()).collect());
    Ok(tools)
}

/// Records the person's consent to this version of a workflow's code (the fingerprint `code_consent` gave).
#[tauri::command]
#[specta::specta]
pub fn trust_code(fingerprint: String, workflow_path: Option<String>) -> Result<(), CommandError> {
    let label = workflow_path.unwrap_or_else(|| "(unsaved workflow)".into());
    TrustStore::default_location()
        .trust(&fingerprint, &label)
        .map_err(|e| CommandError::new("TRUST_UNREADABLE", e.to_string()))
}

/// Starts a run; its events arrive on `on_events` in batches, in order.
#[tauri::command]
#[specta::specta]
pub async fn start_run(
    state: State<'_, AppState>,
    request: RunArgs,
    on_events: Channel<Vec<Event>>,
) -> Result<String, CommandError> {
    let store = state.store().ok().cloned();
    let asked = session::RunRequest {
        workflow_ref: request.workflow_path.as_deref().map(|p| WorkflowRef::new(Path::new(p), None)),
        input: request.input,
        answers_path: request.answers_path.map(PathBuf::from),
        model: request.model,
        step_budget: None,
        reuse: request.reuse_run.zip(request.from_node),
        // The app's consent is the trust file: the window asks (`code_consent`, `trust_code`) before it runs.
        allow_code: false,
        ..Default::default()
    };
    let prepared = session::prepare(request.workflow, asked, store.as_deref()).await?;
    // The run's row is written before its first event; this process holds the run while it lives.
    let claim = match &store {
        Some(store) => Some(session::begin(store, &prepared)?),
        None => None,
    };
    let forwarder = Forwarder::spawn(on_events);
    let handle = session::start(prepared, window_sinks(store.map(|s| s as Arc<dyn RunLog>), &forwarder));
    Ok(track(&state, handle, forwarder, claim))
}

/// Continues a paused run stored by an earlier session (or this one), streaming its events like `start_run`.
#[tauri::command]
#[specta::specta]
pub async fn resume_run(
    state: State<'_, AppState>,
    run_id: String,
    on_events: Channel<Vec<Event>>,
) -> Result<Resumed, CommandError> {
    if state.runs.lock().unwrap().contains_key(&run_id) {
        return Err(CommandError::new("RUN_IN_USE", format!("run {run_id} is already running in this window")));
    }
    let store = state.store()?.clone();
    let resuming = session::open_to_resume(&store, &run_id, false)?;
    // The run goes on with the document it started with; the window shows that document.
    let document = Opened::stored(&resuming.stored);
    let forwarder = Forwarder::spawn(on_events);
    let (handle, claim) = session::resume_live(resuming, window_sinks(Some(store), &forwarder))?;
    let run_id = track(&state, handle, forwarder, Some(claim));
    Ok(Resumed { run_id, document })
}

/// Opens a stored run: the document it started with (not the file as it is now) and what happened.
#[tauri::command]
#[specta::specta]
pub async fn open_run(state: State<'_, AppState>, run_id: String) -> Result<OpenedRun, CommandError> {
    if let Some(remote) = state.remotes.of(&run_id) {
        return Ok(remote.call("open_run", json!({ "runId": run_id })).await?);
    }
    Ok(OpenedRun::new(state.store()?.load(&run_id)?))
}

/// Plays a stored run again through the engine from its recorded inputs — no model or tool call — streaming its
/// events like a live run.
#[tauri::command]
#[specta::specta]
pub fn replay_run(
    state: State<'_, AppState>,
    run_id: String,
    on_events: Channel<Vec<Event>>,
) -> Result<Resumed, CommandError> {
    let store = state.store()?;
    let document = Opened::stored(&store.load(&run_id)?);
    let forwarder = Forwarder::spawn(on_events);
    let replayed = session::replay(store, &run_id, window_sinks(None, &forwarder));
    forwarder.close();
    replayed?;
    Ok(Resumed { run_id, document })
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

/// Adds a stored run to its workflow's evaluation file (`NAME.evals.yaml` beside the workflow) as a test case: its
/// input, answers and decisions, and what each node did. The same as `switchyard eval add RUN_ID` (`eval::add_case`).
#[tauri::command]
#[specta::specta]
pub fn save_test_case(
    state: State<'_, AppState>,
    run_id: String,
    workflow_path: Option<String>,
) -> Result<SavedCase, CommandError> {
    save_case(state.store()?, &run_id, workflow_path.as_deref())
}

/// `workflow_path`: the file the workflow was saved to since, for a run made before its first save (it names no
/// file): its case goes beside that file. A run that names its file keeps it.
fn save_case(store: &RunStore, run_id: &str, workflow_path: Option<&str>) -> Result<SavedCase, CommandError> {
    let mut run = session::case_source(store, run_id)?;
    if run.workflow_file.is_none() {
        run.workflow_file = workflow_path.map(PathBuf::from);
    }
    // A run not started from a file, of a workflow not saved since, has no evaluation file beside it.
    let added = eval::add_case(&run, None, None).map_err(|e| match e.code {
        "NO_WORKFLOW_FILE" => CommandError::new(
            "NO_WORKFLOW_FILE",
            format!("run {run_id} was not run from a saved file, so it has no evaluation file beside it"),
        ),
        _ => CommandError::from(e),
    })?;
    Ok(SavedCase {
        path: added.path.display().to_string(),
        case_id: added.case_id,
        expectations: u32::try_from(added.expectations).unwrap_or(u32::MAX),
        recorded_calls: u32::try_from(added.recorded_calls).unwrap_or(u32::MAX),
    })
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

/// The evaluation file beside a workflow file: its cases and its last evaluation.
#[tauri::command]
#[specta::specta]
pub fn eval_suite(state: State<'_, AppState>, workflow_path: String) -> Result<EvalSuiteView, CommandError> {
    let file = eval::Suite::beside(Path::new(&workflow_path));
    let shown = file.display().to_string();
    if !file.exists() {
        return Ok(EvalSuiteView { file: shown, exists: false, cases: Vec::new(), last: None });
    }
    let suite = eval::Suite::load(&file)?;
    let last = eval::kept::latest(state.store()?, &file)?;
    let cases = suite
        .file
        .cases
        .iter()
        .map(|c| EvalCaseView {
            id: c.id.clone(),
            description: c.description.clone(),
            expectations: u32::try_from(c.expect.len()).unwrap_or(u32::MAX),
        })
        .collect();
    Ok(EvalSuiteView { file: shown, exists: true, cases, last })
}

/// Runs the evaluation file beside a workflow file (every case, or one), sending each case's report as it finishes;
/// the report compares with the file's earlier evaluations and is kept with its cases' runs. As `switchyard eval FILE
/// --baseline last [--offline]`: online, an agent a case has no answer for calls the settings' model (and is
/// recorded); offline, no model is called and such a case could not run.
#[tauri::command]
#[specta::specta]
pub async fn run_evals(
    state: State<'_, AppState>,
    workflow_path: String,
    case_id: Option<String>,
    offline: bool,
    on_case: Channel<eval::CaseReport>,
) -> Result<eval::Report, CommandError> {
    let file = eval::Suite::beside(Path::new(&workflow_path));
    let suite = eval::Suite::load(&file)?;
    let store = state.store()?.clone();
    let baseline = eval::kept::last(&store, &file)?;
    let options = eval::Options {
        case: case_id,
        offline,
        store: Some((store, eval::kept::new_id())),
        ..eval::Options::default()
    };
    // The cases' futures borrow the suite across a bounded stream, which the compiler cannot prove `Send`: the
    // evaluation runs on a blocking thread of its own, driving it on the app's runtime.
    let runtime = tokio::runtime::Handle::current();
    let report = tokio::task::spawn_blocking(move || {
        runtime.block_on(eval::kept::evaluate(&suite, &options, baseline, |case: &eval::CaseReport| {
            let _ = on_case.send(case.clone());
        }))
    })
    .await
    .map_err(|e| CommandError::new("EVAL_FAILED", format!("the evaluation stopped: {e}")))??;
    Ok(report)
}

/// Where a run's events go in the app: the store (written first), then the window.
fn window_sinks(log: Option<Arc<dyn RunLog>>, forwarder: &Forwarder) -> Sinks {
    Sinks { log, observers: vec![Arc::new(forwarder.clone()) as Arc<dyn Observer>] }
}

/// Keeps the run's controller (and this process's claim on it) while it lives; the run log records how it ends.
fn track(state: &State<'_, AppState>, handle: RunHandle, forwarder: Forwarder, claim: Option<Claim>) -> String {
    let run_id = handle.run_id.clone();
    state.runs.lock().unwrap().insert(run_id.clone(), handle.controller());
    let runs = state.runs.clone();
    let id = run_id.clone();
    tauri::async_runtime::spawn(async move {
        let _outcome = handle.finish().await;
        forwarder.close();
        runs.lock().unwrap().remove(&id);
        drop(claim);
    });
    run_id
}

#[tauri::command]
#[specta::specta]
pub async fn decide(
    state: State<'_, AppState>,
    run_id: String,
    node: String,
    decision: String,
    note: String,
) -> Result<(), CommandError> {
    if let Some(remote) = state.remotes.of(&run_id) {
        let args = json!({ "runId": run_id, "node": node, "decision": decision, "note": note });
        return Ok(remote.call("decide", args).await?);
    }
    let controller = state.controller(&run_id)?;
    controller
        .decide(&node, serde_json::json!({ "decision": decision, "note": note }))
        .await
        .map_err(|e| CommandError::new("DECISION_REFUSED", e))
}

#[tauri::command]
#[specta::specta]
pub async fn cancel_run(state: State<'_, AppState>, run_id: String) -> Result<(), CommandError> {
    if let Some(remote) = state.remotes.of(&run_id) {
        return Ok(remote.call("cancel_run", json!({ "runId": run_id })).await?);
    }
    state.controller(&run_id)?.cancel();
    Ok(())
}

/// Stored runs, newest first; paused and interrupted ones can go on.
#[tauri::command]
#[specta::specta]
pub fn list_runs(state: State<'_, AppState>) -> Result<Vec<RunSummary>, CommandError> {
    let live = state.runs.lock().unwrap().keys().cloned().collect::<Vec<_>>();
    let rows = session::runs(state.store()?)?;
    Ok(rows.into_iter().map(|row| RunSummary { live: live.contains(&row.id), row, server: None }).collect())
}

/// The runs of the server the settings name (`server:`), newest first, each marked with the server's `HOST:PORT`;
/// none when no server is named. Opening, following, deciding and cancelling them then goes to that server.
#[tauri::command]
#[specta::specta]
pub async fn server_runs(state: State<'_, AppState>) -> Result<Vec<RunSummary>, CommandError> {
    let Some(remote) = remote::configured()? else { return Ok(Vec::new()) };
    let mut runs: Vec<RunSummary> = remote.call("list_runs", json!({})).await?;
    state.remotes.listed(&remote, runs.iter().map(|r| r.row.id.as_str()));
    for run in &mut runs {
        run.server = Some(remote.host().to_string());
    }
    Ok(runs)
}

/// Follows a run that another process runs (a `switchyard run` in a terminal, on the same store): sends its events
/// numbered after `after` as they are written, until it ends. The window follows one run at a time: following
/// another stops this one.
#[tauri::command]
#[specta::specta]
pub fn follow_run(
    state: State<'_, AppState>,
    run_id: String,
    after: u32,
    on_events: Channel<Vec<Event>>,
) -> Result<(), CommandError> {
    let following = state.following.clone();
    let me = following.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    let current = move || following.load(std::sync::atomic::Ordering::SeqCst) == me;
    if let Some(remote) = state.remotes.of(&run_id) {
        tauri::async_runtime::spawn(async move {
            let send = |events: Vec<Event>| on_events.send(events).is_ok();
            remote.follow(&run_id, u64::from(after), send, || !current()).await;
        });
        return Ok(());
    }
    let store = state.store()?.clone();
    store.get(&run_id)?;
    tauri::async_runtime::spawn(async move {
        let mut last = u64::from(after);
        while current() {
            // The status first: a run seen ended has all its events written, so reading them after it misses none.
            let (read, id) = (store.clone(), run_id.clone());
            let read = tauri::async_runtime::spawn_blocking(move || {
                Ok::<_, switchyard_engine::store::StoreError>((read.get(&id)?, read.events_after(&id, last)?))
            });
            let Ok(Ok((row, new))) = read.await else { return };
            if let Some(e) = new.last() {
                last = e.seq;
                if on_events.send(new).is_err() {
                    return;
                }
            }
            if row.status.ended() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    });
    Ok(())
}

#[tauri::command]
#[specta::specta]
pub async fn run_events(state: State<'_, AppState>, run_id: String) -> Result<Vec<Event>, CommandError> {
    if let Some(remote) = state.remotes.of(&run_id) {
        return Ok(remote.call("run_events", json!({ "runId": run_id })).await?);
    }
    Ok(state.store()?.events(&run_id)?)
}

/// Each agent's model turns and tool calls in a run, by node id, in order (the run log's journal): the Last run tab's
/// Conversation.
#[tauri::command]
#[specta::specta]
pub async fn run_turns(
    state: State<'_, AppState>,
    run_id: String,
) -> Result<std::collections::BTreeMap<String, Vec<TurnView>>, CommandError> {
    if let Some(remote) = state.remotes.of(&run_id) {
        return Ok(remote.call("run_turns", json!({ "runId": run_id })).await?);
    }
    Ok(views::turn_views(session::turns(&**state.store()?, &run_id)?))
}

/// The settings, and why the file could not be used when it could not: the window then shows the defaults and the
/// problem, and saving replaces the file.
#[derive(Serialize, Type)]
pub struct SettingsState {
    pub settings: Settings,
    pub problem: Option<CommandError>,
}

/// The settings to edit. Never fails: when the file cannot be used, the defaults come with the problem.
#[tauri::command]
#[specta::specta]
pub fn get_settings() -> SettingsState {
    settings_state(&Settings::default_path())
}

fn settings_state(path: &Path) -> SettingsState {
    match Settings::load(path) {
        Ok(settings) => SettingsState { settings, problem: None },
        Err(e) => SettingsState { settings: Settings::default(), problem: Some(e.into()) },
    }
}

/// Saves the settings, or refuses with the problems by field (nothing is written then).
#[tauri::command]
#[specta::specta]
pub fn save_settings(state: State<'_, AppState>, settings: Settings) -> Result<(), CommandError> {
    settings.save(&Settings::default_path())?;
    // The default model may have changed with them: it is found again when next asked.
    *state.default_model.lock().unwrap() = None;
    Ok(())
}

/// What to open at start: `SWITCHYARD_OPEN`, else the first argument, else the workflow the person opened or saved
/// last (the newest recent file, kept in `ui-prefs.json`, that still exists), else the bundled alert-triage example.
#[tauri::command]
#[specta::specta]
pub fn startup_file() -> Option<Startup> {
    let asked = std::env::var("SWITCHYARD_OPEN").ok().or_else(|| std::env::args().nth(1));
    let recent = prefs::load(&prefs::path()).recent_files;
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/alert-triage.yaml");
    let path = startup_choice(asked, &recent, &example)?;
    let path = std::fs::canonicalize(&path).map(|p| p.to_string_lossy().into_owned()).unwrap_or(path);
    Some(Startup { answers_path: script_beside(path.clone()), path })
}

/// The file asked for, else the newest recent file that still exists, else the example when it exists.
fn startup_choice(asked: Option<String>, recent: &[String], example: &Path) -> Option<String> {
    asked
        .or_else(|| recent.iter().find(|p| Path::new(p).is_file()).cloned())
        .or_else(|| example.exists().then(|| example.to_string_lossy().into_owned()))
}

/// The answers file beside a workflow (`<stem>.script.yaml`), as an absolute path, when there is one.
#[tauri::command]
#[specta::specta]
pub fn script_beside(workflow_path: String) -> Option<String> {
    Answers::beside(Path::new(&workflow_path)).map(|p| p.to_string_lossy().into_owned())
}

/// The window's preferences; the defaults when the file is missing or corrupt.
#[tauri::command]
#[specta::specta]
pub fn load_prefs() -> Prefs {
    prefs::load(&prefs::path())
}

/// Keeps the window's preferences (written atomically); refuses a theme the window does not have.
#[tauri::command]
#[specta::specta]
pub fn save_prefs(prefs: Prefs) -> Result<(), CommandError> {
    prefs::save(&prefs::path(), &prefs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::Scratch;
    use switchyard_engine::providers::{ProviderConfig, ProviderKind};

    #[test]
    fn start_up_reopens_the_last_workflow_that_still_exists_unless_a_file_is_asked_for() {
        let dir = Scratch::new();
        let (last, older, gone, example) = (
            dir.path().join("last.yaml"),
            dir.path().join("older.yaml"),
            dir.path().join("gone.yaml"),
            dir.path().join("example.yaml"),
        );
        for file in [&last, &older, &example] {
            std::fs::write(file, "name: x\n").unwrap();
        }
        let text = |p: &Path| p.to_string_lossy().into_owned();
        let recent = [text(&gone), text(&last), text(&older)];
        assert_eq!(startup_choice(None, &recent, &example), Some(text(&last)), "the deleted file is passed over");
        assert_eq!(startup_choice(Some("/asked.yaml".into()), &recent, &example).as_deref(), Some("/asked.yaml"));
        assert_eq!(startup_choice(None, &[text(&gone)], &example), Some(text(&example)));
        assert_eq!(startup_choice(None, &[], &dir.path().join("none.yaml")), None);
    }

    #[test]
    fn unreadable_settings_give_the_defaults_and_the_problem_with_file_and_line() {
        let dir = Scratch::new();
        let path = dir.path().join("settings.yaml");
        std::fs::write(&path, "providers:\n  - {id: a, kind: openai}\n  - {id: a, kind: openai}\n").unwrap();
        let state = settings_state(&path);
        assert_eq!(state.settings, Settings::default());
        let problem = state.problem.unwrap();
        assert_eq!(problem.code, "SETTINGS_INVALID");
        assert!(problem.message.starts_with(&format!("{}:3: ", path.display())), "{}", problem.message);
        assert_eq!(problem.problems.len(), 1);
        assert_eq!(problem.problems[0].field, "providers[1].id");

        std::fs::write(&path, "providers: [").unwrap();
        let problem = settings_state(&path).problem.unwrap();
        assert_eq!(problem.code, "SETTINGS_PARSE_ERROR");
        assert!(problem.problems.is_empty());
    }

    #[test]
    fn readable_settings_come_with_no_problem() {
        let dir = Scratch::new();
        let path = dir.path().join("settings.yaml");
        let state = settings_state(&path);
        assert_eq!((state.settings, state.problem), (Settings::default(), None));
        let settings = Settings {
            providers: vec![ProviderConfig {
                id: "openai".into(),
                kind: ProviderKind::Openai,
                base_url: None,
                api_key_env: Some("OPENAI_API_KEY".into()),
                default_model: None,
                structured_output: None,
                max_tokens: None,
            }],
            ..Settings::default()
        };
        settings.save(&path).unwrap();
        assert_eq!(settings_state(&path).settings, settings);
    }

    #[test]
    fn a_refused_save_reaches_the_window_with_its_problems() {
        let settings = Settings { default_model: Some("nowhere".into()), ..Settings::default() };
        let dir = Scratch::new();
        let error: CommandError = settings.save(&dir.path().join("settings.yaml")).unwrap_err().into();
        let json = serde_json::to_value(&error).unwrap();
        assert_eq!(json["code"], "SETTINGS_INVALID");
        assert_eq!(json["problems"][0]["field"], "default_model");
        assert_eq!(json["problems"][0]["code"], "INVALID_DEFAULT_MODEL");
        assert!(json["message"].as_str().unwrap().contains("not saved"));
    }

    /// The app's state with no run store, for checks that keep nothing.
    fn state_without_store() -> AppState {
        AppState {
            runs: Arc::default(),
            store: Err(CommandError::new("STORE_UNAVAILABLE", "no store in this test")),
            mcp_tools: Mutex::default(),
            default_model: Mutex::default(),
            following: Arc::default(),
            remotes: Remotes::default(),
        }
    }

    #[test]
    fn nodes_without_a_model_are_flagged_only_once_no_default_model_was_found() {
        use switchyard_engine::providers::DefaultSource;
        let state = state_without_store();
        let text = "switchyard: 1\nname: t\nnodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\nedges:\n  - {from: start, to: a}\n";
        let workflow = format::load_str(text, Some(Format::Switchyard), None).unwrap().workflow;
        let flagged = |scripted: bool| {
            let report = validate_with(&state, &workflow, scripted, None, Ok(Settings::default())).unwrap();
            report.warnings.iter().filter(|f| f.code == "NO_MODEL").count()
        };
        assert_eq!(flagged(false), 0, "not looked for yet: unknown, so nothing is flagged");
        let found = |model: Option<&str>, source| DefaultModel {
            model: model.map(str::to_string),
            source,
            detail: String::new(),
        };
        *state.default_model.lock().unwrap() = Some(found(None, DefaultSource::None));
        assert_eq!((flagged(false), flagged(true)), (1, 0), "flagged unless a script answers");
        *state.default_model.lock().unwrap() = Some(found(Some("local/tiny"), DefaultSource::Local));
        assert_eq!(flagged(false), 0);
    }

    #[test]
    fn a_document_read_from_a_sweny_file_is_validated_by_swenys_graph_rules() {
        let state = state_without_store();
        // `lost` cannot be reached: SWEny's loader refuses such a file; a workflow of our own only warns.
        let text = "switchyard: 1\nname: t\nnodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\n  - {id: lost, type: agent}\nedges:\n  - {from: start, to: a}\n";
        let workflow = format::load_str(text, Some(Format::Switchyard), None).unwrap().workflow;
        let unreachable = |format: Option<&str>| {
            let report = validate_with(&state, &workflow, true, format, Ok(Settings::default())).unwrap();
            let level =
                |list: &[switchyard_engine::validate::Finding]| list.iter().any(|f| f.code == "UNREACHABLE_NODE");
            (level(&report.errors), level(&report.warnings))
        };
        assert_eq!(unreachable(Some("sweny")), (true, false), "an error, as `switchyard validate` says of the file");
        assert_eq!(unreachable(Some("switchyard")), (false, true));
        assert_eq!(unreachable(None), (false, true));
    }

    #[test]
    fn the_script_beside_a_workflow_is_found_as_an_absolute_path() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/alert-triage.yaml");
        let script = script_beside(example.to_string_lossy().into_owned()).unwrap();
        assert!(Path::new(&script).is_absolute() && !script.contains(".."), "{script}");
        assert!(script.ends_with("alert-triage.script.yaml"), "{script}");
        let dir = Scratch::new();
        assert_eq!(script_beside(dir.path().join("lonely.yaml").to_string_lossy().into_owned()), None);
    }

    /// A run of the approval example (from a copy beside which its evaluation file is written, or from no file), run to
    /// its end or only begun and left (interrupted).
    fn finished_run(dir: &Path, store: &Arc<RunStore>, from_file: bool, to_the_end: bool) -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let workflow_path = dir.join("approval-flow.yaml");
        std::fs::copy(root.join("approval-flow.yaml"), &workflow_path).unwrap();
        let script = std::fs::read_to_string(root.join("approval-flow.script.yaml")).unwrap()
            + "approvals: {review: {decision: approve, note: ship it}}\n";
        let answers = dir.join("approval-flow.script.yaml");
        std::fs::write(&answers, script).unwrap();
        let workflow = format::load_file(&workflow_path, None).unwrap().workflow;
        let request = session::RunRequest {
            workflow_ref: from_file.then(|| WorkflowRef::new(&workflow_path, None)),
            answers_path: Some(answers),
            ..Default::default()
        };
        tauri::async_runtime::block_on(async {
            let prepared = session::prepare(workflow, request, Some(store.as_ref())).await.unwrap();
            let claim = session::begin(store, &prepared).unwrap();
            let id = prepared.options.run_id.clone().unwrap();
            if to_the_end {
                session::run(prepared, Sinks { log: Some(store.clone() as Arc<dyn RunLog>), observers: Vec::new() })
                    .await;
            }
            drop(claim);
            id
        })
    }

    #[test]
    fn a_finished_run_is_saved_as_a_test_case_beside_its_workflow_as_eval_add_does() {
        let dir = Scratch::new();
        let store = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
        let id = finished_run(dir.path(), &store, true, true);
        let evals = dir.path().join("approval-flow.evals.yaml");

        let saved = save_case(&store, &id, None).unwrap();
        assert_eq!(std::fs::canonicalize(&saved.path).unwrap(), std::fs::canonicalize(&evals).unwrap());
        assert_eq!(saved.case_id, format!("run-{}", &id[..8]));
        let text = std::fs::read_to_string(&evals).unwrap();
        assert!(text.contains("\nworkflow: approval-flow.yaml\ncases:\n"), "{text}");
        assert!(text.contains("approval:") && text.contains("route:"), "{text}");
        assert!(saved.expectations > 0);

        // Saved again: the next free id, appended.
        let again = save_case(&store, &id, None).unwrap();
        assert_eq!(again.case_id, format!("run-{}-2", &id[..8]));
        assert!(std::fs::read_to_string(&evals).unwrap().starts_with(&text));

        // `cases:` no longer last: refused, and the file is left as it was.
        let moved = std::fs::read_to_string(&evals).unwrap() + "judge: local/small\n";
        std::fs::write(&evals, &moved).unwrap();
        let refused = save_case(&store, &id, None).unwrap_err();
        assert_eq!(refused.code, "EVALS_NOT_APPENDABLE");
        assert_eq!(std::fs::read_to_string(&evals).unwrap(), moved);

        assert_eq!(save_case(&store, "no-such-run", None).unwrap_err().code, "NO_SUCH_RUN");
    }

    #[test]
    fn runs_that_did_not_end_or_came_from_no_file_are_refused_with_their_codes() {
        let dir = Scratch::new();
        let store = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
        let interrupted = finished_run(dir.path(), &store, true, false);
        assert_eq!(save_case(&store, &interrupted, None).unwrap_err().code, "RUN_NOT_ENDED");
        let unsaved = finished_run(dir.path(), &store, false, true);
        let refused = save_case(&store, &unsaved, None).unwrap_err();
        assert_eq!(refused.code, "NO_WORKFLOW_FILE");
        assert!(refused.message.contains("not run from a saved file"), "{}", refused.message);
        assert!(!dir.path().join("approval-flow.evals.yaml").exists());
    }

    #[test]
    fn a_run_made_before_the_workflow_was_first_saved_is_saved_as_a_test_case_beside_the_file_it_was_saved_to() {
        let dir = Scratch::new();
        let store = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
        let unsaved = finished_run(dir.path(), &store, false, true);
        let saved_to = dir.path().join("approval-flow.yaml").to_string_lossy().into_owned();
        let saved = save_case(&store, &unsaved, Some(&saved_to)).unwrap();
        let evals = dir.path().join("approval-flow.evals.yaml");
        assert_eq!(std::fs::canonicalize(&saved.path).unwrap(), std::fs::canonicalize(&evals).unwrap());
        let text = std::fs::read_to_string(&evals).unwrap();
        assert!(text.contains("\nworkflow: approval-flow.yaml\ncases:\n"), "{text}");
        // A run that names its own file keeps it: the path given is only for runs that name none.
        let from_file = finished_run(dir.path(), &store, true, true);
        let elsewhere = dir.path().join("other.yaml").to_string_lossy().into_owned();
        let kept = save_case(&store, &from_file, Some(&elsewhere)).unwrap();
        assert_eq!(std::fs::canonicalize(&kept.path).unwrap(), std::fs::canonicalize(&evals).unwrap());
    }
}
