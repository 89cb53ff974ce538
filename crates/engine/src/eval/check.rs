//! Whether a run meets a case's expectations: a pure function of the run's result and events, so every check is
//! tested without running anything. Each failure says which node, what was expected and what came.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::file::{Check, Expectation};
use crate::events::{Event, EventKind};
use crate::result::{NodeResult, NodeStatus, RunResult, RunStatus, Usage, SATURATED};
use crate::run::output_text;
use crate::{node_types, Workflow};

/// An expectation that did not hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Failure {
    /// The node it was about; none for the run as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The node as reports show it ([`node_name`]: its name, its id after it where the two differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The expectation as written, e.g. `contains "Dark mode"`.
    pub expected: String,
    /// What came instead.
    pub actual: String,
}

/// What a run used, from its events: tokens and time, per node and in all.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spent {
    pub tokens: u64,
    pub duration_ms: u64,
}

pub fn spent(events: &[Event], node: Option<&str>) -> Spent {
    let mut spent = Spent::default();
    for e in events {
        match &e.kind {
            EventKind::NodeExit { node: n, usage, duration_ms, .. } if node.is_none_or(|id| id == n) => {
                spent.tokens = spent.tokens.saturating_add(usage.as_ref().map_or(0, Usage::tokens));
                if node.is_some() {
                    spent.duration_ms = spent.duration_ms.saturating_add(*duration_ms);
                }
            }
            EventKind::Route { from, usage: Some(u), .. } if node.is_none_or(|id| id == from) => {
                spent.tokens = spent.tokens.saturating_add(u.tokens());
            }
            _ => {}
        }
    }
    if node.is_none() {
        let time = |e: &Event| chrono::DateTime::parse_from_rfc3339(&e.ts).ok().map(|t| t.timestamp_millis());
        if let (Some(first), Some(last)) = (events.first().and_then(time), events.last().and_then(time)) {
            spent.duration_ms = (last - first).max(0) as u64;
        }
    }
    spent
}

/// What a failure says came from a node that never produced an output: it never ran, it was skipped (its branch
/// was not taken), or it is an approval that waited for a decision the case does not give. A report writes these
/// as "expected …, but it did not run" rather than "got …".
pub const DID_NOT_RUN: &str = "did not run";
pub const SKIPPED: &str = "was skipped";
pub const WAITED: &str = "waited for a decision";

/// Whether a failure's `actual` says the node produced nothing ([`DID_NOT_RUN`], [`SKIPPED`], [`WAITED`]).
pub fn is_absence(actual: &str) -> bool {
    [DID_NOT_RUN, SKIPPED, WAITED].contains(&actual)
}

/// Why node `id` has no result: it waited for a decision (the run paused on it), or it did not run.
pub fn absence(id: &str, result: &RunResult) -> &'static str {
    if result.status == RunStatus::Paused && result.pending.iter().any(|p| p.node == id) {
        WAITED
    } else {
        DID_NOT_RUN
    }
}

/// How reports name a node: as its card does, by its name, with its id in parentheses where the two differ (the
/// id is what the evaluation file writes, so the line leads back to it): `Write reply (agent_3)`. A node with no
/// name, or named as its id, is its id; an id the workflow does not have stays as it is.
pub fn node_name(workflow: &Workflow, id: &str) -> String {
    let name = workflow.nodes.iter().find(|n| n.id == id).and_then(|n| n.name.as_deref()).map(str::trim);
    match name {
        Some(name) if !name.is_empty() && name != id => format!("{name} ({id})"),
        _ => id.to_string(),
    }
}

/// Gives each failure about a node the name reports show it by ([`node_name`]).
pub fn name_nodes(failures: &mut [Failure], workflow: &Workflow) {
    for f in failures {
        f.name = f.node.as_deref().map(|id| node_name(workflow, id));
    }
}

/// An `if` node's output, `{"branch": "condition-0", "label": "high"}`, as the branch its card shows: `branch “high”`
/// (the label the engine wrote, else the one [`node_types::source_handle_label`] gives the handle). Anything else:
/// none.
pub fn branch_shown(data: &Value, node: Option<&str>, workflow: &Workflow) -> Option<String> {
    let map = data.as_object()?;
    let branch = map.get("branch")?.as_str()?;
    if map.keys().any(|k| k != "branch" && k != "label") {
        return None;
    }
    let of_node = || {
        let n = workflow.nodes.iter().find(|n| Some(n.id.as_str()) == node)?;
        node_types::source_handle_label(n, node_types::resolve_handle(n, branch)?.position as usize)
    };
    let label = match map.get("label") {
        Some(Value::String(l)) => l.clone(),
        None | Some(Value::Null) => of_node().unwrap_or_else(|| branch.to_string()),
        Some(_) => return None,
    };
    Some(format!("branch “{label}”"))
}

/// The expectations of a case that `result` does not meet, in the order written, nodes named as in [`node_name`].
pub fn check(expect: &[Expectation], result: &RunResult, events: &[Event], workflow: &Workflow) -> Vec<Failure> {
    let mut failures: Vec<Failure> = expect.iter().filter_map(|e| check_one(e, result, events, workflow)).collect();
    name_nodes(&mut failures, workflow);
    failures
}

fn check_one(e: &Expectation, result: &RunResult, events: &[Event], workflow: &Workflow) -> Option<Failure> {
    let fail = |expected: String, actual: String| Some(Failure { node: e.node.clone(), name: None, expected, actual });
    let node = match &e.node {
        Some(id) => match result.results.get(id) {
            Some(r) => Some(r),
            None if matches!(e.check, Check::Status(_)) => None,
            None => return fail(describe_in(&e.check, workflow), absence(id, result).to_string()),
        },
        None => None,
    };
    // A node skipped because its branch was not taken has no output to read.
    let reads_output = !matches!(
        e.check,
        Check::Status(_)
            | Check::Route(_)
            | Check::MaxTokens(_)
            | Check::MaxLatencyMs(_)
            | Check::Judge(_)
            | Check::Code(_)
            | Check::MaxCost(_)
    );
    if reads_output && node.is_some_and(|r| r.status == NodeStatus::Skipped) {
        return fail(describe_in(&e.check, workflow), SKIPPED.to_string());
    }
    // Of the run, output checks read the last node that succeeded.
    let subject = node.or_else(|| last_succeeded(result));
    let data = subject.map_or(&Value::Null, |r| &r.data);
    let text = output_text(data);
    let shown = |s: &str| short(s, 200);
    let subject_id = e.node.as_deref().or_else(|| last_succeeded_id(result));
    let branch = branch_shown(data, subject_id, workflow);
    match &e.check {
        Check::Equals(Value::String(want)) => {
            (text.trim() != want.trim()).then(|| fail(describe(&e.check), branch.unwrap_or_else(|| shown(&text))))?
        }
        Check::Equals(want) => (data != want && !same_branch(want, data, subject_id, workflow)).then(|| {
            let expected =
                branch_shown(want, subject_id, workflow).map_or_else(|| describe(&e.check), |b| format!("equals {b}"));
            fail(expected, branch.unwrap_or_else(|| shown(&data.to_string())))
        })?,
        Check::Contains(want) => {
            (!text.contains(want.as_str())).then(|| fail(describe(&e.check), branch.unwrap_or_else(|| shown(&text))))?
        }
        Check::Regex(pattern) => {
            let re = regex::Regex::new(pattern).expect("checked when the file was loaded");
            (!re.is_match(&text)).then(|| fail(describe(&e.check), branch.unwrap_or_else(|| shown(&text))))?
        }
        Check::Schema(schema) => {
            let validator = jsonschema::validator_for(schema).expect("checked when the file was loaded");
            let errors: Vec<String> = validator.iter_errors(data).map(|err| err.to_string()).collect();
            (!errors.is_empty()).then(|| fail(describe(&e.check), short(&errors.join("; "), 200)))?
        }
        Check::Path(p) => {
            let found = at_path(data, &p.path);
            (found != Some(&p.equals)).then(|| {
                fail(describe(&e.check), found.map_or_else(|| "nothing there".into(), |v| shown(&v.to_string())))
            })?
        }
        Check::Route(to) => {
            let from = e.node.as_deref().unwrap_or_default();
            let taken: Vec<&str> =
                result.trace.edges.iter().filter(|t| t.from == from).map(|t| t.to.as_str()).collect();
            (!taken.contains(&to.as_str())).then(|| {
                let named: Vec<String> = taken.iter().map(|id| node_name(workflow, id)).collect();
                let actual = if taken.is_empty() { "no route".into() } else { format!("went to {}", named.join(", ")) };
                fail(describe_in(&e.check, workflow), actual)
            })?
        }
        Check::Tool(t) => {
            let calls = subject.map_or(&[][..], |r| &r.tool_calls[..]);
            let hit =
                calls.iter().any(|c| c.tool == t.name && t.arguments.as_ref().is_none_or(|a| contains(&c.input, a)));
            (!hit).then(|| {
                let made: Vec<String> = calls.iter().map(|c| format!("{} {}", c.tool, c.input)).collect();
                let actual = if made.is_empty() { "no tool call".into() } else { short(&made.join("; "), 200) };
                fail(describe(&e.check), actual)
            })?
        }
        Check::Approval(verdict) => {
            let decided = data.get("decision").and_then(Value::as_str).unwrap_or("no decision");
            (decided != verdict.as_str()).then(|| fail(describe(&e.check), decided.to_string()))?
        }
        Check::Status(want) => {
            // A node's status as results write it (`success`) or as it is shown (`succeeded`).
            let (actual, other) = match (&e.node, node) {
                (Some(_), Some(r)) => (r.status.word().to_string(), serde_json::to_value(r.status).ok()),
                (Some(id), None) => (absence(id, result).to_string(), None),
                (None, _) => (result.status.as_str().to_string(), None),
            };
            let same = actual == *want || other.as_ref().and_then(Value::as_str) == Some(want.as_str());
            (!same).then(|| fail(describe(&e.check), actual))?
        }
        Check::MaxTokens(max) => {
            // A total that reached the most a count holds overflowed: it is more than any limit, never within it.
            match spent(events, e.node.as_deref()).tokens {
                SATURATED => fail(describe(&e.check), format!("more than {SATURATED} tokens (the count overflowed)")),
                used => (used > *max).then(|| fail(describe(&e.check), tokens(used)))?,
            }
        }
        Check::MaxLatencyMs(max) => {
            let took = spent(events, e.node.as_deref()).duration_ms;
            (took > *max).then(|| fail(describe(&e.check), format!("{took} ms")))?
        }
        // A model judges it (`judge.rs`), code asserts it (`assertion.rs`): the runner asks after the run.
        Check::Judge(_) | Check::Code(_) | Check::MaxCost(_) => None,
    }
}

/// The output an expectation reads as text: the node's, or for the run the last node that succeeded.
pub fn judged_text(node: Option<&str>, result: &RunResult) -> Option<String> {
    let subject = match node {
        Some(id) => result.results.get(id)?,
        None => last_succeeded(result)?,
    };
    Some(output_text(&subject.data))
}

/// What checks of the run as a whole read: the result of the last node that succeeded.
fn last_succeeded(result: &RunResult) -> Option<&NodeResult> {
    result.results.get(last_succeeded_id(result)?)
}

fn last_succeeded_id(result: &RunResult) -> Option<&str> {
    let last = result.trace.steps.iter().rev().find(|s| s.status == NodeStatus::Success)?;
    Some(last.node.as_str())
}

/// Whether two `if` outputs name the same branch of `node`, by any of its names (`false` and `else`), whatever label
/// either carries: `equals: {branch: else}` holds for `{"branch": "false", "label": "else"}`.
fn same_branch(want: &Value, data: &Value, node: Option<&str>, workflow: &Workflow) -> bool {
    fn branch(v: &Value) -> Option<&str> {
        let map = v.as_object()?;
        map.keys().all(|k| k == "branch" || k == "label").then(|| map.get("branch")?.as_str())?
    }
    let (Some(a), Some(b)) = (branch(want), branch(data)) else { return false };
    let position = |name: &str| {
        let n = workflow.nodes.iter().find(|n| Some(n.id.as_str()) == node)?;
        node_types::resolve_handle(n, name).map(|h| h.position)
    };
    a == b || position(a).is_some_and(|p| Some(p) == position(b))
}

/// The expectation as a report writes it, the nodes it names named as in [`node_name`] (`routes to Page (page)`).
pub fn describe_in(check: &Check, workflow: &Workflow) -> String {
    match check {
        Check::Route(to) => format!("routes to {}", node_name(workflow, to)),
        other => describe(other),
    }
}

/// The expectation as a person reads it in a report.
pub fn describe(check: &Check) -> String {
    match check {
        Check::Code(c) => format!("passes the {} assertion", c.language),
        Check::MaxCost(usd) => format!("costs at most ${usd}"),
        Check::Equals(v) => format!("equals {}", short(&v.to_string(), 120)),
        Check::Contains(s) => format!("contains {s:?}"),
        Check::Regex(r) => format!("matches /{r}/"),
        Check::Schema(_) => "matches the schema".into(),
        Check::Path(p) => format!("{} equals {}", p.path, short(&p.equals.to_string(), 120)),
        Check::Route(to) => format!("routes to {to}"),
        Check::Tool(t) => match &t.arguments {
            Some(a) => format!("calls {} with {a}", t.name),
            None => format!("calls {}", t.name),
        },
        Check::Approval(v) => format!("is decided {}", v.as_str()),
        Check::Status(s) => format!("status {s}"),
        Check::MaxTokens(n) => format!("at most {}", tokens(*n)),
        Check::MaxLatencyMs(n) => format!("at most {n} ms"),
        Check::Judge(j) => match &j.model {
            Some(model) => format!("judged by {model} ≥ {} on \"{}\"", j.threshold, short(&j.rubric, 80)),
            None => format!("judged ≥ {} on \"{}\"", j.threshold, short(&j.rubric, 80)),
        },
    }
}

/// The value at a dotted path (`items.0.name`) or a JSON Pointer (`/items/0/name`).
fn at_path<'a>(data: &'a Value, path: &str) -> Option<&'a Value> {
    if path.starts_with('/') {
        return data.pointer(path);
    }
    path.split('.').filter(|k| !k.is_empty()).try_fold(data, |v, key| match v {
        Value::Array(items) => items.get(key.parse::<usize>().ok()?),
        _ => v.get(key),
    })
}

/// Whether `actual` has every key of `wanted` with its value (recursively for objects).
fn contains(actual: &Value, wanted: &Value) -> bool {
    match (actual, wanted) {
        (Value::Object(a), Value::Object(w)) => w.iter().all(|(k, v)| a.get(k).is_some_and(|x| contains(x, v))),
        _ => actual == wanted,
    }
}

pub(super) fn short(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}

/// "1 token", "2 tokens".
pub(super) fn tokens(n: u64) -> String {
    match n {
        1 => "1 token".to_string(),
        n => format!("{n} tokens"),
    }
}
