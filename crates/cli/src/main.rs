//! `switchyard`: validate, run, resume and export workflows from a terminal or CI. A thin shell over the engine; the
//! contract (arguments, JSON shapes, exit codes) is documented in the README and kept stable.

mod live;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::{json, Value};
use switchyard_engine::events::{Collector, Event, EventKind, Observer, RunLog};
use switchyard_engine::format::{self, Format, Loaded};
use switchyard_engine::providers::{Providers, Settings};
use switchyard_engine::run::{self, Outcome, Runtime};
use switchyard_engine::session::{self, Continuing, Prepared, RunRequest, SessionError, WorkflowRef};
use switchyard_engine::store::{RunState, RunStore};
use switchyard_engine::validate::{self, Report};
use switchyard_engine::RunStatus;

#[derive(Parser)]
#[command(name = "switchyard", version, about = "Validate, run and export AI-agent workflows headless.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a workflow. Exit 0: no errors; 1: errors; 2: the file cannot be read or parsed.
    Validate {
        file: PathBuf,
        /// Print {"errors": [...], "warnings": [...]} on stdout.
        #[arg(long)]
        json: bool,
        /// Read the file as this format instead of detecting it.
        #[arg(long, value_parser = parse_format)]
        format: Option<Format>,
        /// A script file supplies the answers, so model providers are not checked.
        #[arg(long)]
        script: Option<PathBuf>,
    },
    /// Validate, then run a workflow. Exit 0: completed or paused; 1: failed or cancelled; 2: cannot load or invalid.
    Run {
        file: PathBuf,
        /// Run input: JSON, plain text, or @FILE.
        #[arg(long)]
        input: Option<String>,
        /// Script file with node answers, routing decisions and approvals (an offline run).
        #[arg(long)]
        script: Option<PathBuf>,
        /// Print one JSON object with the result on stdout.
        #[arg(long)]
        json: bool,
        /// Write every event as one JSON object per line to this file.
        #[arg(long)]
        events: Option<PathBuf>,
        #[arg(long, value_parser = parse_format)]
        format: Option<Format>,
        /// Default model for agents that name none (provider/model).
        #[arg(long)]
        model: Option<String>,
        /// Most node executions for this run.
        #[arg(long)]
        step_budget: Option<u32>,
        /// Do not record the run in the run store.
        #[arg(long)]
        no_store: bool,
        /// With --from: take this stored run's results for every node upstream of the --from node.
        #[arg(long, requires = "from")]
        reuse: Option<String>,
        /// With --reuse: the node to run from; it and everything after it run for real.
        #[arg(long, requires = "reuse")]
        from: Option<String>,
    },
    /// Continue a paused or interrupted run. Nodes that completed are not run again; approvals are decided with
    /// --decide NODE=approve|reject[:note].
    Resume {
        run_id: String,
        #[arg(long = "decide")]
        decisions: Vec<String>,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        events: Option<PathBuf>,
    },
    /// List the runs in the run store, newest first.
    Runs {
        /// Print a JSON array of {id, workflow, status, started, durationMs, pending}.
        #[arg(long)]
        json: bool,
    },
    /// Print a stored run's result, as `run` printed it.
    Show {
        run_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Play a stored run again from its recorded answers and decisions, with no model or tool call.
    Replay {
        run_id: String,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        events: Option<PathBuf>,
    },
    /// List the configured model providers and whether each answers.
    Providers,
    /// Print the canonical document.
    Export {
        file: PathBuf,
        #[arg(long, value_enum, default_value = "yaml")]
        to: ExportFormat,
        #[arg(long, value_parser = parse_format)]
        format: Option<Format>,
    },
    /// Print the JSON Schema of the canonical format.
    Schema,
}

#[derive(Clone, Copy, ValueEnum)]
enum ExportFormat {
    Yaml,
    Json,
}

fn parse_format(s: &str) -> Result<Format, String> {
    Format::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        format!("unknown format `{s}`; expected one of {}", names.join(", "))
    })
}

/// Exit 2: the input could not be used at all.
struct Unusable(String);

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime starts");
    let code = match cli.command {
        Command::Validate { file, json, format, script } => cmd_validate(&file, json, format, script.is_some()),
        Command::Export { file, to, format } => cmd_export(&file, to, format),
        Command::Schema => {
            print!("{}", switchyard_engine::schema::workflow_schema_json());
            Ok(0)
        }
        Command::Run { file, input, script, json, events, format, model, step_budget, no_store, reuse, from } => {
            let reuse = reuse.zip(from);
            runtime.block_on(cmd_run(RunArgs {
                file,
                input,
                script,
                json,
                events,
                format,
                model,
                step_budget,
                no_store,
                reuse,
            }))
        }
        Command::Resume { run_id, decisions, json, events } => {
            runtime.block_on(cmd_resume(&run_id, &decisions, json, events))
        }
        Command::Runs { json } => cmd_runs(json),
        Command::Show { run_id, json } => cmd_show(&run_id, json),
        Command::Replay { run_id, json, events } => cmd_replay(&run_id, json, events),
        Command::Providers => runtime.block_on(cmd_providers()),
    };
    match code {
        Ok(c) => ExitCode::from(c),
        Err(Unusable(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn load(file: &Path, format: Option<Format>) -> Result<Loaded, Unusable> {
    let loaded = format::load_file(file, format).map_err(|e| Unusable(e.to_string()))?;
    for note in &loaded.notes {
        eprintln!("note: {}: {note}", file.display());
    }
    Ok(loaded)
}

fn settings() -> Result<Settings, Unusable> {
    Settings::load(&Settings::default_path()).map_err(|e| Unusable(e.to_string()))
}

/// The provider settings a run needs: none when a script answers everything.
fn settings_unless_scripted(scripted: bool) -> Result<Option<Settings>, Unusable> {
    if scripted {
        Ok(None)
    } else {
        settings().map(Some)
    }
}

/// With a script every answer is scripted, so providers are not checked; without, nodes must name configured ones.
fn validation_options(settings: Option<&Settings>) -> validate::Options {
    validate::Options { providers: settings.map(Settings::provider_ids) }
}

fn print_findings(file: &Path, report: &Report) {
    for (kind, list) in [("error", &report.errors), ("warning", &report.warnings)] {
        for f in list {
            let at = match (&f.node, &f.edge) {
                (Some(n), _) => format!(" node `{n}`"),
                (None, Some(e)) => format!(" edge `{e}`"),
                _ => String::new(),
            };
            eprintln!("{kind}: {}:{at} [{}] {}", file.display(), f.code, f.message);
        }
    }
}

fn cmd_validate(file: &Path, json: bool, format: Option<Format>, scripted: bool) -> Result<u8, Unusable> {
    let loaded = load(file, format)?;
    let report =
        validate::validate(&loaded.workflow, &validation_options(settings_unless_scripted(scripted)?.as_ref()));
    if json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap());
    } else {
        print_findings(file, &report);
        if report.is_ok() {
            println!(
                "{}: valid ({} nodes, {} edges, {} warnings)",
                file.display(),
                loaded.workflow.nodes.len(),
                loaded.workflow.edges.len(),
                report.warnings.len()
            );
        }
    }
    Ok(if report.is_ok() { 0 } else { 1 })
}

fn cmd_export(file: &Path, to: ExportFormat, format: Option<Format>) -> Result<u8, Unusable> {
    let loaded = load(file, format)?;
    let report = validate::validate(&loaded.workflow, &validation_options(None));
    print_findings(file, &report);
    match to {
        ExportFormat::Yaml => print!("{}", format::to_yaml(&loaded.workflow)),
        ExportFormat::Json => print!("{}", format::to_json(&loaded.workflow)),
    }
    Ok(if report.is_ok() { 0 } else { 1 })
}

struct RunArgs {
    file: PathBuf,
    input: Option<String>,
    script: Option<PathBuf>,
    json: bool,
    events: Option<PathBuf>,
    format: Option<Format>,
    model: Option<String>,
    step_budget: Option<u32>,
    no_store: bool,
    /// A stored run, and the node to run from.
    reuse: Option<(String, String)>,
}

fn parse_input(raw: &str) -> Result<Value, Unusable> {
    let text = match raw.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| Unusable(format!("cannot read input file {path}: {e}")))?
        }
        None => raw.to_string(),
    };
    Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn open_store() -> Result<Arc<RunStore>, Unusable> {
    RunStore::open(&switchyard_engine::store::default_path()).map(Arc::new).map_err(|e| Unusable(e.to_string()))
}

/// Run logs and observers for one CLI run: the store, an --events file, and the live log.
/// Where a run's events go: the durable log (written first) and the observers.
type Sinks = (Option<Arc<dyn RunLog>>, Vec<Arc<dyn Observer>>);

fn sinks(store: Option<Arc<RunStore>>, events: &Option<PathBuf>, json: bool) -> Result<Sinks, Unusable> {
    let mut logs: Vec<Arc<dyn RunLog>> = Vec::new();
    if let Some(store) = store {
        logs.push(store);
    }
    if let Some(path) = events {
        logs.push(Arc::new(live::JsonLines::create(path).map_err(Unusable)?));
    }
    let observers: Vec<Arc<dyn Observer>> = if json { Vec::new() } else { vec![Arc::new(live::LiveLog)] };
    let log: Option<Arc<dyn RunLog>> = match logs.len() {
        0 => None,
        1 => logs.pop(),
        _ => Some(Arc::new(live::Tee(logs))),
    };
    Ok((log, observers))
}

async fn cmd_run(args: RunArgs) -> Result<u8, Unusable> {
    let loaded = load(&args.file, args.format)?;
    let input = args.input.as_deref().map(parse_input).transpose()?;
    // The store keeps the run; running from a node reads an earlier run from it even with --no-store.
    let store = if args.no_store && args.reuse.is_none() { None } else { Some(open_store()?) };
    let request = RunRequest {
        workflow_ref: Some(WorkflowRef::new(&args.file, args.format)),
        input,
        script_path: args.script.clone(),
        model: args.model.clone(),
        step_budget: args.step_budget,
        reuse: args.reuse.clone(),
    };
    let prepared = match session::prepare(loaded.workflow, request, store.as_deref()) {
        Ok(prepared) => prepared,
        Err(SessionError::Invalid { report, count, .. }) => {
            print_findings(&args.file, &report);
            return Err(Unusable(format!(
                "{} does not validate ({count} errors); nothing was run",
                args.file.display()
            )));
        }
        // Named as the option that asked for it: "--model x/y: provider `x` is not configured".
        Err(e @ SessionError::UnknownProvider { .. }) => return Err(Unusable(format!("--{e}"))),
        Err(e) => return Err(Unusable(e.to_string())),
    };
    for warning in &prepared.warnings {
        eprintln!("warning: {warning}");
    }
    if let Some((run_id, from)) = &args.reuse {
        eprintln!("reusing {} node result(s) of run {run_id} upstream of `{from}`", prepared.reused);
    }
    let store = if args.no_store { None } else { store };
    // The run's row is written before its first event, and this process holds the run while it lives.
    let _claim = match &store {
        Some(store) => Some(session::begin(store, &prepared).map_err(|e| Unusable(e.to_string()))?),
        None => None,
    };
    let (log, observers) = sinks(store.clone(), &args.events, args.json)?;
    let Prepared { workflow, options, script, model, .. } = prepared;
    let runtime = Runtime { model, script, log, observers };
    let outcome = run::run(workflow, options, runtime).await;
    finish(outcome, store.is_some(), args.json)
}

/// The result object `run --json` prints.
fn result_json(r: &switchyard_engine::RunResult) -> Value {
    json!({
        "runId": r.run_id,
        "status": r.status,
        "results": r.results,
        "trace": r.trace,
        "pending": r.pending.iter().map(|p| json!({"node": p.node, "message": p.message})).collect::<Vec<_>>(),
        "state": r.state,
        "error": r.error,
    })
}

fn finish(outcome: Outcome, stored: bool, json: bool) -> Result<u8, Unusable> {
    if let Some(e) = &outcome.log_error {
        eprintln!("warning: {e}");
    }
    let r = &outcome.result;
    if json {
        println!("{}", serde_json::to_string_pretty(&result_json(r)).unwrap());
    }
    let store = stored.then_some(());
    if r.status == RunStatus::Paused {
        let decide: Vec<String> = r.pending.iter().map(|p| format!("--decide {}=approve", p.node)).collect();
        if store.is_some() {
            eprintln!("paused: resume with `switchyard resume {} {}`", r.run_id, decide.join(" "));
        } else {
            eprintln!("paused; this run was not stored (--no-store), so it cannot be resumed");
        }
    }
    Ok(match r.status {
        RunStatus::Completed | RunStatus::Paused => 0,
        _ => 1,
    })
}

fn parse_decision(raw: &str) -> Result<(String, Value), Unusable> {
    let (node, rest) = raw
        .split_once('=')
        .ok_or_else(|| Unusable(format!("--decide {raw}: write NODE=approve or NODE=reject[:note]")))?;
    let (decision, note) = rest.split_once(':').unwrap_or((rest, ""));
    if !["approve", "reject"].contains(&decision) {
        return Err(Unusable(format!("--decide {raw}: the decision must be approve or reject")));
    }
    Ok((node.to_string(), json!({"decision": decision, "note": note})))
}

async fn cmd_resume(run_id: &str, raw: &[String], json: bool, events: Option<PathBuf>) -> Result<u8, Unusable> {
    let decisions = raw.iter().map(|d| parse_decision(d)).collect::<Result<Vec<_>, _>>()?;
    let store = open_store()?;
    let continuing = session::continue_run(&store, run_id).map_err(|e| Unusable(e.to_string()))?;
    if let Some(note) = &continuing.note {
        eprintln!("note: {note}");
    }
    let (log, observers) = sinks(Some(store.clone()), &events, json)?;
    let Continuing { stored, claim: _claim, script, model, .. } = continuing;
    let runtime = Runtime { model, script, log, observers };
    let outcome = run::resume(Arc::new(stored.workflow), stored.options, stored.recording, decisions, runtime)
        .await
        .map_err(Unusable)?;
    finish(outcome, true, json)
}

fn cmd_runs(json: bool) -> Result<u8, Unusable> {
    let store = open_store()?;
    let runs = store.list().map_err(|e| Unusable(e.to_string()))?;
    if json {
        let rows: Vec<Value> = runs
            .iter()
            .map(|r| {
                json!({
                    "id": r.id,
                    "workflow": r.workflow_ref.clone().unwrap_or_else(|| r.workflow.clone()),
                    "status": r.status,
                    "started": r.started,
                    "durationMs": r.duration_ms,
                    "pending": r.pending,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows).unwrap());
        return Ok(0);
    }
    for r in runs {
        let pending = if r.pending.is_empty() { String::new() } else { format!("  waits: {}", r.pending.join(", ")) };
        println!(
            "{}  {:<11}  {}  {:>8}  {}{pending}",
            r.id,
            r.status.as_str(),
            r.started.get(..19).unwrap_or(&r.started),
            format_duration(r.duration_ms),
            r.workflow_ref.as_deref().unwrap_or(&r.workflow),
        );
    }
    Ok(0)
}

fn format_duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
    }
}

/// Rebuilds a stored run's result from its recording (no model call), as `run --json` printed it.
fn cmd_show(run_id: &str, json: bool) -> Result<u8, Unusable> {
    let store = open_store()?;
    let stored = store.load(run_id).map_err(|e| Unusable(e.to_string()))?;
    let status = stored.row.status;
    let runtime = Runtime {
        model: Arc::new(Providers::new(&Settings::default())),
        script: None,
        log: None,
        observers: Vec::new(),
    };
    let outcome =
        run::replay(Arc::new(stored.workflow), stored.options, stored.recording, runtime).map_err(Unusable)?;
    let mut out = result_json(&outcome.result);
    if matches!(status, RunState::Interrupted | RunState::Running) {
        out["status"] = json!(status);
        out["error"] = json!(format!("the run is {}; `switchyard resume {run_id}` continues it", status.as_str()));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out).unwrap());
    } else {
        println!("run {run_id}: {} ({})", status.as_str(), stored.row.workflow);
        for (node, result) in &outcome.result.results {
            let text = result.error.clone().unwrap_or_else(|| run::output_text(&result.data));
            let text: String = text.chars().take(100).collect();
            println!("  {node:<20} {:<9} {}", format!("{:?}", result.status).to_lowercase(), text.replace('\n', " "));
        }
    }
    Ok(0)
}

/// Plays a stored run again from its recording: the same events, results and trace, with no model or tool call.
fn cmd_replay(run_id: &str, json: bool, events: Option<PathBuf>) -> Result<u8, Unusable> {
    let store = open_store()?;
    let stored = store.load(run_id).map_err(|e| Unusable(e.to_string()))?;
    let recorded = stored.recording.events.clone();
    let (log, mut observers) = sinks(None, &events, json)?;
    let produced = Collector::default();
    observers.push(Arc::new(produced.clone()));
    let runtime = Runtime { model: Arc::new(Providers::new(&Settings::default())), script: None, log, observers };
    let outcome =
        run::replay(Arc::new(stored.workflow), stored.options, stored.recording, runtime).map_err(Unusable)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&result_json(&outcome.result)).unwrap());
    }
    // The replay must tell the same story; where it does not, the engine (or the store) changed.
    let same = |a: &Event, b: &Event| a.seq == b.seq && normalized(&a.kind) == normalized(&b.kind);
    let produced = produced.events();
    if let Some(at) = (0..produced.len().max(recorded.len()))
        .find(|&i| !matches!((produced.get(i), recorded.get(i)), (Some(a), Some(b)) if same(a, b)))
    {
        let kind =
            |e: Option<&Event>| e.map_or("nothing".to_string(), |e| format!("{} #{}", e.kind.type_name(), e.seq));
        eprintln!(
            "warning: the replay differs from the recording at event {}: recorded {}, replayed {}",
            at + 1,
            kind(recorded.get(at)),
            kind(produced.get(at))
        );
        return Ok(1);
    }
    Ok(match outcome.result.status {
        RunStatus::Completed | RunStatus::Paused => 0,
        _ => 1,
    })
}

/// An event's payload with what a replay does not reproduce (how long quick nodes took) left out.
fn normalized(kind: &EventKind) -> EventKind {
    let mut kind = kind.clone();
    if let EventKind::NodeExit { duration_ms, .. } = &mut kind {
        *duration_ms = 0;
    }
    kind
}

async fn cmd_providers() -> Result<u8, Unusable> {
    let settings = settings()?;
    println!("settings: {}", Settings::default_path().display());
    let mut all_ok = true;
    for (id, status) in Providers::check(&settings).await {
        match status {
            Ok(detail) => println!("{id:<12} ok       {detail}"),
            Err(why) => {
                all_ok = false;
                println!("{id:<12} no       {why}");
            }
        }
    }
    if let Some(model) = &settings.default_model {
        println!("default model: {model}");
    }
    Ok(if all_ok { 0 } else { 1 })
}
