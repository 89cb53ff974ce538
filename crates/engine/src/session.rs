//! Preparing, starting and resuming runs: what the command line and the app both do before the executor runs, in
//! one place, so that a run started from either is checked the same way and kept the same way.
//!
//! `prepare` takes a workflow as the shell has it (loaded from a file, or drawn on the canvas) and what the person
//! asked for (input, answers file, model, run from a node) and returns a run ready to start, or a typed error with a
//! stable code: the workflow must validate (with the model override applied, providers checked unless an answers
//! file answers), the input must match the workflow's `input_schema`, the answers file must load. `begin` records the run
//! in the store (status `running`) and claims it for this process before its first event. `open_to_resume` opens a
//! paused or interrupted run. `run`, `start`, `resume`, `resume_live`, `replay` and `show` then carry a run out with
//! the sinks a shell passes (a terminal printer, a window channel): no shell assembles a run itself.
//!
//! Every function takes the run store as a [`Store`]: the SQLite file or a PostgreSQL database. With PostgreSQL a run
//! can also be `submit`ted for workers, and a worker opens a run it claimed with `open_claimed` and carries it on
//! with `carry_on`; a claimed run is written to the log its claim gives (`run_log`), fenced by the claim.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::answers::{Answers, AnswersModel, OneOrMany};
use crate::code::consent::{self, Consent, TrustStore};
use crate::code::Code;
use crate::events::Divergence;
use crate::format::{self, Format};
use crate::log::{Collector, Observer, RunLog};
use crate::mcp::McpSessions;
use crate::model::Model;
use crate::providers::{self, DefaultModel, Providers, Settings};
use crate::recorded::{Calls, RecordedModel};
use crate::result::RunResult;
use crate::run::{self, Outcome, Reuse, RunHandle, RunOptions, Runtime};
use crate::store::{Claim, NewRun, RunRow, Store, StoreError, StoredRun};
use crate::validate::{self, Report};
use crate::Workflow;

/// A workflow file as runs name it: its path, and the format it was read as when that was forced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRef {
    pub path: PathBuf,
    pub format: Option<Format>,
}

impl WorkflowRef {
    pub fn new(path: &Path, format: Option<Format>) -> WorkflowRef {
        WorkflowRef { path: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()), format }
    }

    /// Reads the stored form, `path` or `path#format`.
    pub fn parse(text: &str) -> WorkflowRef {
        match text.rsplit_once('#') {
            Some((path, name)) if Format::from_name(name).is_some() => {
                WorkflowRef { path: PathBuf::from(path), format: Format::from_name(name) }
            }
            _ => WorkflowRef { path: PathBuf::from(text), format: None },
        }
    }
}

impl fmt::Display for WorkflowRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.format {
            Some(format) => write!(f, "{}#{}", self.path.display(), format.name()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// Why a run cannot be prepared, started or continued.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{file} does not validate ({}): {first}", crate::validate::errors_counted(*.count))]
    Invalid { file: String, count: usize, first: String, report: Box<Report> },
    #[error("model {model}: provider `{provider}` is not configured (configured: {configured})")]
    UnknownProvider { model: String, provider: String, configured: String },
    #[error("the input does not match the workflow's input_schema: {0}")]
    InputMismatch(String),
    #[error("input_schema is not a valid JSON Schema: {0}")]
    InputSchema(String),
    #[error("{0}")]
    Answers(String),
    #[error(transparent)]
    Settings(#[from] providers::SettingsError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Reuse(String),
    #[error("run `{id}` is {status}; only paused and interrupted runs can be resumed")]
    NotResumable { id: String, status: &'static str },
    #[error(transparent)]
    Rebuild(#[from] crate::run::RebuildError),
    #[error(transparent)]
    Decision(#[from] crate::run::DecisionError),
    #[error(transparent)]
    Trust(#[from] crate::code::consent::TrustError),
}

impl From<run::ResumeError> for SessionError {
    fn from(e: run::ResumeError) -> SessionError {
        match e {
            run::ResumeError::Rebuild(e) => SessionError::Rebuild(e),
            run::ResumeError::Decision(e) => SessionError::Decision(e),
        }
    }
}

impl SessionError {
    /// A stable code for the window and scripts.
    pub fn code(&self) -> &'static str {
        match self {
            SessionError::Invalid { .. } => "INVALID_WORKFLOW",
            SessionError::UnknownProvider { .. } => "UNKNOWN_PROVIDER",
            SessionError::InputMismatch(_) => "INPUT_MISMATCH",
            SessionError::InputSchema(_) => "INVALID_INPUT_SCHEMA",
            SessionError::Answers(_) => "ANSWERS_UNREADABLE",
            SessionError::Settings(e) => e.code(),
            SessionError::Store(e) => e.code(),
            SessionError::Reuse(_) => "REUSE_FAILED",
            SessionError::NotResumable { .. } => "NOT_RESUMABLE",
            SessionError::Rebuild(_) => "RECORDING_UNFIT",
            SessionError::Decision(_) => "DECISION_REFUSED",
            SessionError::Trust(_) => "TRUST_UNREADABLE",
        }
    }
}

/// What a person asks to run.
#[derive(Default)]
pub struct RunRequest {
    /// Where the workflow came from; kept with the run.
    pub workflow_ref: Option<WorkflowRef>,
    pub input: Option<Value>,
    /// An offline run: answers from this answers file.
    pub answers_path: Option<PathBuf>,
    /// Answers given with the request instead of a file (an evaluation case's).
    pub answers: Option<Answers>,
    /// Decisions given in advance, per approval node and visit (an evaluation case's): laid over the answers'
    /// approvals, they decide approvals as they are reached, whether the models are answered or real.
    pub decisions: BTreeMap<String, OneOrMany<Value>>,
    /// Model calls recorded earlier (an evaluation's): a call whose key was recorded is answered from the record,
    /// others go to the model and are recorded (`recorded.rs`).
    pub recorded: Option<Arc<Calls>>,
    /// No model is called: the run is answered by its answers and recorded calls only, so provider settings are
    /// neither read nor checked.
    pub offline: bool,
    /// `provider/model` overriding the workflow's default.
    pub model: Option<String>,
    pub step_budget: Option<u32>,
    /// Run from a node: (the stored run whose results stand upstream of it, the node).
    pub reuse: Option<(String, String)>,
    /// A fork of a stored run: (the run, the node, where at it and the answer given there) — a run from that node
    /// where the model said that (`run::Reuse::forked`).
    pub fork: Option<(String, String, run::Fork)>,
    /// The person allows this run's code steps (`--allow-code`), trusted or not.
    pub allow_code: bool,
    /// The system the workflow was read from (`Loaded::format`), when the shell knows it: validation applies that
    /// system's own graph rules (`validate::Options::format`).
    pub format: Option<Format>,
    /// The evaluation this run is a case of: kept with the run.
    pub eval: Option<String>,
}

/// A run ready to start: the shell adds its own log and observers and calls `run::run` or `run::start`.
pub struct Prepared {
    pub workflow: Arc<Workflow>,
    pub options: RunOptions,
    pub answers: Option<Arc<Answers>>,
    pub model: Arc<dyn Model>,
    pub workflow_ref: Option<WorkflowRef>,
    pub answers_path: Option<PathBuf>,
    /// Validation warnings, and answers for nodes the workflow does not have.
    pub report: Report,
    pub warnings: Vec<String>,
    /// How many upstream results a run from a node reuses.
    pub reused: usize,
    /// The code steps this run may execute, and whether the person consented.
    pub code: Code,
    pub consent: Consent,
    /// The MCP servers its agents may use (from the settings, read even for a scripted run when an agent names one).
    pub mcp: Arc<McpSessions>,
    /// The default model found for nodes that name none, when it had to be looked for (none in the run request or
    /// the settings, and some node needs one): the shells say which model those nodes use, or that there is none.
    pub discovered: Option<DefaultModel>,
    /// The evaluation this run is a case of.
    pub eval: Option<String>,
}

/// What validation checks beyond the document, the same for every shell: the providers a run would use (not when an
/// answers file answers every call) and the MCP servers in the settings (also for a scripted run: its agents still
/// call their tools). Each shell adds what it knows: the tools of servers it listed, whether a default model was
/// found, and whether the workflow is about to run here (`Purpose::Run`).
pub fn validation_options(settings: Option<&Settings>, scripted: bool) -> validate::Options {
    validate::Options {
        providers: settings.filter(|_| !scripted).map(Settings::provider_ids),
        mcp_servers: settings.map(|s| s.mcp_servers.keys().cloned().collect()),
        ..Default::default()
    }
}

/// The settings a check uses: a check against an answers file needs no providers, so settings that cannot be read
/// do not stop it (they are left out); any other check needs them.
pub fn settings_for_check<E>(settings: Result<Settings, E>, scripted: bool) -> Result<Option<Settings>, E> {
    if scripted {
        Ok(settings.ok())
    } else {
        settings.map(Some)
    }
}

/// Whether any agent names MCP tools.
fn uses_mcp(workflow: &Workflow) -> bool {
    workflow.nodes.iter().any(|n| n.tools.as_ref().is_some_and(|t| !t.mcp.is_empty()))
}

/// The MCP servers a run of this workflow may start: those in the settings, when an agent names any.
fn mcp_for(workflow: &Workflow, settings: Option<&Settings>) -> Result<Arc<McpSessions>, SessionError> {
    if !uses_mcp(workflow) {
        return Ok(Arc::default());
    }
    let servers = match settings {
        Some(s) => s.mcp_servers.clone(),
        None => load_settings()?.mcp_servers,
    };
    Ok(Arc::new(McpSessions::new(servers)))
}

/// The folder a workflow's code runs in: its file's, else the current one.
fn code_dir(workflow_ref: Option<&WorkflowRef>) -> PathBuf {
    workflow_ref
        .and_then(|r| r.path.parent().map(Path::to_path_buf))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")))
}

/// What the code steps of this workflow may do in a run: consent from `allow` or the trust file, the workflow's
/// folder, its declared variables and the machine's interpreters.
pub fn code_for(
    workflow: &Workflow,
    workflow_ref: Option<&WorkflowRef>,
    allow: bool,
    trust: &TrustStore,
) -> Result<(Code, Consent), SessionError> {
    let dir = code_dir(workflow_ref);
    let consent = if allow {
        let steps = consent::code_steps(workflow, &dir);
        Consent { fingerprint: consent::fingerprint(&steps), steps, trusted: true }
    } else {
        Consent::check(workflow, &dir, trust)?
    };
    let code = Code { allowed: consent.granted(), dir: Some(dir), interpreters: Code::interpreters_from_env() };
    Ok((code, consent))
}

fn load_answers(path: Option<&Path>) -> Result<Option<Arc<Answers>>, SessionError> {
    path.map(|p| Answers::load(p).map(Arc::new).map_err(|e| SessionError::Answers(e.to_string()))).transpose()
}

pub use crate::providers::Price;

/// The price table of the settings (empty when there are no settings or they cannot be read): evaluations report
/// costs from it.
pub fn prices() -> BTreeMap<String, Price> {
    Settings::load(&Settings::default_path()).map(|s| s.prices).unwrap_or_default()
}

/// The answers a run is given, with decisions laid over their approvals: answers for the approvals alone when the
/// models are real.
fn with_decisions(
    answers: Option<Arc<Answers>>,
    decisions: BTreeMap<String, OneOrMany<Value>>,
) -> Option<Arc<Answers>> {
    if decisions.is_empty() {
        return answers;
    }
    let mut all = answers.map(|a| (*a).clone()).unwrap_or_default();
    all.approvals.extend(decisions);
    Some(Arc::new(all))
}

fn load_settings() -> Result<Settings, SessionError> {
    Ok(Settings::load(&Settings::default_path())?)
}

/// The scripted model for an offline run, else the configured providers.
fn model_for(answers: &Option<Arc<Answers>>, settings: Option<&Settings>) -> Arc<dyn Model> {
    match (answers, settings) {
        (Some(s), _) => Arc::new(AnswersModel::new(s.clone())),
        (None, Some(settings)) => Arc::new(Providers::new(settings)),
        (None, None) => Arc::new(Providers::new(&Settings::default())),
    }
}

/// The model for nodes that name none when neither the run, the workflow nor the settings name one: the first model
/// a local server lists, looked for only when some node needs it (and never for a scripted run).
async fn discovered_default(
    workflow: &Workflow,
    request: &RunRequest,
    settings: Option<&Settings>,
) -> Option<DefaultModel> {
    let settings = settings?;
    if request.model.is_some()
        || settings.default_model.is_some()
        || validate::nodes_needing_a_model(workflow).is_empty()
    {
        return None;
    }
    Some(providers::discover_default_model(settings).await)
}

/// Checks a run request against the workflow and returns the run ready to start.
pub async fn prepare<S: Store + ?Sized>(
    workflow: Workflow,
    request: RunRequest,
    store: Option<&S>,
) -> Result<Prepared, SessionError> {
    let answers = match request.answers.clone() {
        Some(given) => Some(Arc::new(given)),
        None => load_answers(request.answers_path.as_deref())?,
    };
    // An evaluation case made from a run on a model pins only its code steps (`eval::from_run`): its model calls are
    // answered from the recorded calls, or asked again where an edit changed what they ask.
    let pins_code_only = request.recorded.is_some() && answers.as_ref().is_some_and(|a| !a.answers_a_model(&workflow));
    let scripted = answers.is_some() && !pins_code_only;
    // With an answers file every answer is given, and offline no model is called: providers are not checked.
    let answered = scripted || request.offline;
    // Offline, the settings are read only for their default model (recorded calls are keyed by the model); nothing in
    // them is checked, and no model server is looked for.
    let settings = match (scripted, request.offline) {
        (true, _) => None,
        (false, true) => Settings::load(&Settings::default_path()).ok(),
        (false, false) => Some(load_settings()?),
    };
    let discovered = match request.offline {
        true => None,
        false => discovered_default(&workflow, &request, settings.as_ref()).await,
    };
    let no_default_model = discovered.as_ref().is_some_and(|d| d.model.is_none());
    let providers = settings.as_ref().filter(|_| !request.offline).map(Settings::provider_ids);
    if let (Some(model), Some(providers)) = (&request.model, &providers) {
        let provider = model.split_once('/').map_or(model.as_str(), |(p, _)| p);
        if !providers.iter().any(|p| p == provider) {
            return Err(SessionError::UnknownProvider {
                model: model.clone(),
                provider: provider.to_string(),
                configured: providers.join(", "),
            });
        }
    }
    let mcp_names: Option<Vec<String>> = match (&settings, uses_mcp(&workflow)) {
        (Some(s), _) => Some(s.mcp_servers.keys().cloned().collect()),
        (None, true) => Some(load_settings()?.mcp_servers.keys().cloned().collect()),
        (None, false) => None,
    };
    // The model override replaces the workflow's default, so references are checked as they will be resolved.
    let options = validate::Options {
        purpose: validate::Purpose::Run,
        mcp_servers: mcp_names.clone(),
        no_default_model,
        // Offline runs answer model calls from recorded calls, not code steps: only an answers file answers those.
        answered: answers
            .iter()
            .flat_map(|a| workflow.nodes.iter().filter(|n| a.answer(&n.id, 0).is_some()).map(|n| n.id.clone()))
            .collect(),
        // What the file's own system refuses of its graph is refused here too, as `switchyard validate` refuses it.
        format: request.format,
        ..validation_options(settings.as_ref(), answered)
    };
    let report = if request.model.is_some() {
        let mut checked = workflow.clone();
        checked.defaults.model = request.model.clone();
        validate::validate(&checked, &options)
    } else {
        validate::validate(&workflow, &options)
    };
    if let Some(first) = report.errors.first() {
        let file =
            request.workflow_ref.as_ref().map_or_else(|| "the workflow".to_string(), |r| r.path.display().to_string());
        return Err(SessionError::Invalid {
            file,
            count: report.errors.len(),
            first: first.message.clone(),
            report: Box::new(report),
        });
    }
    let mut warnings = Vec::new();
    if let Some(answers) = &answers {
        let ids: Vec<&str> = workflow.nodes.iter().map(|n| n.id.as_str()).collect();
        for unknown in answers.unknown_ids(&ids) {
            warnings.push(format!("the answers file names `{unknown}`, which is not a node of this workflow"));
        }
    }
    check_input(&workflow, request.input.as_ref())?;
    let reuse = match (&request.reuse, &request.fork, store) {
        (None, None, _) => None,
        (_, _, None) => return Err(SessionError::Reuse("running from a node needs the run store".into())),
        (Some((run_id, from)), _, Some(store)) => {
            let earlier = store.load(run_id)?;
            Some(
                Reuse::upstream_of(&workflow, from, run_id, &earlier.recording)
                    .map_err(|e| SessionError::Reuse(e.0))?,
            )
        }
        (None, Some((run_id, node, fork)), Some(store)) => {
            let earlier = store.load(run_id)?;
            Some(
                Reuse::forked(&workflow, node, fork.clone(), run_id, &earlier.recording)
                    .map_err(|e| SessionError::Reuse(e.0))?,
            )
        }
    };
    let reused = reuse.as_ref().map_or(0, |r| r.results.values().map(Vec::len).sum());
    // A node's model, else the override, else the workflow's default, else the settings' default, else the first
    // model of a local server.
    let fallback = settings
        .as_ref()
        .filter(|_| workflow.defaults.model.is_none())
        .and_then(|s| s.default_model.clone())
        .or_else(|| discovered.as_ref().and_then(|d| d.model.clone()));
    let options = RunOptions {
        input: request.input,
        run_id: Some(run::new_run_id()),
        step_budget: request.step_budget,
        model: request.model.or(fallback),
        reuse,
        ..RunOptions::default()
    };
    let answers_path = request.answers_path.map(|p| std::fs::canonicalize(&p).unwrap_or(p));
    let (code, consent) =
        code_for(&workflow, request.workflow_ref.as_ref(), request.allow_code, &TrustStore::default_location())?;
    let mcp = mcp_for(&workflow, settings.as_ref())?;
    for n in workflow.nodes.iter() {
        for entry in n.tools.iter().flat_map(|t| t.mcp.iter()) {
            let server = entry.split_once('/').map_or(entry.as_str(), |(s, _)| s);
            if !mcp.is_configured(server) {
                warnings.push(format!(
                    "node `{}` uses MCP server `{server}`, which is not configured: add it under mcp_servers in the settings; the agent runs without it",
                    n.id
                ));
            }
        }
    }
    Ok(Prepared {
        discovered,
        mcp,
        code,
        consent,
        // Offline, a model is never called: what the answers and the record do not answer fails.
        model: match (&request.recorded, &answers, request.offline) {
            (Some(calls), Some(_), offline) if pins_code_only => Arc::new(RecordedModel {
                calls: calls.clone(),
                inner: (!offline).then(|| model_for(&None, settings.as_ref())),
            }),
            (_, Some(_), _) => model_for(&answers, settings.as_ref()),
            (Some(calls), None, offline) => Arc::new(RecordedModel {
                calls: calls.clone(),
                inner: (!offline).then(|| model_for(&answers, settings.as_ref())),
            }),
            (None, None, true) => Arc::new(RecordedModel { calls: Arc::new(Calls::none()), inner: None }),
            (None, None, false) => model_for(&answers, settings.as_ref()),
        },
        answers: with_decisions(answers, request.decisions),
        eval: request.eval,
        workflow: Arc::new(workflow),
        options,
        workflow_ref: request.workflow_ref,
        answers_path,
        report,
        warnings,
        reused,
    })
}

/// The input must match the workflow's `input_schema`, when it declares one.
pub fn check_input(workflow: &Workflow, input: Option<&Value>) -> Result<(), SessionError> {
    let (Some(schema), Some(input)) = (&workflow.input_schema, input) else {
        return Ok(());
    };
    let validator = jsonschema::validator_for(schema).map_err(|e| SessionError::InputSchema(e.to_string()))?;
    let problems: Vec<String> = validator.iter_errors(input).map(|e| e.to_string()).collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(SessionError::InputMismatch(problems.join("; ")))
    }
}

/// Records a prepared run in the store (status `running`) and claims it for this process, before its first event.
pub fn begin(store: &dyn Store, prepared: &Prepared) -> Result<Claim, SessionError> {
    Ok(store.create(&new_run(prepared, &kept_refs(prepared)))?)
}

/// Records a prepared run for a worker to run (status `ready`): nothing runs here. Only a store that workers share
/// (PostgreSQL) takes it.
pub fn submit(store: &dyn Store, prepared: &Prepared) -> Result<(), SessionError> {
    Ok(store.submit(&new_run(prepared, &kept_refs(prepared)))?)
}

/// The log a claimed run is written to: the store itself, or (PostgreSQL) the claim's own, fenced by it.
pub fn run_log(store: &Arc<dyn Store>, claim: &Claim) -> Arc<dyn RunLog> {
    store.clone().run_log(claim)
}

/// The workflow file and answers file as a run keeps them.
fn kept_refs(prepared: &Prepared) -> (Option<String>, Option<String>) {
    let workflow_ref = prepared.workflow_ref.as_ref().map(WorkflowRef::to_string);
    let answers_path = prepared.answers_path.as_ref().map(|p| p.display().to_string());
    (workflow_ref, answers_path)
}

fn new_run<'a>(prepared: &'a Prepared, refs: &'a (Option<String>, Option<String>)) -> NewRun<'a> {
    NewRun {
        id: prepared.options.run_id.as_deref().expect("prepare sets the run id"),
        workflow: &prepared.workflow,
        workflow_ref: refs.0.as_deref(),
        answers_path: refs.1.as_deref(),
        options: &prepared.options,
        eval_id: prepared.eval.as_deref(),
    }
}

/// A stored run opened to go on: claimed for this process, with its answers file and model.
pub struct Resuming {
    pub stored: StoredRun,
    pub claim: Claim,
    pub answers: Option<Arc<Answers>>,
    pub model: Arc<dyn Model>,
    /// Consent is asked again when a run continues: for the document it started with.
    pub code: Code,
    pub mcp: Arc<McpSessions>,
    /// Said when the workflow file has changed (or cannot be read) since the run started: it goes on with the
    /// document it started with.
    pub note: Option<String>,
}

/// Opens a paused or interrupted run (or, with PostgreSQL, one waiting for a worker) to continue it; `allow_code` as
/// in [`RunRequest`].
pub fn open_to_resume(store: &dyn Store, run_id: &str, allow_code: bool) -> Result<Resuming, SessionError> {
    let stored = store.load(run_id)?;
    if !stored.row.status.resumable() {
        return Err(SessionError::NotResumable { id: run_id.to_string(), status: stored.row.status.as_str() });
    }
    let (answers, model, code, mcp, note) = going_on(&stored, allow_code)?;
    let claim = store.claim(run_id)?;
    // Read again now that it is this process's: another may have carried it on between the first read and the claim.
    // (The row stays as it was found: what the run was before this process took it.)
    let mut stored = stored;
    stored.recording = store.load(run_id)?.recording;
    Ok(Resuming { model, stored, claim, answers, code, mcp, note })
}

/// Opens a run a worker has claimed (`claim`, taken before): read again now that it is this process's, so that what
/// it goes on from is what the log held when it was taken. A run that cannot be opened here (its answers file is
/// not on this machine, its settings cannot be read) is abandoned, as in `carry_on`.
pub fn open_claimed(store: &dyn Store, run_id: &str, claim: Claim, allow_code: bool) -> Result<Resuming, SessionError> {
    let stored = match store.load(run_id) {
        Ok(stored) => stored,
        Err(e) => {
            claim.abandon();
            return Err(e.into());
        }
    };
    opened(stored, claim, allow_code)
}

/// A loaded run with its claim, ready to go on; the claim is abandoned when it cannot be.
fn opened(stored: StoredRun, claim: Claim, allow_code: bool) -> Result<Resuming, SessionError> {
    match going_on(&stored, allow_code) {
        Ok((answers, model, code, mcp, note)) => Ok(Resuming { model, stored, claim, answers, code, mcp, note }),
        Err(e) => {
            claim.abandon();
            Err(e)
        }
    }
}

type GoingOn = (Option<Arc<Answers>>, Arc<dyn Model>, Code, Arc<McpSessions>, Option<String>);

/// What a stored run needs to go on: its answers, model, code steps and MCP servers, and a note when its file changed.
fn going_on(stored: &StoredRun, allow_code: bool) -> Result<GoingOn, SessionError> {
    let run_id = stored.row.id.clone();
    let answers = load_answers(stored.row.answers_path.as_deref().map(Path::new))?;
    let settings = if answers.is_some() { None } else { Some(load_settings()?) };
    let note = stored.row.workflow_ref.as_deref().map(WorkflowRef::parse).and_then(|r| {
        match format::load_file(&r.path, r.format) {
            Ok(now) if now.workflow == stored.workflow => None,
            Ok(_) => Some(format!(
                "{} has changed since run {run_id} started; the run goes on with the workflow it started with",
                r.path.display()
            )),
            Err(_) => Some(format!(
                "{} cannot be read now; the run goes on with the workflow it started with",
                r.path.display()
            )),
        }
    });
    if let Some(settings) = &settings {
        missing_provider(&stored.workflow, stored.options.model.as_deref(), settings)?;
    }
    let workflow_ref = stored.row.workflow_ref.as_deref().map(WorkflowRef::parse);
    let (code, _) = code_for(&stored.workflow, workflow_ref.as_ref(), allow_code, &TrustStore::default_location())?;
    let mcp = mcp_for(&stored.workflow, settings.as_ref())?;
    Ok((answers.clone(), model_for(&answers, settings.as_ref()), code, mcp, note))
}

/// A provider the run's models need that these settings do not configure: the run cannot go on here (a worker leaves
/// it for one that has it, rather than failing it). Each node that calls a model uses its own, else the workflow's
/// default, else the run's (`fallback`); a model written as a template is known only when the node runs.
fn missing_provider(workflow: &Workflow, fallback: Option<&str>, settings: &Settings) -> Result<(), SessionError> {
    let configured = settings.provider_ids();
    for node in validate::nodes_calling_a_model(workflow) {
        let Some(model) = node.model.as_deref().or(workflow.defaults.model.as_deref()).or(fallback) else { continue };
        if crate::template::is_template(model) {
            continue;
        }
        let provider = model.split_once('/').map_or(model, |(p, _)| p);
        if !configured.iter().any(|p| p == provider) {
            return Err(SessionError::UnknownProvider {
                model: model.to_string(),
                provider: provider.to_string(),
                configured: configured.join(", "),
            });
        }
    }
    Ok(())
}

/// Where a run's events go: the log that keeps them (the run store, a JSON-lines file) and the shell's observers (a
/// terminal printer, a window channel). The log is written before observers see an event.
#[derive(Default)]
pub struct Sinks {
    pub log: Option<Arc<dyn RunLog>>,
    pub observers: Vec<Arc<dyn Observer>>,
}

impl Prepared {
    fn into_run(self, sinks: Sinks) -> (Arc<Workflow>, RunOptions, Runtime) {
        let Prepared { workflow, options, answers, model, code, mcp, .. } = self;
        let Sinks { log, observers } = sinks;
        (workflow, options, Runtime { model, answers, log, observers, code, mcp })
    }
}

/// Runs a prepared run to its end or its first pause.
pub async fn run(prepared: Prepared, sinks: Sinks) -> Outcome {
    let (workflow, options, runtime) = prepared.into_run(sinks);
    run::run(workflow, options, runtime).await
}

/// Starts a prepared run that stays alive while paused and takes decisions through its handle.
pub fn start(prepared: Prepared, sinks: Sinks) -> RunHandle {
    let (workflow, options, runtime) = prepared.into_run(sinks);
    run::start(workflow, options, runtime)
}

/// What it takes to carry a prepared run on in this process after it paused ([`end_paused`]).
#[derive(Clone)]
pub struct Carry {
    workflow: Arc<Workflow>,
    options: RunOptions,
    answers: Option<Arc<Answers>>,
    model: Arc<dyn Model>,
    code: Code,
    mcp: Arc<McpSessions>,
}

impl Prepared {
    pub fn carry(&self) -> Carry {
        Carry {
            workflow: self.workflow.clone(),
            options: self.options.clone(),
            answers: self.answers.clone(),
            model: self.model.clone(),
            code: self.code.clone(),
            mcp: self.mcp.clone(),
        }
    }
}

/// Ends, cancelled, a run that paused while this process held it (it ran it and still holds its claim): rebuilt from
/// its log and cancelled, its events written to `log`. For a run nobody will decide: an evaluation case's run, once
/// the case is judged, so that no front end lists it as waiting for a decision. Returns how it ended.
pub async fn end_paused(
    store: &dyn Store,
    log: Arc<dyn RunLog>,
    run_id: &str,
    carry: Carry,
) -> Result<Outcome, SessionError> {
    let recording = store.load(run_id)?.recording;
    let Carry { workflow, options, answers, model, code, mcp } = carry;
    let runtime = Runtime { model, answers, log: Some(log), observers: Vec::new(), code, mcp };
    let handle = run::resume_live(workflow, options, recording, runtime).map_err(SessionError::Rebuild)?;
    handle.cancel();
    Ok(handle.finish().await)
}

impl Resuming {
    fn into_run(self, sinks: Sinks) -> (StoredRun, Claim, Runtime) {
        let Resuming { stored, claim, answers, model, code, mcp, .. } = self;
        let Sinks { log, observers } = sinks;
        (stored, claim, Runtime { model, answers, log, observers, code, mcp })
    }
}

/// Continues a stored run with these decisions (node, `{decision, note}`) to its end or its next pause. The run
/// stays claimed by this process until it returns.
pub async fn resume(
    resuming: Resuming,
    decisions: Vec<(String, Value)>,
    sinks: Sinks,
) -> Result<Outcome, SessionError> {
    let (stored, mut claim, runtime) = resuming.into_run(sinks);
    let (commands, watching) = cancelled_through(&claim);
    let workflow = Arc::new(stored.workflow);
    let (options, recording, refused) = (stored.options, stored.recording, run::RefusedDecision::Fail);
    let resumed =
        run::resume_controlled(workflow, options, recording, decisions, refused, runtime, Some(commands)).await;
    watching.abort();
    let outcome = resumed?;
    parked(&mut claim, &outcome);
    Ok(outcome)
}

/// Runs a prepared run that this process holds with `claim` (`begin`) to its end or its first pause, as `run` does;
/// a cancellation asked for through the store (a server's API) cancels it, and a pause that has an approval deadline
/// says so on the claim, so that a worker takes the run again then.
pub async fn run_held(prepared: Prepared, sinks: Sinks, claim: &mut Claim) -> Outcome {
    let (commands, watching) = cancelled_through(claim);
    let (workflow, options, runtime) = prepared.into_run(sinks);
    let outcome = run::run_controlled(workflow, options, runtime, Some(commands)).await;
    watching.abort();
    parked(claim, &outcome);
    outcome
}

/// The commands of a run that a cancellation asked for through `claim`'s store cancels, and the task that watches
/// for it (to abort when the run returns).
fn cancelled_through(claim: &Claim) -> (run::Commands, tokio::task::JoinHandle<()>) {
    let (controller, commands) = run::RunController::channel();
    let asked = claim.cancel_requested();
    let watching = tokio::spawn(async move {
        asked.wait().await;
        controller.cancel();
    });
    (commands, watching)
}

/// A paused run's first approval deadline, on its claim: when it is given up, a worker takes it again then.
fn parked(claim: &mut Claim, outcome: &Outcome) {
    if let Some(at) = outcome.wake_at_ms {
        claim.wake_at(at);
    }
}

/// Carries a claimed run on to its end or its next pause (a worker's): from the start when nothing of it was recorded
/// (it was submitted, or its process died before its first event), else rebuilt from its log as `resume` does. What
/// people asked of it through `store` is carried out: decisions kept for it are applied (each for its node's current
/// round, once; those that come while it works, when the claim is nudged), and it is cancelled when that was asked
/// for, before or while it works. The run stays claimed until it returns; a paused run's claim says when its first
/// approval times out, so that a worker takes it again then. A run whose log cannot be rebuilt, or whose requests
/// cannot be read, is abandoned rather than given up (`Claim::abandon`): another worker tries it only once its lease
/// has run out, not at once in a loop.
pub async fn carry_on(resuming: Resuming, store: Arc<dyn Store>, sinks: Sinks) -> Result<Outcome, SessionError> {
    let run_id = resuming.stored.row.id.clone();
    // Read after the claim, which cleared the run's `wake`: nothing asked since is missed.
    let requests = {
        let (store, id) = (store.clone(), run_id.clone());
        tokio::task::spawn_blocking(move || store.requests(&id)).await.expect("reading requests does not panic")
    };
    let requests = match requests {
        Ok(requests) => requests,
        Err(e) => {
            resuming.claim.abandon();
            return Err(e.into());
        }
    };
    let (stored, mut claim, runtime) = resuming.into_run(sinks);
    let (workflow, recording) = (Arc::new(stored.workflow), stored.recording);
    let mut kept = KeptRounds::new(&recording.inputs);
    let decisions = kept.due(requests.decisions);
    let (controller, commands) = run::RunController::channel();
    if requests.cancel {
        controller.cancel();
    }
    let (asked, nudged) = (claim.cancel_requested(), claim.nudged());
    let fresh = recording.events.is_empty() && recording.inputs.is_empty();
    let going = async move {
        if fresh {
            Ok(run::run_controlled(workflow, stored.options, runtime, Some(commands)).await)
        } else {
            // A kept decision its node no longer waits for (it timed out, or the decision was kept for a round that
            // never came) is left out: refused, it would stop the run at every claim.
            let refused = run::RefusedDecision::Skip;
            run::resume_controlled(workflow, stored.options, recording, decisions, refused, runtime, Some(commands))
                .await
        }
    };
    tokio::pin!(going);
    let mut asked = std::pin::pin!(asked.wait());
    let mut nudged = std::pin::pin!(nudged);
    let mut cancel_sent = false;
    let outcome = loop {
        tokio::select! {
            outcome = &mut going => break outcome,
            _ = &mut asked, if !cancel_sent => {
                controller.cancel();
                cancel_sent = true;
            }
            _ = &mut nudged => {
                nudged.set(claim.nudged());
                let (store, id) = (store.clone(), run_id.clone());
                let read = tokio::task::spawn_blocking(move || store.requests(&id)).await;
                if let Ok(Ok(requests)) = read {
                    for (node, decision) in kept.due(requests.decisions) {
                        // Not awaited: this loop drives the run. Refused when the node no longer waits (it timed
                        // out meanwhile): nothing to apply.
                        controller.send_decision(&node, decision);
                    }
                }
            }
        }
    };
    match outcome {
        Ok(outcome) => {
            parked(&mut claim, &outcome);
            drop(claim);
            Ok(outcome)
        }
        Err(e) => {
            claim.abandon();
            Err(e.into())
        }
    }
}

/// Which kept decisions a run takes: each for its node's current round (`record::settled`), once. Those of earlier
/// rounds were applied already (perhaps by a worker that died afterwards).
struct KeptRounds {
    /// Per node, the round its approval was at when the run was claimed (nodes never settled are absent: round 0).
    at_claim: BTreeMap<String, u32>,
    applied: std::collections::BTreeSet<(String, u32)>,
}

impl KeptRounds {
    fn new(inputs: &[crate::record::Recorded]) -> KeptRounds {
        let mut at_claim = BTreeMap::new();
        for node in inputs.iter().filter_map(|r| r.input.settled_node()) {
            *at_claim.entry(node.to_string()).or_insert(0) += 1;
        }
        KeptRounds { at_claim, applied: Default::default() }
    }

    fn due(&mut self, kept: Vec<crate::store::KeptDecision>) -> Vec<(String, Value)> {
        let mut due: Vec<(String, Value)> = Vec::new();
        for k in kept {
            let round = self.at_claim.get(&k.node).copied().unwrap_or(0);
            let first_for_node = !due.iter().any(|(node, _)| *node == k.node);
            if k.round >= round && first_for_node && self.applied.insert((k.node.clone(), k.round)) {
                due.push((k.node, k.decision));
            }
        }
        due
    }
}

/// Continues a stored run as a live run that takes decisions through its handle; the claim is held for as long as
/// the shell keeps it.
pub fn resume_live(resuming: Resuming, sinks: Sinks) -> Result<(RunHandle, Claim), SessionError> {
    let (stored, claim, runtime) = resuming.into_run(sinks);
    let handle = run::resume_live(Arc::new(stored.workflow), stored.options, stored.recording, runtime)
        .map_err(SessionError::Rebuild)?;
    Ok((handle, claim))
}

/// A stored run played again from its recording.
pub struct Replayed {
    pub row: RunRow,
    pub result: RunResult,
    /// Where the replay told a different story from the recording: the engine (or the store) changed.
    pub diverged: Option<Divergence>,
}

/// Plays a stored run again from its recorded inputs — no model call, no tool call, no code — delivering its events
/// to `sinks` as a live run does, and says where it differs from the recording.
pub fn replay(store: &dyn Store, run_id: &str, mut sinks: Sinks) -> Result<Replayed, SessionError> {
    let stored = store.load(run_id)?;
    let recorded = stored.recording.events.clone();
    let produced = Collector::default();
    sinks.observers.push(Arc::new(produced.clone()));
    let (row, result) = rebuild(stored, sinks)?;
    let diverged = crate::events::first_divergence(&recorded, &produced.events());
    Ok(Replayed { row, result, diverged })
}

/// A stored run's row (priced) and its result, rebuilt from its recording without a model call.
pub fn show(store: &dyn Store, run_id: &str) -> Result<(RunRow, RunResult), SessionError> {
    let stored = store.load(run_id)?;
    let untouched = stored.recording.events.is_empty() && stored.recording.inputs.is_empty();
    let (row, mut result) = rebuild(stored, Sinks::default())?;
    // A run nobody has started yet (waiting for a worker) has no results: a rebuild would start its start node.
    if untouched {
        result.results.clear();
        result.trace = Default::default();
        result.state.clear();
    }
    Ok((priced(row, &prices()), result))
}

/// What happened inside each node of a stored run, in order (`crate::journal`): each model turn's answer as its
/// provider read it, each tool call with what it returned, and a fork's answer; by node id.
pub fn turns(
    store: &dyn Store,
    run_id: &str,
) -> Result<std::collections::BTreeMap<String, Vec<crate::journal::Entry>>, SessionError> {
    let stored = store.load(run_id)?;
    let mut turns: std::collections::BTreeMap<String, Vec<crate::journal::Entry>> = Default::default();
    for recorded in stored.recording.inputs {
        if let crate::record::Input::Journaled(entry) = recorded.input {
            if !matches!(entry.what, crate::journal::What::Asked { .. }) {
                turns.entry(entry.node.clone()).or_default().push(*entry);
            }
        }
    }
    Ok(turns)
}

/// The runs of the store, newest first, each priced at the settings' prices.
pub fn runs(store: &dyn Store) -> Result<Vec<RunRow>, SessionError> {
    let prices = prices();
    Ok(store.list()?.into_iter().map(|row| priced(row, &prices)).collect())
}

/// The newest `limit` runs of the store, newest first, each priced at the settings' prices.
pub fn recent_runs(store: &dyn Store, limit: usize) -> Result<Vec<RunRow>, SessionError> {
    let prices = prices();
    Ok(store.recent(limit)?.into_iter().map(|row| priced(row, &prices)).collect())
}

/// One run of the store, priced at the settings' prices.
pub fn row(store: &dyn Store, run_id: &str) -> Result<RunRow, SessionError> {
    Ok(priced(store.get(run_id)?, &prices()))
}

/// The row with its cost: none when a model that used tokens has no price.
fn priced(mut row: RunRow, prices: &BTreeMap<String, Price>) -> RunRow {
    row.cost = crate::usage::cost(&row.usage, prices).ok();
    row
}

/// A stored run with what making a test case of it needs (`eval::add_case`).
pub struct CaseSource {
    pub run_id: String,
    pub workflow: Workflow,
    pub options: RunOptions,
    pub recording: crate::record::Recording,
    pub result: RunResult,
    /// The file the run was started from, when it was.
    pub workflow_file: Option<PathBuf>,
    /// Not running, not interrupted: it completed, failed, was cancelled, or waits for a decision.
    pub ended: bool,
}

/// A stored run, rebuilt, as a test case is made from it.
pub fn case_source(store: &dyn Store, run_id: &str) -> Result<CaseSource, SessionError> {
    // Loaded once: the rebuild takes the stored run, so the parts the case is made from are kept first.
    let stored = store.load(run_id)?;
    let (workflow, options, recording) = (stored.workflow.clone(), stored.options.clone(), stored.recording.clone());
    let (row, result) = rebuild(stored, Sinks::default())?;
    Ok(CaseSource {
        run_id: run_id.to_string(),
        workflow_file: row.workflow_ref.as_deref().map(|r| WorkflowRef::parse(r).path),
        ended: !matches!(
            row.status,
            crate::store::StoredStatus::Running
                | crate::store::StoredStatus::Interrupted
                | crate::store::StoredStatus::Ready
        ),
        workflow,
        options,
        recording,
        result,
    })
}

/// A stored run played from its recording into `sinks`: nothing runs for real, so it needs no model, answers, code
/// or MCP servers.
fn rebuild(stored: StoredRun, sinks: Sinks) -> Result<(RunRow, RunResult), SessionError> {
    let Sinks { log, observers } = sinks;
    let runtime = Runtime {
        model: Arc::new(Providers::new(&Settings::default())),
        answers: None,
        log,
        observers,
        code: Code::default(),
        mcp: Arc::default(),
    };
    let outcome = run::replay(Arc::new(stored.workflow), stored.options, stored.recording, runtime)?;
    Ok((stored.row, outcome.result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunStore;

    fn workflow(yaml: &str) -> Workflow {
        format::load_str(&format!("switchyard: 1\nname: t\n{yaml}"), Some(Format::Switchyard), None).unwrap().workflow
    }

    fn scripted() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.yaml");
        std::fs::write(&path, "nodes: {}\n").unwrap();
        (dir, path)
    }

    #[test]
    fn every_session_error_has_its_own_stable_code() {
        // The codes both shells show (the CLI in brackets and `--json`, the window in `{code, message}`): renaming
        // one breaks scripts and the window's advice for it.
        let s = || String::from("x");
        let errors = [
            (SessionError::Invalid { file: s(), count: 1, first: s(), report: Box::default() }, "INVALID_WORKFLOW"),
            (SessionError::UnknownProvider { model: s(), provider: s(), configured: s() }, "UNKNOWN_PROVIDER"),
            (SessionError::InputMismatch(s()), "INPUT_MISMATCH"),
            (SessionError::InputSchema(s()), "INVALID_INPUT_SCHEMA"),
            (SessionError::Answers(s()), "ANSWERS_UNREADABLE"),
            (SessionError::Reuse(s()), "REUSE_FAILED"),
            (SessionError::NotResumable { id: s(), status: "completed" }, "NOT_RESUMABLE"),
            (SessionError::Rebuild(s().into()), "RECORDING_UNFIT"),
            (SessionError::Decision(s().into()), "DECISION_REFUSED"),
        ];
        let codes: Vec<&str> = errors.iter().map(|(e, _)| e.code()).collect();
        let expected: Vec<&str> = errors.iter().map(|(_, c)| *c).collect();
        assert_eq!(codes, expected);
        let distinct: std::collections::BTreeSet<&str> = codes.iter().copied().collect();
        assert_eq!(distinct.len(), codes.len(), "two errors share a code");
    }

    #[test]
    fn a_workflow_ref_reads_back_as_written() {
        let r = WorkflowRef { path: PathBuf::from("/a/b.yaml"), format: Some(Format::Sweny) };
        assert_eq!(WorkflowRef::parse(&r.to_string()), r);
        assert_eq!(WorkflowRef::parse("/a/b#c.yaml"), WorkflowRef { path: PathBuf::from("/a/b#c.yaml"), format: None });
    }

    #[tokio::test]
    async fn an_invalid_workflow_is_refused_with_its_code_and_first_error() {
        let (_dir, script) = scripted();
        let wf = workflow("nodes:\n  - {id: a, type: agent}\n");
        let request = RunRequest { answers_path: Some(script), ..RunRequest::default() };
        let Err(e) = prepare(wf, request, None::<&RunStore>).await else { panic!("an invalid workflow was prepared") };
        assert_eq!(e.code(), "INVALID_WORKFLOW");
        assert!(e.to_string().contains("does not validate"), "{e}");
    }

    #[tokio::test]
    async fn an_input_that_does_not_match_the_schema_is_refused_with_what_is_wrong() {
        let (_dir, script) = scripted();
        let wf = workflow("input_schema: {type: object, required: [topic]}\nnodes:\n  - {id: start, type: start}\n");
        let request = RunRequest {
            answers_path: Some(script),
            input: Some(serde_json::json!({"x": 1})),
            ..RunRequest::default()
        };
        let Err(e) = prepare(wf, request, None::<&RunStore>).await else { panic!("a wrong input was accepted") };
        assert_eq!(e.code(), "INPUT_MISMATCH");
        assert!(e.to_string().contains("topic"), "{e}");
    }

    #[tokio::test]
    async fn a_script_that_cannot_be_read_is_named() {
        let wf = workflow("nodes:\n  - {id: start, type: start}\n");
        let request =
            RunRequest { answers_path: Some(PathBuf::from("/no/such/answers.yaml")), ..RunRequest::default() };
        let Err(e) = prepare(wf, request, None::<&RunStore>).await else { panic!() };
        assert_eq!(e.code(), "ANSWERS_UNREADABLE");
        assert!(e.to_string().contains("/no/such/answers.yaml"), "{e}");
    }

    #[tokio::test]
    async fn script_answers_for_missing_nodes_are_warnings_and_a_prepared_run_has_an_id() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("answers.yaml");
        std::fs::write(&script, "nodes: {ghost: {text: boo}}\n").unwrap();
        let wf = workflow("nodes:\n  - {id: start, type: start}\n");
        let prepared =
            prepare(wf, RunRequest { answers_path: Some(script), ..RunRequest::default() }, None::<&RunStore>)
                .await
                .unwrap();
        assert_eq!(prepared.warnings.len(), 1);
        assert!(prepared.warnings[0].contains("ghost"));
        assert!(prepared.options.run_id.is_some());
    }

    #[tokio::test]
    async fn running_from_a_node_without_a_store_is_refused() {
        let (_dir, script) = scripted();
        let wf = workflow("nodes:\n  - {id: start, type: start}\n");
        let request = RunRequest {
            answers_path: Some(script),
            reuse: Some(("r".into(), "start".into())),
            ..RunRequest::default()
        };
        let Err(e) = prepare(wf, request, None::<&RunStore>).await else { panic!() };
        assert_eq!(e.code(), "REUSE_FAILED");
    }

    #[tokio::test]
    async fn only_paused_and_interrupted_runs_continue() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(&dir.path().join("runs.sqlite")).unwrap();
        let (_d, script) = scripted();
        let wf = workflow("nodes:\n  - {id: start, type: start}\n");
        let prepared =
            prepare(wf, RunRequest { answers_path: Some(script), ..RunRequest::default() }, None::<&RunStore>)
                .await
                .unwrap();
        let claim = begin(&store, &prepared).unwrap();
        let id = prepared.options.run_id.clone().unwrap();
        assert!(matches!(
            open_to_resume(&store, &id, false),
            Err(SessionError::NotResumable { status: "running", .. })
        ));
        drop(claim);
        let resuming = open_to_resume(&store, &id, false).unwrap();
        assert_eq!(resuming.stored.row.status.as_str(), "interrupted");
        // Held by this process now, it shows as running: nobody else can continue it.
        assert!(matches!(
            open_to_resume(&store, &id, false),
            Err(SessionError::NotResumable { status: "running", .. })
        ));
    }
}
