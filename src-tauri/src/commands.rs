//! The desktop app as the commands' host (`switchyard_api::Host`): this computer's files, settings and preferences,
//! its SQLite run store, and runs in this process (decided and cancelled through their controllers). The Tauri
//! commands themselves are generated from the list of commands (`wrappers.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use switchyard_api::{
    client, CommandError, EvalCaseView, EvalSuiteView, Events, Host, Prefs, RunArgs, SavedCase, SettingsState,
};
use switchyard_engine::answers::Answers;
use switchyard_engine::code::consent::{Consent, TrustStore};
use switchyard_engine::eval;
use switchyard_engine::events::Event;
use switchyard_engine::files;
use switchyard_engine::format::{self, Format};
use switchyard_engine::log::Observer;
use switchyard_engine::mcp::{McpServerConfig, McpTool};
use switchyard_engine::providers::{self, DefaultModel, Settings};
use switchyard_engine::remote::Remote;
use switchyard_engine::result::Decision;
use switchyard_engine::run::{self, RunController};
use switchyard_engine::session::{self, Drive, Driving, Sinks, WorkflowRef};
use switchyard_engine::store::{self, RunFilter, RunQuery, RunRow, RunStore, Store, StoredRun};
use switchyard_engine::validate;
use switchyard_engine::views::{Opened, Resumed, RunSummary, Startup};
use switchyard_engine::Workflow;

use crate::forward::Forwarder;
use crate::prefs;
use crate::remote::{self, Remotes};

/// How often the window's follower reads a run another process writes (an SQLite store announces nothing).
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(250);

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
    /// The window's preferences file (`prefs::path`): your name, which decisions and cancellations made here name.
    prefs: std::path::PathBuf,
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
            prefs: prefs::path(),
        }
    }

    /// Who a decision or a cancellation made in this window names: your name (`prefs::your_name`).
    fn your_name(&self) -> Option<String> {
        prefs::your_name(&prefs::load(&self.prefs))
    }

    fn run_store(&self) -> Result<&Arc<RunStore>, CommandError> {
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

    /// Keeps the run's controller (and this process's hold on it) while it lives; the run log records how it ends.
    fn track(&self, driving: Driving, forwarder: Forwarder) -> String {
        let run_id = driving.run_id.clone();
        self.runs.lock().unwrap().insert(run_id.clone(), driving.controller());
        let runs = self.runs.clone();
        let id = run_id.clone();
        tauri::async_runtime::spawn(async move {
            let _outcome = driving.finish().await;
            forwarder.close();
            runs.lock().unwrap().remove(&id);
        });
        run_id
    }
}

/// Work on the SQLite store off the runtime's threads (its calls block).
async fn off_runtime<T: Send + 'static>(
    store: Arc<RunStore>,
    work: impl FnOnce(&RunStore) -> Result<T, CommandError> + Send + 'static,
) -> Result<T, CommandError> {
    tokio::task::spawn_blocking(move || work(&store))
        .await
        .unwrap_or_else(|e| Err(CommandError::new("INTERNAL", format!("the command failed: {e}"))))
}

#[async_trait]
impl Host for AppState {
    /// Every run of this computer's store.
    async fn stored_runs(&self, mut query: RunQuery) -> Result<Vec<RunRow>, CommandError> {
        off_runtime(self.run_store()?.clone(), move |store| {
            if let Some(before) = query.before.take() {
                query.before = Some(store.resolve(&before)?);
            }
            Ok(store.find(&query)?)
        })
        .await
    }

    async fn stored_run(&self, run_id: String) -> Result<StoredRun, CommandError> {
        off_runtime(self.run_store()?.clone(), move |store| Ok(store.load(&run_id)?)).await
    }

    async fn stored_events(&self, run_id: String) -> Result<Vec<Event>, CommandError> {
        off_runtime(self.run_store()?.clone(), move |store| Ok(store.events(&run_id)?)).await
    }

    fn remote_of(&self, run_id: &str) -> Option<Remote> {
        self.remotes.of(run_id)
    }

    async fn open_file(&self, path: String) -> Result<Opened, CommandError> {
        let loaded = format::load_file(Path::new(&path), None)?;
        Ok(Opened::loaded(loaded, Some(path)))
    }

    /// Saves canonical YAML (or JSON for a `.json` path), replacing the file atomically so a crash never leaves half
    /// a file.
    async fn save_file(&self, path: String, workflow: Workflow) -> Result<(), CommandError> {
        let path = PathBuf::from(path);
        let text = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            format::to_json(&workflow)
        } else {
            format::to_yaml(&workflow)
        };
        files::write_atomically(&path, text.as_bytes())
            .map_err(|e| CommandError::new("WRITE_FAILED", format!("cannot write {}: {e}", path.display())))
    }

    async fn startup_file(&self) -> Result<Option<Startup>, CommandError> {
        Ok(startup_file())
    }

    fn script_beside(&self, workflow_path: String) -> Option<String> {
        script_beside(workflow_path)
    }

    /// Providers are checked unless the run will be scripted.
    async fn validation_options(
        &self,
        scripted: bool,
        format: Option<Format>,
        workflow_path: Option<String>,
    ) -> Result<validate::Options, CommandError> {
        let settings = Settings::load(&Settings::default_path()).map_err(CommandError::from);
        validation_options(self, scripted, format, workflow_path.as_deref().map(Path::new), settings)
    }

    async fn default_model(&self) -> Result<DefaultModel, CommandError> {
        let settings = Settings::load(&Settings::default_path())?;
        let found = providers::discover_default_model(&settings).await;
        *self.default_model.lock().unwrap() = Some(found.clone());
        Ok(found)
    }

    async fn code_consent(&self, workflow: Workflow, workflow_path: Option<String>) -> Result<Consent, CommandError> {
        let workflow_ref = workflow_path.as_deref().map(|p| WorkflowRef::new(Path::new(p), None));
        let (_, consent) = session::code_for(&workflow, workflow_ref.as_ref(), false, &TrustStore::default_location())?;
        Ok(consent)
    }

    async fn trust_code(&self, fingerprint: String, workflow_path: Option<String>) -> Result<(), CommandError> {
        let label = workflow_path.unwrap_or_else(|| "(unsaved workflow)".into());
        TrustStore::default_location()
            .trust(&fingerprint, &label)
            .map_err(|e| CommandError::new("TRUST_UNREADABLE", e.to_string()))
    }

    async fn probe_mcp(&self, name: String, server: McpServerConfig) -> Result<Vec<McpTool>, CommandError> {
        let tools = switchyard_engine::mcp::probe(&name, &server)
            .await
            .map_err(|e| CommandError::new("MCP_UNAVAILABLE", e.to_string()))?;
        self.mcp_tools.lock().unwrap().insert(name, tools.iter().map(|t| t.name.clone()).collect());
        Ok(tools)
    }

    /// Starts the run here; its events go to the window in batches, in order.
    async fn start_run(&self, request: RunArgs, events: Events<Vec<Event>>) -> Result<String, CommandError> {
        let store = self.run_store().ok().cloned();
        let (workflow, asked) = request.request()?;
        let prepared = session::prepare(workflow, asked, store.as_deref()).await?;
        // The run's row is written before its first event; this process holds the run while it lives.
        let held = match store {
            Some(store) => Some(session::begin(store, &prepared)?),
            None => None,
        };
        let forwarder = Forwarder::spawn(events);
        let drive = Drive::fresh(prepared, held).until(run::Until::End);
        let driving = session::drive(drive, window_sinks(&forwarder)).await?;
        Ok(self.track(driving, forwarder))
    }

    async fn resume_run(&self, run_id: String, events: Events<Vec<Event>>) -> Result<Resumed, CommandError> {
        if self.runs.lock().unwrap().contains_key(&run_id) {
            return Err(CommandError::new("RUN_IN_USE", format!("run {run_id} is already running in this window")));
        }
        let store = self.run_store()?.clone();
        let resuming = session::open_to_resume(store, &run_id, false)?;
        // The run goes on with the document it started with; the window shows that document.
        let document = Opened::stored(&resuming.stored);
        let forwarder = Forwarder::spawn(events);
        let drive = Drive::stored(resuming).until(run::Until::End);
        let driving = session::drive(drive, window_sinks(&forwarder)).await?;
        let run_id = self.track(driving, forwarder);
        Ok(Resumed { run_id, document })
    }

    async fn replay_run(&self, run_id: String, events: Events<Vec<Event>>) -> Result<Resumed, CommandError> {
        let store = self.run_store()?;
        let document = Opened::stored(&store.load(&run_id)?);
        let forwarder = Forwarder::spawn(events);
        let replayed = session::replay(&**store, &run_id, window_sinks(&forwarder));
        forwarder.close();
        replayed?;
        Ok(Resumed { run_id, document })
    }

    async fn decide(&self, run_id: String, node: String, decision: String, note: String) -> Result<(), CommandError> {
        let mut decision =
            Decision::parse(&decision, note).map_err(|e| CommandError::new("INVALID_DECISION", e.to_string()))?;
        // Made here by the person at this computer: it names them, as a server's decision names its token's.
        decision.by = self.your_name();
        self.controller(&run_id)?.decide(&node, decision).await.map_err(|e| CommandError::new("DECISION_REFUSED", e))
    }

    async fn cancel_run(&self, run_id: String) -> Result<(), CommandError> {
        // Asked here by the person at this computer: its `workflow:end` names them.
        self.controller(&run_id)?.cancel_by(self.your_name());
        Ok(())
    }

    fn live_runs(&self) -> Vec<String> {
        self.runs.lock().unwrap().keys().cloned().collect()
    }

    async fn server_runs(&self, filter: RunFilter) -> Result<Vec<RunSummary>, CommandError> {
        let Some(remote) = remote::configured()? else { return Ok(Vec::new()) };
        let mut runs = client::list_runs(&remote, Some(filter)).await?;
        self.remotes.listed(&remote, runs.iter().map(|r| r.row.id.as_str()));
        for run in &mut runs {
            run.server = Some(remote.host().to_string());
        }
        Ok(runs)
    }

    /// Follows a run another process runs (a terminal's `switchyard run` on the same store, or a server's), one at a
    /// time: following another stops this one.
    async fn follow_run(&self, run_id: String, after: u32, events: Events<Vec<Event>>) -> Result<(), CommandError> {
        let following = self.following.clone();
        let me = following.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let current = move || following.load(std::sync::atomic::Ordering::SeqCst) == me;
        if let Some(remote) = self.remotes.of(&run_id) {
            tauri::async_runtime::spawn(async move {
                let send = |batch: Vec<Event>| events.send(batch);
                remote.follow(&run_id, u64::from(after), send, || !current()).await;
            });
            return Ok(());
        }
        let store = self.run_store()?.clone();
        store.get(&run_id)?;
        tauri::async_runtime::spawn(async move {
            let mut follow = session::follow(store, &run_id, u64::from(after), FOLLOW_POLL);
            while current() {
                // Ended, the store cannot be read, or the window stopped listening: nothing more to send.
                let Ok(session::Followed::Events(batch)) = follow.next().await else { return };
                if !events.send(batch) {
                    return;
                }
            }
        });
        Ok(())
    }

    async fn save_test_case(&self, run_id: String, workflow_path: Option<String>) -> Result<SavedCase, CommandError> {
        save_case(self.run_store()?, &run_id, workflow_path.as_deref())
    }

    async fn eval_suite(&self, workflow_path: String) -> Result<EvalSuiteView, CommandError> {
        let file = eval::Suite::beside(Path::new(&workflow_path));
        let shown = file.display().to_string();
        if !file.exists() {
            return Ok(EvalSuiteView { file: shown, exists: false, cases: Vec::new(), last: None });
        }
        let suite = eval::Suite::load(&file)?;
        let last = eval::kept::latest(self.run_store()?, &file)?;
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

    async fn run_evals(
        &self,
        workflow_path: String,
        case_id: Option<String>,
        offline: bool,
        on_case: Events<eval::CaseReport>,
    ) -> Result<eval::Report, CommandError> {
        let file = eval::Suite::beside(Path::new(&workflow_path));
        let suite = eval::Suite::load(&file)?;
        let store = self.run_store()?.clone();
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
                on_case.send(case.clone());
            }))
        })
        .await
        .map_err(|e| CommandError::new("EVAL_FAILED", format!("the evaluation stopped: {e}")))??;
        Ok(report)
    }

    /// Never fails: when the file cannot be used, the defaults come with the problem.
    fn get_settings(&self) -> SettingsState {
        settings_state(&Settings::default_path())
    }

    fn save_settings(&self, settings: Settings) -> Result<(), CommandError> {
        settings.save(&Settings::default_path())?;
        // The default model may have changed with them: it is found again when next asked.
        *self.default_model.lock().unwrap() = None;
        Ok(())
    }

    fn load_prefs(&self) -> Prefs {
        prefs::load(&self.prefs)
    }

    fn save_prefs(&self, prefs: Prefs) -> Result<(), CommandError> {
        prefs::save(&self.prefs, &prefs)
    }
}

/// The validator's options: the settings' providers and servers (unless the run is scripted), the tools each MCP
/// server listed when last asked, and whether a default model was found.
/// `file`: the open workflow's file, by which its children are found and checked on the canvas.
fn validation_options(
    state: &AppState,
    scripted: bool,
    format: Option<Format>,
    file: Option<&Path>,
    settings: Result<Settings, CommandError>,
) -> Result<validate::Options, CommandError> {
    let settings = session::settings_for_check(settings, scripted)?;
    Ok(session::validation_options(session::Checking {
        settings: settings.as_ref(),
        scripted,
        format,
        mcp_tools: state.mcp_tools.lock().unwrap().clone(),
        // Known only once `default_model` has looked: until then nodes that name no model are not flagged.
        no_default_model: state.default_model.lock().unwrap().as_ref().is_some_and(|d| d.model.is_none()),
        file,
        ..Default::default()
    }))
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

/// Where a run's events go in the app besides its log: the window.
fn window_sinks(forwarder: &Forwarder) -> Sinks {
    Sinks { log: None, observers: vec![Arc::new(forwarder.clone()) as Arc<dyn Observer>] }
}

fn settings_state(path: &Path) -> SettingsState {
    match Settings::load(path) {
        Ok(settings) => SettingsState { settings, problem: None },
        Err(e) => SettingsState { settings: Settings::default(), problem: Some(e.into()) },
    }
}

/// What to open at start: `SWITCHYARD_OPEN`, else the first argument, else the workflow the person opened or saved
/// last (the newest recent file, kept in `ui-prefs.json`, that still exists), else the bundled alert-triage example.
fn startup_file() -> Option<Startup> {
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
fn script_beside(workflow_path: String) -> Option<String> {
    Answers::beside(Path::new(&workflow_path)).map(|p| p.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchyard_engine::validate::Report;

    /// `validate` as the window asks it, with these settings.
    fn validate_with(
        state: &AppState,
        workflow: &Workflow,
        scripted: bool,
        format: Option<&str>,
        settings: Result<Settings, CommandError>,
    ) -> Result<Report, CommandError> {
        let options = validation_options(state, scripted, format.and_then(Format::from_name), None, settings)?;
        Ok(validate::validate(workflow, &options))
    }
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
            prefs: std::path::PathBuf::from("/nonexistent/ui-prefs.json"),
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
    fn the_canvas_checks_a_workflow_nodes_child_beside_the_open_file_and_asks_for_a_save_before() {
        let (state, dir) = (state_without_store(), Scratch::new());
        let text = "switchyard: 1\nname: p\nnodes:\n  - {id: start, type: start}\n  - {id: inner, type: workflow, workflow: children/c.yaml}\nedges:\n  - {from: start, to: inner}\n";
        let workflow = format::load_str(text, Some(Format::Switchyard), None).unwrap().workflow;
        let codes = |file: Option<&Path>| {
            let options = validation_options(&state, true, None, file, Ok(Settings::default())).unwrap();
            let report = validate::validate(&workflow, &options);
            report.errors.iter().chain(&report.warnings).map(|f| f.code).collect::<Vec<_>>()
        };
        assert_eq!(codes(None), ["CHILD_NOT_CHECKED"], "never saved: its children cannot be found");
        let file = dir.path().join("p.yaml");
        assert_eq!(codes(Some(&file)), ["CHILD_MISSING"]);
        std::fs::create_dir_all(dir.path().join("children")).unwrap();
        std::fs::write(
            dir.path().join("children/c.yaml"),
            "switchyard: 1\nname: c\nnodes: [{id: start, type: start}]\n",
        )
        .unwrap();
        assert!(codes(Some(&file)).is_empty(), "{:?}", codes(Some(&file)));
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
            let held = session::begin(store.clone(), &prepared).unwrap();
            let id = prepared.options.run_id.clone().unwrap();
            if to_the_end {
                session::drive(Drive::fresh(prepared, Some(held)), Sinks::default()).await.unwrap().finish().await;
            }
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
    fn a_fork_asked_by_the_window_runs_on_from_the_answer_given_and_is_listed_with_the_run_it_forked() {
        let dir = Scratch::new();
        let store = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
        let id = finished_run(dir.path(), &store, true, true);
        let path = dir.path().join("approval-flow.yaml");
        let workflow = format::load_file(&path, None).unwrap().workflow;
        // As the window sends it: start_run's arguments with a fork at `draft`, the node's result as a whole.
        let args = |fork: serde_json::Value, from: Option<&str>| -> RunArgs {
            serde_json::from_value(json!({
                "workflow": workflow, "workflowPath": path, "input": null,
                "answersPath": dir.path().join("approval-flow.script.yaml"), "model": null,
                "reuseRun": from.map(|_| &id), "fromNode": from, "fork": fork,
            }))
            .unwrap()
        };
        let fork = json!({"run": id, "node": "draft", "turn": null, "answer": "Dark mode ships Monday."});
        let (workflow, request) = args(fork.clone(), None).request().unwrap();
        let forked = tauri::async_runtime::block_on(async {
            let prepared = session::prepare(workflow, request, Some(store.as_ref())).await.unwrap();
            let held = session::begin(store.clone(), &prepared).unwrap();
            session::drive(Drive::fresh(prepared, Some(held)), Sinks::default()).await.unwrap().finish().await.result
        });
        assert_eq!(forked.results["draft"].data["text"], "Dark mode ships Monday.");
        assert_eq!(forked.results["publish"].status, switchyard_engine::result::NodeStatus::Success);
        let listed = session::runs(&store).unwrap();
        let row = listed.iter().find(|r| r.id == forked.run_id).unwrap();
        assert_eq!(row.forked_from.as_deref(), Some(id.as_str()), "History links the fork to the run it forked");
        assert_eq!(listed.iter().find(|r| r.id == id).unwrap().forked_from, None);

        // A fork is not also a run from a node; a turn the node never took is refused before anything runs.
        assert_eq!(args(fork, Some("review")).request().err().map(|e| e.code), Some("REUSE_FAILED".into()));
        let at_turn = json!({"run": id, "node": "draft", "turn": 3, "answer": "x"});
        let (workflow, request) = args(at_turn, None).request().unwrap();
        let refused = tauri::async_runtime::block_on(session::prepare(workflow, request, Some(store.as_ref())));
        let refused = CommandError::from(refused.err().unwrap());
        assert_eq!(refused.code, "REUSE_FAILED");
        assert!(refused.message.contains("took no turn 3"), "{}", refused.message);
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

    #[test]
    fn a_decision_and_a_cancellation_made_in_the_window_name_your_name_in_the_runs_log() {
        use switchyard_engine::events::EventKind;
        let dir = Scratch::new();
        let store = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
        let prefs_path = dir.path().join("ui-prefs.json");
        prefs::save(&prefs_path, &Prefs { your_name: Some("alice".into()), ..Prefs::default() }).unwrap();
        let state = AppState {
            runs: Arc::default(),
            store: Ok(store.clone()),
            mcp_tools: Mutex::default(),
            default_model: Mutex::default(),
            following: Arc::default(),
            remotes: Remotes::default(),
            prefs: prefs_path,
        };
        let path = dir.path().join("gate.yaml");
        let text = "switchyard: 1\nname: gate\nnodes:\n  - {id: start, type: start}\n  - {id: review, type: approval}\nedges: [{from: start, to: review}]\n";
        std::fs::write(&path, text).unwrap();
        // A run the window runs, as `start_run` runs it (to its end, taking decisions while it waits), once paused.
        let paused = |state: &AppState| {
            let workflow = format::load_file(&path, None).unwrap().workflow;
            let request = session::RunRequest { answers: Some(Answers::default()), ..Default::default() };
            tauri::async_runtime::block_on(async {
                let prepared = session::prepare(workflow, request, Some(store.as_ref())).await.unwrap();
                let held = session::begin(store.clone(), &prepared).unwrap();
                let drive = Drive::fresh(prepared, Some(held)).until(run::Until::End);
                let driving = session::drive(drive, Sinks::default()).await.unwrap();
                let id = driving.run_id.clone();
                state.runs.lock().unwrap().insert(id.clone(), driving.controller());
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
                while store.get(&id).unwrap().status != store::StoredStatus::Paused {
                    assert!(std::time::Instant::now() < deadline, "run {id} never paused");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                (id, driving)
            })
        };
        let (approved, driving) = paused(&state);
        tauri::async_runtime::block_on(async {
            Host::decide(&state, approved.clone(), "review".into(), "approve".into(), "ship it".into()).await.unwrap();
            driving.finish().await;
        });
        let by: Vec<_> = store
            .events(&approved)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::ApprovalReceived { by, note, .. } => Some((by, note)),
                _ => None,
            })
            .collect();
        assert_eq!(by, [(Some("alice".to_string()), "ship it".to_string())]);
        // As `switchyard show` and History's run list read it.
        let decided = switchyard_engine::views::decisions(&store.events(&approved).unwrap());
        assert_eq!(decided[0].by.as_deref(), Some("alice"));

        let (cancelled, driving) = paused(&state);
        tauri::async_runtime::block_on(async {
            Host::cancel_run(&state, cancelled.clone()).await.unwrap();
            driving.finish().await;
        });
        let ended: Vec<_> = store
            .events(&cancelled)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::WorkflowEnd { status, by, .. } if status != switchyard_engine::RunStatus::Paused => {
                    Some((status, by))
                }
                _ => None,
            })
            .collect();
        assert_eq!(ended, [(switchyard_engine::RunStatus::Cancelled, Some("alice".to_string()))]);
    }
}
