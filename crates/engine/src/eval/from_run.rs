//! A recorded run becomes a case (`switchyard eval add RUN_ID`): its input; the decisions people made; as
//! expectations, what each node did, with a comparison a person can edit (structured data: `equals`; text:
//! `contains` its first line; decisions: `approval`; choices: `route`); and how its calls are answered. A run made
//! on a model keeps its model calls, keyed by what they asked (`crate::recorded`), for the evaluation file's record:
//! the case replays them at zero tokens while nothing changed, and asks again exactly the calls an edit changes. Its
//! code steps are pinned as answers. A run made on an answers file pins everything it answered, as answers.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::file::{AnswersRef, Case, Check, Expectation};
use crate::answers::{Answer, AnswerStatus, Answers, OneOrMany};
use crate::document::{NodeType, Workflow};
use crate::journal::{Entry, What};
use crate::record::{Input, Recording};
use crate::recorded::Call;
use crate::result::{NodeStatus, RunResult};
use crate::run::{output_text, RunOptions};

/// A case made from a run, and the model calls it keeps (empty for a run made on an answers file).
pub struct FromRun {
    pub case: Case,
    pub calls: Vec<(String, Call)>,
}

pub fn case_from_run(
    id: String,
    workflow: &Workflow,
    options: &RunOptions,
    recording: &Recording,
    result: &RunResult,
) -> FromRun {
    let mut nodes: BTreeMap<String, Vec<Answer>> = BTreeMap::new();
    let mut routes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut decisions: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let calls: Vec<(String, Call)> = recording
        .inputs
        .iter()
        .filter_map(|r| match &r.input {
            Input::Journaled(entry) => match &**entry {
                Entry { what: What::Asked { key, call }, .. } => Some((key.clone(), call.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    // On a model, only code steps are pinned: the model calls are kept as calls.
    let is_code = |id: &str| workflow.nodes.iter().any(|n| n.id == id && n.node_type == NodeType::Script);
    let pinned = |id: &str| calls.is_empty() || is_code(id);
    for recorded in &recording.inputs {
        match &recorded.input {
            Input::NodeDone { node, .. } | Input::Routed { node, .. } if !pinned(node) => {}
            Input::NodeDone { node, data, .. } => {
                let answered = nodes.entry(node.clone()).or_default();
                // A `for_each` node asks once per item: its answers are its items, in order.
                let per_item = workflow.nodes.iter().any(|n| n.id == *node && n.for_each.is_some());
                match data {
                    Ok(data) if per_item && data.get("items").is_some_and(Value::is_array) => {
                        answered.extend(data["items"].as_array().into_iter().flatten().map(answer_of));
                    }
                    Ok(data) => answered.push(answer_of(data)),
                    Err(error) => answered.push(Answer {
                        status: AnswerStatus::Failed,
                        error: Some(error.clone()),
                        ..Answer::default()
                    }),
                }
            }
            Input::Routed { node, answer: Ok(a) } => routes.entry(node.clone()).or_default().push(a.choice.clone()),
            Input::Decided { node, decision, .. } => decisions
                .entry(node.clone())
                .or_default()
                .push(json!({"decision": decision.verdict.as_str(), "note": decision.note})),
            _ => {}
        }
    }
    let many = |list: Vec<Value>| if list.len() == 1 { list.into_iter().next().unwrap() } else { Value::Array(list) };
    let answers = Answers {
        nodes: nodes.into_iter().map(|(k, v)| (k, one_or_many(v))).collect(),
        routes: routes.into_iter().map(|(k, v)| (k, one_or_many(v))).collect(),
        approvals: BTreeMap::new(),
        workflows: BTreeMap::new(),
    };
    let mut expect = Vec::new();
    for node in &workflow.nodes {
        let Some(r) = result.results.get(&node.id) else { continue };
        let of = |check: Check| Expectation { node: Some(node.id.clone()), check };
        match (r.status, node.node_type) {
            (NodeStatus::Skipped, _) => expect.push(of(Check::Status("skipped".into()))),
            (NodeStatus::Failed, _) => expect.push(of(Check::Status("failed".into()))),
            (_, NodeType::Start) => {}
            (_, NodeType::Approval) => {
                match r.data.get("decision").and_then(|d| serde_json::from_value(d.clone()).ok()) {
                    Some(verdict) => expect.push(of(Check::Approval(verdict))),
                    None => expect.push(of(Check::Status("success".into()))),
                }
            }
            (_, NodeType::If) => expect.push(of(Check::Status("success".into()))),
            _ => match &r.data {
                Value::Object(o) if o.len() == 1 && o.get("text").is_some_and(Value::is_string) => {
                    let text = output_text(&r.data);
                    let line: String =
                        text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").chars().take(80).collect();
                    expect.push(of(if line.is_empty() {
                        Check::Status("success".into())
                    } else {
                        Check::Contains(line)
                    }));
                }
                data => expect.push(of(Check::Equals(data.clone()))),
            },
        }
        // Where a node chose its way (a condition, a decision, the model among `when` edges), the way it went.
        let chose =
            matches!(node.node_type, NodeType::If | NodeType::Approval) || answers.routes.contains_key(&node.id);
        if chose && r.status == NodeStatus::Success {
            let mut ways: Vec<&str> = Vec::new();
            for edge in result.trace.edges.iter().filter(|e| e.from == node.id) {
                if !ways.contains(&edge.to.as_str()) {
                    ways.push(&edge.to);
                    expect.push(of(Check::Route(edge.to.clone())));
                }
            }
        }
    }
    expect.push(Expectation { node: None, check: Check::Status(result.status.as_str().into()) });
    let answered = !answers.nodes.is_empty() || !answers.routes.is_empty() || calls.is_empty();
    let case = Case {
        id,
        description: Some(format!("made from run {}", result.run_id)),
        input: options.input.clone(),
        answers: answered.then(|| AnswersRef::Inline(serde_json::to_value(&answers).expect("answers are JSON"))),
        decisions: decisions.into_iter().map(|(k, v)| (k, many(v))).collect(),
        expect,
    };
    FromRun { case, calls }
}

/// What a node answered, as an answers file writes it: `text` for text, `data` for anything else.
fn answer_of(data: &Value) -> Answer {
    match data {
        Value::Object(o) if o.len() == 1 && o.get("text").is_some_and(Value::is_string) => {
            Answer { text: o["text"].as_str().map(str::to_string), ..Answer::default() }
        }
        data => Answer { data: Some(data.clone()), ..Answer::default() },
    }
}

fn one_or_many<T>(mut list: Vec<T>) -> OneOrMany<T> {
    if list.len() == 1 {
        OneOrMany::One(list.remove(0))
    } else {
        OneOrMany::Many(list)
    }
}

/// The case as YAML, an item of a `cases:` list (indented two spaces), to append to an evaluation file. Read back,
/// it is the same case: every line moves right as a whole, and the empty lines of block scalars (`|`) stay, empty,
/// where they were (an empty line in a block scalar is a line feed of its text). A line is what YAML 1.1 ends with a
/// line break: the emitter writes NEL, U+2028 and U+2029 into block scalars as they are, and indents after them.
pub fn case_yaml(case: &Case) -> String {
    let text = serde_yaml::to_string(&vec![case]).expect("a case is YAML");
    let is_break = |c: char| matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}');
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut line_start = true;
    for c in text.chars() {
        if line_start && !is_break(c) {
            out.push_str("  ");
        }
        out.push(c);
        line_start = is_break(c);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}
