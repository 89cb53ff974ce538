//! A run's state (SEMANTICS §2–§5) as one value with one entry, [`RunState::apply`]: it takes a [`Step`] and the
//! time, and returns the effects to carry out — emit these events, run this node, ask the model to route, tell this
//! task its tool call was decided, cancel the tasks. A step is a recorded input (a node task ended, the model chose a
//! route, a decision arrived, a timer fired, the run was cancelled or went on in a new process), which the driver
//! keeps in the run log before applying it, or a turn of the driver's loop (begin, start what is ready, settle,
//! pause, end), which is derived from those and never kept. The state runs nothing and waits for nothing, so it is
//! tested without a runtime (`tests.rs`), and [`stand`] is the one loop every driver turns it with: the scheduler
//! (`run/mod.rs`), a rebuild from a recording, and the tests.
//!
//! Invariants:
//! - Only `apply` changes the state. Work it started and awaits (node tasks, routing calls) is counted here, not by
//!   the driver: an input that ends work the state did not start is refused by [`RunState::admit`].
//! - The same inputs applied in the same order at the same times give the same effects (every engine test replays
//!   its run and compares).
//! - Per-edge state is kept by edge index of the workflow the state was built for; a run keeps a copy of that
//!   workflow, so indices never shift.
//!
//! The parts: `joins` (edges followed and dead, joins, skips), `approvals` (what waits for a person), `routing` (which
//! out-edges a node leaves by), `merging` (results into `state`).

mod approvals;
mod joins;
mod merging;
mod routing;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{node, RouteAsk, RunOptions, END};
use crate::document::{NodeType, Workflow, DEFAULT_STEP_BUDGET};
use crate::events::{EventKind, ToolRequest, Usage};
use crate::graph::{EdgeIx, NodeIx, Topology};
use crate::record::Input;
use crate::result::{Decision, NodeResult, NodeStatus, PendingApproval, RunStatus, Trace, TraceStep, Verdict};
use crate::template::Scope;

pub use merging::output_text;

/// What changes a run's state: a recorded input, or a turn of the driver's loop.
pub(crate) enum Step {
    /// An input from outside (kept in the run log before it is applied; applied again when a run is rebuilt).
    Input(Input),
    /// The run starts: `workflow:start`, and the start node is ready.
    Begin,
    /// Start ready nodes while fewer than the concurrency limit run.
    StartReady,
    /// Nothing runs and nothing is ready: dead edges deferred on cycles become final (skips cascade), until
    /// something becomes ready or nothing is left to settle.
    Settle,
    /// Nothing runs and approvals wait: the run says it paused.
    Pause,
    /// A replayed recording ends while work was out: the run was interrupted, and its replay fails saying so.
    Interrupted,
    /// The run ends: its final status, and `workflow:end` with the results.
    Finish,
}

/// What the state asks its driver to do, in order.
pub(crate) enum Effect {
    Emit(EventKind),
    /// Tell the run log the run's status.
    Status(RunStatus, Vec<String>),
    /// Run an agent or script node; its end comes back as `Input::NodeDone`.
    RunNode {
        node: NodeIx,
        iteration: u32,
        scope: Scope,
    },
    /// Ask the model which way to go after `node`; the answer comes back as `Input::Routed`.
    AskRoute {
        node: NodeIx,
        ask: RouteAsk,
    },
    /// An approval was reached (its `visit`-th time): an answers file may decide it at once.
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

/// Where a run stands after a turn of its loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Node tasks or routing calls are out: wait for one.
    Working,
    /// Nothing runs and approvals wait.
    Paused,
    Over,
}

/// Why an input does not fit the run: it names a node the workflow lacks, or ends work the run is not doing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Unfit {
    NoSuchNode(String),
    NotRunning {
        node: String,
        iteration: u32,
    },
    NotRouting(String),
    /// A decision or timeout for a node that waits for none; `waiting` are those that wait.
    NotWaiting {
        node: String,
        timed_out: bool,
        waiting: Vec<String>,
    },
    /// A decision after the run ended.
    Ended,
}

impl std::fmt::Display for Unfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfit::NoSuchNode(id) => write!(f, "node `{id}` is gone"),
            Unfit::NotRunning { node, iteration } => {
                write!(f, "`{node}` (iteration {iteration}) ended but was not running")
            }
            Unfit::NotRouting(node) => write!(f, "a route was chosen after `{node}`, which was not routing"),
            Unfit::NotWaiting { node, timed_out: true, .. } => write!(f, "`{node}` timed out but is not waiting"),
            Unfit::NotWaiting { node, timed_out: false, waiting } => write!(
                f,
                "`{node}` is not waiting for a decision (waiting: {})",
                if waiting.is_empty() { "none".to_string() } else { waiting.join(", ") }
            ),
            Unfit::Ended => write!(f, "the run has ended"),
        }
    }
}

/// A node about to start, with the output that reached it.
#[derive(Debug, Clone)]
struct Activation {
    node: NodeIx,
    previous_output: Arc<str>,
}

/// Work the state started and awaits an input for.
enum Outstanding {
    /// A node task; its end is `Input::NodeDone`.
    Node { node: NodeIx, iteration: u32, previous_output: Arc<str> },
    /// A routing call among `live` out-edges; its answer is `Input::Routed`.
    Route { node: NodeIx, live: Vec<EdgeIx>, output: Arc<str> },
}

impl Outstanding {
    fn node(&self) -> NodeIx {
        match self {
            Outstanding::Node { node, .. } | Outstanding::Route { node, .. } => *node,
        }
    }
}

pub(crate) struct RunState {
    /// The approvals the last status told of (`Effect::Status`).
    told_pending: Vec<String>,
    pub workflow: Arc<Workflow>,
    pub topo: Arc<Topology>,
    pub default_model: Option<String>,
    input: Value,
    dry_run: bool,
    step_budget: u32,
    /// Most node tasks at once.
    concurrency: usize,
    /// The phase: running, paused, or how it ended.
    status: RunStatus,
    error: Option<String>,
    /// Who cancelled the run (a token's name), when a server said: `workflow:end` names them.
    cancelled_by: Option<String>,
    scope: Scope,
    results: Vec<Option<NodeResult>>,
    /// The text each node passes on as `PREVIOUS_OUTPUT`.
    outputs: Vec<Arc<str>>,
    iterations: Vec<u32>,
    steps: u32,
    route_visits: Vec<u32>,
    approval_visits: Vec<u32>,
    edge_follows: Vec<u32>,
    joins: joins::Joins,
    approvals: approvals::Approvals,
    ready: VecDeque<Activation>,
    /// Node tasks and routing calls started and not yet answered.
    outstanding: Vec<Outstanding>,
    trace: Trace,
    reuse: Option<super::Reuse>,
    /// The time of the step being applied, in Unix milliseconds (approval deadlines are computed from it).
    now_ms: i64,
    /// While a model's routing answer is applied: the tokens it used, for the first `route` event it causes.
    route_usage: Option<Usage>,
    /// The effects of the step being applied.
    effects: Vec<Effect>,
}

impl RunState {
    pub(crate) fn new(workflow: Arc<Workflow>, options: &RunOptions) -> RunState {
        let topo = Arc::new(Topology::new(&workflow));
        let n = workflow.nodes.len();
        let input = options.input.clone().unwrap_or(Value::Null);
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
            cancelled_by: None,
            scope: Scope::new(input.clone()),
            input,
            results: vec![None; n],
            outputs: vec![Arc::from(""); n],
            iterations: vec![0; n],
            steps: 0,
            route_visits: vec![0; n],
            approval_visits: vec![0; n],
            edge_follows: vec![0; workflow.edges.len()],
            joins: joins::Joins::new(&topo),
            approvals: approvals::Approvals::default(),
            ready: VecDeque::new(),
            outstanding: Vec::new(),
            trace: Trace::default(),
            reuse: options.reuse.clone(),
            now_ms: 0,
            route_usage: None,
            effects: Vec::new(),
            told_pending: Vec::new(),
            workflow,
            topo,
        }
    }

    /// Whether `input` fits the run, before it is kept and applied: `Ok(false)` when it changes nothing (a
    /// cancellation after the end, a new process with no tool call waiting), so it is neither kept nor applied.
    pub(crate) fn admit(&self, input: &Input) -> Result<bool, Unfit> {
        let index = |id: &str| self.topo.index.get(id).copied().ok_or_else(|| Unfit::NoSuchNode(id.to_string()));
        match input {
            Input::NodeDone { node, iteration, .. } => {
                let at = index(node)?;
                let running = self.outstanding.iter().any(
                    |o| matches!(o, Outstanding::Node { node, iteration: i, .. } if *node == at && i == iteration),
                );
                if running {
                    Ok(true)
                } else {
                    Err(Unfit::NotRunning { node: node.clone(), iteration: *iteration })
                }
            }
            Input::Routed { node, .. } => {
                let at = index(node)?;
                if self.outstanding.iter().any(|o| matches!(o, Outstanding::Route { node, .. } if *node == at)) {
                    Ok(true)
                } else {
                    Err(Unfit::NotRouting(node.clone()))
                }
            }
            Input::Decided { node, .. } | Input::TimedOut { node } => {
                if !self.is_live() {
                    return Err(Unfit::Ended);
                }
                if self.approvals.position(node).is_some() {
                    Ok(true)
                } else {
                    let timed_out = matches!(input, Input::TimedOut { .. });
                    Err(Unfit::NotWaiting { node: node.clone(), timed_out, waiting: self.pending_nodes() })
                }
            }
            Input::ToolAsked { node, .. } => index(node).map(|_| self.is_live()),
            Input::Continued => Ok(self.approvals.has_attended_tool_calls()),
            Input::TakenOver { .. } => Ok(self.is_live()),
            Input::Cancelled { .. } => Ok(self.is_live()),
            // The journal is the tasks' business: kept by them, never applied here.
            Input::Journaled(_) => Ok(false),
        }
    }

    /// Applies one step at time `now_ms` and returns its effects, in order. An input must have been admitted.
    pub(crate) fn apply(&mut self, step: Step, now_ms: i64) -> Vec<Effect> {
        self.now_ms = now_ms;
        match step {
            Step::Input(input) => self.input(input),
            Step::Begin => self.begin(),
            Step::StartReady => self.start_ready(),
            Step::Settle => while self.ready.is_empty() && self.is_live() && self.settle_deferred() {},
            Step::Pause => self.pause(),
            Step::Interrupted => self.interrupted(),
            Step::Finish => self.finish(),
        }
        self.tell_pending();
        std::mem::take(&mut self.effects)
    }

    /// While the run works, approvals that wait (while other branches go on) are told with its status whenever they
    /// change, so that whoever can decide them elsewhere (a server's API, from the run store) sees them before the
    /// run pauses as a whole.
    fn tell_pending(&mut self) {
        if let Some(told) = self.effects.iter().rev().find_map(|e| match e {
            Effect::Status(_, pending) => Some(pending.clone()),
            _ => None,
        }) {
            self.told_pending = told;
        }
        if self.status == RunStatus::Running {
            let pending = self.pending_nodes();
            if pending != self.told_pending {
                self.told_pending = pending.clone();
                self.effects.push(Effect::Status(RunStatus::Running, pending));
            }
        }
    }

    fn input(&mut self, input: Input) {
        match input {
            Input::NodeDone { node, iteration, data, code, tool_calls, usage, duration_ms, .. } => {
                let at = self.topo.index[&node];
                let Some(Outstanding::Node { previous_output, .. }) = self.take_outstanding(
                    |o| matches!(o, Outstanding::Node { node, iteration: i, .. } if *node == at && *i == iteration),
                ) else {
                    unreachable!("admitted: the node was running")
                };
                let outcome = node::NodeOutcome { data, tool_calls, usage, code };
                self.node_done(at, iteration, duration_ms, previous_output, outcome);
            }
            Input::Routed { node, answer } => {
                let at = self.topo.index[&node];
                let Some(Outstanding::Route { live, output, .. }) =
                    self.take_outstanding(|o| matches!(o, Outstanding::Route { node, .. } if *node == at))
                else {
                    unreachable!("admitted: the node was routing")
                };
                self.apply_route(at, live, answer, output);
            }
            Input::Decided { node, decision, .. } => {
                let at = self.approvals.position(&node).expect("admitted: the node waits");
                // A timeout its parent passed on (the parent's copy of this approval timed out): an approval node
                // times out as it would here, by its own `timeout` edge.
                if decision.verdict == Verdict::Timeout
                    && self.approvals.items().nth(at).is_some_and(|p| p.approval.tool.is_none())
                {
                    self.time_out(at);
                } else {
                    self.settle_approval(at, approvals::Settled::Decided(decision));
                }
            }
            Input::TimedOut { node } => {
                let at = self.approvals.position(&node).expect("admitted: the node waits");
                self.time_out(at);
            }
            Input::ToolAsked { node, tool, arguments } => {
                let at = self.topo.index[&node];
                self.ask_tool(at, ToolRequest { tool, input: arguments });
            }
            Input::Continued => self.continued(),
            Input::TakenOver { from, by } => self.emit(EventKind::WorkflowTakenOver { from, by }),
            Input::Cancelled { by } => self.cancel(by.clone()),
            Input::Journaled(_) => {}
        }
    }

    fn take_outstanding(&mut self, test: impl Fn(&Outstanding) -> bool) -> Option<Outstanding> {
        let at = self.outstanding.iter().position(test)?;
        Some(self.outstanding.remove(at))
    }

    // ---- what drivers read

    /// Running or paused: not ended.
    pub(crate) fn is_live(&self) -> bool {
        matches!(self.status, RunStatus::Running | RunStatus::Paused)
    }

    /// Nothing runs and nothing is ready to (tasks blocked on a tool call's decision do not count as running).
    pub(crate) fn is_idle(&self) -> bool {
        self.outstanding.len() == self.approvals.waiting_tasks() && (self.ready.is_empty() || !self.is_live())
    }

    /// Work is out that is not blocked on a person: a driver waits for it.
    fn is_working(&self) -> bool {
        self.outstanding.len() > self.approvals.waiting_tasks()
    }

    pub(crate) fn status(&self) -> RunStatus {
        self.status
    }

    pub(crate) fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The trace, moved out (the run is over).
    pub(crate) fn take_trace(&mut self) -> Trace {
        std::mem::take(&mut self.trace)
    }

    pub(crate) fn state_json(&self) -> Value {
        self.scope.state_json()
    }

    pub(crate) fn id(&self, node: NodeIx) -> &str {
        &self.workflow.nodes[node].id
    }

    /// The nodes with a pending approval, in the order they were reached.
    pub(crate) fn pending_nodes(&self) -> Vec<String> {
        self.approvals.nodes()
    }

    /// What waits for a person, as a run's result shows it.
    pub(crate) fn pending(&self) -> Vec<PendingApproval> {
        self.approvals.items().map(|p| p.approval.clone()).collect()
    }

    /// The earliest approval deadline, in Unix milliseconds.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.approvals.next_deadline()
    }

    /// A pending approval whose deadline has passed at `now_ms`.
    pub(crate) fn expired(&self, now_ms: i64) -> Option<String> {
        self.approvals.expired(now_ms)
    }

    /// The nodes of the work out (for a message when a recording stops in the middle of it).
    fn outstanding_nodes(&self) -> Vec<String> {
        self.outstanding.iter().map(|o| format!("`{}`", self.id(o.node()))).collect()
    }

    // ---- the loop's turns

    fn emit(&mut self, kind: EventKind) {
        self.effects.push(Effect::Emit(kind));
    }

    fn begin(&mut self) {
        let wf = &self.workflow;
        self.emit(EventKind::WorkflowStart { workflow: wf.name.clone(), input: self.input.clone() });
        match self.topo.start {
            Some(start) => self.ready.push_back(Activation { node: start, previous_output: Arc::from("") }),
            None => self.fail_run("the workflow has no start node".into()),
        }
    }

    /// Starts ready nodes while fewer than the concurrency limit run. A task waiting for a tool call's decision does
    /// not hold its place: the other branches go on while one waits for a person.
    fn start_ready(&mut self) {
        while self.outstanding.len() - self.approvals.waiting_tasks() < self.concurrency && self.is_live() {
            let Some(act) = self.ready.pop_front() else { break };
            self.activate(act);
        }
    }

    /// Nothing runs and approvals wait: says so once, to observers and to the run log.
    fn pause(&mut self) {
        if self.status == RunStatus::Running {
            self.status = RunStatus::Paused;
            let pending = self.pending_nodes();
            self.effects.push(Effect::Status(RunStatus::Paused, pending.clone()));
            self.emit(EventKind::WorkflowPaused { pending });
        }
    }

    /// A pause ends: a decision arrived.
    fn unpause(&mut self) {
        if self.status == RunStatus::Paused {
            self.status = RunStatus::Running;
            self.effects.push(Effect::Status(RunStatus::Running, Vec::new()));
            self.emit(EventKind::WorkflowResumed {});
        }
    }

    fn interrupted(&mut self) {
        if self.is_working() {
            let running = self.outstanding_nodes();
            self.outstanding.clear();
            self.fail_run(format!(
                "the recording stops while {} ran: the run was interrupted; resume it to finish",
                running.join(", ")
            ));
        }
    }

    /// Ends the run: its final status (paused when approvals still wait), and `workflow:end` with the results.
    fn finish(&mut self) {
        let paused = self.is_live() && !self.approvals.is_empty();
        if paused {
            self.status = RunStatus::Paused;
        } else if self.is_live() {
            self.status = RunStatus::Completed;
        }
        if matches!(self.status, RunStatus::Failed | RunStatus::Cancelled) {
            self.approvals.clear();
        }
        let pending = self.pending_nodes();
        let results = self.take_results();
        let by = self.cancelled_by.clone();
        self.emit(EventKind::WorkflowEnd { status: self.status, results, error: self.error.clone(), by });
        // After its end event: a run whose holder dies between the two writes is still running in its store, and is
        // taken over to its end (the scheduler's `go_live`); the other way round, its store would say it ended with no end in
        // its log, which no one takes up and whose replay ends where its log does not.
        self.effects.push(Effect::Status(self.status, pending));
    }

    fn fail_run(&mut self, message: String) {
        if self.is_live() {
            self.emit(EventKind::log(None, "error", message.clone()));
            self.status = RunStatus::Failed;
            self.error = Some(message);
            self.ready.clear();
            self.approvals.drop_tool_waits();
            self.effects.push(Effect::CancelTasks);
        }
    }

    fn cancel(&mut self, by: Option<String>) {
        if self.is_live() {
            self.status = RunStatus::Cancelled;
            self.cancelled_by = by;
            self.error = Some("cancelled".into());
            self.ready.clear();
            self.approvals.drop_tool_waits();
            self.effects.push(Effect::CancelTasks);
        }
    }

    // ---- nodes

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
            self.node_done(node, iteration, 0, act.previous_output, node::NodeOutcome::data(pinned.clone()));
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
                self.node_done(node, iteration, 0, act.previous_output, node::NodeOutcome::data(data));
            }
            NodeType::If => self.run_if(node, iteration, act.previous_output),
            NodeType::Approval => self.reach_approval(node, act.previous_output),
            NodeType::Agent | NodeType::Script | NodeType::Workflow => {
                if let Some(reused) = self.reuse.as_ref().and_then(|r| r.result(&n.id, iteration)).cloned() {
                    let from = self.reuse.as_ref().map_or("", |r| r.run.as_str());
                    let forked = self.reuse.as_ref().is_some_and(|r| r.fork.is_some() && r.from == n.id);
                    let said = match forked {
                        true => format!("the answer given for this fork of run {from}"),
                        false => format!("result of run {from}"),
                    };
                    self.emit(EventKind::log(Some(&n.id), "reused", said));
                    let outcome = node::NodeOutcome {
                        data: reused.data,
                        tool_calls: reused.tool_calls,
                        usage: reused.usage,
                        code: reused.code,
                    };
                    self.node_done(node, iteration, 0, act.previous_output, outcome);
                    return;
                }
                let scope = self.scope.clone();
                self.outstanding.push(Outstanding::Node { node, iteration, previous_output: act.previous_output });
                self.effects.push(Effect::RunNode { node, iteration, scope });
            }
        }
    }

    /// A node's end: its result is kept and merged into `state`, `node:exit` says it, and the run routes on from it.
    fn node_done(
        &mut self,
        node: NodeIx,
        iteration: u32,
        duration_ms: u64,
        previous_output: Arc<str>,
        outcome: node::NodeOutcome,
    ) {
        let workflow = self.workflow.clone();
        let n = &workflow.nodes[node];
        self.approvals.node_ended(&n.id);
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
        if self.is_live() {
            self.route_on(node, error, output);
        }
    }

    /// The final results in document order; the run is over, so they are moved out, not copied.
    fn take_results(&mut self) -> indexmap::IndexMap<String, NodeResult> {
        let nodes = &self.workflow.nodes;
        std::mem::take(&mut self.results)
            .into_iter()
            .enumerate()
            .filter_map(|(i, r)| r.map(|r| (nodes[i].id.clone(), r)))
            .collect()
    }
}

/// Turns a run's loop until it must wait: starts what is ready; when nothing runs, settles deferred edges, then says
/// whether the run paused or is over. `apply` applies a step and carries out its effects (which may apply more
/// inputs at once, e.g. an answers file deciding an approval as it is reached). The scheduler, a rebuild from a
/// recording and the tests all turn the state with this one loop.
pub(crate) fn stand<D>(driver: &mut D, state: impl Fn(&D) -> &RunState, apply: impl Fn(&mut D, Step)) -> Standing {
    loop {
        if state(driver).is_live() {
            apply(driver, Step::StartReady);
        }
        let st = state(driver);
        if !st.is_idle() {
            if st.is_working() {
                return Standing::Working;
            }
            continue; // something became ready while effects were carried out (a decision from an answers file)
        }
        if st.is_live() {
            apply(driver, Step::Settle);
            if !state(driver).is_idle() {
                continue;
            }
        }
        let st = state(driver);
        if !st.is_live() || st.approvals.is_empty() {
            return Standing::Over;
        }
        apply(driver, Step::Pause);
        return Standing::Paused;
    }
}
