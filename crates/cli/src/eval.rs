//! `switchyard eval FILE`: runs an evaluation file's cases (docs/evals.md), a line per case as it finishes, then the
//! totals; writes the reports asked for. Exit 0 when the pass rate meets `--min-pass-rate`, 1 when it does not, 2 when
//! the file cannot be used.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use switchyard_engine::eval::{self, report, CaseReport, Suite, Verdict};
use switchyard_engine::session;
use switchyard_engine::store::RunStore;

use crate::out::{counted, errln, outln, printable};
use crate::{coded, open_store, Unusable};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EvalCli {
    #[command(subcommand)]
    action: Option<EvalAction>,
    /// The evaluation file (NAME.evals.yaml).
    #[arg(required = true)]
    file: Option<PathBuf>,
    /// Print the report as one JSON object on stdout (the live lines go to stderr).
    #[arg(long)]
    pub json: bool,
    /// Write the report as JUnit XML to this file, for CI systems.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write a Markdown summary to this file, for a pull request.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// The share of cases that must pass, from 0 to 1 (default: all).
    #[arg(long, default_value_t = 1.0, value_name = "FRACTION", allow_negative_numbers = true)]
    min_pass_rate: f64,
    /// Default model for agents (and judges) that name none (provider/model).
    #[arg(long)]
    model: Option<String>,
    /// Run each case this many times (1 or more); a case that passes in some runs and fails in others is flaky.
    #[arg(long, default_value_t = 1, value_parser = at_least_one::<u32>, allow_negative_numbers = true)]
    repeat: u32,
    /// Run only this case.
    #[arg(long = "case", value_name = "ID")]
    case: Option<String>,
    /// Call no model: calls are answered by the cases' answers and the recorded calls; a call with neither makes
    /// its case fail to run (OFFLINE_UNRECORDED).
    #[arg(long)]
    offline: bool,
    /// Cases run at once (1 or more).
    #[arg(long, default_value_t = 4, value_parser = at_least_one::<usize>, allow_negative_numbers = true)]
    jobs: usize,
    /// Let the workflow's code steps execute (see `run --allow-code`).
    #[arg(long)]
    allow_code: bool,
    /// Compare with an earlier evaluation: a report file (`--json` output), the id of an evaluation kept in the
    /// run store, or `last` (each case as this file's latest evaluation of it left it). Each case improved,
    /// regressed or unchanged, the nodes whose output changed, tokens and time side by side. A regression exits 1.
    #[arg(long, value_name = "REPORT|EVAL_ID|last")]
    baseline: Option<String>,
}

#[derive(Subcommand)]
enum EvalAction {
    /// Make a case of a stored run: its input, its models' answers (so the case runs offline), its decisions, and
    /// what each node did as expectations. Appended to the workflow's NAME.evals.yaml unless --to names a file.
    Add {
        run_id: String,
        /// The evaluation file to add the case to (created when missing).
        #[arg(long, value_name = "FILE")]
        to: Option<PathBuf>,
        /// The case's id (default: run-<the run id's first 8 characters>).
        #[arg(long = "id")]
        id: Option<String>,
    },
}

/// A count of 1 or more (`--repeat`, `--jobs`): clap says "invalid value '0' for '--jobs <JOBS>': must be at least
/// 1", for a negative number too, instead of taking `-1` for a flag.
fn at_least_one<T: TryFrom<u64>>(given: &str) -> Result<T, String> {
    match given.trim().parse::<i128>() {
        Ok(n) if n < 1 => Err("must be at least 1".into()),
        Ok(n) => u64::try_from(n).ok().and_then(|n| T::try_from(n).ok()).ok_or_else(|| "is too large".into()),
        Err(_) => Err("must be a whole number of at least 1".into()),
    }
}

pub async fn cmd(cli: EvalCli) -> Result<u8, Unusable> {
    if let Some(EvalAction::Add { run_id, to, id }) = cli.action {
        return cmd_add(&run_id, to, id);
    }
    if !(0.0..=1.0).contains(&cli.min_pass_rate) {
        return Err(coded("INVALID_PASS_RATE", "--min-pass-rate: give a fraction from 0 to 1, e.g. 0.9"));
    }
    let options = eval::Options {
        model: cli.model,
        repeat: cli.repeat,
        jobs: cli.jobs,
        case: cli.case,
        offline: cli.offline,
        allow_code: cli.allow_code,
        store: None,
    };
    let file = cli.file.expect("clap requires FILE without a subcommand");
    let args = EvalArgs {
        file,
        json: cli.json,
        junit: cli.junit,
        markdown: cli.markdown,
        min_pass_rate: cli.min_pass_rate,
        baseline: cli.baseline,
        options,
    };
    cmd_eval(args).await
}

struct EvalArgs {
    file: PathBuf,
    json: bool,
    junit: Option<PathBuf>,
    markdown: Option<PathBuf>,
    min_pass_rate: f64,
    baseline: Option<String>,
    options: eval::Options,
}

/// The report `--baseline` names: a report file, a kept evaluation's id, or `last`.
fn baseline(given: &str, store: &RunStore, file: &Path) -> Result<(String, serde_json::Value), Unusable> {
    let unreadable = |why: String| coded("BASELINE_UNREADABLE", format!("--baseline {given}: {why}"));
    let value: serde_json::Value = if given == "last" {
        let last = eval::kept::last(store, file).map_err(|e| coded(e.code(), e.to_string()))?;
        let Some((id, value)) = last else {
            return Err(unreadable(format!(
                "{} has not been evaluated before here; run `switchyard eval {}` once first",
                file.display(),
                file.display()
            )));
        };
        return Ok((format!("{id} (last)"), value));
    } else if Path::new(given).exists() {
        let text = std::fs::read_to_string(given).map_err(|e| unreadable(e.to_string()))?;
        serde_json::from_str(&text)
            .map_err(|e| unreadable(format!("not a report written by `switchyard eval --json` ({e})")))?
    } else {
        eval::kept::report(store, given).map_err(|e| {
            match e.code() {
            "NO_SUCH_EVAL" => unreadable(
                "no such file, and no evaluation kept with that id (`switchyard eval --json` prints an evaluation's id)"
                    .into(),
            ),
            _ => coded(e.code(), e.to_string()),
        }
        })?
    };
    if !value["cases"].is_array() {
        return Err(unreadable("not a report written by `switchyard eval --json` (it has no cases)".into()));
    }
    Ok((given.to_string(), value))
}

async fn cmd_eval(mut args: EvalArgs) -> Result<u8, Unusable> {
    let store = open_store()?;
    let baseline = match &args.baseline {
        None => None,
        Some(given) => Some(baseline(given, &store, &args.file)?),
    };
    let suite = Suite::load(&args.file)?;
    args.options.store = Some((store, eval::kept::new_id()));
    let json = args.json;
    // With --json, stdout is the report alone; the live lines go to stderr.
    let line = |case: &CaseReport| {
        let text = case_line(case);
        if json {
            errln!("{text}");
        } else {
            outln!("{text}");
        }
    };
    let report = eval::kept::evaluate(&suite, &args.options, baseline, line).await?;
    let regressed = report.comparison.as_ref().is_some_and(|c| c.regressed > 0);
    write_report(args.junit.as_deref(), &report.junit(), "--junit")?;
    write_report(args.markdown.as_deref(), &report.markdown(), "--markdown")?;
    let rate_met = report.pass_rate + 1e-9 >= args.min_pass_rate;
    let met = rate_met && !regressed;
    if let (false, Some(c)) = (json, &report.comparison) {
        print_comparison(c);
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&report).expect("a report is JSON"));
    } else {
        outln!(
            "{}/{} passed ({} failed, {} flaky, {} could not run) · {} · {:.1} s · {}, {} reused ({} saved){}{}",
            report.passed,
            report.cases.len(),
            report.failed,
            report.flaky,
            report.errors,
            counted(report.tokens, "token"),
            report.duration_ms as f64 / 1000.0,
            counted(report.calls.model_calls, "model call"),
            counted(report.calls.reused, "recorded answer"),
            counted(report.calls.tokens_saved, "token"),
            match (report.tokens, &report.cost_text) {
                (0, _) => String::new(),
                (_, Some(text)) => format!(" · {text}"),
                (_, None) => " · cost unknown: a model has no price under `prices` in the settings".to_string(),
            },
            match (rate_met, regressed) {
                (false, _) => format!(" · below --min-pass-rate {}", args.min_pass_rate),
                (true, true) => " · a case regressed against the baseline".to_string(),
                (true, false) => String::new(),
            }
        );
        if let Some(id) = &report.id {
            outln!("kept as {id}: compare a later evaluation with it by `--baseline last` or `--baseline {id}`");
        }
    }
    Ok(if met { 0 } else { 1 })
}

/// The comparison with a baseline: the totals, then a line per case that changed.
fn print_comparison(c: &eval::Comparison) {
    outln!(
        "compared with {}: {} regressed, {} improved, {} unchanged",
        c.baseline,
        c.regressed,
        c.improved,
        c.unchanged
    );
    for case in &c.cases {
        let mark = match case.change {
            eval::Change::Regressed => "↓",
            eval::Change::Improved => "↑",
            eval::Change::New => "+",
            eval::Change::Unchanged if case.changed_nodes.is_empty() => continue,
            eval::Change::Unchanged => "=",
        };
        let before = case.before.as_deref().unwrap_or("(new)");
        let after =
            serde_json::to_value(case.after).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let mut line = format!("{mark} {}: {before} → {after}", case.id);
        if !case.changed_nodes.is_empty() {
            line.push_str(&format!("; outputs changed: {}", case.changed_nodes.join(", ")));
        }
        let (t0, t1) = case.tokens;
        let (d0, d1) = case.duration_ms;
        let was = |v: Option<u64>| v.map_or("–".to_string(), |v| v.to_string());
        line.push_str(&format!("; tokens {} → {t1}; {} → {d1} ms", was(t0), was(d0)));
        // Case ids and outputs come from files and models: shown, never obeyed by the terminal.
        outln!("{}", printable(&line));
    }
}

/// One case as the live table shows it: verdict, id, time and tokens, then what did not hold.
fn case_line(case: &CaseReport) -> String {
    let mark = match case.verdict {
        Verdict::Passed => "✓",
        Verdict::Failed => "✗",
        Verdict::Flaky => "~",
        Verdict::Error => "!",
    };
    let a = case.shown();
    // What a model answered (and a file named) is shown escaped, one line each: it never drives the terminal.
    let mut text = format!("{mark} {} · {} ms · {}", printable(&case.id), a.duration_ms, counted(a.tokens, "token"));
    if case.verdict != Verdict::Passed {
        for line in report::failure_lines(case) {
            text.push_str(&format!("\n    {}", printable(&line)));
        }
        if let Some(run) = &a.run_id {
            text.push_str(&format!("\n    its run: `switchyard show {run}`"));
        }
    }
    // The nodes the recorded calls did not answer, and why: what an edit made the case ask again.
    for (node, why) in &a.asked {
        text.push_str(&format!("\n    asked the model again: {} ({why})", printable(node)));
    }
    text
}

fn write_report(path: Option<&Path>, text: &str, flag: &str) -> Result<(), Unusable> {
    let Some(path) = path else { return Ok(()) };
    std::fs::write(path, text)
        .map_err(|e| coded("REPORT_UNWRITABLE", format!("{flag}: cannot write {}: {e}", path.display())))
}

/// `eval add RUN_ID`: the stored run as a case, appended to the evaluation file (`eval::add_case`).
fn cmd_add(run_id: &str, to: Option<PathBuf>, id: Option<String>) -> Result<u8, Unusable> {
    let store = open_store()?;
    let run = session::case_source(&store, run_id)?;
    let added = eval::add_case(&run, to, id).map_err(|e| {
        let message = match e.code {
            "RUN_NOT_ENDED" => format!("{e}: `switchyard resume {run_id}`"),
            "NO_WORKFLOW_FILE" => format!("{e} with --to FILE"),
            _ => e.to_string(),
        };
        coded(e.code, message)
    })?;
    let file = added.path.display();
    // A run on a model keeps its calls in the file's record: the case asks again only what an edit changes.
    let calls = match added.recorded_calls {
        0 => String::new(),
        n => format!(", {} kept in {}", counted(n as u64, "model call"), eval::calls_path(&added.path).display()),
    };
    outln!(
        "added case `{}` to {file} ({}{calls}); run it with `switchyard eval {file}`",
        added.case_id,
        counted(added.expectations as u64, "expectation")
    );
    Ok(0)
}
