//! `switchyard`: validate, run, resume and export workflows from a terminal or CI. A thin shell over the engine; the
//! contract (arguments, JSON shapes, exit codes) is documented in the README and kept stable.

mod live;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::{json, Value};
use switchyard_engine::events::{Observer, RunLog};
use switchyard_engine::format::{self, Format, Loaded};
use switchyard_engine::model::Model;
use switchyard_engine::providers::{Providers, Settings};
use switchyard_engine::run::{self, Outcome, RunOptions, Runtime};
use switchyard_engine::script::{Script, ScriptedModel};
use switchyard_engine::store::RunStore;
use switchyard_engine::validate::{self, Report};
use switchyard_engine::{RunStatus, Workflow};

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
    },
    /// Resume a paused run with decisions: --decide NODE=approve|reject[:note].
    Resume {
        run_id: String,
        #[arg(long = "decide", required = true)]
        decisions: Vec<String>,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        events: Option<PathBuf>,
    },
    /// List the runs in the run store.
    Runs,
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
        Command::Run { file, input, script, json, events, format, model, step_budget, no_store } => runtime
            .block_on(cmd_run(RunArgs { file, input, script, json, events, format, model, step_budget, no_store })),
        Command::Resume { run_id, decisions, json, events } => {
            runtime.block_on(cmd_resume(&run_id, &decisions, json, events))
        }
        Command::Runs => cmd_runs(),
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

fn check_input(workflow: &Workflow, input: &Option<Value>) -> Result<(), Unusable> {
    let (Some(schema), Some(input)) = (&workflow.input_schema, input) else {
        return Ok(());
    };
    let validator = jsonschema::validator_for(schema).map_err(|e| Unusable(format!("input_schema: {e}")))?;
    let problems: Vec<String> = validator.iter_errors(input).map(|e| e.to_string()).collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Unusable(format!("the input does not match the workflow's input_schema: {}", problems.join("; "))))
    }
}

fn load_script(path: &Option<PathBuf>) -> Result<Option<Arc<Script>>, Unusable> {
    path.as_ref().map(|p| Script::load(p).map(Arc::new).map_err(|e| Unusable(e.to_string()))).transpose()
}

/// The scripted model for an offline run, else the configured providers.
fn model_for(script: &Option<Arc<Script>>, settings: Option<&Settings>) -> Arc<dyn Model> {
    match (script, settings) {
        (Some(s), _) => Arc::new(ScriptedModel::new(s.clone())),
        (None, Some(settings)) => Arc::new(Providers::new(settings)),
        (None, None) => Arc::new(Providers::new(&Settings::default())),
    }
}

fn open_store() -> Result<Arc<RunStore>, Unusable> {
    RunStore::open(&switchyard_engine::store::default_path()).map(Arc::new).map_err(Unusable)
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
    let script = load_script(&args.script)?;
    let settings = settings_unless_scripted(script.is_some())?;
    let options = validation_options(settings.as_ref());
    if let (Some(model), Some(providers)) = (&args.model, options.providers.as_ref()) {
        let provider = model.split_once('/').map_or(model.as_str(), |(p, _)| p);
        if !providers.iter().any(|p| p == provider) {
            return Err(Unusable(format!(
                "--model {model}: provider `{provider}` is not configured (configured: {})",
                providers.join(", ")
            )));
        }
    }
    let mut workflow_for_check = loaded.workflow.clone();
    if args.model.is_some() {
        // --model replaces the workflow's default, so check the references as they will be resolved.
        workflow_for_check.defaults.model = args.model.clone();
    }
    let report = validate::validate(&workflow_for_check, &options);
    if !report.is_ok() {
        print_findings(&args.file, &report);
        return Err(Unusable(format!(
            "{} does not validate ({} errors); nothing was run",
            args.file.display(),
            report.errors.len()
        )));
    }
    if let Some(script) = &script {
        let ids: Vec<&str> = loaded.workflow.nodes.iter().map(|n| n.id.as_str()).collect();
        for unknown in script.unknown_ids(&ids) {
            eprintln!("warning: the script names `{unknown}`, which is not a node of this workflow");
        }
    }
    let input = args.input.as_deref().map(parse_input).transpose()?;
    check_input(&loaded.workflow, &input)?;
    let store = if args.no_store { None } else { Some(open_store()?) };
    let (log, observers) = sinks(store.clone(), &args.events, args.json)?;
    let workflow = Arc::new(loaded.workflow);
    // A node's model, else --model, else the workflow's default, else the settings' default.
    let fallback =
        settings.as_ref().filter(|_| workflow.defaults.model.is_none()).and_then(|s| s.default_model.clone());
    let options =
        RunOptions { input, step_budget: args.step_budget, model: args.model.or(fallback), ..RunOptions::default() };
    let runtime = Runtime { model: model_for(&script, settings.as_ref()), script, log, observers, on_pause: None };
    let outcome = run::run(workflow, options, runtime).await;
    let workflow_path = std::fs::canonicalize(&args.file).unwrap_or(args.file.clone());
    let script_path = args.script.as_ref().map(|p| std::fs::canonicalize(p).unwrap_or(p.clone()));
    finish(outcome, store.as_deref(), &workflow_path, script_path.as_deref(), args.format, args.json)
}

fn finish(
    outcome: Outcome,
    store: Option<&RunStore>,
    workflow: &Path,
    script: Option<&Path>,
    format: Option<Format>,
    json: bool,
) -> Result<u8, Unusable> {
    if let Some(e) = &outcome.log_error {
        eprintln!("warning: {e}");
    }
    let r = &outcome.result;
    if let Some(store) = store {
        let workflow_ref = match format {
            Some(f) => format!("{}#{}", workflow.display(), f.name()),
            None => workflow.display().to_string(),
        };
        let script = script.map(|p| p.display().to_string());
        if let Err(e) =
            store.save(&r.run_id, &workflow_ref, script.as_deref(), r.status.as_str(), outcome.snapshot.as_ref())
        {
            eprintln!("warning: {e}");
        }
    }
    if json {
        let out = json!({
            "runId": r.run_id,
            "status": r.status,
            "results": r.results,
            "trace": r.trace,
            "pending": r.pending.iter().map(|p| json!({"node": p.node, "message": p.message})).collect::<Vec<_>>(),
            "state": r.state,
            "error": r.error,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap());
    }
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
    let stored = store.load(run_id).map_err(Unusable)?.ok_or_else(|| {
        Unusable(format!("no run `{run_id}` in {}; `switchyard runs` lists them", store.path().display()))
    })?;
    let Some(snapshot) = stored.snapshot.clone() else {
        return Err(Unusable(format!(
            "run `{run_id}` is {}, not paused; only paused runs can be resumed",
            stored.status
        )));
    };
    let (path, format) = match stored.workflow_path.rsplit_once('#') {
        Some((p, f)) if Format::from_name(f).is_some() => (PathBuf::from(p), Format::from_name(f)),
        _ => (PathBuf::from(&stored.workflow_path), None),
    };
    let loaded = load(&path, format)?;
    let script_path = stored.script_path.as_ref().map(PathBuf::from);
    let script = load_script(&script_path)?;
    let (log, observers) = sinks(Some(store.clone()), &events, json)?;
    let settings = settings_unless_scripted(script.is_some())?;
    let runtime = Runtime { model: model_for(&script, settings.as_ref()), script, log, observers, on_pause: None };
    let outcome = run::resume(Arc::new(loaded.workflow), snapshot, decisions, runtime).await.map_err(Unusable)?;
    finish(outcome, Some(&store), &path, script_path.as_deref(), format, json)
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

fn cmd_runs() -> Result<u8, Unusable> {
    let store = open_store()?;
    for (id, status, path) in store.list().map_err(Unusable)? {
        println!("{id}  {status:<9}  {path}");
    }
    Ok(0)
}
