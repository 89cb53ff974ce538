//! Preparing, starting and resuming runs: what the command line and the app both do before the executor runs, in
//! one place, so that a run started from either is checked the same way and kept the same way.
//!
//! `prepare` takes a workflow as the shell has it (loaded from a file, or drawn on the canvas) and what the person
//! asked for (input, answers file, model, run from a node) and returns a run ready to start, or a typed error with a
//! stable code: the workflow must validate (with the model override applied, providers checked unless an answers
//! file answers), the input must match the workflow's `input_schema`, the answers file must load. Every shell then
//! reads the same: prepare (or open), begin, drive.
//! - `begin` records the run in the store (status `running`) and claims it for this process before its first event:
//!   a [`Held`] run, with the log its claim gives (the store itself, or with PostgreSQL the claim's own, fenced by
//!   it). `open_to_resume` (a person's) and `open_claimed` (a worker's) open a stored run the same way, held.
//! - [`drive`] is the one driver: it launches the run (`run::launch`) with the sinks a shell passes (a terminal
//!   printer, a window channel) and wires the claim (cancellations and, for a worker, decisions asked through the
//!   store; the approval deadline of a pause; abandon on a recording that cannot be rebuilt). No shell assembles a
//!   run, picks its log or watches its claim itself.
//! - `replay` and `show` play a stored run back from its recording; nothing runs.
//!
//! Every function takes the run store as a [`Store`]: the SQLite file or a PostgreSQL database. With PostgreSQL a run
//! can also be `submit`ted for workers.

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
use crate::record::Journaled;
use crate::recorded::{Calls, RecordedModel};
use crate::result::RunResult;
use crate::run::{self, Decision, Outcome, Reuse, RunHandle, RunOptions, Runtime};
use crate::store::{Claim, NewRun, RunRow, Signal, Store, StoreError, StoredRun};
use crate::validate::{self, Report};

mod children;
mod follow;
use crate::Workflow;
pub use children::child_run_id;
pub use follow::{follow, Follow, Followed};

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
    #[error(
        "run `{id}` is a child run of run `{parent}` (its node `{node}`): resume the parent, which takes the child up \
         where it stopped, with the parent's answers and decisions"
    )]
    ChildNotResumable { id: String, parent: String, node: String },
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
            SessionError::NotResumable { .. } | SessionError::ChildNotResumable { .. } => "NOT_RESUMABLE",
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

/// A run ready to start: the shell begins it (or not) and drives it (`drive`) with its own sinks.
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
    /// The person allowed code steps for the run (`--allow-code`): its child runs' too.
    pub allow_code: bool,
}

/// What a shell knows when it checks a workflow. [`validation_options`] turns it into the validator's options: the
/// one place they are assembled, for `switchyard validate` and `export`, the app's and the server's `validate`
/// command, the server's served files and a run being prepared.
#[derive(Debug, Clone, Default)]
pub struct Checking<'a> {
    /// Why it is checked: about to run here (`Purpose::Run`), or edited and validated (`Purpose::Check`).
    pub purpose: validate::Purpose,
    /// The settings, when they were read: their MCP servers are checked, and their providers unless `scripted`.
    pub settings: Option<&'a Settings>,
    /// Every model call is answered (an answers file, or an offline run): providers are not checked.
    pub scripted: bool,
    /// The system the document was read from (`Loaded::format`): its own graph rules apply.
    pub format: Option<Format>,
    /// The tools of MCP servers that were listed, by server: kept for the servers in the settings only.
    pub mcp_tools: BTreeMap<String, Vec<String>>,
    /// No default model could be found (looked for, and none answers).
    pub no_default_model: bool,
    /// The nodes an answers file answers.
    pub answered: Vec<String>,
    /// The workflow's file, when it has one: `workflow` nodes' children are found relative to it and checked.
    pub file: Option<&'a Path>,
}

/// The validator's options for what a shell knows, the same rules for every shell: the providers a run would use
/// (not when every call is answered) and the MCP servers in the settings (also for a scripted run: its agents still
/// call their tools), with the tools of those servers that were listed.
pub fn validation_options(checking: Checking<'_>) -> validate::Options {
    let Checking { purpose, settings, scripted, format, mut mcp_tools, no_default_model, answered, file } = checking;
    let mcp_servers: Option<Vec<String>> = settings.map(|s| s.mcp_servers.keys().cloned().collect());
    mcp_tools.retain(|server, _| mcp_servers.as_ref().is_some_and(|s| s.contains(server)));
    validate::Options {
        purpose,
        providers: settings.filter(|_| !scripted).map(Settings::provider_ids),
        mcp_servers,
        mcp_tools,
        no_default_model,
        answered,
        format,
        file: file.map(Path::to_path_buf),
        within: Vec::new(),
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

/// The price table of this process's settings (empty when there are no settings or they cannot be read): what a run
/// started here keeps (`usage::kept_prices`), and what prices a run recorded before runs kept prices.
pub fn prices() -> BTreeMap<String, Price> {
    Settings::load(&Settings::default_path()).map(|s| s.prices).unwrap_or_default()
}

/// The prices a run of `workflow` started in this process keeps (`RunOptions::prices`): this process's settings'
/// prices for the models it can use (`model`: the run's default model, when it has one).
pub fn kept_prices(workflow: &Workflow, model: Option<&str>) -> BTreeMap<String, Price> {
    crate::usage::kept_prices(workflow, model, &prices())
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
    // A scripted run's settings are read for its MCP servers only, when an agent names one.
    let mcp_settings = match (&settings, uses_mcp(&workflow)) {
        (None, true) => Some(load_settings()?),
        _ => None,
    };
    // The model override replaces the workflow's default, so references are checked as they will be resolved.
    let options = validation_options(Checking {
        purpose: validate::Purpose::Run,
        settings: settings.as_ref().or(mcp_settings.as_ref()),
        scripted: answered,
        no_default_model,
        // Offline runs answer model calls from recorded calls, not code steps: only an answers file answers those.
        answered: answers
            .iter()
            .flat_map(|a| workflow.nodes.iter().filter(|n| a.answer(&n.id, 0).is_some()).map(|n| n.id.clone()))
            .collect(),
        // What the file's own system refuses of its graph is refused here too, as `switchyard validate` refuses it.
        format: request.format,
        mcp_tools: BTreeMap::new(),
        file: request.workflow_ref.as_ref().map(|r| r.path.as_path()),
    });
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
    let model_given = request.model.is_some();
    let model = request.model.or(fallback);
    // The run keeps this process's prices for the models it can use: its cost is the same whoever looks, later.
    let table = settings.as_ref().map_or_else(prices, |s| s.prices.clone());
    let kept = crate::usage::kept_prices(&workflow, model.as_deref(), &table);
    let options = RunOptions {
        input: request.input,
        run_id: Some(run::new_run_id()),
        step_budget: request.step_budget,
        model,
        model_given,
        reuse,
        prices: Some(kept),
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
        allow_code: request.allow_code,
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
pub fn begin(store: Arc<dyn Store>, prepared: &Prepared) -> Result<Held, SessionError> {
    let claim = store.create(&new_run(prepared, &kept_refs(prepared)))?;
    Ok(Held::new(store, claim))
}

/// Records a prepared run for a worker to run (status `ready`): nothing runs here. Only a store that workers share
/// (PostgreSQL) takes it.
pub fn submit(store: &dyn Store, prepared: &Prepared) -> Result<(), SessionError> {
    Ok(store.submit(&new_run(prepared, &kept_refs(prepared)))?)
}

/// A run this process holds in a store: its claim, and the log the claim says the run is written to (the store
/// itself, or with PostgreSQL the claim's own, fenced by it). Dropping it gives the run up.
pub struct Held {
    store: Arc<dyn Store>,
    claim: Claim,
    log: Arc<dyn RunLog>,
}

impl Held {
    fn new(store: Arc<dyn Store>, claim: Claim) -> Held {
        let log = store.clone().run_log(&claim);
        Held { store, claim, log }
    }

    /// Completes when the run is no longer this process's (`Claim::lost`): the shell stops it at once.
    pub fn lost(&self) -> Signal {
        self.claim.lost()
    }
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
        origin: Default::default(),
        version: None,
    }
}

/// A stored run opened to go on: claimed for this process, with its answers file and model.
pub struct Resuming {
    pub stored: StoredRun,
    pub held: Held,
    pub answers: Option<Arc<Answers>>,
    pub model: Arc<dyn Model>,
    /// Consent is asked again when a run continues: for the document it started with.
    pub code: Code,
    pub mcp: Arc<McpSessions>,
    /// Said when the workflow file has changed (or cannot be read) since the run started: it goes on with the
    /// document it started with.
    pub note: Option<String>,
    /// `--allow-code`: given for the run and its child runs.
    pub allow_code: bool,
}

/// Opens a paused or interrupted run (or, with PostgreSQL, one waiting for a worker) to continue it; `allow_code` as
/// in [`RunRequest`].
pub fn open_to_resume(store: Arc<dyn Store>, run_id: &str, allow_code: bool) -> Result<Resuming, SessionError> {
    let stored = store.load(run_id)?;
    if !stored.row.status.resumable() {
        return Err(SessionError::NotResumable { id: run_id.to_string(), status: stored.row.status.as_str() });
    }
    // Its parent's run takes it up (`session::children`): alone, it would go on without the answers and decisions
    // its parent gives it, and its parent would find it changed.
    if let Some(parent) = &stored.row.parent {
        let (parent, node) = (parent.run.clone(), parent.at());
        return Err(SessionError::ChildNotResumable { id: run_id.to_string(), parent, node });
    }
    let (answers, model, code, mcp, note) = going_on(&stored, allow_code)?;
    let claim = store.claim(run_id)?;
    // Read again now that it is this process's: another may have carried it on between the first read and the claim.
    // (The row stays as it was found: what the run was before this process took it.)
    let mut stored = stored;
    stored.recording = store.load(run_id)?.recording;
    let held = Held::new(store, claim);
    Ok(Resuming { model, stored, held, answers, code, mcp, note, allow_code })
}

/// Opens a run a worker has claimed (`claim`, taken before): read again now that it is this process's, so that what
/// it goes on from is what the log held when it was taken. A run that cannot be opened here (its answers file is
/// not on this machine, its settings cannot be read) is abandoned, as `drive` abandons a run it cannot rebuild.
pub fn open_claimed(
    store: Arc<dyn Store>,
    run_id: &str,
    claim: Claim,
    allow_code: bool,
) -> Result<Resuming, SessionError> {
    let stored = match store.load(run_id) {
        Ok(stored) => stored,
        Err(e) => {
            claim.abandon();
            return Err(e.into());
        }
    };
    match going_on(&stored, allow_code) {
        Ok((answers, model, code, mcp, note)) => {
            Ok(Resuming { model, stored, held: Held::new(store, claim), answers, code, mcp, note, allow_code })
        }
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

/// Where a run's events go besides the store (a held run's log comes from its claim): a log of the shell's own (a
/// JSON-lines file, written after the store) and its observers (a terminal printer, a window channel). The logs are
/// written before observers see an event.
#[derive(Default)]
pub struct Sinks {
    pub log: Option<Arc<dyn RunLog>>,
    pub observers: Vec<Arc<dyn Observer>>,
}

/// What [`drive`] carries out: a prepared run (held in a store by `begin`, or kept nowhere), or a stored run opened
/// to go on (`open_to_resume`, `open_claimed`).
#[allow(clippy::large_enum_variant)] // one per run, moved once into `drive`
pub enum Going {
    Fresh(Prepared, Option<Held>),
    Stored(Resuming),
}

/// A run to drive, and how.
pub struct Drive {
    pub run: Going,
    /// How far it goes: its first pause (a command line, a worker, an evaluation) or its end (the app, which takes
    /// decisions while it is paused).
    pub until: run::Until,
    /// Decisions for a stored run (node, decision), given once it is rebuilt: one it cannot take fails the drive
    /// (`DECISION_REFUSED`), unless the decisions are the store's (`store_requests`).
    pub decisions: Vec<(String, Decision)>,
    /// A worker's: what people asked of the run through the store is carried out — decisions kept for it (each for
    /// its node's current round, once; those that come while it works, when the claim is nudged; one its run no
    /// longer waits for is left out) and a cancellation asked for before it was taken.
    pub store_requests: bool,
}

impl Drive {
    /// A prepared run to its first pause, held in a store or kept nowhere.
    pub fn fresh(prepared: Prepared, held: Option<Held>) -> Drive {
        Drive {
            run: Going::Fresh(prepared, held),
            until: run::Until::Pause,
            decisions: Vec::new(),
            store_requests: false,
        }
    }

    /// A stored run to its next pause.
    pub fn stored(resuming: Resuming) -> Drive {
        Drive { run: Going::Stored(resuming), until: run::Until::Pause, decisions: Vec::new(), store_requests: false }
    }

    pub fn until(self, until: run::Until) -> Drive {
        Drive { until, ..self }
    }

    pub fn deciding(self, decisions: Vec<(String, Decision)>) -> Drive {
        Drive { decisions, ..self }
    }

    /// Carries out what was asked of the run through the store (a worker's).
    pub fn taking_requests(self) -> Drive {
        Drive { store_requests: true, ..self }
    }
}

/// The one way a session runs a run: launches it (`run::launch`) with its runtime, its log (a held run's, from its
/// claim, then the shell's) and observers, and wires the claim, when the run is held:
/// - a cancellation asked for through the store (a server's API) cancels it, before or while it works;
/// - with `store_requests`, the decisions kept for it are applied (`Drive::store_requests`);
/// - when it pauses with an approval deadline, the claim says so when it is given up, so that a worker takes it again
///   then (`Claim::wake_at`);
/// - a run whose recording cannot be rebuilt, or whose requests cannot be read, is abandoned rather than given up
///   (`Claim::abandon`): whoever claims it next does so only once its lease has run out, not at once in a loop.
///
/// The run stays held until it returns ([`Driving::finish`]). A stored run with nothing recorded (submitted for a
/// worker, or whose process died before its first event) starts from the beginning.
pub async fn drive(drive: Drive, sinks: Sinks) -> Result<Driving, SessionError> {
    drive_with(drive, sinks, None).await
}

/// [`drive`], with the children of a child run (one level deeper); a run a person started has its own made here
/// when its workflow has `workflow` nodes (docs/subworkflows.md).
async fn drive_with(
    drive: Drive,
    sinks: Sinks,
    children: Option<Arc<dyn run::Children>>,
) -> Result<Driving, SessionError> {
    let children = children.or_else(|| own_children(&drive.run));
    let Drive { run: going, until, decisions, store_requests } = drive;
    let (launch, mut held, model, answers, code, mcp) = match going {
        Going::Fresh(prepared, held) => {
            let Prepared { workflow, options, answers, model, code, mcp, .. } = prepared;
            (run::Launch::fresh(workflow, options), held, model, answers, code, mcp)
        }
        Going::Stored(resuming) => {
            let Resuming { mut stored, held, answers, model, code, mcp, .. } = resuming;
            // Taken over from a holder that stopped answering: its history says so.
            let taken_over = held.claim.taken_over().cloned();
            // The run goes on under the id it is stored with.
            stored.options.run_id = Some(stored.row.id.clone());
            let (workflow, options, recording) = (Arc::new(stored.workflow), stored.options, stored.recording);
            let refused = if store_requests { run::RefusedDecision::Skip } else { run::RefusedDecision::Fail };
            let nothing_recorded = recording.events.is_empty() && recording.inputs.is_empty();
            let start = if nothing_recorded && (decisions.is_empty() || store_requests) {
                run::Start::Fresh
            } else {
                run::Start::Recorded { recording, decisions, refused }
            };
            let launch = run::Launch { workflow, options, start, until: run::Until::Pause, taken_over };
            (launch, Some(held), model, answers, code, mcp)
        }
    };
    let mut launch = launch.until(until);
    // Read after the claim, which cleared the run's `wake`: nothing asked since is missed.
    let mut kept = None;
    let mut cancel_asked = None;
    if let (true, Some(h)) = (store_requests, held.as_ref()) {
        let (store, id) = (h.store.clone(), launch.options.run_id.clone().unwrap_or_default());
        let read =
            tokio::task::spawn_blocking(move || store.requests(&id)).await.expect("reading requests does not panic");
        let requests = match read {
            Ok(requests) => requests,
            Err(e) => {
                held.take().expect("held").claim.abandon();
                return Err(e.into());
            }
        };
        let mut rounds = match &launch.start {
            run::Start::Recorded { recording, .. } => KeptRounds::new(&recording.inputs),
            run::Start::Fresh => KeptRounds::new(&[]),
        };
        let due = rounds.due(requests.decisions);
        if let run::Start::Recorded { decisions, .. } = &mut launch.start {
            decisions.extend(due);
        }
        cancel_asked = requests.cancel.then_some(requests.cancelled_by);
        kept = Some(rounds);
    }
    let Sinks { log, observers } = sinks;
    let log = match (held.as_ref().map(|h| h.log.clone()), log) {
        (Some(store), Some(own)) => Some(Arc::new(crate::log::Tee(vec![store, own])) as Arc<dyn RunLog>),
        (store, own) => store.or(own),
    };
    let runtime = Runtime { model, answers, log, observers, code, mcp, children };
    let handle = match run::launch(launch, runtime) {
        Ok(handle) => handle,
        Err(e) => match (e, held) {
            (run::ResumeError::Rebuild(e), Some(held)) => {
                held.claim.abandon();
                return Err(e.into());
            }
            (e, _) => return Err(e.into()),
        },
    };
    if let Some(by) = cancel_asked {
        handle.controller().cancel_by(by);
    }
    Ok(Driving { run_id: handle.run_id.clone(), handle, held, kept })
}

/// The children of a run a person started, when its workflow has `workflow` nodes: kept in its store, found
/// relative to its file, answered from its answers.
fn own_children(going: &Going) -> Option<Arc<dyn run::Children>> {
    let (workflow, options, store, file, answers, model, mcp, allow_code) = match going {
        Going::Fresh(p, held) => (
            &*p.workflow,
            &p.options,
            held.as_ref().map(|h| h.store.clone()),
            p.workflow_ref.as_ref().map(|r| r.path.clone()),
            p.answers.clone(),
            p.model.clone(),
            p.mcp.clone(),
            p.allow_code,
        ),
        Going::Stored(r) => (
            &r.stored.workflow,
            &r.stored.options,
            Some(r.held.store.clone()),
            r.stored.row.workflow_ref.as_deref().map(|w| WorkflowRef::parse(w).path),
            r.answers.clone(),
            r.model.clone(),
            r.mcp.clone(),
            r.allow_code,
        ),
    };
    if !workflow.has_children() {
        return None;
    }
    let (depth, default_model) = (1, children::ChildModel::of(workflow, options));
    Some(Arc::new(children::SessionChildren { store, file, answers, model, default_model, mcp, allow_code, depth }))
}

/// A run [`drive`] launched: decided and cancelled through its controller, and held (when it is) until `finish`
/// returns.
pub struct Driving {
    pub run_id: String,
    handle: RunHandle,
    held: Option<Held>,
    /// With `store_requests`: the rounds of the decisions kept for the run, applied as the claim is nudged.
    kept: Option<KeptRounds>,
}

impl Driving {
    pub fn controller(&self) -> run::RunController {
        self.handle.controller()
    }

    /// Drives the run to its first pause or its end (`Drive::until`) and gives up its claim: said to wake it at its
    /// first approval deadline when it paused.
    pub async fn finish(self) -> Outcome {
        let Driving { handle, held, kept, run_id } = self;
        let Some(mut held) = held else { return handle.finish().await };
        let controller = handle.controller();
        let going = handle.finish();
        tokio::pin!(going);
        let mut asked = std::pin::pin!(held.claim.cancel_requested().wait());
        let mut nudged = std::pin::pin!(held.claim.nudged());
        let mut cancel_sent = false;
        let mut kept = kept;
        let outcome = loop {
            tokio::select! {
                outcome = &mut going => break outcome,
                _ = &mut asked, if !cancel_sent => {
                    // Who asked, for the run's `workflow:end`; unread, the run is cancelled all the same.
                    let (store, id) = (held.store.clone(), run_id.clone());
                    let read = tokio::task::spawn_blocking(move || store.requests(&id)).await;
                    controller.cancel_by(read.ok().and_then(Result::ok).and_then(|r| r.cancelled_by));
                    cancel_sent = true;
                }
                _ = &mut nudged, if kept.is_some() => {
                    nudged.set(held.claim.nudged());
                    let (store, id) = (held.store.clone(), run_id.clone());
                    let read = tokio::task::spawn_blocking(move || store.requests(&id)).await;
                    if let (Ok(Ok(requests)), Some(kept)) = (read, kept.as_mut()) {
                        for (node, decision) in kept.due(requests.decisions) {
                            // Not awaited: this loop drives the run. Refused when the node no longer waits (it timed
                            // out meanwhile): nothing to apply.
                            controller.send_decision(&node, decision);
                        }
                    }
                }
            }
        };
        if let Some(at) = outcome.wake_at_ms {
            held.claim.wake_at(at);
        }
        drop(held);
        outcome
    }
}

/// What it takes to end a prepared run in this process after it paused ([`end_paused`]).
#[derive(Clone)]
pub struct Carry {
    answers: Option<Arc<Answers>>,
    model: Arc<dyn Model>,
    code: Code,
    mcp: Arc<McpSessions>,
}

impl Prepared {
    pub fn carry(&self) -> Carry {
        Carry {
            answers: self.answers.clone(),
            model: self.model.clone(),
            code: self.code.clone(),
            mcp: self.mcp.clone(),
        }
    }
}

/// Ends, cancelled, a run that paused in this process (it ran it, and gave it up when it paused): claimed again,
/// rebuilt from its log and driven with a cancellation. For a run nobody will decide: an evaluation case's run, once
/// the case is judged, so that no front end lists it as waiting for a decision. Returns how it ended.
pub async fn end_paused(store: Arc<dyn Store>, run_id: &str, carry: Carry) -> Result<Outcome, SessionError> {
    let claim = store.claim(run_id)?;
    let stored = store.load(run_id)?;
    let Carry { answers, model, code, mcp } = carry;
    let resuming =
        Resuming { stored, held: Held::new(store, claim), answers, model, code, mcp, note: None, allow_code: false };
    let driving = drive(Drive::stored(resuming), Sinks::default()).await?;
    driving.controller().cancel();
    Ok(driving.finish().await)
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

    fn due(&mut self, kept: Vec<crate::store::KeptDecision>) -> Vec<(String, Decision)> {
        let mut due: Vec<(String, Decision)> = Vec::new();
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
    shown(store.load(run_id)?)
}

/// `show` of a run already read from its store (a store that is awaited), rebuilt off the async threads: a rebuild
/// is work for the processor, as long as the run.
pub async fn show_stored(stored: StoredRun) -> Result<(RunRow, RunResult), SessionError> {
    off_runtime(move || shown(stored)).await
}

/// Blocking work (a store's calls, a rebuild) on the runtime's blocking threads; a panic there goes on here.
async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

fn shown(stored: StoredRun) -> Result<(RunRow, RunResult), SessionError> {
    let untouched = stored.recording.events.is_empty() && stored.recording.inputs.is_empty();
    let (row, mut result) = rebuild(stored, Sinks::default())?;
    // A run nobody has started yet (waiting for a worker) has no results: a rebuild would start its start node.
    if untouched {
        result.results.clear();
        result.trace = Default::default();
        result.state.clear();
    }
    Ok((priced_row(row), result))
}

/// What happened inside each node of a stored run, in order (`crate::journal`): each model turn's answer as its
/// provider read it, each tool call with what it returned, and a fork's answer; by node id, each with when it was
/// kept and how long it took.
pub fn turns(store: &dyn Store, run_id: &str) -> Result<BTreeMap<String, Vec<Journaled>>, SessionError> {
    Ok(turns_in(store.load(run_id)?))
}

/// The conversations of a stored run already read (`turns`), for a host that awaits its store.
pub fn turns_in(stored: StoredRun) -> BTreeMap<String, Vec<Journaled>> {
    let mut turns: BTreeMap<String, Vec<Journaled>> = Default::default();
    // A fork at a turn: the conversation it took from the run it forked (answered from there, never asked again),
    // then the answer given; they are in its options, not its log.
    for entry in stored.options.reuse.iter().flat_map(|r| r.journal.iter()) {
        let kept = Journaled { entry: entry.clone(), seq: None, ts: None, ms: None };
        turns.entry(entry.node.clone()).or_default().push(kept);
    }
    for recorded in stored.recording.inputs {
        if let crate::record::Input::Journaled(entry) = recorded.input {
            if !matches!(entry.what, crate::journal::What::Asked { .. }) {
                let kept = Journaled { entry: *entry, seq: Some(recorded.seq), ts: recorded.ts, ms: None };
                turns.entry(kept.entry.node.clone()).or_default().push(kept);
            }
        }
    }
    timed(&mut turns, &stored.recording.events);
    turns
}

/// Fills in how long each timed entry took: since the latest timed entry before it in its conversation (the same
/// iteration, at the same place or one that encloses it: `t1` for `c1/reviewer.t0`, never another `for_each` item's),
/// or since the node (that iteration) entered, whichever came later.
fn timed(turns: &mut BTreeMap<String, Vec<Journaled>>, events: &[crate::events::Event]) {
    let millis = |ts: &str| chrono::DateTime::parse_from_rfc3339(ts).ok().map(|t| t.timestamp_millis());
    let mut starts: std::collections::HashMap<&str, Vec<(u32, u64, i64)>> = Default::default();
    for event in events {
        if let crate::events::EventKind::NodeEnter { node, iteration, .. } = &event.kind {
            if let Some(t) = millis(&event.ts) {
                starts.entry(node).or_default().push((*iteration, event.seq, t));
            }
        }
    }
    // `c1/reviewer.t0` is in `c1/reviewer`, which `c1` and the node's own conversation ("") enclose.
    let scope = |at: &str| at.rfind(['.', '/']).map_or("", |i| &at[..i]).to_string();
    let encloses = |outer: &str, inner: &str| {
        outer.is_empty()
            || inner == outer
            || (inner.starts_with(outer) && matches!(inner.as_bytes().get(outer.len()), Some(b'.' | b'/')))
    };
    for (node, entries) in turns.iter_mut() {
        let starts = starts.get(node.as_str()).map(Vec::as_slice).unwrap_or_default();
        let mut before: Vec<(u32, String, i64)> = Vec::new();
        for kept in entries.iter_mut() {
            let (Some(seq), Some(t)) = (kept.seq, kept.ts.as_deref().and_then(millis)) else { continue };
            let (iteration, place) = (kept.entry.iteration, scope(&kept.entry.at));
            let entered = starts.iter().rev().find(|(i, s, _)| *i == iteration && *s < seq).map(|(_, _, t)| *t);
            let previous =
                before.iter().rev().find(|(i, s, _)| *i == iteration && encloses(s, &place)).map(|(_, _, t)| *t);
            kept.ms = entered.into_iter().chain(previous).max().map(|from| u64::try_from(t - from).unwrap_or(0));
            before.push((iteration, place, t));
        }
    }
}

/// The runs of the store, newest first, each priced at the settings' prices.
pub fn runs(store: &dyn Store) -> Result<Vec<RunRow>, SessionError> {
    Ok(priced_rows(store.list()?))
}

/// The newest `limit` runs of the store, newest first, each priced at the settings' prices.
pub fn recent_runs(store: &dyn Store, limit: usize) -> Result<Vec<RunRow>, SessionError> {
    Ok(priced_rows(store.recent(limit)?))
}

/// Rows of the store each priced (`priced`), the viewer's settings read once and only when a row kept no prices:
/// what every list of runs shows, whether its store is awaited or not.
pub fn priced_rows(rows: Vec<RunRow>) -> Vec<RunRow> {
    let current = std::cell::OnceCell::new();
    rows.into_iter().map(|row| priced(row, || current.get_or_init(prices).clone())).collect()
}

/// One run of the store, priced (`priced`).
pub fn row(store: &dyn Store, run_id: &str) -> Result<RunRow, SessionError> {
    Ok(priced_row(store.get(run_id)?))
}

/// A row with its cost (`priced`), the viewer's settings read only when it kept no prices.
pub fn priced_row(row: RunRow) -> RunRow {
    priced(row, prices)
}

/// The row with its cost, the one way every view of a run is costed: at the prices the run kept, else (a run
/// recorded before runs kept prices) at `current`, the viewer's settings, and said so (`Priced::Current`); rounded
/// and written once (`usage::cost`, `usage::dollars`). None when a model that used tokens has no price.
fn priced(mut row: RunRow, current: impl FnOnce() -> BTreeMap<String, Price>) -> RunRow {
    let (cost, priced) = match &row.prices {
        Some(kept) => (crate::usage::cost(&row.usage, kept), crate::usage::Priced::Kept),
        None => (crate::usage::cost(&row.usage, &current()), crate::usage::Priced::Current),
    };
    row.cost = cost.ok();
    row.cost_text = row.cost.map(crate::usage::dollars);
    row.priced = Some(priced);
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
        children: None,
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
    fn each_turn_takes_the_time_since_what_came_before_it_in_its_conversation_or_since_its_node_entered() {
        use crate::events::{Event, EventKind};
        use crate::journal::{Entry, What};
        let enter = |seq: u64, node: &str, iteration: u32, ts: &str| Event {
            seq,
            run: "r".into(),
            ts: format!("2026-11-28T19:00:0{ts}Z"),
            kind: EventKind::NodeEnter { node: node.into(), iteration, instruction: String::new() },
        };
        let events = [enter(2, "review", 1, "0.000"), enter(6, "review", 2, "3.000"), enter(8, "each", 1, "4.000")];
        let kept = |node: &str, iteration: u32, at: &str, seq: Option<u64>, ts: Option<&str>| Journaled {
            entry: Entry { node: node.into(), iteration, at: at.into(), what: What::Said { text: String::new() } },
            seq,
            ts: ts.map(|t| format!("2026-11-28T19:00:0{t}Z")),
            ms: None,
        };
        let mut turns = BTreeMap::from([
            (
                "review".to_string(),
                vec![
                    kept("review", 1, "t0", None, None), // a fork's turn, taken from the run it forked
                    kept("review", 1, "t0", Some(3), Some("1.400")),
                    kept("review", 1, "c0/rev.t0", Some(4), Some("2.000")),
                    kept("review", 1, "c0", Some(4), Some("2.010")),
                    kept("review", 1, "t1", Some(5), Some("2.500")),
                    kept("review", 1, "t2", Some(5), None), // an older log's
                    kept("review", 2, "t0", Some(7), Some("3.100")),
                ],
            ),
            (
                "each".to_string(),
                vec![
                    kept("each", 1, "i0.t0", Some(9), Some("4.300")),
                    kept("each", 1, "i1.t0", Some(9), Some("4.500")),
                    kept("each", 1, "i0.t1", Some(9), Some("4.600")),
                ],
            ),
        ]);
        timed(&mut turns, &events);
        let took = |node: &str| turns[node].iter().map(|k| k.ms).collect::<Vec<_>>();
        // The first turn from the node's start; the subagent's turn from the turn that asked for it; the tool call
        // (which ran the subagent) from the turn that asked for it; the next turn from the tool call's result; the
        // second iteration from its own start.
        assert_eq!(took("review"), [None, Some(1400), Some(600), Some(610), Some(490), None, Some(100)]);
        // Each item of a `for_each` node from the node's start, then from its own turn before, never another item's.
        assert_eq!(took("each"), [Some(300), Some(500), Some(300)]);
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
    async fn a_held_run_pauses_gives_its_claim_up_and_goes_on_only_with_a_decision_it_waits_for() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
        let script = dir.path().join("answers.yaml");
        std::fs::write(&script, "nodes: {done: {text: shipped}}\n").unwrap();
        let wf = workflow(
            "nodes:\n  - {id: start, type: start}\n  - {id: review, type: approval}\n  - {id: done, type: agent}\n\
             edges:\n  - {from: start, to: review}\n  - {from: review, to: done, handle: approve}\n",
        );
        let request = RunRequest { answers_path: Some(script), ..RunRequest::default() };
        let prepared = prepare(wf, request, Some(&store)).await.unwrap();
        // Prepare, begin, drive: the log is the one the claim gives (here the store itself).
        let held = begin(store.clone(), &prepared).unwrap();
        let paused = drive(Drive::fresh(prepared, Some(held)), Sinks::default()).await.unwrap().finish().await;
        assert_eq!(paused.result.status, crate::result::RunStatus::Paused);
        let id = paused.result.run_id.clone();
        assert_eq!(store.get(&id).unwrap().status.as_str(), "paused", "kept in the store through the claim's log");

        // Given up when it paused: it opens again at once. A decision for a node that does not wait is refused
        // before anything runs, and the run can be opened again at once.
        let nobody = vec![("done".to_string(), Decision::parse("approve", "").unwrap())];
        let before = store.load(&id).unwrap().recording;
        let resuming = open_to_resume(store.clone(), &id, false).unwrap();
        let refused = drive(Drive::stored(resuming).deciding(nobody), Sinks::default()).await.err().unwrap();
        assert_eq!(refused.code(), "DECISION_REFUSED");
        let after = store.load(&id).unwrap().recording;
        assert_eq!(
            (after.events.len(), after.inputs.len()),
            (before.events.len(), before.inputs.len()),
            "a refused launch adds nothing to the run's log"
        );
        assert_eq!(store.get(&id).unwrap().status.as_str(), "paused");
        let decided = vec![("review".to_string(), Decision::parse("approve", "fine").unwrap())];
        let resuming = open_to_resume(store.clone(), &id, false).unwrap();
        let driving = drive(Drive::stored(resuming).deciding(decided), Sinks::default()).await.unwrap();
        assert_eq!(driving.run_id, id);
        let ended = driving.finish().await;
        assert_eq!(ended.result.status, crate::result::RunStatus::Completed);
        assert_eq!(store.get(&id).unwrap().status.as_str(), "completed");
    }

    #[tokio::test]
    async fn only_paused_and_interrupted_runs_continue() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
        let (_d, script) = scripted();
        let wf = workflow("nodes:\n  - {id: start, type: start}\n");
        let prepared =
            prepare(wf, RunRequest { answers_path: Some(script), ..RunRequest::default() }, None::<&RunStore>)
                .await
                .unwrap();
        let held = begin(store.clone(), &prepared).unwrap();
        let id = prepared.options.run_id.clone().unwrap();
        assert!(matches!(
            open_to_resume(store.clone(), &id, false),
            Err(SessionError::NotResumable { status: "running", .. })
        ));
        drop(held);
        let resuming = open_to_resume(store.clone(), &id, false).unwrap();
        assert_eq!(resuming.stored.row.status.as_str(), "interrupted");
        // Held by this process now, it shows as running: nobody else can continue it.
        assert!(matches!(
            open_to_resume(store.clone(), &id, false),
            Err(SessionError::NotResumable { status: "running", .. })
        ));
    }

    fn used_row(prices: Option<serde_json::Value>) -> RunRow {
        serde_json::from_value(serde_json::json!({
            "id": "r", "workflow": "w", "workflowRef": null, "answersPath": null, "status": "completed",
            "started": "2026-12-01T10:00:00Z", "durationMs": 1, "pending": [], "tokens": 2100, "cost": null,
            "eval": null, "prices": prices,
            "usage": {"p/m": {"inputTokens": 2000, "outputTokens": 100, "cachedInputTokens": 0}}
        }))
        .unwrap()
    }

    #[test]
    fn a_run_is_costed_at_the_prices_it_kept_and_the_viewers_settings_are_not_read() {
        let row = priced(used_row(Some(serde_json::json!({"p/m": {"input": 3.0, "output": 15.0}}))), || {
            panic!("the viewer's settings were read for a run that kept its prices")
        });
        assert_eq!(row.cost, Some(0.0075));
        assert_eq!(row.cost_text.as_deref(), Some("$0.0075"));
        assert_eq!(row.priced, Some(crate::usage::Priced::Kept));
        // A kept table without the model leaves the cost unknown: the viewer's price for it is not taken instead.
        let other = priced(used_row(Some(serde_json::json!({}))), || panic!("read the viewer's settings"));
        assert_eq!((other.cost, other.cost_text), (None, None));
    }

    #[test]
    fn a_run_recorded_before_runs_kept_prices_is_priced_with_the_viewers_settings_and_says_so() {
        let current = BTreeMap::from([("p/m".to_string(), Price { input: 1.0, output: 1.0, cached_input: None })]);
        let row = priced(used_row(None), || current.clone());
        assert_eq!((row.cost, row.cost_text.as_deref()), (Some(0.0021), Some("$0.0021")));
        assert_eq!(row.priced, Some(crate::usage::Priced::Current));
        assert_eq!(row.priced.and_then(crate::usage::Priced::note), Some("priced with your current settings"));
    }

    #[tokio::test]
    async fn a_prepared_run_keeps_the_prices_of_its_models_from_this_processs_settings() {
        let (_d, script) = scripted();
        let wf = workflow("nodes:\n  - {id: start, type: start}\n");
        let prepared =
            prepare(wf, RunRequest { answers_path: Some(script), ..RunRequest::default() }, None::<&RunStore>)
                .await
                .unwrap();
        // No model is named, and no settings priced one: the run keeps an empty table, not none (which would mean a
        // run recorded before runs kept prices, priced with whoever looks).
        assert_eq!(prepared.options.prices, Some(BTreeMap::new()));
        let json = serde_json::to_value(&prepared.options).unwrap();
        assert_eq!(json["prices"], serde_json::json!({}), "kept with the run's options");
    }
}
