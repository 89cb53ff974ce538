//! The `judge` expectation: a model scores an output against a rubric. The judge is itself a run — a start node and
//! one agent with an output schema — prepared and run by the session like any other, so it uses the same providers,
//! retries and schema repair as a workflow's agents.

use serde_json::{json, Value};

use super::check::{self, Failure};
use super::collect::CaseError;
use super::file::{Check, Expectation, JudgeCheck};
use crate::document::{Edge, Node, NodeType, Workflow};
use crate::result::{NodeStatus, RunResult};
use crate::session::RunRequest;

const SYSTEM: &str = "You grade the output of an AI workflow step against a rubric. Answer only with JSON: a score \
from 0 (fails the rubric entirely) to 1 (meets it fully), and one sentence of reason.";

/// The judge as a workflow: its input carries the rubric and the output, so no judged text is read as a template.
fn judge_workflow() -> Workflow {
    let mut wf = Workflow::new("judge");
    wf.nodes.push(Node::new("start", NodeType::Start));
    let mut judge = Node::new("judge", NodeType::Agent);
    judge.system_prompt = Some(SYSTEM.into());
    judge.user_prompt = Some("Rubric: {{ input.rubric }}\n\nOutput to grade:\n{{ input.output }}".into());
    judge.output_schema = Some(json!({
        "type": "object",
        "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}, "reason": {"type": "string"}},
        "required": ["score", "reason"]
    }));
    wf.nodes.push(judge);
    wf.edges.push(Edge::new("start", "judge"));
    wf
}

/// What a judgement came to: its score and reason, or why the judge could not answer.
pub struct Judged {
    pub score: Option<f64>,
    pub reason: String,
    pub tokens: u64,
    /// Why the judge could not be asked here (no model, offline with no recorded verdict), with its code: the case
    /// could not run, which says nothing of the output judged.
    pub setup: Option<CaseError>,
}

/// How a judge is asked: the model that judges expectations that name none, and the recorded calls (a verdict is
/// recorded like any model call, by the judge's prompt and the output it judged).
pub struct Asking<'a> {
    pub model: Option<&'a str>,
    pub recorded: Option<std::sync::Arc<crate::recorded::Calls>>,
    pub offline: bool,
}

/// Asks `model` (else the settings' default) to score `output` against the rubric.
pub async fn judge(j: &JudgeCheck, output: &str, model: Option<String>, asking: &Asking<'_>) -> Judged {
    let request = RunRequest {
        input: Some(json!({"rubric": j.rubric, "output": output})),
        model,
        recorded: asking.recorded.clone(),
        offline: asking.offline,
        ..RunRequest::default()
    };
    match super::collect::run_collecting(judge_workflow(), request, None).await {
        Ok((outcome, events, _)) => verdict(&outcome.result, check::spent(&events, None).tokens),
        Err(e) => {
            let setup = CaseError { code: e.code().into(), message: format!("the judge could not run: {e}") };
            Judged { score: None, reason: setup.message.clone(), tokens: 0, setup: Some(setup) }
        }
    }
}

fn verdict(result: &RunResult, tokens: u64) -> Judged {
    let Some(r) = result.results.get("judge") else {
        return Judged { score: None, reason: "the judge did not answer".into(), tokens, setup: None };
    };
    if r.status != NodeStatus::Success {
        let reason = format!("the judge failed: {}", r.error.as_deref().unwrap_or(""));
        let setup = r
            .error_code
            .as_deref()
            .filter(|c| super::collect::SETUP_CODES.contains(c))
            .map(|code| CaseError { code: code.into(), message: reason.clone() });
        return Judged { score: None, reason, tokens, setup };
    }
    let score = r.data.get("score").and_then(Value::as_f64).map(|s| s.clamp(0.0, 1.0));
    let reason = r.data.get("reason").and_then(Value::as_str).unwrap_or_default().to_string();
    Judged { score, reason, tokens, setup: None }
}

/// A judge's answer, kept in the report whether it passed or not.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Judgement {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub score: Option<f64>,
    pub reason: String,
}

/// Judges a case's `judge` expectations (those `check` leaves to a model), in the order written: the failures, the
/// judgements, and the tokens the judge used; or why a judge could not be asked here.
pub async fn judge_all(
    expect: &[Expectation],
    result: &RunResult,
    asking: Asking<'_>,
) -> Result<(Vec<Failure>, Vec<Judgement>, u64), CaseError> {
    let mut failures = Vec::new();
    let mut judgements = Vec::new();
    let mut tokens: u64 = 0;
    for e in expect {
        let Check::Judge(j) = &e.check else { continue };
        let expected = check::describe(&e.check);
        let Some(output) = check::judged_text(e.node.as_deref(), result) else {
            let what = e.node.as_ref().map_or("no node succeeded".to_string(), |n| check::absence(n, result).into());
            failures.push(Failure { node: e.node.clone(), name: None, expected, actual: what });
            continue;
        };
        let model = j.model.clone().or_else(|| asking.model.map(str::to_string));
        let judged = judge(j, &output, model, &asking).await;
        if let Some(setup) = judged.setup {
            return Err(setup);
        }
        tokens = tokens.saturating_add(judged.tokens);
        judgements.push(Judgement { node: e.node.clone(), score: judged.score, reason: judged.reason.clone() });
        match judged.score {
            Some(score) if score + 1e-9 >= j.threshold => {}
            Some(score) => failures.push(Failure {
                node: e.node.clone(),
                name: None,
                expected,
                actual: format!("scored {score:.2}: {}", check::short(&judged.reason, 160)),
            }),
            None => failures.push(Failure { node: e.node.clone(), name: None, expected, actual: judged.reason }),
        }
    }
    Ok((failures, judgements, tokens))
}
