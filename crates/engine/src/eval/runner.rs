//! Running an evaluation: each case through the session, as `switchyard run` runs a workflow, with its answers and
//! decisions standing in for models and people, then its expectations checked. Cases run in parallel (bounded); a
//! case repeated `repeat` times whose verdict changes between attempts is flaky.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::check::{self, Failure};
pub use super::collect::CaseError;
use super::collect::{run_collecting, SETUP_CODES};
use super::file::{AnswersRef, Case, Check, Suite};
use crate::answers::{Answers, OneOrMany};
use crate::format::{self, LoadError};
use crate::recorded::{CallCounts, Calls};
use crate::result::RunStatus;
use crate::session::{self, RunRequest, WorkflowRef};
use crate::store::RunStore;
use crate::Workflow;

/// How an evaluation runs.
#[derive(Clone)]
pub struct Options {
    /// `provider/model` for every node that names none (`--model`).
    pub model: Option<String>,
    /// Runs of each case; a case whose verdict changes between them is flaky.
    pub repeat: u32,
    /// Cases at once.
    pub jobs: usize,
    /// Only this case (`--case`).
    pub case: Option<String>,
    /// No model is called: calls are answered by the cases' answers and the recorded calls; a call with neither
    /// fails its case.
    pub offline: bool,
    /// Code steps may run (`--allow-code`), trusted or not.
    pub allow_code: bool,
    /// Where each case's run is kept, as every run is (so a case's run can be shown, replayed and opened), with
    /// this evaluation's id. None: the runs are not kept.
    pub store: Option<(Arc<RunStore>, String)>,
}

impl Default for Options {
    fn default() -> Options {
        Options { model: None, repeat: 1, jobs: 4, case: None, offline: false, allow_code: false, store: None }
    }
}

/// A case's verdict over its attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "specta", derive(specta::Type), serde(rename = "CaseVerdict"))]
pub enum Verdict {
    Passed,
    Failed,
    /// Passed in some attempts and failed in others.
    Flaky,
    /// It could not run (an unreadable answers file, an invalid input, no model offline).
    Error,
}

/// One run of a case.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Attempt {
    pub passed: bool,
    /// How the run ended; none when it could not start.
    pub status: Option<RunStatus>,
    pub failures: Vec<Failure>,
    /// What the judge said of each `judge` expectation, passing or not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judgements: Vec<super::judge::Judgement>,
    /// Why the case could not run, with its code (docs/errors.md).
    pub error: Option<CaseError>,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub tokens: u64,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub duration_ms: u64,
    /// US dollars the run's model calls cost, rounded (`usage::round`), at the prices the case's run kept (this
    /// process's settings'); none when a model that used tokens has no price there.
    pub cost: Option<f64>,
    /// The cost as every front end writes it (`usage::dollars`: `$0.00003`); none when the cost is.
    #[serde(default)]
    pub cost_text: Option<String>,
    /// Each node's output as the next node sees it (its error when it failed): what `--baseline` compares.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, String>,
    /// The run, as kept in the run store (when the evaluation keeps its runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The nodes whose model was asked because the recorded calls did not answer them, each with why: `never
    /// recorded`, `its prompt, model, tools or schema changed` (the node was edited), `what reached it changed` (an
    /// earlier node answered differently).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub asked: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CaseReport {
    pub id: String,
    pub verdict: Verdict,
    pub attempts: Vec<Attempt>,
}

impl CaseReport {
    /// The attempt a report shows: the first that could not run when one could not (the case's verdict is then
    /// `error`, whatever the attempts before it did), else the first that failed (what to fix), else the first.
    pub fn shown(&self) -> &Attempt {
        let errored = self.attempts.iter().find(|a| a.error.is_some());
        errored.or_else(|| self.attempts.iter().find(|a| !a.passed)).unwrap_or(&self.attempts[0])
    }
}

/// Runs the suite's cases (or the one `options.case` names), calling `done` as each case finishes. Model calls are
/// answered from the suite's recorded calls where their keys match, and recorded otherwise (not with `repeat`, which
/// asks the models each time to see whether they agree, and only counts the calls); the record is saved after the
/// cases, pruned of calls no case asked for when every case ran.
pub async fn run(
    suite: &Suite,
    options: &Options,
    done: impl Fn(&CaseReport),
) -> Result<(Vec<CaseReport>, CallCounts), LoadError> {
    let workflow_path = suite.workflow_path();
    // A workflow that cannot be loaded cannot be evaluated (`INVALID_WORKFLOW`, docs/evals.md): the loader's own code
    // (`NO_NODES`, `PARSE_ERROR`, …) stays in the message, with the file, line and column.
    let loaded = format::load_file(&workflow_path, None).map_err(|e| LoadError {
        code: "INVALID_WORKFLOW",
        message: format!("the workflow cannot be loaded ({}): {}", e.code, e.message),
        file: e.file.clone().or_else(|| Some(workflow_path.clone())),
        ..e
    })?;
    let cases: Vec<&Case> =
        suite.file.cases.iter().filter(|c| options.case.as_ref().is_none_or(|id| *id == c.id)).collect();
    if cases.is_empty() {
        let id = options.case.as_deref().unwrap_or_default();
        let known: Vec<&str> = suite.file.cases.iter().map(|c| c.id.as_str()).collect();
        return Err(LoadError::new(format!("no case `{id}` (cases: {})", known.join(", ")))
            .with_code("NO_SUCH_CASE")
            .at_file(&suite.path));
    }
    let workflow = &loaded.workflow;
    known_nodes(suite, workflow)?;
    // A workflow that does not validate cannot be evaluated: said before any case runs.
    let report =
        crate::validate::validate(workflow, &crate::session::validation_options(crate::session::Checking::default()));
    if let Some(first) = report.errors.first() {
        let message = format!(
            "the workflow does not validate ({}): {}",
            crate::validate::errors_counted(report.errors.len()),
            first.message
        );
        return Err(LoadError::new(message).with_code("INVALID_WORKFLOW").at_file(&workflow_path));
    }
    let dir = suite.dir();
    let judge = suite.file.judge.clone().or_else(|| options.model.clone());
    let prices = Arc::new(session::prices());
    let calls_path = suite.calls_path();
    // Repeats ask the models each time (to see whether they agree), counting the calls; otherwise calls are answered
    // from the record where their keys match.
    let recorded = Arc::new(if options.repeat > 1 {
        Calls::counting()
    } else {
        Calls::open(&calls_path).map_err(|e| LoadError::new(e.to_string()).with_code(e.code()).at_file(&calls_path))?
    });
    let mut reports: Vec<(usize, CaseReport)> = futures::stream::iter(cases.into_iter().enumerate())
        .map(|(at, case)| {
            let (workflow_path, dir, judge, recorded, prices) =
                (&workflow_path, &dir, judge.as_deref(), &recorded, &prices);
            async move {
                let mut attempts = Vec::new();
                for _ in 0..options.repeat.max(1) {
                    let run = Run {
                        workflow,
                        path: workflow_path,
                        dir,
                        options,
                        judge,
                        recorded: recorded.clone(),
                        prices: prices.clone(),
                    };
                    attempts.push(attempt(&run, case).await);
                }
                (at, CaseReport { id: case.id.clone(), verdict: verdict(&attempts), attempts })
            }
        })
        .buffer_unordered(options.jobs.max(1))
        .inspect(|(_, report)| done(report))
        .collect()
        .await;
    reports.sort_by_key(|(at, _)| *at);
    // A workflow that does not validate cannot be evaluated at all: that is the file's problem, not a case's.
    let invalid = reports
        .iter()
        .flat_map(|(_, r)| &r.attempts)
        .find_map(|a| a.error.as_ref())
        .filter(|e| e.code == "INVALID_WORKFLOW");
    if let Some(e) = invalid {
        return Err(LoadError::new(e.message.clone()).with_code("INVALID_WORKFLOW").at_file(&workflow_path));
    }
    // Calls nobody asked for are pruned only after a full, clean, online run: a case that stopped early, or an
    // offline run, did not ask for everything the workflow still asks for.
    let complete = options.case.is_none()
        && !options.offline
        && reports.iter().all(|(_, r)| r.attempts.iter().all(|a| a.error.is_none()));
    recorded.save(complete).map_err(|e| LoadError::new(e.to_string()).with_code(e.code()).at_file(&calls_path))?;
    Ok((reports.into_iter().map(|(_, r)| r).collect(), recorded.counts()))
}

/// What every attempt of a suite shares.
struct Run<'a> {
    workflow: &'a Workflow,
    path: &'a Path,
    dir: &'a Path,
    options: &'a Options,
    judge: Option<&'a str>,
    recorded: Arc<Calls>,
    prices: Arc<BTreeMap<String, session::Price>>,
}

/// Every node a case names (in expectations and decisions) is a node of the workflow.
fn known_nodes(suite: &Suite, workflow: &Workflow) -> Result<(), LoadError> {
    let ids: Vec<&str> = workflow.nodes.iter().map(|n| n.id.as_str()).collect();
    for case in &suite.file.cases {
        let named =
            case.expect.iter().filter_map(|e| e.node.as_deref()).chain(case.decisions.keys().map(String::as_str));
        for node in named {
            if !ids.contains(&node) {
                let close =
                    ids.iter().min_by_key(|id| strsim::damerau_levenshtein(id, node)).copied().unwrap_or_default();
                return Err(LoadError::new(format!(
                    "case `{}` names node `{node}`, which {} does not have (did you mean `{close}`?)",
                    case.id, suite.file.workflow
                ))
                .with_code("INVALID_EVALS")
                .at_file(&suite.path));
            }
        }
    }
    Ok(())
}

fn verdict(attempts: &[Attempt]) -> Verdict {
    if attempts.iter().any(|a| a.error.is_some()) {
        Verdict::Error
    } else if attempts.iter().all(|a| a.passed) {
        Verdict::Passed
    } else if attempts.iter().any(|a| a.passed) {
        Verdict::Flaky
    } else {
        Verdict::Failed
    }
}

async fn attempt(run: &Run<'_>, case: &Case) -> Attempt {
    let Run { workflow, path, dir, options, judge, .. } = *run;
    let errored = |code: &str, message: String| Attempt {
        passed: false,
        status: None,
        failures: Vec::new(),
        judgements: Vec::new(),
        error: Some(CaseError { code: code.into(), message }),
        tokens: 0,
        duration_ms: 0,
        cost: Some(0.0),
        cost_text: Some(crate::usage::dollars(0.0)),
        outputs: BTreeMap::new(),
        run_id: None,
        asked: BTreeMap::new(),
    };
    let answers = match answers_for(case, dir) {
        Ok(answers) => answers,
        Err(e) => return errored("ANSWERS_UNREADABLE", e),
    };
    let judged = case.expect.iter().any(|e| matches!(e.check, Check::Judge(_)));
    let request = RunRequest {
        workflow_ref: Some(WorkflowRef::new(path, None)),
        input: case.input.clone(),
        answers,
        decisions: decisions_for(case),
        recorded: Some(run.recorded.clone()),
        offline: options.offline,
        model: options.model.clone(),
        allow_code: options.allow_code,
        eval: options.store.as_ref().map(|(_, id)| id.clone()),
        ..RunRequest::default()
    };
    let store = options.store.as_ref().map(|(store, _)| store);
    let (outcome, events, run_model) = match run_collecting(workflow.clone(), request, store).await {
        Ok(ran) => ran,
        Err(e) => return errored(e.code(), e.to_string()),
    };
    let default_model = run_model.or_else(|| workflow.defaults.model.clone());
    // A node that could not run for want of consent or a model says nothing of the workflow: the case could not run.
    let setup = outcome.result.results.iter().find_map(|(id, r)| {
        let code = r.error_code.as_deref().filter(|c| SETUP_CODES.contains(c))?;
        Some((code.to_string(), format!("node `{id}`: {}", r.error.as_deref().unwrap_or_default())))
    });
    if let Some((code, message)) = setup {
        return errored(&code, message);
    }
    let mut failures = check::check(&case.expect, &outcome.result, &events, workflow);
    let spent = check::spent(&events, None);
    let (judge_failures, judgements, judge_tokens) = if judged {
        let asking =
            super::judge::Asking { model: judge, recorded: Some(run.recorded.clone()), offline: options.offline };
        match super::judge::judge_all(&case.expect, &outcome.result, asking).await {
            Ok(judged) => judged,
            Err(e) => return errored(&e.code, e.message),
        }
    } else {
        (Vec::new(), Vec::new(), 0)
    };
    failures.extend(judge_failures);
    let cost = super::cost::cost(&events, workflow, default_model.as_deref(), &run.prices);
    for e in &case.expect {
        let Check::MaxCost(max) = e.check else { continue };
        let expected = check::describe(&e.check);
        match &cost {
            Ok(usd) if *usd <= max => {}
            Ok(usd) => failures.push(Failure { node: None, name: None, expected, actual: crate::usage::dollars(*usd) }),
            Err(unpriced) => failures.push(Failure { node: None, name: None, expected, actual: unpriced.to_string() }),
        }
    }
    if case.expect.iter().any(|e| matches!(e.check, Check::Code(_))) {
        match super::assertion::assert_all(&case.expect, &outcome.result, options.allow_code).await {
            Ok(more) => failures.extend(more),
            Err(e) => return errored(&e.code, e.message),
        }
    }
    check::name_nodes(&mut failures, workflow);
    Attempt {
        passed: failures.is_empty(),
        status: Some(outcome.result.status),
        failures,
        judgements,
        error: None,
        tokens: spent.tokens.saturating_add(judge_tokens),
        duration_ms: spent.duration_ms,
        cost_text: cost.as_ref().ok().map(|usd| crate::usage::dollars(*usd)),
        cost: cost.ok(),
        outputs: outcome
            .result
            .results
            .iter()
            .filter(|(_, r)| r.status != crate::result::NodeStatus::Skipped)
            .map(|(id, r)| (id.clone(), r.error.clone().unwrap_or_else(|| crate::run::output_text(&r.data))))
            .collect(),
        run_id: store.map(|_| outcome.result.run_id.clone()),
        asked: events
            .iter()
            .filter_map(|e| match &e.kind {
                crate::events::EventKind::Log { node: Some(node), log_type, content }
                    if log_type == crate::recorded::ASKED_AGAIN =>
                {
                    Some((node.clone(), content.as_str()?.to_string()))
                }
                _ => None,
            })
            .collect(),
    }
}

/// The case's answers: its answers file or inline mapping, if it has one.
fn answers_for(case: &Case, dir: &Path) -> Result<Option<Answers>, String> {
    match &case.answers {
        None => Ok(None),
        Some(AnswersRef::Path(p)) => Answers::load(&dir.join(p)).map(Some).map_err(|e| e.to_string()),
        Some(AnswersRef::Inline(v)) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| format!("case `{}`: its answers are not an answers mapping: {e}", case.id)),
    }
}

/// The case's decisions, per approval node and visit.
fn decisions_for(case: &Case) -> BTreeMap<String, OneOrMany<Value>> {
    case.decisions
        .iter()
        .map(|(node, d)| {
            let d = match d {
                Value::Array(list) => OneOrMany::Many(list.clone()),
                one => OneOrMany::One(one.clone()),
            };
            (node.clone(), d)
        })
        .collect()
}
