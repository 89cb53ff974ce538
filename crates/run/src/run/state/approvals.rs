//! What waits for a person (SEMANTICS §4): approval nodes reached and agents' tool calls that need approval. Each
//! pending item is a small machine — waiting, then decided, timed out, or withdrawn — and knows nothing of joins or
//! routing: a decided approval node ends as a node with the verdict as its data, and routing reads it from there.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::json;

use super::{node, Effect, RunState};
use crate::document::handle;
use crate::events::{EventKind, ToolRequest};
use crate::graph::NodeIx;
use crate::node_types;
use crate::result::{Decision, PendingApproval, Verdict};
use crate::template;

/// One thing waiting for a person, as results, events and the run log show it, and what the run keeps about it.
pub(crate) struct Pending {
    pub approval: PendingApproval,
    /// Unix milliseconds after which it times out.
    deadline_ms: Option<i64>,
    /// Unix milliseconds when it was requested: its `node:exit` reports the wait until the decision.
    requested_ms: i64,
    /// A tool call asked for by a task of an earlier process: no task waits on it until one asks for the same call.
    orphan: bool,
}

/// How a pending item left the waiting state (withdrawn items just go).
pub(super) enum Settled {
    Decided(Decision),
    TimedOut,
}

#[derive(Default)]
pub(super) struct Approvals {
    items: Vec<Pending>,
    /// Node tasks blocked on a tool call's decision: the run is idle when every running task waits.
    waiting: usize,
    /// Tool calls decided while no task waited on them (a continued run): the task that asks for the same call again
    /// gets the decision at once.
    decided_early: Vec<(String, ToolRequest, Decision)>,
    /// Tool calls asked for while another call of the same node waits (`for_each` items): one waits for a decision
    /// at a time per node, so the person decides exactly the call shown.
    queued: VecDeque<(NodeIx, ToolRequest)>,
}

impl Approvals {
    pub(super) fn items(&self) -> impl Iterator<Item = &Pending> {
        self.items.iter()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub(super) fn position(&self, node: &str) -> Option<usize> {
        self.items.iter().position(|p| p.approval.node == node)
    }

    pub(super) fn nodes(&self) -> Vec<String> {
        self.items.iter().map(|p| p.approval.node.clone()).collect()
    }

    pub(super) fn waiting_tasks(&self) -> usize {
        self.waiting
    }

    pub(super) fn next_deadline(&self) -> Option<i64> {
        self.items.iter().filter_map(|p| p.deadline_ms).min()
    }

    pub(super) fn expired(&self, now_ms: i64) -> Option<String> {
        self.items.iter().find(|p| p.deadline_ms.is_some_and(|d| d <= now_ms)).map(|p| p.approval.node.clone())
    }

    /// A tool call a live task waits on.
    pub(super) fn has_attended_tool_calls(&self) -> bool {
        self.items.iter().any(|p| p.approval.tool.is_some() && !p.orphan)
    }

    /// The strongly connected components of the nodes that wait (their cycles may still run again).
    pub(super) fn nodes_in(&self, topo: &crate::graph::Topology) -> Vec<usize> {
        self.items.iter().map(|p| topo.component[topo.index[&p.approval.node]]).collect()
    }

    /// A node ended: tool calls an earlier process's task waited on that this run of the node never asked for again
    /// are withdrawn.
    pub(super) fn node_ended(&mut self, node: &str) {
        self.items.retain(|p| !(p.orphan && p.approval.node == node));
        self.decided_early.retain(|(id, _, _)| id != node);
    }

    /// The run ended: tasks waiting on tool calls are stopped with the others.
    pub(super) fn drop_tool_waits(&mut self) {
        self.items.retain(|p| p.approval.tool.is_none());
        self.waiting = 0;
        self.decided_early.clear();
        self.queued.clear();
    }

    pub(super) fn clear(&mut self) {
        self.items.clear();
    }
}

impl RunState {
    /// An approval node is reached: it waits for a decision (or takes the one reused from an earlier run).
    pub(super) fn reach_approval(&mut self, node: NodeIx, previous_output: Arc<str>) {
        let workflow = self.workflow.clone();
        let n = &workflow.nodes[node];
        let message = n.message.clone().unwrap_or_else(|| node_types::APPROVAL_MESSAGE.into());
        let message = template::render(&message, &self.scope).unwrap_or(message);
        let approval = PendingApproval {
            node: n.id.clone(),
            message,
            previous_output: previous_output.to_string(),
            tool: None,
            child: None,
        };
        self.emit(EventKind::ApprovalRequested(approval.clone()));
        self.emit(EventKind::log(Some(&n.id), "wait_input", "waiting for a decision"));
        let visit = self.approval_visits[node];
        self.approval_visits[node] += 1;
        let deadline_ms = n.timeout_seconds.map(|s| self.now_ms + (s as i64) * 1000);
        self.outputs[node] = previous_output.clone();
        self.approvals.items.push(Pending { approval, deadline_ms, requested_ms: self.now_ms, orphan: false });
        if let Some(decision) = self.reuse.as_ref().and_then(|r| r.decision(&n.id, visit)).cloned() {
            let at = self.approvals.items.len() - 1;
            self.settle_approval(at, Settled::Decided(decision));
            return;
        }
        // An answers file may decide it at once: the driver looks (or, rebuilding, takes the recorded decision).
        self.effects.push(Effect::ApprovalReached { node: n.id.clone(), visit });
    }

    /// A pending item is decided or timed out: an approval node ends with the verdict and routes on by its handle; a
    /// tool call's task goes on.
    pub(super) fn settle_approval(&mut self, at: usize, settled: Settled) {
        let decision = match settled {
            Settled::Decided(decision) => decision,
            // A child's approval timed out: the child takes its own `timeout` edge (or rejects), as it would alone.
            Settled::TimedOut if self.approvals.items[at].approval.tool.is_some() => {
                Decision::new(Verdict::Timeout, "timed out")
            }
            Settled::TimedOut => {
                // It follows its `timeout` edge, or is rejected when it has none.
                let node = self.topo.index[&self.approvals.items[at].approval.node];
                let topo = &self.topo;
                let timeout = node_types::resolve_handle(&self.workflow.nodes[node], handle::TIMEOUT);
                let has_timeout_edge =
                    timeout.is_some_and(|t| topo.out[node].iter().any(|&e| topo.handles[e] == Some(t)));
                let verdict = if has_timeout_edge { Verdict::Timeout } else { Verdict::Reject };
                Decision::new(verdict, "timed out")
            }
        };
        self.unpause();
        let p = self.approvals.items.remove(at);
        if let Some(request) = p.approval.tool {
            self.settle_tool(p.approval.node, request, p.orphan, decision);
            return;
        }
        let node = self.topo.index[&p.approval.node];
        self.emit(EventKind::ApprovalReceived {
            node: p.approval.node.clone(),
            decision: decision.verdict,
            note: decision.note.clone(),
            by: decision.by.clone(),
        });
        let note = if decision.note.is_empty() { String::new() } else { format!(" Feedback: {}", decision.note) };
        let said = decision.verdict.said();
        self.emit(EventKind::log(Some(&p.approval.node), "input_received", format!("{said}.{note}")));
        let data = json!({ "decision": decision.verdict.as_str(), "note": decision.note });
        let previous: Arc<str> = Arc::from(p.approval.previous_output.as_str());
        // How long it waited: from `approval:requested` to the decision (or the timeout).
        let waited = (self.now_ms - p.requested_ms).max(0) as u64;
        self.node_done(node, self.iterations[node], waited, previous, node::NodeOutcome::data(data));
    }

    pub(super) fn time_out(&mut self, at: usize) {
        self.settle_approval(at, Settled::TimedOut);
    }

    /// An agent's task asks to call a tool that needs approval, and waits. A call decided while no task waited on it
    /// (a continued run) is answered at once; a call an earlier process's task was waiting on is taken over by the
    /// task that asks for the same call, and withdrawn when it asks for another.
    pub(super) fn ask_tool(&mut self, node: NodeIx, request: ToolRequest) {
        let id = self.id(node).to_string();
        let a = &mut self.approvals;
        if let Some(at) = a.decided_early.iter().position(|(n, r, _)| *n == id && *r == request) {
            let (_, _, decision) = a.decided_early.remove(at);
            self.effects.push(Effect::ToolDecided { node: id, request, decision });
            return;
        }
        a.waiting += 1;
        if let Some(at) = a.items.iter().position(|p| p.approval.node == id && p.orphan) {
            if a.items[at].approval.tool.as_ref() == Some(&request) {
                a.items[at].orphan = false;
                return;
            }
            a.items.remove(at);
            self.emit(EventKind::log(Some(&id), "input_received", "withdrawn: the agent asked for another call"));
        }
        let a = &mut self.approvals;
        if a.items.iter().any(|p| p.approval.node == id && p.approval.tool.is_some()) {
            a.queued.push_back((node, request));
            return;
        }
        self.request_tool(node, request);
    }

    /// Shows a tool call that waits: an approval on the agent's node with the tool and its arguments.
    fn request_tool(&mut self, node: NodeIx, request: ToolRequest) {
        let id = self.id(node).to_string();
        // A child run's approval (a `workflow` node's) asks what the child's approval asks, about what reached it.
        let (message, shown, said) = match crate::result::child_waiting(&request) {
            Some((message, previous)) => {
                (message.to_string(), previous.to_string(), format!("waiting for a decision on `{}`", request.tool))
            }
            None => (
                format!("Allow the call of `{}`?", request.tool),
                serde_json::to_string_pretty(&request.input).unwrap_or_default(),
                format!("waiting for a decision on `{}`", request.tool),
            ),
        };
        // A child's approval that times out times out here too, at the same instant (docs/subworkflows.md).
        let deadline_ms = crate::result::child_deadline(&request);
        let child = crate::result::ChildApproval::of(&request);
        let approval =
            PendingApproval { node: id.clone(), message, previous_output: shown, tool: Some(request), child };
        self.emit(EventKind::ApprovalRequested(approval.clone()));
        self.emit(EventKind::log(Some(&id), "wait_input", said));
        let visit = self.approval_visits[node];
        self.approval_visits[node] += 1;
        self.approvals.items.push(Pending { approval, deadline_ms, requested_ms: self.now_ms, orphan: false });
        self.effects.push(Effect::ApprovalReached { node: id, visit });
    }

    /// A tool call was decided: its task goes on (a rejection is the tool's result), or, when no task waits on it,
    /// the decision is kept for the task that asks for the same call.
    fn settle_tool(&mut self, node: String, request: ToolRequest, orphan: bool, decision: Decision) {
        self.emit(EventKind::ApprovalReceived {
            node: node.clone(),
            decision: decision.verdict,
            note: decision.note.clone(),
            by: decision.by.clone(),
        });
        let note = if decision.note.is_empty() { String::new() } else { format!(" Feedback: {}", decision.note) };
        let said = decision.verdict.said();
        self.emit(EventKind::log(Some(&node), "input_received", format!("`{}` {said}.{note}", request.tool)));
        if orphan {
            self.approvals.decided_early.push((node, request, decision));
            return;
        }
        self.approvals.waiting -= 1;
        let at = self.topo.index[&node];
        self.effects.push(Effect::ToolDecided { node, request, decision });
        if let Some(next) = self.approvals.queued.iter().position(|(n, _)| *n == at) {
            let (_, request) = self.approvals.queued.remove(next).expect("found");
            self.request_tool(at, request);
        }
    }

    /// The run goes on in a new process: tool calls that were waiting have no task until one asks again.
    pub(super) fn continued(&mut self) {
        let a = &mut self.approvals;
        for p in a.items.iter_mut().filter(|p| p.approval.tool.is_some() && !p.orphan) {
            p.orphan = true;
            a.waiting -= 1;
        }
        // Queued calls' tasks are gone too; they ask again when they start.
        a.waiting -= a.queued.len();
        a.queued.clear();
    }
}
