//! Running from a node (`switchyard run FILE --reuse RUN --from NODE`, the app's "Run from here"): every node
//! upstream of NODE takes what it did in the earlier run — its results, the routes chosen after it, the decisions
//! on it — instead of running again; NODE and everything after it run for real. The earlier run's answers travel in
//! the run options, so a run that reused them is rebuilt (resumed, replayed) the same way.
//!
//! A fork (`switchyard run FILE --fork RUN --at NODE[#TURN] --answer TEXT`) is a run from NODE where the model said
//! something else: upstream results are reused as above; at NODE, the answer given replaces NODE's result, or, at a
//! turn, NODE's conversation is replayed from the earlier run's journal up to that turn (no model or tool call) and
//! the answer given is what the model said there. Everything after it runs for real.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Decision, Input, Recording};
use crate::events::Usage;
use crate::graph::Topology;
use crate::journal::{Entry, What};
use crate::model::RouteAnswer;
use crate::result::ToolCall;
use crate::Workflow;

/// What the nodes upstream of the node to run from did in an earlier run, per node id, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reuse {
    /// The earlier run.
    pub run: String,
    /// The node run from.
    pub from: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub results: BTreeMap<String, Vec<ReusedResult>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub routes: BTreeMap<String, Vec<Result<RouteAnswer, String>>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub decisions: BTreeMap<String, Vec<Decision>>,
    /// A fork: the answer given at `from` (and the turn, from 1, when it replaces one turn of its conversation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<Fork>,
    /// A fork at a turn: `from`'s journal in the earlier run before that turn, then the answer given at it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal: Vec<Entry>,
}

/// Where a fork gives its answer, and the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fork {
    /// The turn of the node's conversation, from 1; none: the node's result as a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    pub answer: String,
}

/// One recorded execution of a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReusedResult {
    pub iteration: u32,
    pub data: Result<Value, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

message_error!(
    /// A run from a node that cannot reuse the earlier run: the node is not in the workflow.
    ReuseError
);

impl Reuse {
    /// What `run`'s recording holds for the nodes of `workflow` upstream of `from` (those that can complete before
    /// it starts, through forward edges). Fails when `from` is not a node of `workflow`.
    pub fn upstream_of(workflow: &Workflow, from: &str, run: &str, recording: &Recording) -> Result<Reuse, ReuseError> {
        let topo = Topology::new(workflow);
        let Some(&target) = topo.index.get(from) else {
            let ids: Vec<&str> = workflow.nodes.iter().map(|n| n.id.as_str()).collect();
            return Err(ReuseError(format!("no such node `{from}` to run from (nodes: {})", ids.join(", "))));
        };
        let mut upstream = vec![false; workflow.nodes.len()];
        let mut stack = vec![target];
        while let Some(v) = stack.pop() {
            for &e in &topo.forward_in[v] {
                let u = topo.source(e);
                if u != target && !upstream[u] {
                    upstream[u] = true;
                    stack.push(u);
                }
            }
        }
        let is_upstream = |id: &str| topo.index.get(id).is_some_and(|&i| upstream[i]);
        let mut reuse = Reuse { run: run.to_string(), from: from.to_string(), ..Reuse::default() };
        for recorded in &recording.inputs {
            match &recorded.input {
                Input::NodeDone { node, iteration, data, code, tool_calls, usage, .. } if is_upstream(node) => {
                    reuse.results.entry(node.clone()).or_default().push(ReusedResult {
                        iteration: *iteration,
                        data: data.clone(),
                        code: code.clone(),
                        tool_calls: tool_calls.clone(),
                        usage: usage.clone(),
                    })
                }
                Input::Routed { node, answer } if is_upstream(node) => {
                    reuse.routes.entry(node.clone()).or_default().push(answer.clone())
                }
                Input::Decided { node, decision, .. } if is_upstream(node) => {
                    reuse.decisions.entry(node.clone()).or_default().push(decision.clone())
                }
                _ => {}
            }
        }
        Ok(reuse)
    }

    /// A fork of `run` at `node` (its first execution): upstream results reused; at `node`, `fork.answer` is its
    /// result, or, at `fork.turn`, what the model said at that turn of its conversation, the turns and tool calls
    /// before it replayed from `run`'s journal. Fails when `node` is not in the workflow, or did not take that turn.
    pub fn forked(
        workflow: &Workflow,
        node: &str,
        fork: Fork,
        run: &str,
        recording: &Recording,
    ) -> Result<Reuse, ReuseError> {
        let mut reuse = Reuse::upstream_of(workflow, node, run, recording)?;
        // Executions are counted from 1: the fork is of the node's first.
        const FIRST: u32 = 1;
        let output_schema = workflow.nodes.iter().find(|n| n.id == node).and_then(|n| n.output_schema.as_ref());
        match fork.turn {
            None => {
                let data = answer_data(&fork.answer, output_schema.is_some())
                    .map_err(|e| ReuseError(format!("--answer for `{node}`, which has an output schema: {e}")))?;
                let result =
                    ReusedResult { iteration: FIRST, data: Ok(data), code: None, tool_calls: Vec::new(), usage: None };
                reuse.results.insert(node.to_string(), vec![result]);
            }
            Some(turn) => {
                // The node's own conversation (not a `for_each` item's or a subagent's), in the order it happened.
                let entries = recording.inputs.iter().filter_map(|r| match &r.input {
                    Input::Journaled(e) if e.node == node && e.iteration == FIRST && !e.at.contains(['.', '/']) => {
                        Some(&**e)
                    }
                    _ => None,
                });
                let at = format!("t{}", turn.saturating_sub(1));
                let mut kept = Vec::new();
                let (mut turns, mut took) = (0, false);
                for entry in entries {
                    if entry.at == at {
                        took = true;
                        break;
                    }
                    if matches!(entry.what, What::Turn { .. }) {
                        turns += 1;
                    }
                    if matches!(entry.what, What::Turn { .. } | What::Tool { .. }) {
                        kept.push(entry.clone());
                    }
                }
                if turn == 0 || !took {
                    return Err(ReuseError(format!(
                        "run {run}'s `{node}` took no turn {turn} of its conversation (it took {turns}); turns count from 1"
                    )));
                }
                kept.push(Entry {
                    node: node.to_string(),
                    iteration: FIRST,
                    at,
                    what: What::Said { text: fork.answer.clone() },
                });
                reuse.journal = kept;
            }
        }
        reuse.fork = Some(fork);
        Ok(reuse)
    }

    pub(super) fn result(&self, node: &str, iteration: u32) -> Option<&ReusedResult> {
        self.results.get(node)?.iter().find(|r| r.iteration == iteration)
    }

    pub(super) fn route(&self, node: &str, visit: u32) -> Option<&Result<RouteAnswer, String>> {
        self.routes.get(node)?.get(visit as usize)
    }

    pub(super) fn decision(&self, node: &str, visit: u32) -> Option<&Decision> {
        self.decisions.get(node)?.get(visit as usize)
    }
}

/// A node's output from an answer a person gave: JSON when the node has an output schema (it must parse), else text.
pub(super) fn answer_data(answer: &str, structured: bool) -> Result<Value, String> {
    if structured {
        return serde_json::from_str(answer).map_err(|e| format!("the answer is not JSON ({e})"));
    }
    Ok(serde_json::json!({ "text": answer }))
}
