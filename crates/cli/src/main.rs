//! `switchyard`: validate, run, resume and export workflows from a terminal or CI. A thin shell over the engine; the
//! contract (arguments, JSON shapes, exit codes) is documented in the README and kept stable.

mod check;
mod eval;
mod history;
mod live;
mod mcp_serve;
mod out;
mod running;
mod serve;
mod setup;
mod unusable;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use out::{errln, out, outln};
use serde_json::json;
use switchyard_engine::format::Format;

use check::{cmd_export, cmd_trust, cmd_validate, hint, print_hints};
use history::{cmd_prune, cmd_replay, cmd_runs, cmd_show};
pub(crate) use running::open_store;
use running::{cmd_resume, cmd_run, RunArgs};
use setup::{cmd_mcp, cmd_providers};
pub(crate) use unusable::{coded, Unusable};

#[derive(Parser)]
#[command(name = "switchyard", version, about = "Validate, run and export AI-agent workflows headless.")]
struct Cli {
    /// The run store: an SQLite file (a path, or sqlite:PATH; the default is runs.sqlite in the data folder) or a
    /// PostgreSQL database (postgres://user@host:port/db) that workers share. Also $SWITCHYARD_DB. Used by run, runs,
    /// show, resume, replay and prune; worker, serve and token need a PostgreSQL one.
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
        /// Who makes the --decide decisions, kept in the run's history and shown beside them ("approved by NAME");
        /// default: your login name ($USER).
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
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
        #[command(flatten)]
        filter: history::RunsFilter,
    },
    /// Print a stored run's result, as `run` printed it.
    Show {
        run_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete runs that ended (completed, failed, cancelled) before --older-than, with their events and inputs; a
    /// run that may still go on, or that a process holds, is never deleted. --dry-run says what would go.
    Prune(history::PruneArgs),
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
    /// `mcp serve FILE|DIR…` serves workflows as MCP tools over stdio.
    Mcp {
        /// Print a JSON array of {name, transport, ok, error?, tools: [{name, description, destructive}]}.
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        command: Option<McpCommand>,
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
    /// List the workers of a PostgreSQL run store (--db postgres://…): each one's queues, the runs it holds and when
    /// it last answered; one not seen for a whole lease has stopped answering.
    Workers {
        /// Print a JSON array of {name, queues, jobs, started, lastHeartbeat, heartbeatAgeMs, state, runs}.
        #[arg(long)]
        json: bool,
    },
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

/// `switchyard mcp serve`.
#[derive(Subcommand)]
enum McpCommand {
    /// Serve workflows as MCP tools over stdio (docs/mcp-serve.md): each workflow file named, and each workflow file
    /// of each folder named, is a tool; runs go in the run store (`--db`).
    Serve {
        /// Workflow files, or folders of them.
        #[arg(required = true, value_name = "FILE|DIR")]
        paths: Vec<PathBuf>,
        /// Answers for the models and tools (offline runs), as for `run`.
        #[arg(long = "answers", alias = "script", value_name = "FILE")]
        answers: Option<PathBuf>,
        /// The model of nodes that name none, as for `run`.
        #[arg(long)]
        model: Option<String>,
        /// Let the workflows' code steps run (else only those of a trusted version run, as for `run`).
        #[arg(long)]
        allow_code: bool,
        #[arg(long, value_parser = parse_format)]
        format: Option<Format>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ExportFormat {
    Yaml,
    Json,
}

fn parse_format(s: &str) -> Result<Format, String> {
    Format::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        format!("unknown format `{s}`; expected one of {}", names.join(", "))
    })
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
        | Command::Runs { json: true, .. }
        | Command::Workers { json: true }
        | Command::Show { json: true, .. }
        | Command::Prune(history::PruneArgs { json: true, .. })
        | Command::Mcp { json: true, command: None }
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
        Command::Resume { run_id, decisions, by, json, events, allow_code } => {
            runtime.block_on(cmd_resume(db.as_deref(), &run_id, &decisions, by, json, events, allow_code))
        }
        Command::Worker(args) => runtime.block_on(worker::cmd(db.as_deref(), args)),
        Command::Workers { json } => worker::cmd_workers(db.as_deref(), json),
        Command::Serve(args) => runtime.block_on(serve::cmd_serve(db.as_deref(), args)),
        Command::Token(command) => serve::cmd_token(db.as_deref(), command),
        Command::Trust { file, format, forget } => cmd_trust(&file, format, forget),
        Command::Runs { json, filter } => cmd_runs(db.as_deref(), json, filter),
        Command::Show { run_id, json } => cmd_show(db.as_deref(), &run_id, json),
        Command::Prune(args) => cmd_prune(db.as_deref(), args),
        Command::Replay { run_id, json, events } => cmd_replay(db.as_deref(), &run_id, json, events),
        Command::Providers => runtime.block_on(cmd_providers()),
        Command::Mcp { command: Some(McpCommand::Serve { paths, answers, model, allow_code, format }), .. } => {
            let args = mcp_serve::McpServeArgs { paths, answers, model, allow_code, format };
            runtime.block_on(mcp_serve::cmd(db.as_deref(), args))
        }
        Command::Mcp { json, command: None } => runtime.block_on(cmd_mcp(json)),
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
