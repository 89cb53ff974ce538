//! A run's state (SEMANTICS §2–§5) as one value, changed only by applying inputs — the run starts, a node finished
//! with this result, the model chose a route, a decision arrived, a timer fired, the run was cancelled — each of
//! which returns the effects to carry out: emit these events, keep this input, run this node, ask the model to
//! route, cancel the tasks. It runs nothing and waits for nothing, so it is tested without a runtime (see the tests
//! below), and the scheduler (`mod.rs`) is the loop that carries out effects and feeds inputs back: from live tasks,
//! or, when a run is rebuilt, from its recording.
//!
//! `status` is the run's phase: `Running` while nodes run or are ready, `Paused` while nothing runs and approvals
//! wait (it said `workflow:paused`), then one of the ends. Per-edge state (`edge_marks`, `edge_follows`) is kept by
//! edge index of the workflow the state was built for; a run keeps a copy of that workflow, so indices never shift.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::{json, Value};

use super::{node, Activation, Decision, EdgeMark, Input, PendingState, Reuse, RouteAsk, RunOptions, END};
use crate::document::{handle, ConditionOperator, NodeType, OnError, Workflow, DEFAULT_STEP_BUDGET};
use crate::events::{EventKind, ToolRequest, Usage};
use crate::graph::Topology;
use crate::model::{Choice, RouteAnswer, DEFAULT_CHOICE};
use crate::node_types::{self, HandleKind};
use crate::result::{NodeResult, NodeStatus, RunStatus, Trace, TraceEdge, TraceStep};
use crate::template::{self, Scope};

/// What the state asks its driver to do, in order.
pub(crate) enum Effect {
    Emit(EventKind),
    /// Keep this input in the run log (it is being applied).
    Record(Input),
    /// Tell the run log the run's status.
    Status(RunStatus, Vec<String>),
    /// Run an agent or script node; its end comes back as `node_done`.
    RunNode {
        node: usize,
        iteration: u32,
        previous_output: Arc<str>,
        scope: Scope,
    },
    /// Ask the model which way to go after `node`; the answer comes back as `apply_route`.
    AskRoute {
        node: usize,
        live: Vec<usize>,
        output: Arc<str>,
        ask: RouteAsk,
    },
    /// An approval was reached (its `visit`-th time): a script may decide it at once.
    ApprovalReached {
        node: String,
        visit: u32,
    },
    /// A tool call an agent's task waits on was decided: tell the task (the first of `node`'s tasks waiting on this
    /// call: `for_each` items may wait at once).
    ToolDecided {
        node: String,
        request: ToolRequest,
        decision: Decision,
    },
    /// Stop the node tasks and routing calls in flight.
    CancelTasks,
}

pub(crate) struct RunState {
    pub workflow: Arc<Workflow>,
    pub topo: Arc<Topology>,
    pub default_model: Option<String>,
    pub input: Value,
    dry_run: bool,
    step_budget: u32,
    /// Most node tasks at once.
    concurrency: usize,
    /// The phase: running, paused, or how it ended.
    pub status: RunStatus,
    pub error: Option<String>,
    pub scope: Scope,
    results: Vec<Option<NodeResult>>,
    /// The text each node passes on as `PREVIOUS_OUTPUT`.
    outputs: Vec<Arc<str>>,
    iterations: Vec<u32>,
    steps: u32,
    route_visits: Vec<u32>,
    approval_visits: Vec<u32>,
    edge_follows: Vec<u32>,
    edge_marks: Vec<EdgeMark>,
    /// Per node: how many forward in-edges are resolved (followed or dead) since it last fired.
    join_resolved: Vec<usize>,
    /// Per node: the outputs its followed in-edges carried, in follow order.
    join_outputs: Vec<Vec<(usize, Arc<str>)>>,
    deferred: BTreeSet<usize>,
    pub pending: Vec<PendingState>,
    ready: VecDeque<Activation>,
    /// Node tasks and routing calls started and not yet answered.
    pub running: usize,
    /// Of those, tasks blocked on a tool call's approval: the run is idle when every running task waits.
    pub waiting: usize,
    /// Tool calls decided while no task waited on them (a continued run): the task that asks for the same call again
    /// gets the decision at once.
    decided_early: Vec<(String, ToolRequest, Decision)>,
    /// Tool calls asked for while another call of the same node waits (`for_each` items): one waits for a decision
    /// at a time per node, so the person decides exactly the call shown.
    queued_asks: VecDeque<(usize, ToolRequest)>,
    pub trace: Trace,
    /// Nodes found skipped, waiting to cascade; a worklist so long dead chains do not recurse.
    to_skip: VecDeque<usize>,
    reuse: Option<Reuse>,
    /// Wall-clock milliseconds, set by the driver before each input (approval deadlines are computed from it).
    pub now_ms: i64,
    /// While a model's routing answer is applied: the tokens it used, for the first `route` event it causes.
    route_usage: Option<Usage>,
    effects: Vec<Effect>,
}

impl RunState {
    pub(crate) fn new(workflow: Arc<Workflow>, options: &RunOptions) -> RunState {
        let topo = Arc::new(Topology::new(&workflow));
        let (n, e) = (workflow.nodes.len(), workflow.edges.len());
        let input = options.input.clone().unwrap_or(Value::Null);
        let forward_in_unreachable: Vec<usize> =
            (0..n).map(|v| topo.forward_in[v].iter().filter(|&&i| topo.never_followed[i]).count()).collect();
        RunState {
            default_model: options.model.clone().or_else(|| workflow.defaults.model.clone()),
            dry_run: input.get("dryRun").and_then(Value::as_bool).unwrap_or(false),
            step_budget: options.step_budget.or(workflow.defaults.step_budget).unwrap_or(DEFAULT_STEP_BUDGET),
            concurrency: options
                .concurrency
                .or(workflow.defaults.concurrency)
                .map_or(usize::MAX, |c| c.max(1) as usize),
            status: RunStatus::Running,
            error: None,
            scope: Scope::new(input.clone()),
            input,
            results: vec![None; n],
            outputs: vec![Arc::from(""); n],
            iterations: vec![0; n],
            steps: 0,
            route_visits: vec![0; n],
            approval_visits: vec![0; n],
            edge_follows: vec![0; e],
            // Edges out of nodes nothing can reach are resolved from the start: no join waits for them.
            edge_marks: topo
                .never_followed
                .iter()
                .map(|&never| if never { EdgeMark::Dead } else { EdgeMark::Open })
                .collect(),
            join_resolved: forward_in_unreachable,
            join_outputs: vec![Vec::new(); n],
            deferred: BTreeSet::new(),
            pending: Vec::new(),
            ready: VecDeque::new(),
            running: 0,
            waiting: 0,
            decided_early: Vec::new(),
            queued_asks: VecDeque::new(),
            trace: Trace::default(),
            to_skip: VecDeque::new(),
            reuse: options.reuse.clone(),
            now_ms: 0,
            route_usage: None,
            effects: Vec::new(),
            workflow,
            topo,
        }
    }

    /// The effects of what was applied since the last call, in order.
    pub(crate) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Running or paused: not ended.
    pub(crate) fn is_live(&self) -> bool {
        matches!(self.status, RunStatus::Running | RunStatus::Paused)
    }

    /// Nothing runs and nothing is ready to.
    pub(crate) fn is_idle(&self) -> bool {
        self.running == self.waiting && (self.ready.is_empty() || !self.is_live())
    }

    pub(crate) fn id(&self, node: usize) -> &str {
        &self.workflow.nodes[node].id
    }

    fn emit(&mut self, kind: EventKind) {
        self.effects.push(Effect::Emit(kind));
    }

    /// Starts ready nodes while fewer than the concurrency limit run. A task waiting for a tool call's decision does
    /// not hold its place: the other branches go on while one waits for a person.
    pub(crate) fn start_ready(&mut self) {
        while self.running - self.waiting < self.concurrency && self.is_live() {
            let Some(act) = self.ready.pop_front() else { break };
            self.activate(act);
        }
    }

    /// Ends the run: its final status (paused when approvals still wait), and `workflow:end` with the results.
    pub(crate) fn finish(&mut self) -> indexmap::IndexMap<String, NodeResult> {
        let paused = self.is_live() && !self.pending.is_empty();
        if paused {
            self.status = RunStatus::Paused;
        } else if self.is_live() {
            self.status = RunStatus::Completed;
        }
        if matches!(self.status, RunStatus::Failed | RunStatus::Cancelled) {
            self.pending.clear();
        }
        let pending: Vec<String> = self.pending.iter().map(|p| p.node.clone()).collect();
        self.effects.push(Effect::Status(self.status, pending));
        self.take_results()
    }

    pub(crate) fn begin(&mut self) {
        let wf = &self.workflow;
        self.emit(EventKind::WorkflowStart { workflow: wf.name.clone(), input: self.input.clone() });
        match self.topo.start {
            Some(start) => self.ready.push_back(Activation { node: start, previous_output: Arc::from("") }),
            None => self.fail_run("the workflow has no start node".into()),
        }
    }

    /// Nothing runs and approvals wait: says so once, to observers and to the run log.
    pub(crate) fn pause(&mut self) {
        if self.status == RunStatus::Running {
            self.status = RunStatus::Paused;
            let pending: Vec<String> = self.pending.iter().map(|p| p.node.clone()).collect();
            self.effects.push(Effect::Status(RunStatus::Paused, pending.clone()));
            self.emit(EventKind::WorkflowPaused { pending });
        }
    }

    pub(crate) fn fail_run(&mut self, message: String) {
        if self.is_live() {
            self.emit(EventKind::log(None, "error", message.clone()));
            self.status = RunStatus::Failed;
            self.error = Some(message);
            self.ready.clear();
            self.drop_tool_waits();
            self.effects.push(Effect::CancelTasks);
        }
    }

    pub(crate) fn cancel(&mut self) {
        if self.is_live() {
            self.effects.push(Effect::Record(Input::Cancelled));
            self.status = RunStatus::Cancelled;
            self.error = Some("cancelled".into());
            self.ready.clear();
            self.drop_tool_waits();
            self.effects.push(Effect::CancelTasks);
        }
    }

    fn activate(&mut self, act: Activation) {
        let node = act.node;
        let workflow = self.workflow.clone();
        let n = &workflow.nodes[node];
        if self.dry_run && n.node_type == NodeType::Approval {
            self.route_event(node, END, "dry run");
            return;
        }
        if self.steps >= self.step_budget {
            self.fail_run(format!(
                "step budget exceeded: {} node executions ran and `{}` would be the next; raise defaults.step_budget (or --step-budget) if the workflow really needs more",
                self.steps, n.id
            ));
            return;
        }
        self.steps += 1;
        self.iterations[node] += 1;
        let iteration = self.iterations[node];
        self.scope.previous_output = act.previous_output.clone();
        self.scope.iteration = Some(iteration);
        self.emit(EventKind::NodeEnter {
            node: n.id.clone(),
            iteration,
            instruction: node::instruction(n, &self.scope),
        });
        self.emit(EventKind::log(Some(&n.id), "step_start", format!("{} node", n.node_type.as_str())));

        if let Some(pinned) = &n.pinned {
            let outcome =
                node::NodeOutcome { data: Ok(pinned.clone()), tool_calls: Vec::new(), usage: None, code: None };
            self.node_done(node, iteration, 0, act.previous_output, outcome);
            return;
        }
        match n.node_type {
            NodeType::Start => {
                let input = if self.input.is_null() {
                    // A run given no input runs on the start node's `initial_input`: that is its input from here on,
                    // for templates, code steps and the route view alike.
                    if let Some(initial) = &n.initial_input {
                        self.input = initial.clone();
                        self.scope.input = Arc::new(initial.clone());
                    }
                    n.initial_input.clone().unwrap_or(json!(""))
                } else {
                    self.input.clone()
                };
                let data = match input {
                    Value::String(s) => json!({ "text": s }),
                    Value::Object(o) => Value::Object(o),
                    other => json!({ "text": other.to_string() }),
                };
                let outcome = node::NodeOutcome { data: Ok(data), tool_calls: Vec::new(), usage: None, code: None };
                self.node_done(node, iteration, 0, act.previous_output, outcome);
            }
            NodeType::If => self.run_if(node, iteration, act.previous_output),
            NodeType::Approval => self.reach_approval(node, act.previous_output),
            NodeType::Agent | NodeType::Script => {
                if let Some(reused) = self.reuse.as_ref().and_then(|r| r.result(&n.id, iteration)).cloned() {
                    let from = self.reuse.as_ref().map_or("", |r| r.run.as_str());
                    self.emit(EventKind::log(Some(&n.id), "reused", format!("result of run {from}")));
                    let outcome = node::NodeOutcome {
                        data: reused.data,
                        tool_calls: reused.tool_calls,
                        usage: reused.usage,
                        code: reused.code,
                    };
                    self.node_done(node, iteration, 0, act.previous_output, outcome);
                    return;
                }
                self.running += 1;
                let scope = self.scope.clone();
                self.effects.push(Effect::RunNode { node, iteration, previous_output: act.previous_output, scope });
            }
        }
    }

    fn run_if(&mut self, node: usize, iteration: u32, previous_output: Arc<str>) {
        let workflow = self.workflow.clone();
        let n = &workflow.nodes[node];
        let subject = previous_output.to_lowercase();
        let mut chosen: Result<Option<(usize, String)>, String> = Ok(None);
        for (i, c) in n.conditions.iter().flatten().enumerate() {
            let value = c.value.trim().to_lowercase();
            let hit = match c.operator {
                ConditionOperator::Equal => Ok(!value.is_empty() && subject == value),
                ConditionOperator::Contains => Ok(!value.is_empty() && subject.contains(&value)),
                ConditionOperator::Expression => template::is_true(&c.value, &self.scope)
                    .map_err(|e| format!("condition {i} ({}) could not be evaluated: {e}", c.value)),
            };
            match hit {
                Ok(true) => {
                    chosen = Ok(Some((i, condition_label(c))));
                    break;
                }
                Ok(false) => {}
                Err(e) => {
                    chosen = Err(e);
                    break;
                }
            }
        }
        // The handle taken: condition `i`'s, or the one after the conditions (`false`) when none matched.
        let handles = node_types::source_handles(n);
        let conditions = n.conditions.as_ref().map_or(0, Vec::len);
        let taken = |at: usize| json!({ "branch": handles[at].0, "label": node_types::source_handle_label(n, at) });
        let (data, branch) = match &chosen {
            Ok(Some((i, label))) => (taken(*i), Some((*i, label.clone()))),
            Ok(None) => (taken(conditions), None),
            Err(_) => (Value::Null, None),
        };
        let outcome = match chosen {
            Err(e) => node::NodeOutcome { data: Err(e), tool_calls: Vec::new(), usage: None, code: None },
            Ok(None) if n.no_match_error.is_some() => node::NodeOutcome {
                data: Err(n.no_match_error.clone().unwrap_or_default()),
                tool_calls: Vec::new(),
                usage: None,
                code: None,
            },
            Ok(_) => {
                let msg = match &branch {
                    Some((i, label)) => format!("condition {i} ({label}) matched"),
                    None => "no condition matched: taking `false`".into(),
                };
                self.emit(EventKind::log(Some(&n.id), "logic_check", msg));
                node::NodeOutcome { data: Ok(data), tool_calls: Vec::new(), usage: None, code: None }
            }
        };
        self.node_done(node, iteration, 0, previous_output, outcome);
    }

    fn reach_approval(&mut self, node: usize, previous_output: Arc<str>) {
        let workflow = self.workflow.clone();
        let n = &workflow.nodes[node];
        let message = n.message.clone().unwrap_or_else(|| "Approve this step?".into());
        let message = template::render(&message, &self.scope).unwrap_or(message);
        self.emit(EventKind::ApprovalRequested {
            node: n.id.clone(),
            message: message.clone(),
            previous_output: previous_output.to_string(),
            tool: None,
        });
        self.emit(EventKind::log(Some(&n.id), "wait_input", "waiting for a decision"));
        let visit = self.approval_visits[node];
        self.approval_visits[node] += 1;
        let deadline_ms = n.timeout_seconds.map(|s| self.now_ms + (s as i64) * 1000);
        self.outputs[node] = previous_output.clone();
        self.pending.push(PendingState {
            node: n.id.clone(),
            message,
            previous_output: previous_output.to_string(),
            deadline_ms,
            tool: None,
            orphan: false,
            requested_ms: self.now_ms,
        });
        if let Some(decision) = self.reuse.as_ref().and_then(|r| r.decision(&n.id, visit)).cloned() {
            let pos = self.pending.len() - 1;
            self.settle_approval(pos, decision);
            return;
        }
        // A script may decide it at once: the driver looks (or, rebuilding, takes the recorded decision).
        self.effects.push(Effect::ApprovalReached { node: n.id.clone(), visit });
    }

    /// Applies a decision to a pending approval and routes on from it. `immediate`: the script's, as it was reached.
    pub(crate) fn decide(&mut self, node_id: &str, value: &Value, immediate: bool) -> Result<(), String> {
        let Some(pos) = self.pending.iter().position(|p| p.node == node_id) else {
            let waiting: Vec<&str> = self.pending.iter().map(|p| p.node.as_str()).collect();
            return Err(format!(
                "`{node_id}` is not waiting for a decision (waiting: {})",
                if waiting.is_empty() { "none".to_string() } else { waiting.join(", ") }
            ));
        };
        let decision = Decision::normalize(value);
        self.effects.push(Effect::Record(Input::Decided {
            node: node_id.to_string(),
            decision: decision.clone(),
            immediate,
        }));
        self.settle_approval(pos, decision);
        Ok(())
    }

    pub(crate) fn settle_approval(&mut self, pos: usize, decision: Decision) {
        if self.status == RunStatus::Paused {
            self.status = RunStatus::Running;
            self.effects.push(Effect::Status(RunStatus::Running, Vec::new()));
            self.emit(EventKind::WorkflowResumed {});
        }
        let p = self.pending.remove(pos);
        if let Some(request) = p.tool {
            self.settle_tool(p.node, request, p.orphan, decision);
            return;
        }
        let node = self.topo.index[&p.node];
        self.emit(EventKind::ApprovalReceived {
            node: p.node.clone(),
            decision: decision.decision.clone(),
            note: decision.note.clone(),
        });
        let note = if decision.note.is_empty() { String::new() } else { format!(" Feedback: {}", decision.note) };
        let said = if decision.decision == "approve" {
            "approved"
        } else if decision.decision == "reject" {
            "rejected"
        } else {
            "timed out"
        };
        self.emit(EventKind::log(Some(&p.node), "input_received", format!("{said}.{note}")));
        let data = json!({ "decision": decision.decision, "note": decision.note });
        let outcome = node::NodeOutcome { data: Ok(data), tool_calls: Vec::new(), usage: None, code: None };
        let previous: Arc<str> = Arc::from(p.previous_output.as_str());
        // How long it waited: from `approval:requested` to the decision (or the timeout).
        let waited = (self.now_ms - p.requested_ms).max(0) as u64;
        self.node_done(node, self.iterations[node], waited, previous, outcome);
    }

    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.pending.iter().filter_map(|p| p.deadline_ms).min()
    }

    /// A pending approval's time is up: it follows its `timeout` edge, or is rejected when it has none.
    pub(crate) fn time_out(&mut self, pos: usize) {
        let node = self.topo.index[&self.pending[pos].node];
        let timeout = node_types::resolve_handle(&self.workflow.nodes[node], handle::TIMEOUT);
        let topo = &self.topo;
        let has_timeout_edge = timeout.is_some_and(|t| topo.out[node].iter().any(|&e| topo.handles[e] == Some(t)));
        let decision = if has_timeout_edge { "timeout" } else { "reject" };
        self.settle_approval(pos, Decision { decision: decision.into(), note: "timed out".into() });
    }

    /// An agent's task asks to call a tool that needs approval, and waits. A call decided while no task waited on it
    /// (a continued run) is answered at once; a call an earlier process's task was waiting on is taken over by the
    /// task that asks for the same call, and dropped when it asks for another.
    pub(crate) fn ask_tool(&mut self, node: usize, request: ToolRequest) {
        let id = self.id(node).to_string();
        self.effects.push(Effect::Record(Input::ToolAsked {
            node: id.clone(),
            tool: request.tool.clone(),
            arguments: request.input.clone(),
        }));
        if let Some(at) = self.decided_early.iter().position(|(n, r, _)| *n == id && *r == request) {
            let (_, _, decision) = self.decided_early.remove(at);
            self.effects.push(Effect::ToolDecided { node: id, request, decision });
            return;
        }
        self.waiting += 1;
        if let Some(at) = self.pending.iter().position(|p| p.node == id && p.orphan) {
            if self.pending[at].tool.as_ref() == Some(&request) {
                self.pending[at].orphan = false;
                return;
            }
            self.pending.remove(at);
            self.emit(EventKind::log(Some(&id), "input_received", "withdrawn: the agent asked for another call"));
        }
        if self.pending.iter().any(|p| p.node == id && p.tool.is_some()) {
            self.queued_asks.push_back((node, request));
            return;
        }
        self.request_tool(node, request);
    }

    /// Shows a tool call that waits: an approval on the agent's node with the tool and its arguments.
    fn request_tool(&mut self, node: usize, request: ToolRequest) {
        let id = self.id(node).to_string();
        let message = format!("Allow the call of `{}`?", request.tool);
        let arguments = serde_json::to_string_pretty(&request.input).unwrap_or_default();
        self.emit(EventKind::ApprovalRequested {
            node: id.clone(),
            message: message.clone(),
            previous_output: arguments.clone(),
            tool: Some(request.clone()),
        });
        self.emit(EventKind::log(Some(&id), "wait_input", format!("waiting for a decision on `{}`", request.tool)));
        let visit = self.approval_visits[node];
        self.approval_visits[node] += 1;
        self.pending.push(PendingState {
            node: id.clone(),
            message,
            previous_output: arguments,
            deadline_ms: None,
            tool: Some(request),
            orphan: false,
            requested_ms: self.now_ms,
        });
        self.effects.push(Effect::ApprovalReached { node: id, visit });
    }

    /// A tool call was decided: its task goes on (a rejection is the tool's result), or, when no task waits on it,
    /// the decision is kept for the task that asks for the same call.
    fn settle_tool(&mut self, node: String, request: ToolRequest, orphan: bool, decision: Decision) {
        self.emit(EventKind::ApprovalReceived {
            node: node.clone(),
            decision: decision.decision.clone(),
            note: decision.note.clone(),
        });
        let note = if decision.note.is_empty() { String::new() } else { format!(" Feedback: {}", decision.note) };
        let said = if decision.decision == "approve" { "approved" } else { "rejected" };
        self.emit(EventKind::log(Some(&node), "input_received", format!("`{}` {said}.{note}", request.tool)));
        if orphan {
            self.decided_early.push((node, request, decision));
        } else {
            self.waiting -= 1;
            let at = self.topo.index[&node];
            self.effects.push(Effect::ToolDecided { node, request, decision });
            if let Some(next) = self.queued_asks.iter().position(|(n, _)| *n == at) {
                let (_, request) = self.queued_asks.remove(next).expect("found");
                self.request_tool(at, request);
            }
        }
    }

    /// The run goes on in a new process: tool calls that were waiting have no task until one asks again.
    pub(crate) fn continued(&mut self) {
        if self.pending.iter().any(|p| p.tool.is_some() && !p.orphan) {
            self.effects.push(Effect::Record(Input::Continued));
            for p in self.pending.iter_mut().filter(|p| p.tool.is_some() && !p.orphan) {
                p.orphan = true;
                self.waiting -= 1;
            }
            // Queued calls' tasks are gone too; they ask again when they start.
            self.waiting -= self.queued_asks.len();
            self.queued_asks.clear();
        }
    }

    /// The run ends: tasks waiting on tool calls are stopped with the others.
    fn drop_tool_waits(&mut self) {
        self.pending.retain(|p| p.tool.is_none());
        self.waiting = 0;
        self.decided_early.clear();
        self.queued_asks.clear();
    }

    pub(crate) fn node_done(
        &mut self,
        node: usize,
        iteration: u32,
        duration_ms: u64,
        previous_output: Arc<str>,
        outcome: node::NodeOutcome,
    ) {
        let workflow = self.workflow.clone();
        let n = &workflow.nodes[node];
        // Calls an earlier process's task waited on that this run of the node never asked for again.
        self.pending.retain(|p| !(p.orphan && p.node == n.id));
        self.decided_early.retain(|(id, _, _)| *id != n.id);
        let result = match outcome.data {
            Ok(data) => NodeResult::success(data, outcome.tool_calls),
            Err(e) => NodeResult::failed(e, outcome.tool_calls).with_code(outcome.code),
        };
        let failed = result.status == NodeStatus::Failed;
        self.scope.results.insert(n.id.clone(), Arc::new(result.data.clone()));
        self.scope.iteration = Some(iteration);
        if !failed {
            self.merge_state(n, &result.data);
        }
        // Transparent nodes pass the output that reached them on; others pass their own.
        let output: Arc<str> = match n.node_type {
            NodeType::If | NodeType::Approval => previous_output,
            _ => Arc::from(output_text(&result.data).as_str()),
        };
        self.outputs[node] = output.clone();
        self.trace.steps.push(TraceStep { node: n.id.clone(), status: result.status, iteration });
        self.emit(EventKind::NodeExit {
            node: n.id.clone(),
            iteration,
            result: result.clone(),
            duration_ms,
            usage: outcome.usage.filter(|u| *u != Usage::default()),
        });
        let error = result.error.clone();
        self.results[node] = Some(result);
        if !self.is_live() {
            return;
        }

        let topo = self.topo.clone();
        let workflow = self.workflow.clone();
        let edges = &workflow.edges;
        if let Some(error) = error {
            let error_edges: Vec<usize> =
                topo.out[node].iter().copied().filter(|&e| topo.handle_kind(e) == Some(HandleKind::Error)).collect();
            if !error_edges.is_empty() {
                self.emit(EventKind::log(Some(&n.id), "error", error.clone()));
                let chosen: Vec<(usize, String)> = error_edges.iter().map(|&e| (e, "error".to_string())).collect();
                self.follow_and_kill(node, chosen, output);
                return;
            }
            if n.on_error != Some(OnError::Continue) {
                self.fail_run(format!("node `{}` failed: {error}", n.id));
                return;
            }
            self.emit(EventKind::log(Some(&n.id), "error", format!("{error} (on_error: continue, routing on)")));
        }

        // Which out-edges are still live (SEMANTICS §3).
        let live: Vec<usize> = topo.out[node]
            .iter()
            .copied()
            .filter(|&e| edges[e].max_iterations.is_none_or(|m| (self.edge_follows[e] as i64) < m))
            .collect();
        // A node that chooses a branch follows the edges leaving by the chosen handle; others follow their
        // execution handles (guards and `when` permitting).
        let chosen_handle = |key: &str, default: &str| {
            let name = self.results[node].as_ref().and_then(|r| r.data.get(key)).and_then(Value::as_str);
            let name = name.unwrap_or(default).to_string();
            (node_types::resolve_handle(n, &name), name)
        };
        match n.node_type {
            NodeType::If => {
                let (taken, branch) = chosen_handle("branch", handle::FALSE);
                let reason = self.if_reason(n, &branch);
                let chosen = live
                    .iter()
                    .copied()
                    .filter(|&e| taken.is_some() && topo.handles[e] == taken)
                    .map(|e| (e, reason.clone()))
                    .collect();
                self.follow_and_kill(node, chosen, output);
            }
            NodeType::Approval => {
                let (taken, decision) = chosen_handle("decision", handle::APPROVE);
                let chosen = live
                    .iter()
                    .copied()
                    .filter(|&e| taken.is_some() && topo.handles[e] == taken)
                    .map(|e| (e, decision.clone()))
                    .collect();
                self.follow_and_kill(node, chosen, output);
            }
            _ => {
                let live: Vec<usize> =
                    live.into_iter().filter(|&e| topo.handle_kind(e) == Some(HandleKind::Execution)).collect();
                if live.iter().any(|&e| edges[e].when.is_some()) {
                    if self.dry_run {
                        self.route_event(node, END, "dry run");
                        return;
                    }
                    self.ask_route(node, live, output);
                    return;
                }
                let mut chosen = Vec::new();
                for &e in &live {
                    match &edges[e].r#if {
                        None => chosen.push((e, String::new())),
                        Some(guard) => match template::is_true(guard, &self.scope) {
                            Ok(true) => chosen.push((e, guard.clone())),
                            Ok(false) => {}
                            Err(err) => {
                                self.fail_run(format!(
                                    "edge {}: `if` {guard:?} could not be evaluated: {err}",
                                    edges[e].label()
                                ));
                                return;
                            }
                        },
                    }
                }
                let plural = chosen.len() > 1;
                for (_, reason) in chosen.iter_mut() {
                    if reason.is_empty() {
                        *reason = if plural { "parallel" } else { "only path" }.to_string();
                    }
                }
                self.follow_and_kill(node, chosen, output);
            }
        }
    }

    /// Merges a result into `state`: shallowly, latest wins (SEMANTICS §2), unless the workflow declares a merge
    /// strategy for a key. With strategies declared, a `for_each` node's items are merged one by one, in item order
    /// (OpenExpertise writes accumulate per iteration).
    fn merge_state(&mut self, node: &crate::document::Node, data: &Value) {
        let strategies = &self.workflow.state;
        let items = match (strategies.is_empty(), node.for_each.is_some(), data.get("items").and_then(Value::as_array))
        {
            (false, true, Some(items)) => items.iter().collect(),
            _ => vec![data],
        };
        for item in items {
            let Value::Object(map) = item else { continue };
            for (k, v) in map {
                match strategies.get(k).map(|f| f.merge) {
                    None | Some(crate::document::Merge::LastWins) => {
                        self.scope.state.insert(k.clone(), v.clone());
                    }
                    Some(crate::document::Merge::SetOnce) => {
                        if !self.scope.state.contains_key(k) {
                            self.scope.state.insert(k.clone(), v.clone());
                        }
                    }
                    Some(crate::document::Merge::ArrayAppend) => {
                        let mut list = match self.scope.state.get(k) {
                            Some(Value::Array(existing)) => existing.clone(),
                            Some(other) if !other.is_null() => vec![other.clone()],
                            _ => Vec::new(),
                        };
                        match v {
                            Value::Array(more) => list.extend(more.iter().cloned()),
                            other => list.push(other.clone()),
                        }
                        self.scope.state.insert(k.clone(), Value::Array(list));
                    }
                }
            }
        }
    }

    fn if_reason(&self, n: &crate::document::Node, branch: &str) -> String {
        // Positions below the condition count are the conditions' own handles (node_types' expansion order).
        let position = node_types::resolve_handle(n, branch).map(|h| h.position as usize);
        match position.and_then(|i| n.conditions.as_ref()?.get(i)) {
            Some(c) => condition_label(c),
            None if position.is_some() => "no condition matched".into(),
            None => branch.to_string(),
        }
    }

    /// The route view of SEMANTICS §3: nodes whose output schema declares properties show only those keys.
    fn route_view(&mut self, routing_node: usize) -> Value {
        let mut warnings = Vec::new();
        let mut map = serde_json::Map::new();
        map.insert("input".into(), self.input.clone());
        for (i, n) in self.workflow.nodes.iter().enumerate() {
            let Some(r) = &self.results[i] else { continue };
            if r.status == NodeStatus::Skipped {
                continue;
            }
            let declared = n
                .output_schema
                .as_ref()
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .filter(|p| !p.is_empty());
            let view = match declared {
                None => r.data.clone(),
                Some(props) => {
                    let mut scoped = serde_json::Map::new();
                    for key in props.keys() {
                        match r.data.get(key) {
                            Some(v) => {
                                scoped.insert(key.clone(), v.clone());
                            }
                            None => {
                                scoped.insert(key.clone(), Value::Null);
                                warnings.push(EventKind::NodeWarning {
                                    node: self.id(routing_node).to_string(),
                                    message: format!("`{}` declares `{key}` in its output schema but did not return it; the router sees null", n.id),
                                });
                            }
                        }
                    }
                    if let Some(evals) = r.data.get("evals") {
                        scoped.insert("evals".into(), evals.clone());
                    }
                    Value::Object(scoped)
                }
            };
            map.insert(n.id.clone(), view);
        }
        for warning in warnings {
            self.emit(warning);
        }
        Value::Object(map)
    }

    fn ask_route(&mut self, node: usize, live: Vec<usize>, output: Arc<str>) {
        let edges = &self.workflow.edges;
        let mut choices: Vec<Choice> = live
            .iter()
            .filter_map(|&e| edges[e].when.as_ref().map(|w| Choice { id: edges[e].to.clone(), description: w.clone() }))
            .collect();
        if live.iter().any(|&e| edges[e].when.is_none()) {
            choices.push(Choice { id: DEFAULT_CHOICE.into(), description: "none of the above / default path".into() });
        }
        let context = self.route_view(node);
        let visit = self.route_visits[node];
        self.route_visits[node] += 1;
        if let Some(answer) = self.reuse.as_ref().and_then(|r| r.route(self.id(node), visit)).cloned() {
            self.apply_route(node, live, answer, output);
            return;
        }
        self.running += 1;
        let mut targets: Vec<String> = Vec::new();
        for &e in &live {
            let to = &self.workflow.edges[e].to;
            if !targets.contains(to) {
                targets.push(to.clone());
            }
        }
        self.emit(EventKind::RouteChoosing { node: self.id(node).to_string(), choices: targets });
        let model = self.workflow.nodes[node].model.clone().or_else(|| self.default_model.clone());
        let ask = RouteAsk { context, choices, visit, model };
        self.effects.push(Effect::AskRoute { node, live, output, ask });
    }

    pub(crate) fn apply_route(
        &mut self,
        node: usize,
        live: Vec<usize>,
        answer: Result<RouteAnswer, String>,
        output: Arc<str>,
    ) {
        if !self.is_live() {
            return;
        }
        let edges = &self.workflow.edges;
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                self.fail_run(format!("routing after `{}` failed: {e}", self.id(node)));
                return;
            }
        };
        let note = answer.note.map(|n| format!(" ({n})")).unwrap_or_default();
        self.route_usage = answer.usage.filter(|u| *u != Usage::default());
        let defaults: Vec<usize> = live.iter().copied().filter(|&e| edges[e].when.is_none()).collect();
        let picked = live.iter().copied().find(|&e| edges[e].when.is_some() && edges[e].to == answer.choice);
        let default_named = answer.choice == DEFAULT_CHOICE || defaults.iter().any(|&e| edges[e].to == answer.choice);
        let chosen: Vec<(usize, String)> = if let Some(e) = picked {
            vec![(e, format!("{}{note}", edges[e].when.as_deref().unwrap_or_default()))]
        } else if default_named {
            defaults.iter().map(|&e| (e, format!("none of the above{note}"))).collect()
        } else if !defaults.is_empty() {
            defaults
                .iter()
                .map(|&e| (e, format!("invalid route target {:?}: none of the above{note}", answer.choice)))
                .collect()
        } else {
            self.route_event(node, END, &format!("invalid route target {:?}{note}", answer.choice));
            Vec::new()
        };
        self.follow_and_kill(node, chosen, output);
        self.route_usage = None;
    }

    fn route_event(&mut self, node: usize, to: &str, reason: &str) {
        let from = self.id(node).to_string();
        self.trace.edges.push(TraceEdge { from: from.clone(), to: to.to_string(), reason: reason.to_string() });
        let usage = self.route_usage.take();
        self.emit(EventKind::Route { from, to: to.to_string(), reason: reason.to_string(), usage });
    }

    /// Follows the chosen out-edges of `node` and marks every other out-edge dead.
    fn follow_and_kill(&mut self, node: usize, chosen: Vec<(usize, String)>, output: Arc<str>) {
        let topo = self.topo.clone();
        for (e, reason) in &chosen {
            let to = self.workflow.edges[*e].to.clone();
            self.route_event(node, &to, reason);
        }
        for (e, _) in &chosen {
            self.follow(*e, output.clone());
        }
        let mut chosen: Vec<usize> = chosen.into_iter().map(|(e, _)| e).collect();
        chosen.sort_unstable();
        for &e in &topo.out[node] {
            if chosen.binary_search(&e).is_err() {
                self.kill(e, false);
            }
        }
        self.cascade_skips();
    }

    fn follow(&mut self, e: usize, output: Arc<str>) {
        self.edge_follows[e] += 1;
        self.deferred.remove(&e);
        let topo = &self.topo;
        let target = topo.target(e);
        if topo.back[e] {
            self.ready.push_back(Activation { node: target, previous_output: output });
            return;
        }
        match self.edge_marks[e] {
            EdgeMark::Open => self.join_resolved[target] += 1,
            // Followed again before its target fired (a loop upstream): the newer output replaces the older.
            EdgeMark::Followed => self.join_outputs[target].retain(|(f, _)| *f != e),
            EdgeMark::Dead => {}
        }
        self.edge_marks[e] = EdgeMark::Followed;
        self.join_outputs[target].push((e, output));
        self.check_join(target);
    }

    /// Marks an edge dead. Edges leaving a node on a cycle are deferred: that node may run again and follow them.
    fn kill(&mut self, e: usize, finalize: bool) {
        let topo = self.topo.clone();
        if topo.back[e] {
            return;
        }
        let source = topo.source(e);
        if !finalize && topo.on_cycle(source) {
            self.deferred.insert(e);
            return;
        }
        if self.edge_marks[e] != EdgeMark::Open {
            return;
        }
        let target = topo.target(e);
        self.edge_marks[e] = EdgeMark::Dead;
        self.join_resolved[target] += 1;
        self.check_join(target);
    }

    /// A node with several forward in-edges waits until each was followed or is dead (SEMANTICS §3 "Joins").
    fn check_join(&mut self, target: usize) {
        let topo = self.topo.clone();
        if self.join_resolved[target] < topo.forward_in[target].len() {
            return;
        }
        // Bookkeeping resets when the node fires, so joins inside loops work per iteration; edges that can never be
        // followed stay resolved.
        self.join_resolved[target] = 0;
        for &e in &topo.forward_in[target] {
            self.edge_marks[e] = if topo.never_followed[e] { EdgeMark::Dead } else { EdgeMark::Open };
            self.join_resolved[target] += usize::from(topo.never_followed[e]);
        }
        let outputs = std::mem::take(&mut self.join_outputs[target]);
        let previous_output = match outputs.as_slice() {
            [] => {
                self.to_skip.push_back(target);
                return;
            }
            [(_, only)] => only.clone(),
            many => Arc::from(many.iter().map(|(_, t)| &**t).collect::<Vec<&str>>().join("\n\n").as_str()),
        };
        self.ready.push_back(Activation { node: target, previous_output });
    }

    /// Skips the nodes found dead, and what that kills in turn.
    fn cascade_skips(&mut self) {
        while let Some(node) = self.to_skip.pop_front() {
            self.skip(node);
        }
    }

    fn skip(&mut self, node: usize) {
        if self.results[node].is_none() {
            let id = self.id(node).to_string();
            self.results[node] = Some(NodeResult::skipped());
            self.trace.steps.push(TraceStep {
                node: id.clone(),
                status: NodeStatus::Skipped,
                iteration: self.iterations[node] + 1,
            });
            self.emit(EventKind::NodeSkipped { node: id });
        }
        let topo = self.topo.clone();
        for &e in &topo.out[node] {
            self.kill(e, false);
        }
    }

    /// When nothing runs, deferred dead edges are final unless an approval on the same cycle may still revive them.
    pub(crate) fn flush_deferred(&mut self) -> bool {
        let topo = self.topo.clone();
        let waiting: Vec<usize> = self.pending.iter().map(|p| topo.component[topo.index[&p.node]]).collect();
        let flush: Vec<usize> =
            self.deferred.iter().copied().filter(|&e| !waiting.contains(&topo.component[topo.source(e)])).collect();
        if flush.is_empty() {
            return false;
        }
        for e in &flush {
            self.deferred.remove(e);
        }
        for e in flush {
            self.kill(e, true);
        }
        self.cascade_skips();
        true
    }

    /// The final results in document order; the run is over, so they are moved out, not copied.
    pub(crate) fn take_results(&mut self) -> indexmap::IndexMap<String, NodeResult> {
        let nodes = &self.workflow.nodes;
        std::mem::take(&mut self.results)
            .into_iter()
            .enumerate()
            .filter_map(|(i, r)| r.map(|r| (nodes[i].id.clone(), r)))
            .collect()
    }
}

/// How a matched `if` condition is named in logs and trace reasons.
fn condition_label(c: &crate::document::Condition) -> String {
    match c.operator {
        ConditionOperator::Expression => c.value.clone(),
        ConditionOperator::Equal => format!("equal {:?}", c.value.trim()),
        ConditionOperator::Contains => format!("contains {:?}", c.value.trim()),
    }
}

/// The text a node passes on as `PREVIOUS_OUTPUT`: its `text` when its data is `{"text": …}`, else its data as JSON.
pub fn output_text(data: &Value) -> String {
    match data {
        Value::Object(o) if o.len() == 1 && o.get("text").is_some_and(Value::is_string) => {
            o["text"].as_str().unwrap().to_string()
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    //! The state driven by hand, without a runtime: each test plays the driver, answering `RunNode` effects.
    use super::*;
    use crate::format::{self, Format};

    fn state(yaml: &str) -> RunState {
        let text = format!("switchyard: 1\nname: t\n{yaml}");
        let wf = format::load_str(&text, Some(Format::Switchyard), None).unwrap().workflow;
        RunState::new(Arc::new(wf), &RunOptions::default())
    }

    /// What the driver saw: nodes asked to run (with the output that reached them), and events.
    #[derive(Default)]
    struct Seen {
        ran: Vec<(String, Arc<str>)>,
        events: Vec<EventKind>,
        waiting: Vec<(usize, u32, Arc<str>)>,
    }

    impl Seen {
        fn take(&mut self, st: &mut RunState) {
            for effect in st.take_effects() {
                match effect {
                    Effect::RunNode { node, iteration, previous_output, .. } => {
                        self.ran.push((st.id(node).to_string(), previous_output.clone()));
                        self.waiting.push((node, iteration, previous_output));
                    }
                    Effect::Emit(kind) => self.events.push(kind),
                    _ => {}
                }
            }
        }

        fn skipped(&self) -> Vec<&str> {
            self.events
                .iter()
                .filter_map(|e| match e {
                    EventKind::NodeSkipped { node } => Some(node.as_str()),
                    _ => None,
                })
                .collect()
        }

        fn ran(&self) -> Vec<&str> {
            self.ran.iter().map(|(n, _)| n.as_str()).collect()
        }
    }

    /// Runs the state to its end, answering each node with `{"text": "<id> <iteration>"}` in the order started.
    fn play(st: &mut RunState) -> Seen {
        let mut seen = Seen::default();
        st.begin();
        seen.take(st);
        loop {
            st.start_ready();
            seen.take(st);
            if seen.waiting.is_empty() {
                if st.is_live() && st.flush_deferred() {
                    seen.take(st);
                    continue;
                }
                break;
            }
            let (node, iteration, previous) = seen.waiting.remove(0);
            st.running -= 1;
            let text = format!("{} {iteration}", st.id(node));
            let outcome = node::NodeOutcome {
                data: Ok(json!({ "text": text })),
                tool_calls: Vec::new(),
                usage: None,
                code: None,
            };
            st.node_done(node, iteration, 0, previous, outcome);
            seen.take(st);
        }
        st.finish();
        seen
    }

    #[test]
    fn a_join_starts_once_after_both_branches_with_their_outputs_in_completion_order() {
        let mut st = state(
            "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\n  - {id: b, type: agent}\n  - {id: j, type: agent}
edges:\n  - {from: start, to: a}\n  - {from: start, to: b}\n  - {from: a, to: j}\n  - {from: b, to: j}\n",
        );
        let seen = play(&mut st);
        assert_eq!(seen.ran(), ["a", "b", "j"]);
        assert_eq!(&*seen.ran[2].1, "a 1\n\nb 1");
        assert_eq!(st.status, RunStatus::Completed);
    }

    #[test]
    fn the_branch_not_taken_is_skipped_and_a_join_after_it_still_runs() {
        let mut st = state(
            "nodes:
  - {id: start, type: start, initial_input: yes please}
  - {id: check, type: if, conditions: [{operator: contains, value: yes}]}
  - {id: yes, type: agent}
  - {id: no, type: agent}
  - {id: after_no, type: agent}
  - {id: end, type: agent}
edges:
  - {from: start, to: check}
  - {from: check, to: yes, handle: condition-0}
  - {from: check, to: no, handle: 'false'}
  - {from: no, to: after_no}
  - {from: yes, to: end}
  - {from: after_no, to: end}
",
        );
        let seen = play(&mut st);
        assert_eq!(seen.ran(), ["yes", "end"]);
        assert_eq!(seen.skipped(), ["no", "after_no"]);
        assert_eq!(&*seen.ran[1].1, "yes 1", "a dead branch adds nothing to the join's input");
    }

    #[test]
    fn a_loop_runs_its_bound_then_leaves_by_the_exit() {
        let mut st = state(
            "nodes:\n  - {id: start, type: start}\n  - {id: body, type: agent}\n  - {id: after, type: agent}
edges:\n  - {from: start, to: body}\n  - {from: body, to: body, max_iterations: 2}\n  - {from: body, to: after}\n",
        );
        let seen = play(&mut st);
        let bodies = seen.ran().iter().filter(|n| **n == "body").count();
        assert_eq!(bodies, 3, "the first run and two follows of the back edge");
        assert!(seen.ran().contains(&"after"));
        assert_eq!(st.status, RunStatus::Completed);
    }

    #[test]
    fn an_approval_pauses_the_run_and_a_decision_goes_on_by_its_handle() {
        let mut st = state(
            "nodes:\n  - {id: start, type: start}\n  - {id: ok, type: approval}\n  - {id: ship, type: agent}\n  - {id: hold, type: agent}
edges:\n  - {from: start, to: ok}\n  - {from: ok, to: ship, handle: approve}\n  - {from: ok, to: hold, handle: reject}\n",
        );
        let mut seen = Seen::default();
        st.begin();
        st.start_ready();
        seen.take(&mut st);
        assert!(st.is_idle() && !st.pending.is_empty());
        st.pause();
        seen.take(&mut st);
        assert_eq!(st.status, RunStatus::Paused);
        assert!(seen.events.iter().any(|e| matches!(e, EventKind::WorkflowPaused { .. })));
        assert!(st.decide("ship", &json!("approve"), false).is_err(), "only a waiting approval can be decided");
        st.decide("ok", &json!({"decision": "reject", "note": "not yet"}), false).unwrap();
        seen.take(&mut st);
        assert_eq!(st.status, RunStatus::Running);
        st.start_ready();
        seen.take(&mut st);
        assert_eq!(seen.ran(), ["hold"]);
        assert_eq!(seen.skipped(), ["ship"]);
    }

    #[test]
    fn an_approvals_exit_reports_how_long_it_waited_from_the_request_to_the_decision() {
        let wf = "nodes:\n  - {id: start, type: start}\n  - {id: ok, type: approval, timeout_seconds: 60}\n  - {id: late, type: approval, timeout_seconds: 60}
edges:\n  - {from: start, to: ok}\n  - {from: ok, to: late, handle: approve}\n";
        let exit_ms = |seen: &Seen, id: &str| {
            seen.events.iter().find_map(|e| match e {
                EventKind::NodeExit { node, duration_ms, .. } if node == id => Some(*duration_ms),
                _ => None,
            })
        };
        let mut st = state(wf);
        let mut seen = Seen::default();
        st.now_ms = 1_000_000;
        st.begin();
        st.start_ready();
        seen.take(&mut st);
        assert!(seen.events.iter().any(|e| matches!(e, EventKind::ApprovalRequested { node, .. } if node == "ok")));
        st.pause();
        st.now_ms += 4_250;
        st.decide("ok", &json!("approve"), false).unwrap();
        seen.take(&mut st);
        assert_eq!(exit_ms(&seen, "ok"), Some(4_250));
        // A timeout waited its whole timeout.
        st.start_ready();
        seen.take(&mut st);
        st.now_ms += 60_000;
        st.time_out(st.pending.iter().position(|p| p.node == "late").unwrap());
        seen.take(&mut st);
        assert_eq!(exit_ms(&seen, "late"), Some(60_000));
    }

    #[test]
    fn cancelling_ends_the_run_and_asks_to_stop_the_tasks() {
        let mut st =
            state("nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\nedges:\n  - {from: start, to: a}\n");
        st.begin();
        st.start_ready();
        let _ = st.take_effects();
        st.cancel();
        let effects = st.take_effects();
        assert!(effects.iter().any(|e| matches!(e, Effect::Record(Input::Cancelled))));
        assert!(effects.iter().any(|e| matches!(e, Effect::CancelTasks)));
        assert_eq!(st.status, RunStatus::Cancelled);
        assert!(!st.is_live());
    }

    fn decided(effects: &[Effect]) -> Vec<(String, String)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::ToolDecided { node, decision, .. } => Some((node.clone(), decision.decision.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_tool_call_waiting_for_approval_pauses_its_branch_and_the_decision_goes_to_the_task() {
        let mut st =
            state("nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\nedges:\n  - {from: start, to: a}\n");
        st.begin();
        st.start_ready();
        let _ = st.take_effects();
        let a = st.topo.index["a"];
        let call = ToolRequest { tool: "files__delete".into(), input: json!({"path": "x"}) };
        st.ask_tool(a, call.clone());
        let effects = st.take_effects();
        assert!(effects
            .iter()
            .any(|e| matches!(e, Effect::Record(Input::ToolAsked { tool, .. }) if tool == "files__delete")));
        assert!(effects
            .iter()
            .any(|e| matches!(e, Effect::Emit(EventKind::ApprovalRequested { tool: Some(t), .. }) if *t == call)));
        assert!(st.is_idle(), "the only running task waits: the run is idle, and pauses");
        st.pause();
        assert_eq!(st.status, RunStatus::Paused);
        st.decide("a", &json!("reject"), false).unwrap();
        let effects = st.take_effects();
        assert_eq!(decided(&effects), [("a".to_string(), "reject".to_string())]);
        assert_eq!(st.status, RunStatus::Running);
        assert!(!st.is_idle(), "the task goes on");
        assert!(st.pending.is_empty());
    }

    #[test]
    fn a_continued_run_keeps_a_waiting_calls_decision_for_the_task_that_asks_for_the_same_call() {
        let mut st =
            state("nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\nedges:\n  - {from: start, to: a}\n");
        st.begin();
        st.start_ready();
        let a = st.topo.index["a"];
        let call = ToolRequest { tool: "files__delete".into(), input: json!({"path": "x"}) };
        st.ask_tool(a, call.clone());
        let _ = st.take_effects();
        // The process ends; in the next one the task starts again and no task waits on the call.
        st.continued();
        assert!(st.take_effects().iter().any(|e| matches!(e, Effect::Record(Input::Continued))));
        assert!(!st.is_idle(), "the task that starts again runs");
        st.decide("a", &json!("approve"), false).unwrap();
        assert!(decided(&st.take_effects()).is_empty(), "no task waits yet: the decision is kept");
        st.ask_tool(a, call.clone());
        assert_eq!(decided(&st.take_effects()), [("a".to_string(), "approve".to_string())], "the same call: at once");
        // Another call of the restarted task is asked anew, and an orphaned different call is withdrawn.
        st.ask_tool(a, call.clone());
        let _ = st.take_effects();
        st.continued();
        st.ask_tool(a, ToolRequest { tool: "files__delete".into(), input: json!({"path": "y"}) });
        let effects = st.take_effects();
        assert!(decided(&effects).is_empty());
        assert_eq!(st.pending.len(), 1);
        assert_eq!(st.pending[0].tool.as_ref().unwrap().input, json!({"path": "y"}));
        assert!(st.is_idle());
    }

    #[test]
    fn calls_of_one_node_wait_one_at_a_time_so_the_decision_is_for_the_call_shown() {
        let mut st = state(
            "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent, for_each: {items: '[1, 2]', concurrency: 2}}\nedges:\n  - {from: start, to: a}\n",
        );
        st.begin();
        st.start_ready();
        let _ = st.take_effects();
        let a = st.topo.index["a"];
        let first = ToolRequest { tool: "files__delete".into(), input: json!({"path": "1"}) };
        let second = ToolRequest { tool: "files__delete".into(), input: json!({"path": "2"}) };
        st.ask_tool(a, first.clone());
        st.ask_tool(a, second.clone());
        let shown = |effects: &[Effect]| -> Vec<ToolRequest> {
            effects
                .iter()
                .filter_map(|e| match e {
                    Effect::Emit(EventKind::ApprovalRequested { tool: Some(t), .. }) => Some(t.clone()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(shown(&st.take_effects()), std::slice::from_ref(&first), "the second call waits behind the first");
        assert_eq!(st.pending.len(), 1);
        st.decide("a", &json!("approve"), false).unwrap();
        let effects = st.take_effects();
        assert!(effects.iter().any(|e| matches!(e, Effect::ToolDecided { request, .. } if *request == first)));
        assert_eq!(shown(&effects), std::slice::from_ref(&second), "then the second is shown");
        st.decide("a", &json!("reject"), false).unwrap();
        let effects = st.take_effects();
        assert!(effects.iter().any(|e| matches!(e, Effect::ToolDecided { request, decision, .. } if *request == second && decision.decision == "reject")));
        assert!(st.pending.is_empty());
        assert_eq!(st.waiting, 0);
    }

    #[test]
    fn a_task_waiting_for_a_tool_decision_does_not_hold_a_concurrency_place() {
        let mut st = state(
            "defaults: {concurrency: 1}\nnodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\n  - {id: b, type: agent}\nedges:\n  - {from: start, to: a}\n  - {from: start, to: b}\n",
        );
        let mut seen = Seen::default();
        st.begin();
        st.start_ready();
        seen.take(&mut st);
        assert_eq!(seen.ran(), ["a"], "one at a time");
        st.ask_tool(st.topo.index["a"], ToolRequest { tool: "t__x".into(), input: json!({}) });
        seen.take(&mut st);
        assert!(!st.is_idle(), "b is ready");
        st.start_ready();
        seen.take(&mut st);
        assert_eq!(seen.ran(), ["a", "b"], "b runs while a waits for a person");
    }
}
