//! The `code` expectation: an assertion written in Python or JavaScript (or any code-step language), run as a code
//! step is — a one-step workflow through the session, with the user's consent (`--allow-code`), never otherwise. It
//! sees `input` = `{node, output, data, status}` of what it checks and returns `{"pass": bool, "message": str}`.

use serde_json::{json, Value};

use super::check::{self, Failure};
use super::collect::CaseError;
use super::file::{Check, CodeCheck, Expectation};
use crate::document::{Edge, Node, NodeType, Workflow};
use crate::result::{NodeStatus, RunResult};
use crate::session::RunRequest;

fn assertion_workflow(c: &CodeCheck) -> Workflow {
    let mut wf = Workflow::new("assertion");
    wf.nodes.push(Node::new("start", NodeType::Start));
    let mut step = Node::new("assert", NodeType::Script);
    step.language = Some(c.language.clone());
    step.code = Some(c.code.clone());
    wf.nodes.push(step);
    wf.edges.push(Edge::new("start", "assert"));
    wf
}

/// Runs a case's `code` expectations, in the order written: the failures, or why an assertion could not run here
/// (no consent: `CODE_NEEDS_CONSENT`).
pub async fn assert_all(
    expect: &[Expectation],
    result: &RunResult,
    allow_code: bool,
) -> Result<Vec<Failure>, CaseError> {
    let mut failures = Vec::new();
    for e in expect {
        let Check::Code(c) = &e.check else { continue };
        let subject = match &e.node {
            Some(id) => result.results.get(id),
            None => None,
        };
        let input = json!({
            "node": e.node,
            "output": check::judged_text(e.node.as_deref(), result),
            "data": subject.map_or(Value::Null, |r| r.data.clone()),
            "status": match (&e.node, subject) {
                (Some(_), Some(r)) => r.status.word().to_string(),
                (Some(_), None) => "did not run".to_string(),
                (None, _) => result.status.as_str().to_string(),
            },
        });
        let request = RunRequest { input: Some(input), allow_code, offline: true, ..RunRequest::default() };
        let (outcome, _, _) =
            super::collect::run_collecting(assertion_workflow(c), request, None).await.map_err(|e| CaseError {
                code: e.code().into(),
                message: format!("the code assertion could not run: {e}"),
            })?;
        let expected = check::describe(&e.check);
        let fail = |actual: String| Failure { node: e.node.clone(), name: None, expected: expected.clone(), actual };
        match outcome.result.results.get("assert") {
            Some(r) if r.status == NodeStatus::Success => {
                if r.data.get("pass") != Some(&Value::Bool(true)) {
                    let message = r.data.get("message").and_then(Value::as_str).unwrap_or("it returned no pass");
                    failures.push(fail(check::short(message, 200)));
                }
            }
            Some(r) => {
                let error = r.error.clone().unwrap_or_default();
                if r.error_code.as_deref() == Some("CODE_NEEDS_CONSENT") {
                    return Err(CaseError {
                        code: "CODE_NEEDS_CONSENT".into(),
                        message: format!("a code assertion runs only with your consent (--allow-code): {error}"),
                    });
                }
                failures.push(fail(format!("the assertion failed to run: {}", check::short(&error, 200))));
            }
            None => failures.push(fail("the assertion did not run".into())),
        }
    }
    Ok(failures)
}
