//! `switchyard`: validate, run, resume and export workflows from a terminal or CI. A thin shell over the engine; the
//! contract (arguments, JSON shapes, exit codes) is documented in the README and kept stable.

mod eval;
mod live;
mod out;
mod serve;
mod worker;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use out::{counted, errln, out, outln, printable};
use serde_json::{json, Value};
use switchyard_engine::code::consent::TrustStore;
use switchyard_engine::events::Event;
use switchyard_engine::format::{self, Format, Loaded};
use switchyard_engine::journal;
use switchyard_engine::log::{Observer, RunLog};
use switchyard_engine::providers::{self, DefaultSource, Providers, Settings};
use switchyard_engine::run::{self, Outcome};
use switchyard_engine::session::{self, RunRequest, SessionError, Sinks, WorkflowRef};
use switchyard_engine::store::{Claim, RunRow, RunStore, Signal, Store, StoredStatus};
use switchyard_engine::validate::{self, Report};
use switchyard_engine::RunStatus;

#[derive(Parser)]
#[command(name = "switchyard", version, about = "Validate, run and export AI-agent workflows headless.")]
struct Cli {
    /// The run store: an SQLite file (a path, or sqlite:PATH; the default is runs.sqlite in the data folder) or a
    /// PostgreSQL database (postgres://user@host:port/db) that workers share. Also $SWITCHYARD_DB. Used by run, runs,
    /// show, resume and replay; worker, serve and token need a PostgreSQL one.
    #[arg(long, global = true, value_name = "URL")]
    db: Option<String>,
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
        /// An answers file supplies every model answer, so model providers are not checked (`--script` is the same).
        #[arg(long = "answers", alias = "script", value_name = "FILE")]
        answers: Option<PathBuf>,
    },
    /// Validate, then run a workflow. Exit 0: completed or paused; 1: failed or cancelled; 2: cannot load or invalid.
    Run {
        file: PathBuf,
        /// Run input: JSON, plain text, or @FILE.
        #[arg(long)]
        input: Option<String>,
        /// Answers file with node answers, routing decisions and approvals: an offline run (`--script` is the same).
        #[arg(long = "answers", alias = "script", value_name = "FILE")]
        answers: Option<PathBuf>,
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
        /// Fork this stored run: a run from the --at node where the model said --answer instead; everything before
        /// it is reused at no model or tool call.
        #[arg(long, requires_all = ["at", "answer"], conflicts_with = "reuse", value_name = "RUN")]
        fork: Option<String>,
        /// With --fork: NODE (its result is the answer) or NODE#TURN (what the model said at that turn of NODE's
        /// conversation, from 1; the turns and tool calls before it are replayed).
        #[arg(long, requires = "fork", value_name = "NODE[#TURN]")]
        at: Option<String>,
        /// With --fork: the answer, as text (JSON for a node with an output schema), or @FILE.
        #[arg(long, requires = "fork", value_name = "TEXT|@FILE")]
        answer: Option<String>,
        /// Let this run execute the workflow's code steps (python, javascript, bash, lua). Without it, code runs
        /// only when `switchyard trust FILE` recorded this version of the workflow's code.
        #[arg(long)]
        allow_code: bool,
        /// Do not run it here: record it in the PostgreSQL run store (--db postgres://…) for a worker to run, print
        /// its id and exit.
        #[arg(long, conflicts_with_all = ["no_store", "events", "reuse"])]
        detach: bool,
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
        /// Let the run's code steps execute (see `run --allow-code`).
        #[arg(long)]
        allow_code: bool,
    },
    /// Allow a workflow's code steps to run from now on, until their code changes: records the fingerprint of
    /// this version of its code (and of the tool modules it calls) in the trust file beside the settings.
    Trust {
        file: PathBuf,
        #[arg(long, value_parser = parse_format)]
        format: Option<Format>,
        /// Forget every version recorded for this file instead.
        #[arg(long)]
        forget: bool,
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
    /// List the MCP servers in the settings: whether each starts and answers, and its tools. Exit 1 if one fails.
    Mcp {
        /// Print a JSON array of {name, transport, ok, error?, tools: [{name, description, destructive}]}.
        #[arg(long)]
        json: bool,
    },
    /// Print the canonical document.
    Export {
        file: PathBuf,
        #[arg(long, value_enum, default_value = "yaml")]
        to: ExportFormat,
        #[arg(long, value_parser = parse_format)]
        format: Option<Format>,
    },
    /// Print the JSON Schema of the canonical format (with --evals: of evaluation files).
    Schema {
        #[arg(long)]
        evals: bool,
    },
    /// Take runs from a PostgreSQL run store (--db postgres://…) and run them, several at a time, until SIGTERM or
    /// Ctrl-C: then take nothing more, let its runs finish for --grace seconds, and give up the rest to other workers.
    Worker(worker::WorkerArgs),
    /// Serve the HTTP API for a PostgreSQL run store (--db postgres://…): start runs of the workflows in a folder
    /// (through the API, webhooks and schedules), follow their events, decide approvals, cancel. Workers run them.
    Serve(serve::ServeArgs),
    /// Create, revoke and list the server's API tokens (kept hashed in the PostgreSQL run store).
    #[command(subcommand)]
    Token(serve::TokenCommand),
    /// Run an evaluation file's cases and check what each expects (docs/evals.md). Exit 0: the pass rate meets
    /// --min-pass-rate; 1: it does not; 2: the file cannot be used. `eval add RUN_ID` makes a case of a stored run.
    Eval(eval::EvalCli),
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

/// Exit 2: the input could not be used at all. With `--json` the errors are printed as one JSON object on stdout, so
/// a tool reading it always has something to parse.
struct Unusable {
    message: String,
    /// `{code, message, line?}` objects (or validation findings).
    errors: Vec<Value>,
}

fn coded(code: &str, message: impl Into<String>) -> Unusable {
    let message = message.into();
    Unusable { errors: vec![json!({"code": code, "message": message})], message }
}

impl From<format::LoadError> for Unusable {
    fn from(e: format::LoadError) -> Unusable {
        let mut error = json!({"code": e.code, "message": e.to_string()});
        if let Some(line) = e.line {
            error["line"] = json!(line);
        }
        Unusable { message: e.to_string(), errors: vec![error] }
    }
}

impl From<SessionError> for Unusable {
    fn from(e: SessionError) -> Unusable {
        let errors = match &e {
            SessionError::Invalid { report, .. } => {
                report.errors.iter().map(|f| serde_json::to_value(f).expect("a finding is JSON")).collect()
            }
            e => vec![json!({"code": e.code(), "message": e.to_string()})],
        };
        Unusable { message: e.to_string(), errors }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return arguments_refused(e),
    };
    let db = cli.db.clone().or_else(|| std::env::var("SWITCHYARD_DB").ok()).filter(|d| !d.trim().is_empty());
    // With --json, even a command that cannot go on prints one JSON object; a run says it was invalid.
    let json_errors = match &cli.command {
        Command::Validate { json: true, .. }
        | Command::Runs { json: true }
        | Command::Show { json: true, .. }
        | Command::Mcp { json: true }
        | Command::Eval(eval::EvalCli { json: true, .. }) => Some(false),
        Command::Run { json: true, .. } | Command::Resume { json: true, .. } | Command::Replay { json: true, .. } => {
            Some(true)
        }
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime starts");
    let code = match cli.command {
        Command::Validate { file, json, format, answers } => {
            runtime.block_on(cmd_validate(&file, json, format, answers.is_some()))
        }
        Command::Export { file, to, format } => cmd_export(&file, to, format),
        Command::Schema { evals: false } => {
            out!("{}", switchyard_engine::schema::workflow_schema_json());
            Ok(0)
        }
        Command::Schema { evals: true } => {
            out!("{}", switchyard_engine::eval::schema_json());
            Ok(0)
        }
        Command::Eval(args) => {
            // Evaluations keep their cases' runs and their reports beside each other, in the SQLite file.
            if cli.db.is_some() {
                errln!("warning: --db is not used by eval: its runs and reports are kept in the SQLite run store");
            }
            runtime.block_on(eval::cmd(args))
        }
        Command::Run {
            file,
            input,
            answers,
            json,
            events,
            format,
            model,
            step_budget,
            no_store,
            reuse,
            from,
            fork,
            at,
            answer,
            allow_code,
            detach,
        } => {
            let reuse = reuse.zip(from);
            let fork = match (fork, at, answer) {
                (Some(run), Some(at), Some(answer)) => Some((run, at, answer)),
                _ => None,
            };
            runtime.block_on(cmd_run(RunArgs {
                db,
                detach,
                file,
                input,
                answers,
                json,
                events,
                format,
                model,
                step_budget,
                no_store,
                reuse,
                fork,
                allow_code,
            }))
        }
        Command::Resume { run_id, decisions, json, events, allow_code } => {
            runtime.block_on(cmd_resume(db.as_deref(), &run_id, &decisions, json, events, allow_code))
        }
        Command::Worker(args) => runtime.block_on(worker::cmd(db.as_deref(), args)),
        Command::Serve(args) => runtime.block_on(serve::cmd_serve(db.as_deref(), args)),
        Command::Token(command) => serve::cmd_token(db.as_deref(), command),
        Command::Trust { file, format, forget } => cmd_trust(&file, format, forget),
        Command::Runs { json } => cmd_runs(db.as_deref(), json),
        Command::Show { run_id, json } => cmd_show(db.as_deref(), &run_id, json),
        Command::Replay { run_id, json, events } => cmd_replay(db.as_deref(), &run_id, json, events),
        Command::Providers => runtime.block_on(cmd_providers()),
        Command::Mcp { json } => runtime.block_on(cmd_mcp(json)),
    };
    match code {
        Ok(c) => ExitCode::from(c),
        Err(unusable) => unusable_exit(unusable, json_errors),
    }
}

/// Exit 2 for input that cannot be used: the error on stderr, and with `--json` one JSON object on stdout (with
/// `"status": "invalid"` for the commands that print a run, `json_errors == Some(true)`).
fn unusable_exit(Unusable { message, errors }: Unusable, json_errors: Option<bool>) -> ExitCode {
    // A single problem's code, for scripts and docs/errors.md, unless the message or a hint line says it.
    let codes: Vec<&str> = errors.iter().filter_map(|e| e["code"].as_str()).collect();
    match codes.as_slice() {
        [code] if !message.contains(&format!("[{code}]")) && hint(code).is_none() => {
            errln!("error: {message} [{code}]")
        }
        _ => errln!("error: {message}"),
    }
    print_hints(errors.iter().filter_map(|e| e["code"].as_str()));
    match json_errors {
        Some(true) => outln!("{}", json!({"status": "invalid", "errors": errors})),
        Some(false) => outln!("{}", json!({"errors": errors})),
        None => {}
    }
    ExitCode::from(2)
}

/// A command line clap refuses. `--help` and `--version` print as clap prints them; a mistake is clap's text (usage
/// and all) on stderr, exit 2, and when the command takes `--json` and was given it, also the JSON object that
/// command prints for any input it cannot use, with `INVALID_ARGUMENTS`, so a script reading stdout has it.
fn arguments_refused(e: clap::Error) -> ExitCode {
    use clap::CommandFactory;
    let args: Vec<String> = std::env::args().skip(1).take_while(|a| a != "--").collect();
    let cli = Cli::command();
    let command = args.iter().find_map(|a| cli.find_subcommand(a));
    let takes_json = command.is_some_and(|c| c.get_arguments().any(|a| a.get_id() == "json"));
    if !e.use_stderr() || !takes_json || !args.iter().any(|a| a == "--json") {
        e.exit()
    }
    let _ = e.print();
    // clap's text up to its usage, on one line: `unexpected argument '--x' found; tip: a similar argument exists: …`.
    let said = e.to_string();
    let mut message = String::new();
    for line in said.lines().map(str::trim).take_while(|l| !l.starts_with("Usage:")) {
        let line = line.strip_prefix("error: ").unwrap_or(line);
        if line.is_empty() || line.starts_with("For more information") {
            continue;
        }
        if !message.is_empty() {
            message.push_str(if message.ends_with(':') { " " } else { "; " });
        }
        message.push_str(line);
    }
    let status = command.is_some_and(|c| matches!(c.get_name(), "run" | "resume" | "replay"));
    let Unusable { errors, .. } = coded("INVALID_ARGUMENTS", message);
    match status {
        true => outln!("{}", json!({"status": "invalid", "errors": errors})),
        false => outln!("{}", json!({"errors": errors})),
    }
    ExitCode::from(2)
}

fn load(file: &Path, format: Option<Format>) -> Result<Loaded, Unusable> {
    let loaded = format::load_file(file, format).map_err(Unusable::from)?;
    print_notes(file, &loaded.notes);
    Ok(loaded)
}

fn settings() -> Result<Settings, Unusable> {
    Settings::load(&Settings::default_path()).map_err(|e| coded(e.code(), e.to_string()))
}

/// What to do about a problem with this code, in this command line's words. The engine's messages state the problem
/// and carry a stable code; what fixes it (a flag, a command) belongs to each front end.
fn hint(code: &str) -> Option<&'static str> {
    Some(match code {
        "NO_MODEL" => "pass --model PROVIDER/MODEL, set default_model in the settings, or start a local model server (or point $SWITCHYARD_LOCAL_URL at one)",
        "CODE_NEEDS_CONSENT" => "run with --allow-code, or `switchyard trust FILE` once for this version of its code",
        "UNKNOWN_PROVIDER" => "add the provider to the settings, or run offline with --answers FILE",
        "NO_SUCH_RUN" => "`switchyard runs` lists the stored runs",
        "NO_WORKERS" => "pass --db postgres://… (or set SWITCHYARD_DB) to a database your workers take runs from",
        "WORKER_NEEDS_POSTGRES" => "pass --db postgres://user@host:port/db (or set SWITCHYARD_DB)",
        "POSTGRES_NOT_BUILT" => "build switchyard with its default features (or `--features postgres`)",
        "PG_CONNECT" => "check the URL, and that the server runs and accepts this user (`pg_isready -d URL`)",
        "RUN_IN_USE" => "another process runs it now; `switchyard runs` shows when it pauses or ends",
        _ => return None,
    })
}

/// One `hint:` line per distinct code that has one, after the problems it concerns.
fn print_hints<'a>(codes: impl IntoIterator<Item = &'a str>) {
    let mut seen = std::collections::BTreeSet::new();
    for code in codes {
        if let Some(hint) = hint(code).filter(|_| seen.insert(code)) {
            errln!("hint: [{code}] {hint}");
        }
    }
}

/// The findings, then what to do about them.
fn print_findings(file: &Path, report: &Report) {
    print_list(file, report);
    print_hints(report.errors.iter().chain(&report.warnings).map(|f| f.code));
}

/// Findings of one code past this many are summed up in one line naming where they are (`--json` lists them all).
const SHOWN_PER_CODE: usize = 3;

fn print_list(file: &Path, report: &Report) {
    for (kind, list) in [("error", &report.errors), ("warning", &report.warnings)] {
        let lines = list.iter().map(|f| Said {
            kind: f.code.to_string(),
            place: place(f).trim_start().to_string(),
            line: format!("{kind}: {}:{} [{}] {}", file.display(), place(f), f.code, f.message),
        });
        print_grouped(lines, |code, more| {
            format!("{kind}: {}: [{code}] {more} (--json lists every one)", file.display())
        });
    }
}

/// One line the CLI prints of a kind that may repeat: what kind it is, where it is (`node `a``, or empty), the line.
struct Said {
    kind: String,
    place: String,
    line: String,
}

/// Lines grouped by kind, in the order each kind first appears: the first `SHOWN_PER_CODE` of a kind, then one line
/// (`summary(kind, "N more like these, at node `a`, node `b`, …")`) for the rest, naming each place once.
fn print_grouped(lines: impl IntoIterator<Item = Said>, summary: impl Fn(&str, &str) -> String) {
    let mut by_kind: Vec<(String, Vec<Said>)> = Vec::new();
    for said in lines {
        match by_kind.iter_mut().find(|(kind, _)| *kind == said.kind) {
            Some((_, same)) => same.push(said),
            None => by_kind.push((said.kind.clone(), vec![said])),
        }
    }
    for (kind, same) in by_kind {
        for said in same.iter().take(SHOWN_PER_CODE) {
            errln!("{}", printable(&said.line));
        }
        let rest = same.get(SHOWN_PER_CODE..).unwrap_or_default();
        if rest.is_empty() {
            continue;
        }
        let mut places: Vec<&str> = Vec::new();
        for said in rest.iter().filter(|s| !s.place.is_empty()) {
            if !places.contains(&said.place.as_str()) {
                places.push(&said.place);
            }
        }
        const NAMED: usize = 5;
        let mut more = format!("{} more like these", rest.len());
        if !places.is_empty() {
            more.push_str(", at ");
            more.push_str(&places[..places.len().min(NAMED)].join(", "));
            if places.len() > NAMED {
                more.push_str(", …");
            }
        }
        errln!("{}", printable(&summary(&kind, &more)));
    }
}

/// An import note's kind, to group notes that say the same thing of different nodes: its text with every
/// `backticked` name left out, so "node `a` cannot be reached from the entry `e`…" is one kind for every node.
fn note_kind(note: &str) -> String {
    let mut kind = String::new();
    for (i, part) in note.split('`').enumerate() {
        kind.push_str(if i % 2 == 0 { part } else { "`…`" });
    }
    kind
}

/// Where an import note is: its leading `node `id``, `edges[i]` or `connection a -> b`, else nowhere.
fn note_place(note: &str) -> String {
    let head = note.split(':').next().unwrap_or_default();
    let named = |prefix: &str| head.starts_with(prefix) && head.matches('`').count() == 2;
    if named("node `") || head.starts_with("edges[") || head.starts_with("connection ") {
        return head.to_string();
    }
    // "node `a` cannot be reached …": the node named first.
    match note.strip_prefix("node `").and_then(|rest| rest.split_once('`')) {
        Some((id, _)) => format!("node `{id}`"),
        None => String::new(),
    }
}

/// What an importer approximated or left out, grouped by kind as findings are.
fn print_notes(file: &Path, notes: &[String]) {
    let lines = notes.iter().map(|note| Said {
        kind: note_kind(note),
        place: note_place(note),
        line: format!("note: {}: {note}", file.display()),
    });
    print_grouped(lines, |_, more| format!("note: {}: {more}", file.display()));
}

/// Where a finding is: ` node `id``, ` edge `a->b``, or nothing for the whole workflow.
fn place(f: &validate::Finding) -> String {
    match (&f.node, &f.edge) {
        (Some(n), _) => format!(" node `{n}`"),
        (None, Some(e)) => format!(" edge `{e}`"),
        _ => String::new(),
    }
}

async fn cmd_validate(file: &Path, json: bool, format: Option<Format>, scripted: bool) -> Result<u8, Unusable> {
    let loaded = load(file, format)?;
    let configured = session::settings_for_check(settings(), scripted)?;
    let mut options = session::validation_options(configured.as_ref(), scripted);
    options.format = Some(loaded.format);
    // Single tools the workflow names are checked against what their servers list (it starts those servers).
    let servers = configured.as_ref().map(|s| s.mcp_servers.clone()).unwrap_or_default();
    options.mcp_tools = switchyard_engine::mcp::list_named(&loaded.workflow, &servers).await;
    // Nodes that name no model use the default; when none can be found anywhere, they are flagged (NO_MODEL).
    if let Some(settings) = configured.as_ref().filter(|s| s.default_model.is_none() && !scripted) {
        if !validate::nodes_needing_a_model(&loaded.workflow).is_empty() {
            options.no_default_model = providers::discover_default_model(settings).await.model.is_none();
        }
    }
    let report = validate::validate(&loaded.workflow, &options);
    if json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap());
    } else {
        print_findings(file, &report);
        if report.is_ok() {
            outln!(
                "{}: valid ({}, {}, {})",
                file.display(),
                counted(loaded.workflow.nodes.len() as u64, "node"),
                counted(loaded.workflow.edges.len() as u64, "edge"),
                counted(report.warnings.len() as u64, "warning")
            );
        }
    }
    Ok(if report.is_ok() { 0 } else { 1 })
}

fn cmd_export(file: &Path, to: ExportFormat, format: Option<Format>) -> Result<u8, Unusable> {
    let loaded = load(file, format)?;
    let report = validate::validate(&loaded.workflow, &session::validation_options(None, true));
    print_findings(file, &report);
    match to {
        ExportFormat::Yaml => out!("{}", format::to_yaml(&loaded.workflow)),
        ExportFormat::Json => out!("{}", format::to_json(&loaded.workflow)),
    }
    Ok(if report.is_ok() { 0 } else { 1 })
}

struct RunArgs {
    /// The run store (`--db`).
    db: Option<String>,
    /// Record it for a worker instead of running it here.
    detach: bool,
    file: PathBuf,
    input: Option<String>,
    answers: Option<PathBuf>,
    json: bool,
    events: Option<PathBuf>,
    format: Option<Format>,
    model: Option<String>,
    step_budget: Option<u32>,
    no_store: bool,
    /// A stored run, and the node to run from.
    reuse: Option<(String, String)>,
    /// A stored run to fork, where (`NODE[#TURN]`), and what the model said there instead (`TEXT|@FILE`).
    fork: Option<(String, String, String)>,
    allow_code: bool,
}

/// `--fork RUN --at NODE[#TURN] --answer TEXT|@FILE`.
fn parse_fork(run: String, at: &str, answer: &str) -> Result<(String, String, run::Fork), Unusable> {
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

fn parse_input(raw: &str) -> Result<Value, Unusable> {
    let text = match raw.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| coded("INPUT_UNREADABLE", format!("cannot read input file {path}: {e}")))?,
        None => raw.to_string(),
    };
    Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn open_store() -> Result<Arc<RunStore>, Unusable> {
    RunStore::open(&switchyard_engine::store::default_path()).map(Arc::new).map_err(|e| coded(e.code(), e.to_string()))
}

/// The run store `--db` (or $SWITCHYARD_DB) names, else the default file.
fn open_runs(db: Option<&str>) -> Result<Arc<dyn Store>, Unusable> {
    switchyard_engine::store::open(db).map_err(|e| coded(e.code(), e.to_string()))
}

/// Where one CLI run's events go: the run's log in the store and an --events file (written first), then the live
/// log.
fn sinks(log: Option<Arc<dyn RunLog>>, events: &Option<PathBuf>, json: bool) -> Result<Sinks, Unusable> {
    let mut logs: Vec<Arc<dyn RunLog>> = Vec::new();
    if let Some(log) = log {
        logs.push(log);
    }
    if let Some(path) = events {
        logs.push(Arc::new(
            live::JsonLines::create(path).map_err(|e| coded("EVENTS_UNWRITABLE", format!("--events: {e}")))?,
        ));
    }
    let observers: Vec<Arc<dyn Observer>> = if json { Vec::new() } else { vec![Arc::new(live::LiveLog)] };
    let log: Option<Arc<dyn RunLog>> = match logs.len() {
        0 => None,
        1 => logs.pop(),
        _ => Some(Arc::new(live::Tee(logs))),
    };
    Ok(Sinks { log, observers })
}

async fn cmd_run(args: RunArgs) -> Result<u8, Unusable> {
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
    let mut claim = match &store {
        Some(store) => Some(session::begin(&**store, &prepared)?),
        None => None,
    };
    let log = store.as_ref().zip(claim.as_ref()).map(|(store, claim)| session::run_log(store, claim));
    let run_id = prepared.options.run_id.clone().expect("prepare sets the run id");
    let sinks = sinks(log, &args.events, args.json)?;
    let lost = claim.as_ref().map(Claim::lost).unwrap_or_default();
    let outcome = match claim.as_mut() {
        // A run the store holds hears cancellations sent through it (a server's API).
        Some(claim) => unless_lost(lost, session::run_held(prepared, sinks, claim)).await,
        None => Some(session::run(prepared, sinks).await),
    };
    let Some(outcome) = outcome else {
        return Ok(claim_lost(&run_id, args.json));
    };
    finish(outcome, store.as_deref(), args.json)
}

/// The run's outcome, or none when its claim was lost first (another process took it over, or its log could not be
/// written): it stops here, at once.
async fn unless_lost<T>(lost: Signal, run: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::select! {
        done = run => Some(done),
        _ = lost.wait() => None,
    }
}

/// Says that a run stopped because its claim was lost; exit 1, as for a run that did not complete.
fn claim_lost(run_id: &str, json: bool) -> u8 {
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
fn result_json(r: &switchyard_engine::RunResult, row: Option<&RunRow>) -> Value {
    json!({
        "runId": r.run_id,
        "status": r.status,
        "results": r.results,
        "trace": r.trace,
        "pending": r.pending.iter().map(|p| json!({"node": p.node, "message": p.message})).collect::<Vec<_>>(),
        "state": r.state,
        "error": r.error,
        "tokens": row.map(|row| row.tokens),
        "cost": row.and_then(|row| row.cost),
    })
}

fn finish(outcome: Outcome, store: Option<&dyn Store>, json: bool) -> Result<u8, Unusable> {
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
        errln!("{}{}", counted(row.tokens, "token"), row.cost.map(|usd| format!(", ${usd:.4}")).unwrap_or_default());
    }
    print_hints(r.results.values().filter_map(|n| n.error_code.as_deref()));
    if r.status == RunStatus::Paused {
        let decide: Vec<String> = r.pending.iter().map(|p| format!("--decide {}=approve", p.node)).collect();
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

fn parse_decision(raw: &str) -> Result<(String, Value), Unusable> {
    let (node, rest) = raw.split_once('=').ok_or_else(|| {
        coded("INVALID_DECISION", format!("--decide {raw}: write NODE=approve or NODE=reject[:note]"))
    })?;
    let (decision, note) = rest.split_once(':').unwrap_or((rest, ""));
    if !["approve", "reject"].contains(&decision) {
        return Err(coded("INVALID_DECISION", format!("--decide {raw}: the decision must be approve or reject")));
    }
    Ok((node.to_string(), json!({"decision": decision, "note": note})))
}

async fn cmd_resume(
    db: Option<&str>,
    run_id: &str,
    raw: &[String],
    json: bool,
    events: Option<PathBuf>,
    allow_code: bool,
) -> Result<u8, Unusable> {
    let decisions = raw.iter().map(|d| parse_decision(d)).collect::<Result<Vec<_>, _>>()?;
    let store = open_runs(db)?;
    let resuming = session::open_to_resume(&*store, run_id, allow_code)?;
    if let Some(note) = &resuming.note {
        errln!("note: {note}");
    }
    let log = session::run_log(&store, &resuming.claim);
    let lost = resuming.claim.lost();
    let resumed = session::resume(resuming, decisions, sinks(Some(log), &events, json)?);
    let Some(outcome) = unless_lost(lost, resumed).await else {
        return Ok(claim_lost(run_id, json));
    };
    finish(outcome?, Some(&*store), json)
}

fn cmd_trust(file: &Path, format: Option<Format>, forget: bool) -> Result<u8, Unusable> {
    let trust = TrustStore::default_location();
    let workflow_ref = WorkflowRef::new(file, format);
    if forget {
        let removed = trust
            .forget(&workflow_ref.path.display().to_string())
            .map_err(|e| coded("TRUST_UNREADABLE", e.to_string()))?;
        outln!(
            "{}: forgot {}; its code needs consent again",
            file.display(),
            counted(removed as u64, "trusted version")
        );
        return Ok(0);
    }
    let loaded = load(file, format)?;
    let (_, consent) = session::code_for(&loaded.workflow, Some(&workflow_ref), true, &trust)?;
    let Some(fingerprint) = &consent.fingerprint else {
        outln!("{}: no code steps; nothing to trust", file.display());
        return Ok(0);
    };
    trust
        .trust(fingerprint, &workflow_ref.path.display().to_string())
        .map_err(|e| coded("TRUST_UNREADABLE", e.to_string()))?;
    for step in &consent.steps {
        let what = step
            .module
            .as_deref()
            .map_or_else(|| counted(step.source.lines().count() as u64, "line"), |m| format!("module {m}"));
        outln!("  {} ({}): {what}", step.node, step.language);
    }
    outln!(
        "{}: trusted {}, fingerprint {}; {} without --allow-code until {} code changes",
        file.display(),
        counted(consent.steps.len() as u64, "code step"),
        &fingerprint[..12],
        if consent.steps.len() == 1 { "it runs" } else { "they run" },
        if consent.steps.len() == 1 { "its" } else { "their" },
    );
    Ok(0)
}

async fn cmd_mcp(json: bool) -> Result<u8, Unusable> {
    let settings = settings()?;
    if settings.mcp_servers.is_empty() && !json {
        outln!("no MCP servers configured: add them under mcp_servers in {}", Settings::default_path().display());
        return Ok(0);
    }
    let mut rows = Vec::new();
    let mut failed = false;
    for (name, config) in &settings.mcp_servers {
        let transport = match config {
            switchyard_engine::mcp::McpServerConfig::Stdio(_) => "stdio",
            switchyard_engine::mcp::McpServerConfig::Http(_) => "http",
        };
        let probed = switchyard_engine::mcp::probe(name, config).await;
        failed |= probed.is_err();
        if !json {
            match &probed {
                Ok(tools) => {
                    outln!("✓ {name} ({transport}): {}", counted(tools.len() as u64, "tool"));
                    for t in tools {
                        let marker = if t.destructive { " [changes things]" } else { "" };
                        outln!("    {name}__{}{marker}  {}", t.name, t.description.lines().next().unwrap_or(""));
                    }
                }
                Err(e) => outln!("✗ {name} ({transport}): {e}"),
            }
        }
        rows.push(match probed {
            Ok(tools) => json!({"name": name, "transport": transport, "ok": true, "tools": tools.iter().map(|t| json!({"name": t.name, "description": t.description, "destructive": t.destructive})).collect::<Vec<_>>()}),
            Err(e) => json!({"name": name, "transport": transport, "ok": false, "error": e.to_string(), "tools": []}),
        });
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&rows).unwrap());
    }
    Ok(if failed { 1 } else { 0 })
}

fn cmd_runs(db: Option<&str>, json: bool) -> Result<u8, Unusable> {
    let store = open_runs(db)?;
    let runs = session::runs(&*store)?;
    if json {
        // The shape a server's `GET /api/runs` lists too.
        let rows: Vec<_> = runs.into_iter().map(switchyard_engine::views::ListedRun::from).collect();
        outln!("{}", serde_json::to_string_pretty(&rows).unwrap());
        return Ok(0);
    }
    for r in runs {
        let pending = if r.pending.is_empty() { String::new() } else { format!("  waits: {}", r.pending.join(", ")) };
        let case = if r.eval.is_some() { "  (test case)" } else { "" };
        outln!(
            "{}  {:<11}  {}  {:>8}  {:>9}  {}{pending}{case}",
            r.id,
            r.status.as_str(),
            r.started.get(..19).unwrap_or(&r.started),
            format_duration(r.duration_ms),
            format_cost(&r),
            r.workflow_ref.as_deref().unwrap_or(&r.workflow),
        );
    }
    Ok(0)
}

/// A run's cost in US dollars: "–" when it used no tokens, "N tok" when a model it used has no price.
fn format_cost(r: &switchyard_engine::store::RunRow) -> String {
    match (r.tokens, r.cost) {
        (0, _) => "–".to_string(),
        (_, Some(usd)) => format!("${usd:.4}"),
        (tokens, None) => format!("{tokens} tok"),
    }
}

fn format_duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
    }
}

/// Rebuilds a stored run's result from its recording (no model call), as `run --json` printed it.
fn cmd_show(db: Option<&str>, run_id: &str, json: bool) -> Result<u8, Unusable> {
    let store = open_runs(db)?;
    let (row, result) = session::show(&*store, run_id)?;
    let status = row.status;
    let mut out = result_json(&result, Some(&row));
    if matches!(status, StoredStatus::Interrupted | StoredStatus::Running | StoredStatus::Ready) {
        out["status"] = json!(status);
        out["error"] = json!(match status {
            StoredStatus::Ready => format!("the run waits for a worker; `switchyard resume {run_id}` runs it here"),
            _ => format!("the run is {}; `switchyard resume {run_id}` continues it", status.as_str()),
        });
    }
    // Inside each agent: its model turns and tool calls, as the run's journal keeps them.
    let turns = session::turns(&*store, run_id)?;
    if json {
        if !turns.is_empty() {
            out["turns"] = json!(turns);
        }
        outln!("{}", serde_json::to_string_pretty(&out).unwrap());
    } else {
        let cost = match (row.tokens, row.cost) {
            (0, _) => String::new(),
            (tokens, Some(usd)) => format!(", {}, ${usd:.4}", counted(tokens, "token")),
            (tokens, None) => format!(", {} (no price under `prices` in the settings)", counted(tokens, "token")),
        };
        outln!("run {run_id}: {} ({}{cost})", status.as_str(), row.workflow);
        for (node, result) in &result.results {
            let text = result.error.clone().unwrap_or_else(|| run::output_text(&result.data));
            let text: String = text.chars().take(100).collect();
            outln!("  {:<20} {:<9} {}", printable(node), result.status.word(), printable(&text.replace('\n', " ")));
            let journaled = turns.get(node).map(Vec::as_slice).unwrap_or_default();
            let model_turns = journaled.iter().filter(|e| matches!(e.what, journal::What::Turn { .. })).count();
            let tool_calls = journaled.iter().filter(|e| matches!(e.what, journal::What::Tool { .. })).count();
            if model_turns + tool_calls > 0 {
                let (model_turns, tool_calls) =
                    (counted(model_turns as u64, "model turn"), counted(tool_calls as u64, "tool call"));
                outln!("  {:<20} {model_turns}, {tool_calls} (--json lists them)", "");
            }
        }
        for p in &result.pending {
            outln!("  waits for `{}`: {}", p.node, printable(&p.message));
        }
        if !result.pending.is_empty() {
            let decide: Vec<String> = result.pending.iter().map(|p| format!("--decide {}=approve", p.node)).collect();
            outln!("  decide with `switchyard resume {run_id} {}` (or reject)", decide.join(" "));
        }
    }
    Ok(0)
}

/// Plays a stored run again from its recording: the same events, results and trace, with no model or tool call.
fn cmd_replay(db: Option<&str>, run_id: &str, json: bool, events: Option<PathBuf>) -> Result<u8, Unusable> {
    let store = open_runs(db)?;
    let replayed = session::replay(&*store, run_id, sinks(None, &events, json)?)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&result_json(&replayed.result, Some(&session::row(&*store, run_id)?)))
                .unwrap()
        );
    }
    // The replay must tell the same story; where it does not, the engine (or the store) changed.
    if let Some(d) = &replayed.diverged {
        let kind = |e: &Option<Event>| {
            e.as_ref().map_or("nothing".to_string(), |e| format!("{} #{}", e.kind.type_name(), e.seq))
        };
        errln!(
            "warning: the replay differs from the recording at event {}: recorded {}, replayed {}",
            d.at + 1,
            kind(&d.recorded),
            kind(&d.replayed)
        );
        return Ok(1);
    }
    Ok(match replayed.result.status {
        RunStatus::Completed | RunStatus::Paused => 0,
        _ => 1,
    })
}

async fn cmd_providers() -> Result<u8, Unusable> {
    let settings = settings()?;
    outln!("settings: {}", Settings::default_path().display());
    let mut all_ok = true;
    for (id, status) in Providers::check(&settings).await {
        match status {
            Ok(detail) => outln!("{id:<12} ok       {detail}"),
            Err(why) => {
                all_ok = false;
                outln!("{id:<12} no       {why}");
            }
        }
    }
    if let Some(model) = &settings.default_model {
        outln!("default model: {model}");
    }
    Ok(if all_ok { 0 } else { 1 })
}
