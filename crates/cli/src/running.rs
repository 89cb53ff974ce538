//! Running a workflow here (`run`, with `--reuse`, `--fork` and `--detach`) and going on with a stored run
//! (`resume`): prepare, begin, drive, finish, through the engine's session.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};
use switchyard_engine::format::Format;
use switchyard_engine::log::{Observer, RunLog};
use switchyard_engine::providers::DefaultSource;
use switchyard_engine::run::{self, Decision, Outcome};
use switchyard_engine::session::{self, Drive, Held, RunRequest, SessionError, Sinks, WorkflowRef};
use switchyard_engine::store::{RunRow, RunStore, Signal, Store};
use switchyard_engine::validate::Report;
use switchyard_engine::RunStatus;

use crate::check::{load, print_findings, print_hints, print_list};
use crate::out::{counted, errln, outln};
use crate::{coded, live, Unusable};

pub(crate) struct RunArgs {
    /// The run store (`--db`).
    pub(crate) db: Option<String>,
    /// Record it for a worker instead of running it here.
    pub(crate) detach: bool,
    pub(crate) file: PathBuf,
    pub(crate) input: Option<String>,
    pub(crate) answers: Option<PathBuf>,
    pub(crate) json: bool,
    pub(crate) events: Option<PathBuf>,
    pub(crate) format: Option<Format>,
    pub(crate) model: Option<String>,
    pub(crate) step_budget: Option<u32>,
    pub(crate) no_store: bool,
    /// A stored run, and the node to run from.
    pub(crate) reuse: Option<(String, String)>,
    /// A stored run to fork, where (`NODE[#TURN]`), and what the model said there instead (`TEXT|@FILE`).
    pub(crate) fork: Option<(String, String, String)>,
    pub(crate) allow_code: bool,
}

/// `--fork RUN --at NODE[#TURN] --answer TEXT|@FILE`.
pub(crate) fn parse_fork(run: String, at: &str, answer: &str) -> Result<(String, String, run::Fork), Unusable> {
    let (node, turn) = match at.split_once('#') {
        None => (at, None),
        Some((node, turn)) => match turn.parse::<u32>() {
            Ok(t) if t >= 1 => (node, Some(t)),
            _ => {
                return Err(coded(
                    "INVALID_ARGUMENTS",
                    format!("--at {at}: the turn after `#` is a number from 1 (the node's first model turn is #1)"),
                ))
            }
        },
    };
    let answer = match answer.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| coded("INPUT_UNREADABLE", format!("--answer: cannot read {path}: {e}")))?,
        None => answer.to_string(),
    };
    Ok((run, node.to_string(), run::Fork { turn, answer }))
}

pub(crate) fn parse_input(raw: &str) -> Result<Value, Unusable> {
    let text = match raw.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| coded("INPUT_UNREADABLE", format!("cannot read input file {path}: {e}")))?,
        None => raw.to_string(),
    };
    Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

pub(crate) fn open_store() -> Result<Arc<RunStore>, Unusable> {
    RunStore::open(&switchyard_engine::store::default_path()).map(Arc::new).map_err(|e| coded(e.code(), e.to_string()))
}

/// The run store `--db` (or $SWITCHYARD_DB) names, else the default file.
pub(crate) fn open_runs(db: Option<&str>) -> Result<Arc<dyn Store>, Unusable> {
    switchyard_engine::store::open(db).map_err(|e| coded(e.code(), e.to_string()))
}

/// Where one CLI run's events go: the run's log in the store and an --events file (written first), then the live
/// log.
pub(crate) fn sinks(events: &Option<PathBuf>, json: bool) -> Result<Sinks, Unusable> {
    let log = match events {
        Some(path) => Some(Arc::new(
            live::JsonLines::create(path).map_err(|e| coded("EVENTS_UNWRITABLE", format!("--events: {e}")))?,
        ) as Arc<dyn RunLog>),
        None => None,
    };
    let observers: Vec<Arc<dyn Observer>> = if json { Vec::new() } else { vec![Arc::new(live::LiveLog)] };
    Ok(Sinks { log, observers })
}

pub(crate) async fn cmd_run(args: RunArgs) -> Result<u8, Unusable> {
    let fork = args.fork.as_ref().map(|(run, at, answer)| parse_fork(run.clone(), at, answer)).transpose()?;
    let loaded = load(&args.file, args.format)?;
    let input = args.input.as_deref().map(parse_input).transpose()?;
    // The store keeps the run; running from a node reads an earlier run from it even with --no-store.
    let earlier = args.reuse.is_some() || args.fork.is_some();
    let store = if args.no_store && !earlier { None } else { Some(open_runs(args.db.as_deref())?) };
    let request = RunRequest {
        workflow_ref: Some(WorkflowRef::new(&args.file, args.format)),
        format: Some(loaded.format),
        input,
        answers_path: args.answers.clone(),
        model: args.model.clone(),
        step_budget: args.step_budget,
        reuse: args.reuse.clone(),
        fork: fork.clone(),
        allow_code: args.allow_code,
        ..RunRequest::default()
    };
    let prepared = match session::prepare(loaded.workflow, request, store.as_deref()).await {
        Ok(prepared) => prepared,
        Err(e @ SessionError::Invalid { .. }) => {
            if let SessionError::Invalid { report, .. } = &e {
                print_findings(&args.file, report);
            }
            let count = if let SessionError::Invalid { count, .. } = &e { *count } else { 0 };
            let mut unusable = Unusable::from(e);
            unusable.message = format!(
                "{} does not validate ({}); nothing was run",
                args.file.display(),
                counted(count as u64, "error")
            );
            return Err(unusable);
        }
        // Named as the option that asked for it: "--model x/y: provider `x` is not configured".
        Err(e @ SessionError::UnknownProvider { .. }) => {
            let mut unusable = Unusable::from(e);
            unusable.message = format!("--{}", unusable.message);
            return Err(unusable);
        }
        // Named as the option that asked for it: "--from x: no such node `x` to run from".
        Err(e @ SessionError::Reuse(_)) => {
            let mut unusable = Unusable::from(e);
            if let Some((_, from)) = &args.reuse {
                unusable.message = format!("--from {from}: {}", unusable.message);
            }
            if let Some((_, at, _)) = &args.fork {
                unusable.message = format!("--at {at}: {}", unusable.message);
            }
            return Err(unusable);
        }
        Err(e) => return Err(e.into()),
    };
    let consent = &prepared.consent;
    if !consent.steps.is_empty() && !prepared.code.allowed {
        let nodes: Vec<&str> = consent.steps.iter().map(|s| s.node.as_str()).collect();
        errln!(
            "warning: {} ({}) will not run without your consent: add --allow-code, or run `switchyard trust {}` once for this version",
            counted(nodes.len() as u64, "code step"),
            nodes.join(", "),
            args.file.display()
        );
    }
    for warning in &prepared.warnings {
        errln!("warning: {warning}");
    }
    match &prepared.discovered {
        Some(found) if found.source == DefaultSource::Local => {
            let model = found.model.as_deref().unwrap_or_default();
            errln!("note: nodes that name no model use {model}, from {}", found.detail);
        }
        Some(found) if found.model.is_none() => {
            let report = Report {
                warnings: prepared.report.warnings.iter().filter(|f| f.code == "NO_MODEL").cloned().collect(),
                ..Report::default()
            };
            // The hint follows the nodes' failures, at the end.
            print_list(&args.file, &report);
        }
        _ => {}
    }
    if let Some((run_id, from)) = &args.reuse {
        errln!("reusing {} of run {run_id} upstream of `{from}`", counted(prepared.reused as u64, "node result"));
    }
    if let Some((run_id, node, fork)) = &fork {
        let at = fork.turn.map_or(format!("`{node}`"), |t| format!("turn {t} of `{node}`"));
        errln!("forking run {run_id}: the answer given at {at}; what came before it is reused");
    }
    let store = if args.no_store { None } else { store };
    if args.detach {
        let store = store.expect("--detach conflicts with --no-store");
        session::submit(&*store, &prepared)?;
        let run_id = prepared.options.run_id.as_deref().expect("prepare sets the run id");
        if args.json {
            outln!("{}", json!({"runId": run_id, "status": "ready"}));
        } else {
            outln!("{run_id}");
        }
        errln!("run {run_id} is ready for a worker (`switchyard worker --db URL` runs it; `switchyard show {run_id}` shows it)");
        return Ok(0);
    }
    // The run's row is written before its first event, and this process holds the run while it lives.
    let held = store.as_ref().map(|store| session::begin(store.clone(), &prepared)).transpose()?;
    let lost = held.as_ref().map(Held::lost).unwrap_or_default();
    let driving = session::drive(Drive::fresh(prepared, held), sinks(&args.events, args.json)?).await?;
    let run_id = driving.run_id.clone();
    let outcome = unless_lost(lost, driving.finish()).await;
    let Some(outcome) = outcome else {
        return Ok(claim_lost(&run_id, args.json));
    };
    finish(outcome, store.as_deref(), args.json)
}

/// The run's outcome, or none when its claim was lost first (another process took it over, or its log could not be
/// written): it stops here, at once.
pub(crate) async fn unless_lost<T>(lost: Signal, run: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::select! {
        done = run => Some(done),
        _ = lost.wait() => None,
    }
}

/// Says that a run stopped because its claim was lost; exit 1, as for a run that did not complete.
pub(crate) fn claim_lost(run_id: &str, json: bool) -> u8 {
    let lost = coded(
        "RUN_CLAIM_LOST",
        format!(
            "run {run_id} stopped here: it was taken over by another process, or its log could not be written; it \
             goes on from its log with whoever claims it next (a worker, or `switchyard resume {run_id}`)"
        ),
    );
    errln!("error: [RUN_CLAIM_LOST] {}", lost.message);
    if json {
        outln!("{}", json!({"runId": run_id, "status": "lost", "errors": lost.errors}));
    }
    1
}

/// The result object `run --json` prints (and `show` and `replay`), with what its model calls used as the store
/// kept it (null for a run that was not stored).
pub(crate) fn result_json(r: &switchyard_engine::RunResult, row: Option<&RunRow>) -> Value {
    json!({
        "runId": r.run_id,
        "status": r.status,
        "results": r.results,
        "trace": r.trace,
        "pending": r.pending.iter().map(|p| json!({"node": p.node, "path": p.path(), "message": p.message})).collect::<Vec<_>>(),
        "state": r.state,
        "error": r.error,
        "tokens": row.map(|row| row.tokens),
        "cost": row.and_then(|row| row.cost),
        "costText": row.and_then(|row| row.cost_text.clone()),
        "priced": row.and_then(|row| row.priced),
    })
}

pub(crate) fn finish(outcome: Outcome, store: Option<&dyn Store>, json: bool) -> Result<u8, Unusable> {
    if let Some(e) = &outcome.log_error {
        errln!("warning: {e}");
    }
    let r = &outcome.result;
    // What the run used, as the store kept it (a run that was not stored is not priced).
    let row = store.and_then(|s| session::row(s, &r.run_id).ok());
    if json {
        let out = result_json(r, row.as_ref());
        outln!("{}", serde_json::to_string_pretty(&out).unwrap());
    } else if let Some(row) = row.filter(|row| row.tokens > 0) {
        let cost = row.cost_text.as_ref().map(|text| format!(", {text}")).unwrap_or_default();
        errln!("{}{cost}", counted(row.tokens, "token"));
    }
    print_hints(r.results.values().filter_map(|n| n.error_code.as_deref()));
    if r.status == RunStatus::Paused {
        let decide: Vec<String> = r.pending.iter().map(|p| decide_flag(&p.path())).collect();
        if store.is_some() {
            errln!("paused: resume with `switchyard resume {} {}`", r.run_id, decide.join(" "));
        } else {
            errln!("paused; this run was not stored (--no-store), so it cannot be resumed");
        }
    }
    Ok(match r.status {
        RunStatus::Completed | RunStatus::Paused => 0,
        _ => 1,
    })
}

/// `--decide NODE=approve`, quoted for a shell when the path to a child's node has spaces
/// (`--decide 'summarize › review=approve'`).
fn decide_flag(path: &str) -> String {
    if path.contains(' ') {
        format!("--decide '{path}=approve'")
    } else {
        format!("--decide {path}=approve")
    }
}

/// Who `resume --decide` names as deciding: `--by NAME`, else the login name (`$USER`, `$USERNAME` on Windows); none
/// when neither is set. A blank `--by` is refused.
fn deciding_person(by: Option<String>) -> Result<Option<String>, Unusable> {
    match by {
        Some(name) if name.trim().is_empty() => {
            Err(coded("INVALID_DECISION", "--by is empty: give the name the decisions are made under, or leave it out"))
        }
        Some(name) => Ok(Some(name.trim().to_string())),
        None => Ok(["USER", "USERNAME"]
            .iter()
            .find_map(|var| std::env::var(var).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty()))),
    }
}

/// `--decide NODE=approve|reject[:note]`; NODE may be a path to an approval inside a child run, `summarize › review`
/// (or `summarize>review`): the decision is the `workflow` node's, and is checked against what it waits for.
pub(crate) fn parse_decision(raw: &str) -> Result<(String, Decision), Unusable> {
    let (node, rest) = raw.split_once('=').ok_or_else(|| {
        coded("INVALID_DECISION", format!("--decide {raw}: write NODE=approve or NODE=reject[:note]"))
    })?;
    let (decision, note) = rest.split_once(':').unwrap_or((rest, ""));
    let decision = Decision::parse(decision, note)
        .map_err(|_| coded("INVALID_DECISION", format!("--decide {raw}: the decision must be approve or reject")))?;
    Ok((normal_path(node), decision))
}

/// A path as `PendingApproval::path` writes it: segments separated by ` › ` (`>` also taken), trimmed.
fn normal_path(path: &str) -> String {
    let segments: Vec<&str> = path.split(['›', '>']).map(str::trim).collect();
    segments.join(switchyard_engine::run::PATH_SEPARATOR)
}

/// Decisions named by a path inside a child run, as the run's own: the `workflow` node's, when it waits for exactly
/// that approval (`DECISION_REFUSED` otherwise, saying what it waits for).
fn by_node(
    store: &dyn Store,
    run_id: &str,
    decisions: Vec<(String, Decision)>,
) -> Result<Vec<(String, Decision)>, Unusable> {
    if !decisions.iter().any(|(path, _)| path.contains(switchyard_engine::run::PATH_SEPARATOR)) {
        return Ok(decisions);
    }
    let (_, shown) = session::show(store, run_id)?;
    let waiting: Vec<String> = shown.pending.iter().map(|p| p.path()).collect();
    decisions
        .into_iter()
        .map(|(path, decision)| match path.split_once(switchyard_engine::run::PATH_SEPARATOR) {
            None => Ok((path, decision)),
            Some((node, _)) if waiting.contains(&path) => Ok((node.to_string(), decision)),
            Some(_) => Err(coded(
                "DECISION_REFUSED",
                format!(
                    "--decide {path}: run {run_id} does not wait for that; it waits for: {}",
                    if waiting.is_empty() { "nothing".to_string() } else { waiting.join(", ") }
                ),
            )),
        })
        .collect()
}

pub(crate) async fn cmd_resume(
    db: Option<&str>,
    run_id: &str,
    raw: &[String],
    by: Option<String>,
    json: bool,
    events: Option<PathBuf>,
    allow_code: bool,
) -> Result<u8, Unusable> {
    let decisions = raw.iter().map(|d| parse_decision(d)).collect::<Result<Vec<_>, _>>()?;
    let decisions = match deciding_person(by)? {
        Some(by) => decisions.into_iter().map(|(node, d)| (node, d.by(by.clone()))).collect(),
        None => decisions,
    };
    let store = open_runs(db)?;
    // A short id (History prints the first 8 characters) names the run it begins.
    let run_id = &store.resolve(run_id).map_err(|e| coded(e.code(), e.to_string()))?;
    let decisions = by_node(&*store, run_id, decisions)?;
    let resuming = session::open_to_resume(store.clone(), run_id, allow_code)?;
    if let Some(note) = &resuming.note {
        errln!("note: {note}");
    }
    let lost = resuming.held.lost();
    let driving = session::drive(Drive::stored(resuming).deciding(decisions), sinks(&events, json)?).await?;
    let Some(outcome) = unless_lost(lost, driving.finish()).await else {
        return Ok(claim_lost(run_id, json));
    };
    finish(outcome, Some(&*store), json)
}
