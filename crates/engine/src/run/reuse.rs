//! Running from a node (`switchyard run FILE --reuse RUN --from NODE`, the app's "Run from here"): every node
//! upstream of NODE takes what it did in the earlier run — its results, the routes chosen after it, the decisions
//! on it — instead of running again; NODE and everything after it run for real. The earlier run's answers travel in
//! the run options, so a run that reused them is rebuilt (resumed, replayed) the same way.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Decision, Input, Recording};
use crate::events::Usage;
use crate::graph::Topology;
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
