//! The executor (SEMANTICS §2–§6). One scheduler task owns all run state and makes every routing decision;
//! agent and script nodes, and model routing calls, run in spawned tasks that report back over a channel. That keeps
//! the semantics in one place (this file), makes event order deterministic per node, and lets a paused run be
//! captured as a plain snapshot and resumed later, in this process or another.

mod input;
mod node;
mod reuse;

pub use input::{Input, Rebuild, Recorded, Recording};
pub use reuse::{Reuse, ReusedResult};

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::document::{handle, ConditionOperator, NodeType, OnError, Workflow, DEFAULT_STEP_BUDGET};
use crate::events::{Emitter, EventKind, Observer, RunLog, Usage};
use crate::graph::Topology;
use crate::model::{Choice, Model, RouteAnswer, RouteRequest, DEFAULT_CHOICE};
use crate::node_types::{self, HandleKind};
use crate::result::{NodeResult, NodeStatus, PendingApproval, RunResult, RunStatus, Trace, TraceEdge, TraceStep};
use crate::script::Script;
use crate::template::{self, Scope};

/// Where a branch ends on a routing decision, in route events and trace edges.
pub const END: &str = "(end)";

/// How a run is started. Kept with the run, so that a rebuild starts it the same way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOptions {
    /// The run input: a string, an object, or nothing (the start node's `initial_input`).
    pub input: Option<Value>,
    pub run_id: Option<String>,
    /// Overrides the workflow's step budget.
    pub step_budget: Option<u32>,
    /// Overrides the workflow's default model.
    pub model: Option<String>,
    /// Overrides the workflow's concurrency.
    pub concurrency: Option<u32>,
    /// Results, routes and decisions taken from an earlier run for the nodes upstream of the one run from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<Reuse>,
}

/// What a run needs besides the workflow: the model, an optional script, the run log and observers.
#[derive(Clone)]
pub struct Runtime {
    pub model: Arc<dyn Model>,
    /// Answers for script nodes and approvals (and, through `ScriptedModel`, for agents and routes).
    pub script: Option<Arc<Script>>,
    pub log: Option<Arc<dyn RunLog>>,
    pub observers: Vec<Arc<dyn Observer>>,
}

/// A person's (or a script's) decision on a pending approval, normalized as in seed 002.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub decision: String,
    pub note: String,
}

impl Decision {
    /// A string containing "reject" (any case) rejects; an object's `decision` decides; nothing approves.
    pub fn normalize(value: &Value) -> Decision {
        match value {
            Value::String(s) => Decision {
                decision: if s.to_lowercase().contains("reject") { "reject" } else { "approve" }.into(),
                note: String::new(),
            },
            Value::Object(o) => {
                let d = o.get("decision").and_then(Value::as_str).unwrap_or("").to_lowercase();
                Decision {
                    decision: if d.contains("reject") { "reject" } else { "approve" }.into(),
                    note: o.get("note").and_then(Value::as_str).unwrap_or("").to_string(),
                }
            }
            _ => Decision { decision: "approve".into(), note: String::new() },
        }
    }
}

/// The state of a forward edge in its target's join.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeMark {
    #[default]
    Open,
    Followed,
    Dead,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingState {
    pub node: String,
    pub message: String,
    pub previous_output: String,
    /// Unix milliseconds after which the approval times out.
    pub deadline_ms: Option<i64>,
}

/// The end of a `run`/`resume` call.
pub struct Outcome {
    pub result: RunResult,
    /// The first run-log write failure, if any.
    pub log_error: Option<String>,
}

pub enum Command {
    Decide { node: String, decision: Value, reply: oneshot::Sender<Result<(), String>> },
    Cancel,
}

/// A run in progress that waits for decisions while paused (the app's mode).
pub struct RunHandle {
    pub run_id: String,
    commands: mpsc::UnboundedSender<Command>,
    join: tokio::task::JoinHandle<Outcome>,
}

/// A cheap, clonable way to decide approvals and cancel a live run from anywhere (the app keeps one per run).
#[derive(Clone)]
pub struct RunController {
    commands: mpsc::UnboundedSender<Command>,
}

impl RunController {
    /// Decides a pending approval; fails when that node is not waiting.
    pub async fn decide(&self, node: &str, decision: Value) -> Result<(), String> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::Decide { node: node.to_string(), decision, reply })
            .map_err(|_| "the run has ended".to_string())?;
        rx.await.map_err(|_| "the run has ended".to_string())?
    }

    pub fn cancel(&self) {
        let _ = self.commands.send(Command::Cancel);
    }
}

impl RunHandle {
    pub fn controller(&self) -> RunController {
        RunController { commands: self.commands.clone() }
    }

    /// Decides a pending approval; fails when that node is not waiting.
    pub async fn decide(&self, node: &str, decision: Value) -> Result<(), String> {
        self.controller().decide(node, decision).await
    }

    pub fn cancel(&self) {
        self.controller().cancel()
    }

    pub async fn finish(self) -> Outcome {
        self.join.await.expect("the run task does not panic")
    }
}

/// Read-only parts shared with node tasks.
pub(crate) struct Shared {
    pub workflow: Arc<Workflow>,
    pub topo: Arc<Topology>,
    pub model: Arc<dyn Model>,
    pub script: Option<Arc<Script>>,
    pub emitter: Emitter,
    pub default_model: Option<String>,
    model_calls: Mutex<HashMap<String, u32>>,
}

impl Shared {
    /// A model-call problem of `node` as AgentFlow's `llm_error` log event (retries, fallbacks).
    pub fn llm_error(&self, node: usize, message: &str) {
        self.emitter.emit(EventKind::log(Some(&self.workflow.nodes[node].id), "llm_error", message.to_string()));
    }

    /// The index of this call among the node's model calls in this run.
    pub fn next_call(&self, node: &str) -> u32 {
        let mut calls = self.model_calls.lock().unwrap();
        let c = calls.entry(node.to_string()).or_insert(0);
        *c += 1;
        *c - 1
    }
}

/// A new run id (a UUID).
pub fn new_run_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Runs a workflow until it completes, fails, is cancelled, or pauses on approvals nobody scripted.
pub async fn run(workflow: Arc<Workflow>, options: RunOptions, runtime: Runtime) -> Outcome {
    let scheduler = Scheduler::new(workflow, options, runtime);
    scheduler.drive(None).await
}

/// Continues a recorded run — paused, or interrupted when its process died — as `run` does: its recorded inputs are
/// applied again (no node that completed runs again; those that were running do), then `decisions`, then it runs
/// until the next pause or the end. `options` and `workflow` must be those the run started with.
pub async fn resume(
    workflow: Arc<Workflow>,
    options: RunOptions,
    recording: Recording,
    decisions: Vec<(String, Value)>,
    runtime: Runtime,
) -> Result<Outcome, String> {
    let scheduler = Scheduler::rebuilt(workflow, options, recording, decisions, runtime)?;
    Ok(scheduler.drive(None).await)
}

/// Plays a recorded run again from its recorded inputs, with no model call, no tool call and no task: the same
/// results, trace and events (timestamps aside), delivered to `runtime`'s log and observers.
pub fn replay(
    workflow: Arc<Workflow>,
    options: RunOptions,
    recording: Recording,
    runtime: Runtime,
) -> Result<Outcome, String> {
    let mut scheduler = Scheduler::new(workflow, options, runtime);
    scheduler.rebuild = Some(Replaying::new(Rebuild::Replay, recording));
    scheduler.fast_forward()?;
    if scheduler.running > 0 {
        let running: Vec<String> = scheduler.parked_nodes();
        scheduler.parked_clear();
        scheduler.fail_run(format!(
            "the recording stops while {} ran: the run was interrupted; resume it to finish",
            running.join(", ")
        ));
    }
    Ok(scheduler.end())
}

/// Starts a run that stays alive while paused and takes decisions through its handle.
pub fn start(workflow: Arc<Workflow>, options: RunOptions, runtime: Runtime) -> RunHandle {
    handle(Scheduler::new(workflow, options, runtime))
}

/// Continues a recorded run as a live run that takes decisions through its handle (the app).
pub fn start_from(
    workflow: Arc<Workflow>,
    options: RunOptions,
    recording: Recording,
    runtime: Runtime,
) -> Result<RunHandle, String> {
    Ok(handle(Scheduler::rebuilt(workflow, options, recording, Vec::new(), runtime)?))
}

fn handle(scheduler: Scheduler) -> RunHandle {
    let run_id = scheduler.run_id.clone();
    let (tx, rx) = mpsc::unbounded_channel();
    let join = tokio::spawn(scheduler.drive(Some(rx)));
    RunHandle { run_id, commands: tx, join }
}

#[derive(Debug, Clone)]
struct Activation {
    node: usize,
    previous_output: Arc<str>,
}

enum Done {
    Node { node: usize, iteration: u32, started: Instant, previous_output: Arc<str>, outcome: node::NodeOutcome },
    Route { node: usize, live: Vec<usize>, answer: Result<RouteAnswer, String>, output: Arc<str> },
}

/// Work a rebuild started but does not run: a node task or a routing call, waiting for its recorded input (or, when
/// a resumed run goes on for real, to be started).
enum Parked {
    Node { node: usize, iteration: u32, started: Instant, previous_output: Arc<str>, scope: Scope },
    Route { node: usize, live: Vec<usize>, output: Arc<str>, ask: RouteAsk },
}

/// What a routing call asks.
struct RouteAsk {
    context: Value,
    choices: Vec<Choice>,
    visit: u32,
    model: Option<String>,
}

/// A rebuild in progress: the recorded inputs not applied yet.
struct Replaying {
    mode: Rebuild,
    inputs: VecDeque<Recorded>,
    /// Recorded events not shown yet (a replay shows those the scheduler does not derive).
    events: VecDeque<crate::events::Event>,
    /// The last recorded event's number.
    last_seq: u64,
    parked: Vec<Parked>,
}

impl Replaying {
    fn new(mode: Rebuild, recording: Recording) -> Replaying {
        let last_seq = recording.events.last().map_or(0, |e| e.seq);
        Replaying {
            mode,
            inputs: recording.inputs.into(),
            events: recording.events.into(),
            last_seq,
            parked: Vec::new(),
        }
    }
}

struct Scheduler {
    shared: Arc<Shared>,
    run_id: String,
    input: Value,
    dry_run: bool,
    step_budget: u32,
    concurrency: usize,
    status: RunStatus,
    error: Option<String>,
    scope: Scope,
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
    pending: Vec<PendingState>,
    ready: VecDeque<Activation>,
    running: usize,
    trace: Trace,
    cancel: CancellationToken,
    done_tx: mpsc::UnboundedSender<Done>,
    done_rx: mpsc::UnboundedReceiver<Done>,
    started: bool,
    /// `workflow:paused` was emitted and no `workflow:resumed` since.
    paused: bool,
    clock: Clock,
    /// Nodes found skipped, waiting to cascade; a worklist so long dead chains do not recurse.
    to_skip: VecDeque<usize>,
    /// Set while recorded inputs are applied again.
    rebuild: Option<Replaying>,
    reuse: Option<Arc<Reuse>>,
}

/// Wall-clock milliseconds (so approval deadlines mean the same in another process) advanced by tokio's clock (so
/// tests can pause time).
#[derive(Clone, Copy)]
struct Clock {
    wall_ms: i64,
    at: tokio::time::Instant,
}

impl Clock {
    fn new() -> Clock {
        Clock { wall_ms: chrono::Utc::now().timestamp_millis(), at: tokio::time::Instant::now() }
    }

    fn now_ms(&self) -> i64 {
        self.wall_ms + self.at.elapsed().as_millis() as i64
    }

    async fn sleep_until(self, deadline_ms: Option<i64>) {
        match deadline_ms {
            Some(d) => {
                let wait = std::time::Duration::from_millis((d - self.wall_ms).max(0) as u64);
                tokio::time::sleep_until(self.at + wait).await
            }
            None => std::future::pending().await,
        }
    }
}

impl Scheduler {
    fn new(workflow: Arc<Workflow>, options: RunOptions, runtime: Runtime) -> Scheduler {
        let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
        let input = options.input.clone().unwrap_or(Value::Null);
        let dry_run = input.get("dryRun").and_then(Value::as_bool).unwrap_or(false);
        let step_budget = options.step_budget.or(workflow.defaults.step_budget).unwrap_or(DEFAULT_STEP_BUDGET);
        let concurrency = options.concurrency.or(workflow.defaults.concurrency);
        let model = options.model.clone().or_else(|| workflow.defaults.model.clone());
        let emitter = Emitter::new(&run_id, 0, runtime.log.clone(), runtime.observers.clone());
        let mut s = Scheduler::empty(workflow, runtime, emitter, run_id, input, model);
        s.reuse = options.reuse.map(Arc::new);
        s.dry_run = dry_run;
        s.step_budget = step_budget;
        s.concurrency = concurrency.map_or(usize::MAX, |c| c.max(1) as usize);
        s
    }

    fn empty(
        workflow: Arc<Workflow>,
        runtime: Runtime,
        emitter: Emitter,
        run_id: String,
        input: Value,
        model: Option<String>,
    ) -> Scheduler {
        let topo = Arc::new(Topology::new(&workflow));
        let n = workflow.nodes.len();
        let e = workflow.edges.len();
        let never_followed = topo.never_followed.clone();
        let forward_in_unreachable: Vec<usize> =
            (0..n).map(|v| topo.forward_in[v].iter().filter(|&&i| never_followed[i]).count()).collect();
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            workflow,
            topo,
            model: runtime.model,
            script: runtime.script,
            emitter,
            default_model: model,
            model_calls: Mutex::new(HashMap::new()),
        });
        Scheduler {
            shared,
            run_id,
            scope: Scope::new(input.clone()),
            input,
            dry_run: false,
            step_budget: DEFAULT_STEP_BUDGET,
            concurrency: usize::MAX,
            status: RunStatus::Running,
            error: None,
            results: vec![None; n],
            outputs: vec![Arc::from(""); n],
            iterations: vec![0; n],
            steps: 0,
            route_visits: vec![0; n],
            approval_visits: vec![0; n],
            edge_follows: vec![0; e],
            // Edges out of nodes nothing can reach are resolved from the start: no join waits for them.
            edge_marks: never_followed
                .iter()
                .map(|&never| if never { EdgeMark::Dead } else { EdgeMark::Open })
                .collect(),
            join_resolved: forward_in_unreachable,
            join_outputs: vec![Vec::new(); n],
            deferred: BTreeSet::new(),
            pending: Vec::new(),
            ready: VecDeque::new(),
            running: 0,
            trace: Trace::default(),
            cancel: CancellationToken::new(),
            done_tx,
            done_rx,
            started: false,
            paused: false,
            clock: Clock::new(),
            to_skip: VecDeque::new(),
            rebuild: None,
            reuse: None,
        }
    }

    /// A run rebuilt from its recording, its `decisions` applied, ready to go on for real.
    fn rebuilt(
        workflow: Arc<Workflow>,
        options: RunOptions,
        recording: Recording,
        decisions: Vec<(String, Value)>,
        runtime: Runtime,
    ) -> Result<Scheduler, String> {
        let mut s = Scheduler::new(workflow, options, runtime);
        let replaying = Replaying::new(Rebuild::Resume, recording);
        s.shared.emitter.quiet_through(replaying.last_seq);
        s.rebuild = Some(replaying);
        s.fast_forward()?;
        s.go_live();
        for (node, decision) in decisions {
            s.decide(&node, &decision, false)?;
        }
        Ok(s)
    }

    fn emit(&self, kind: EventKind) {
        self.shared.emitter.emit(kind);
    }

    fn id(&self, node: usize) -> &str {
        &self.shared.workflow.nodes[node].id
    }

    /// The main loop. With `commands`, it waits for decisions while paused; without, it returns at a pause.
    async fn drive(mut self, mut commands: Option<mpsc::UnboundedReceiver<Command>>) -> Outcome {
        if !self.started {
            self.started = true;
            self.begin();
        }
        loop {
            if self.status == RunStatus::Running {
                self.expire_approvals();
                while self.running < self.concurrency && self.status == RunStatus::Running {
                    let Some(act) = self.ready.pop_front() else {
                        break;
                    };
                    self.activate(act);
                }
            }
            if self.running == 0 && (self.ready.is_empty() || self.status != RunStatus::Running) {
                if self.status == RunStatus::Running && self.flush_deferred() {
                    continue;
                }
                if self.status != RunStatus::Running || self.pending.is_empty() {
                    break;
                }
                // Paused: nothing runs and approvals wait.
                self.pause();
                let Some(rx) = commands.as_mut() else { break };
                let deadline = self.next_deadline();
                tokio::select! {
                    cmd = rx.recv() => match cmd {
                        Some(cmd) => self.command(cmd),
                        None => { commands = None; }
                    },
                    _ = self.clock.sleep_until(deadline) => {}
                }
                continue;
            }
            let deadline = self.next_deadline();
            tokio::select! {
                Some(done) = self.done_rx.recv() => self.finished(done),
                Some(cmd) = recv_opt(&mut commands) => self.command(cmd),
                _ = self.clock.sleep_until(deadline) => {}
            }
        }
        self.end()
    }

    /// Nothing runs and approvals wait: says so once, to observers and to the run log.
    fn pause(&mut self) {
        if !self.paused {
            self.paused = true;
            let pending: Vec<String> = self.pending.iter().map(|p| p.node.clone()).collect();
            if self.rebuild.is_none() {
                self.shared.emitter.status(RunStatus::Paused, &pending);
            }
            self.emit(EventKind::WorkflowPaused { pending });
        }
    }

    fn begin(&mut self) {
        let wf = &self.shared.workflow;
        self.emit(EventKind::WorkflowStart { workflow: wf.name.clone(), input: self.input.clone() });
        match self.shared.topo.start {
            Some(start) => self.ready.push_back(Activation { node: start, previous_output: Arc::from("") }),
            None => self.fail_run("the workflow has no start node".into()),
        }
    }

    fn end(mut self) -> Outcome {
        let paused = self.status == RunStatus::Running && !self.pending.is_empty();
        if paused {
            self.status = RunStatus::Paused;
        } else if self.status == RunStatus::Running {
            self.status = RunStatus::Completed;
        }
        if matches!(self.status, RunStatus::Failed | RunStatus::Cancelled) {
            self.pending.clear();
        }
        if self.rebuild.as_ref().is_none_or(|r| r.mode == Rebuild::Resume) {
            let pending: Vec<String> = self.pending.iter().map(|p| p.node.clone()).collect();
            self.shared.emitter.status(self.status, &pending);
        }
        let results = self.take_results();
        let end = EventKind::WorkflowEnd { status: self.status, results, error: self.error.clone() };
        let EventKind::WorkflowEnd { results, .. } = self.shared.emitter.emit_and_return(end) else {
            unreachable!("the emitter hands back the payload it was given")
        };
        let result = RunResult {
            run_id: self.run_id.clone(),
            status: self.status,
            results,
            trace: self.trace.clone(),
            state: match self.scope.state_json() {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            },
            pending: self
                .pending
                .iter()
                .map(|p| PendingApproval {
                    node: p.node.clone(),
                    message: p.message.clone(),
                    previous_output: p.previous_output.clone(),
                })
                .collect(),
            error: self.error.clone(),
        };
        // The run is over when everything it emitted is in the log and with the observers.
        self.shared.emitter.flush();
        Outcome { result, log_error: self.shared.emitter.log_error() }
    }

    /// The final results in document order; the run is over, so they are moved out, not copied.
    fn take_results(&mut self) -> indexmap::IndexMap<String, NodeResult> {
        let nodes = &self.shared.workflow.nodes;
        std::mem::take(&mut self.results)
            .into_iter()
            .enumerate()
            .filter_map(|(i, r)| r.map(|r| (nodes[i].id.clone(), r)))
            .collect()
    }

    fn fail_run(&mut self, message: String) {
        if self.status == RunStatus::Running {
            self.emit(EventKind::log(None, "error", message.clone()));
            self.status = RunStatus::Failed;
            self.error = Some(message);
            self.ready.clear();
            self.cancel.cancel();
        }
    }

    fn command(&mut self, cmd: Command) {
        match cmd {
            Command::Cancel => self.cancel_run(),
            Command::Decide { node, decision, reply } => {
                let r = if self.status == RunStatus::Running {
                    self.decide(&node, &decision, false)
                } else {
                    Err("the run has ended".into())
                };
                let _ = reply.send(r);
            }
        }
    }

    fn cancel_run(&mut self) {
        if self.status == RunStatus::Running {
            self.record(Input::Cancelled);
            self.status = RunStatus::Cancelled;
            self.error = Some("cancelled".into());
            self.ready.clear();
            self.cancel.cancel();
        }
    }

    /// Keeps an input in the run log before it is applied (not while recorded inputs are applied again).
    fn record(&self, input: Input) {
        if self.rebuild.is_none() {
            self.shared.emitter.record(input);
        }
    }

    // ---- rebuilding from recorded inputs

    /// Applies the recorded inputs in order, as the run did: nodes and routing calls that start are parked, not
    /// run; each recorded input settles the parked work it names. Returns at the end of the recording, or with why
    /// the recording does not fit this workflow.
    fn fast_forward(&mut self) -> Result<(), String> {
        if !self.started {
            self.started = true;
            self.begin();
        }
        loop {
            if self.status == RunStatus::Running {
                while self.next_input(|i| matches!(i, Input::TimedOut { .. })) {
                    self.apply_next()?;
                }
                while self.running < self.concurrency && self.status == RunStatus::Running {
                    let Some(act) = self.ready.pop_front() else { break };
                    self.activate(act);
                }
            }
            if self.running == 0 && (self.ready.is_empty() || self.status != RunStatus::Running) {
                if self.status == RunStatus::Running && self.flush_deferred() {
                    continue;
                }
                if self.status != RunStatus::Running || self.pending.is_empty() {
                    break;
                }
                self.pause();
            }
            if !self.next_input(|_| true) {
                break;
            }
            self.apply_next()?;
        }
        match self.rebuild.as_ref().and_then(|r| r.inputs.front()) {
            Some(left) => Err(format!(
                "the recording does not fit this workflow: the run ended before its input #{} ({:?}) was applied",
                left.seq, left.input
            )),
            None => Ok(()),
        }
    }

    fn next_input(&self, test: impl Fn(&Input) -> bool) -> bool {
        self.rebuild.as_ref().and_then(|r| r.inputs.front()).is_some_and(|r| test(&r.input))
    }

    /// Applies the next recorded input, numbering events on from where it was applied.
    fn apply_next(&mut self) -> Result<(), String> {
        let Some(recorded) = self.rebuild.as_mut().and_then(|r| r.inputs.pop_front()) else { return Ok(()) };
        self.catch_up(recorded.seq);
        let unfit = |what: String| format!("the recording does not fit this workflow: {what}");
        let index =
            |id: &str| self.shared.topo.index.get(id).copied().ok_or_else(|| unfit(format!("node `{id}` is gone")));
        match recorded.input {
            Input::NodeDone { node, iteration, data, tool_calls, usage, duration_ms, model_calls } => {
                let at = index(&node)?;
                let parked = self
                    .unpark(|p| matches!(p, Parked::Node { node, iteration: i, .. } if *node == at && *i == iteration));
                let Some(Parked::Node { previous_output, .. }) = parked else {
                    return Err(unfit(format!("`{node}` (iteration {iteration}) ended but was not running")));
                };
                self.running -= 1;
                self.shared.model_calls.lock().unwrap().insert(node, model_calls);
                let outcome = node::NodeOutcome { data, tool_calls, usage };
                self.node_done(at, iteration, duration_ms, previous_output, outcome);
            }
            Input::Routed { node, answer } => {
                let at = index(&node)?;
                let Some(Parked::Route { live, output, .. }) =
                    self.unpark(|p| matches!(p, Parked::Route { node, .. } if *node == at))
                else {
                    return Err(unfit(format!("a route was chosen after `{node}`, which was not routing")));
                };
                self.running -= 1;
                self.apply_route(at, live, answer, output);
            }
            Input::Decided { node, decision, .. } => {
                let pos = self.pending.iter().position(|p| p.node == node);
                let pos = pos.ok_or_else(|| unfit(format!("`{node}` was decided but is not waiting")))?;
                self.settle_approval(pos, decision);
            }
            Input::TimedOut { node } => {
                let pos = self.pending.iter().position(|p| p.node == node);
                let pos = pos.ok_or_else(|| unfit(format!("`{node}` timed out but is not waiting")))?;
                self.time_out(pos);
            }
            Input::Cancelled => self.cancel_run(),
        }
        Ok(())
    }

    /// Before an input recorded at `seq`: a replay shows the recorded events the scheduler does not derive (what
    /// node tasks emitted); either way the numbering goes on from `seq`.
    fn catch_up(&mut self, seq: u64) {
        let Some(r) = self.rebuild.as_mut() else { return };
        if r.mode == Rebuild::Replay {
            while r.events.front().is_some_and(|e| e.seq < seq) {
                let e = r.events.pop_front().expect("checked");
                if e.seq >= self.shared.emitter.next_seq() {
                    self.shared.emitter.replay(e);
                }
            }
        }
        self.shared.emitter.skip_to(seq);
    }

    fn unpark(&mut self, test: impl Fn(&Parked) -> bool) -> Option<Parked> {
        let parked = &mut self.rebuild.as_mut()?.parked;
        let at = parked.iter().position(test)?;
        Some(parked.remove(at))
    }

    fn parked_nodes(&self) -> Vec<String> {
        let parked = self.rebuild.as_ref().map_or(&[][..], |r| &r.parked[..]);
        parked
            .iter()
            .map(|p| match p {
                Parked::Node { node, .. } | Parked::Route { node, .. } => format!("`{}`", self.id(*node)),
            })
            .collect()
    }

    fn parked_clear(&mut self) {
        if let Some(r) = self.rebuild.as_mut() {
            self.running -= r.parked.len();
            r.parked.clear();
        }
    }

    /// Ends a rebuild: events are numbered after the recorded ones, and the work that was running when the
    /// recording stopped starts for real.
    fn go_live(&mut self) {
        let Some(r) = self.rebuild.take() else { return };
        self.shared.emitter.skip_to(r.last_seq + 1);
        self.shared.emitter.status(
            if self.paused { RunStatus::Paused } else { RunStatus::Running },
            &self.pending.iter().map(|p| p.node.clone()).collect::<Vec<_>>(),
        );
        for parked in r.parked {
            match parked {
                Parked::Node { node, iteration, started, previous_output, scope } => {
                    self.spawn_node(node, iteration, started, previous_output, scope)
                }
                Parked::Route { node, live, output, ask } => self.spawn_route(node, live, output, ask),
            }
        }
    }

    // ---- starting nodes

    fn activate(&mut self, act: Activation) {
        let node = act.node;
        let shared = self.shared.clone();
        let n = &shared.workflow.nodes[node];
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
        let started = Instant::now();
        self.scope.previous_output = act.previous_output.clone();
        self.scope.iteration = Some(iteration);
        self.emit(EventKind::NodeEnter {
            node: n.id.clone(),
            iteration,
            instruction: node::instruction(n, &self.scope),
        });
        self.emit(EventKind::log(Some(&n.id), "step_start", format!("{} node", n.node_type.as_str())));

        if let Some(pinned) = &n.pinned {
            let outcome = node::NodeOutcome { data: Ok(pinned.clone()), tool_calls: Vec::new(), usage: None };
            self.node_done(node, iteration, elapsed_ms(started), act.previous_output, outcome);
            return;
        }
        match n.node_type {
            NodeType::Start => {
                let input = if self.input.is_null() {
                    n.initial_input.clone().unwrap_or(json!(""))
                } else {
                    self.input.clone()
                };
                let data = match input {
                    Value::String(s) => json!({ "text": s }),
                    Value::Object(o) => Value::Object(o),
                    other => json!({ "text": other.to_string() }),
                };
                let outcome = node::NodeOutcome { data: Ok(data), tool_calls: Vec::new(), usage: None };
                self.node_done(node, iteration, elapsed_ms(started), act.previous_output, outcome);
            }
            NodeType::If => self.run_if(node, iteration, started, act.previous_output),
            NodeType::Approval => self.reach_approval(node, act.previous_output),
            NodeType::Agent | NodeType::Script => {
                if let Some(reused) = self.reuse.as_ref().and_then(|r| r.result(&n.id, iteration)).cloned() {
                    let from = self.reuse.as_ref().map_or("", |r| r.run.as_str());
                    self.emit(EventKind::log(Some(&n.id), "reused", format!("result of run {from}")));
                    let outcome =
                        node::NodeOutcome { data: reused.data, tool_calls: reused.tool_calls, usage: reused.usage };
                    self.node_done(node, iteration, 0, act.previous_output, outcome);
                    return;
                }
                self.running += 1;
                let scope = self.scope.clone();
                match self.rebuild.as_mut() {
                    Some(r) => r.parked.push(Parked::Node {
                        node,
                        iteration,
                        started,
                        previous_output: act.previous_output,
                        scope,
                    }),
                    None => self.spawn_node(node, iteration, started, act.previous_output, scope),
                }
            }
        }
    }

    /// Runs an agent or script node in its own task, which reports back with `Done::Node`.
    fn spawn_node(&self, node: usize, iteration: u32, started: Instant, previous_output: Arc<str>, scope: Scope) {
        let shared = self.shared.clone();
        let tx = self.done_tx.clone();
        let cancel = self.cancel.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                o = node::execute(shared, node, scope) => o,
                _ = cancel.cancelled() => node::NodeOutcome { data: Err("cancelled".into()), tool_calls: Vec::new(), usage: None },
            };
            let _ = tx.send(Done::Node { node, iteration, started, previous_output, outcome });
        });
    }

    fn run_if(&mut self, node: usize, iteration: u32, started: Instant, previous_output: Arc<str>) {
        let shared = self.shared.clone();
        let n = &shared.workflow.nodes[node];
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
        let (data, branch) = match &chosen {
            Ok(Some((i, label))) => (json!({ "branch": handles[*i].0 }), Some((*i, label.clone()))),
            Ok(None) => (json!({ "branch": handles[conditions].0 }), None),
            Err(_) => (Value::Null, None),
        };
        let outcome = match chosen {
            Err(e) => node::NodeOutcome { data: Err(e), tool_calls: Vec::new(), usage: None },
            Ok(None) if n.no_match_error.is_some() => node::NodeOutcome {
                data: Err(n.no_match_error.clone().unwrap_or_default()),
                tool_calls: Vec::new(),
                usage: None,
            },
            Ok(_) => {
                let msg = match &branch {
                    Some((i, label)) => format!("condition {i} ({label}) matched"),
                    None => "no condition matched: taking `false`".into(),
                };
                self.emit(EventKind::log(Some(&n.id), "logic_check", msg));
                node::NodeOutcome { data: Ok(data), tool_calls: Vec::new(), usage: None }
            }
        };
        self.node_done(node, iteration, elapsed_ms(started), previous_output, outcome);
    }

    fn reach_approval(&mut self, node: usize, previous_output: Arc<str>) {
        let shared = self.shared.clone();
        let n = &shared.workflow.nodes[node];
        let message = n.message.clone().unwrap_or_else(|| "Approve this step?".into());
        let message = template::render(&message, &self.scope).unwrap_or(message);
        self.emit(EventKind::ApprovalRequested {
            node: n.id.clone(),
            message: message.clone(),
            previous_output: previous_output.to_string(),
        });
        self.emit(EventKind::log(Some(&n.id), "wait_input", "waiting for a decision"));
        let visit = self.approval_visits[node];
        self.approval_visits[node] += 1;
        let deadline_ms = n.timeout_seconds.map(|s| self.clock.now_ms() + (s as i64) * 1000);
        self.outputs[node] = previous_output.clone();
        self.pending.push(PendingState {
            node: n.id.clone(),
            message,
            previous_output: previous_output.to_string(),
            deadline_ms,
        });
        if let Some(decision) = self.reuse.as_ref().and_then(|r| r.decision(&n.id, visit)).cloned() {
            let pos = self.pending.len() - 1;
            self.settle_approval(pos, decision);
            return;
        }
        if self.rebuild.is_some() {
            // A decision the script gave the moment the approval was reached is the next recorded input.
            let immediate = |i: &Input| matches!(i, Input::Decided { node, immediate: true, .. } if *node == n.id);
            if self.next_input(immediate) {
                let _ = self.apply_next();
            }
            return;
        }
        let scripted = self.shared.script.as_ref().and_then(|s| s.approval(&n.id, visit)).cloned();
        if let Some(decision) = scripted {
            self.decide(&n.id, &decision, true).expect("the approval was just added");
        }
    }

    /// Applies a decision to a pending approval and routes on from it. `immediate`: the script's, as it was reached.
    fn decide(&mut self, node_id: &str, value: &Value, immediate: bool) -> Result<(), String> {
        let Some(pos) = self.pending.iter().position(|p| p.node == node_id) else {
            let waiting: Vec<&str> = self.pending.iter().map(|p| p.node.as_str()).collect();
            return Err(format!(
                "`{node_id}` is not waiting for a decision (waiting: {})",
                if waiting.is_empty() { "none".to_string() } else { waiting.join(", ") }
            ));
        };
        let decision = Decision::normalize(value);
        self.record(Input::Decided { node: node_id.to_string(), decision: decision.clone(), immediate });
        self.settle_approval(pos, decision);
        Ok(())
    }

    fn settle_approval(&mut self, pos: usize, decision: Decision) {
        if self.paused {
            self.paused = false;
            if self.rebuild.is_none() {
                self.shared.emitter.status(RunStatus::Running, &[]);
            }
            self.emit(EventKind::WorkflowResumed {});
        }
        let p = self.pending.remove(pos);
        let node = self.shared.topo.index[&p.node];
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
        let outcome = node::NodeOutcome { data: Ok(data), tool_calls: Vec::new(), usage: None };
        let previous: Arc<str> = Arc::from(p.previous_output.as_str());
        self.node_done(node, self.iterations[node], 0, previous, outcome);
    }

    fn next_deadline(&self) -> Option<i64> {
        self.pending.iter().filter_map(|p| p.deadline_ms).min()
    }

    fn expire_approvals(&mut self) {
        let now = self.clock.now_ms();
        while let Some(pos) = self.pending.iter().position(|p| p.deadline_ms.is_some_and(|d| d <= now)) {
            self.record(Input::TimedOut { node: self.pending[pos].node.clone() });
            self.time_out(pos);
        }
    }

    /// A pending approval's time is up: it follows its `timeout` edge, or is rejected when it has none.
    fn time_out(&mut self, pos: usize) {
        let node = self.shared.topo.index[&self.pending[pos].node];
        let timeout = node_types::resolve_handle(&self.shared.workflow.nodes[node], handle::TIMEOUT);
        let topo = &self.shared.topo;
        let has_timeout_edge = timeout.is_some_and(|t| topo.out[node].iter().any(|&e| topo.handles[e] == Some(t)));
        let decision = if has_timeout_edge { "timeout" } else { "reject" };
        self.settle_approval(pos, Decision { decision: decision.into(), note: "timed out".into() });
    }

    // ---- finishing nodes

    fn finished(&mut self, done: Done) {
        self.running -= 1;
        match done {
            Done::Node { node, iteration, started, previous_output, outcome } => {
                let duration_ms = elapsed_ms(started);
                let id = self.id(node);
                let calls = self.shared.model_calls.lock().unwrap().get(id).copied().unwrap_or(0);
                self.record(Input::node_done(id, iteration, &outcome, duration_ms, calls));
                self.node_done(node, iteration, duration_ms, previous_output, outcome)
            }
            Done::Route { node, live, answer, output } => {
                self.record(Input::Routed { node: self.id(node).to_string(), answer: answer.clone() });
                self.apply_route(node, live, answer, output)
            }
        }
    }

    fn node_done(
        &mut self,
        node: usize,
        iteration: u32,
        duration_ms: u64,
        previous_output: Arc<str>,
        outcome: node::NodeOutcome,
    ) {
        let shared = self.shared.clone();
        let n = &shared.workflow.nodes[node];
        let result = match outcome.data {
            Ok(data) => NodeResult::success(data, outcome.tool_calls),
            Err(e) => NodeResult::failed(e, outcome.tool_calls),
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
        if self.status != RunStatus::Running {
            return;
        }

        let topo = self.shared.topo.clone();
        let edges = &self.shared.workflow.edges;
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
                    match &edges[e].guard {
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
        let strategies = &self.shared.workflow.state;
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
    fn route_view(&self, routing_node: usize) -> Value {
        let mut map = serde_json::Map::new();
        map.insert("input".into(), self.input.clone());
        for (i, n) in self.shared.workflow.nodes.iter().enumerate() {
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
                                self.emit(EventKind::NodeWarning {
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
        Value::Object(map)
    }

    fn ask_route(&mut self, node: usize, live: Vec<usize>, output: Arc<str>) {
        let edges = &self.shared.workflow.edges;
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
        let model = self.shared.workflow.nodes[node].model.clone().or_else(|| self.shared.default_model.clone());
        let ask = RouteAsk { context, choices, visit, model };
        match self.rebuild.as_mut() {
            Some(r) => r.parked.push(Parked::Route { node, live, output, ask }),
            None => self.spawn_route(node, live, output, ask),
        }
    }

    /// Asks the model to route in its own task, which reports back with `Done::Route`.
    fn spawn_route(&self, node: usize, live: Vec<usize>, output: Arc<str>, ask: RouteAsk) {
        let shared = self.shared.clone();
        let tx = self.done_tx.clone();
        let cancel = self.cancel.clone();
        tokio::spawn(async move {
            let RouteAsk { context, choices, visit, model } = ask;
            let n = &shared.workflow.nodes[node];
            let request = RouteRequest {
                node: &n.id,
                model: model.as_deref(),
                question: "Based on the results so far, which condition is true?",
                context: &context,
                choices: &choices,
                visit,
            };
            let io = RouteIo { shared: shared.clone(), node };
            let answer = tokio::select! {
                a = shared.model.route(&request, &io) => a.map_err(|e| e.message),
                _ = cancel.cancelled() => Err("cancelled".into()),
            };
            let _ = tx.send(Done::Route { node, live, answer, output });
        });
    }

    fn apply_route(&mut self, node: usize, live: Vec<usize>, answer: Result<RouteAnswer, String>, output: Arc<str>) {
        if self.status != RunStatus::Running {
            return;
        }
        let edges = &self.shared.workflow.edges;
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                self.fail_run(format!("routing after `{}` failed: {e}", self.id(node)));
                return;
            }
        };
        let note = answer.note.map(|n| format!(" ({n})")).unwrap_or_default();
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
    }

    fn route_event(&mut self, node: usize, to: &str, reason: &str) {
        let from = self.id(node).to_string();
        self.trace.edges.push(TraceEdge { from: from.clone(), to: to.to_string(), reason: reason.to_string() });
        self.emit(EventKind::Route { from, to: to.to_string(), reason: reason.to_string() });
    }

    /// Follows the chosen out-edges of `node` and marks every other out-edge dead.
    fn follow_and_kill(&mut self, node: usize, chosen: Vec<(usize, String)>, output: Arc<str>) {
        let topo = self.shared.topo.clone();
        for (e, reason) in &chosen {
            let to = self.shared.workflow.edges[*e].to.clone();
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
        let topo = &self.shared.topo;
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
        let topo = self.shared.topo.clone();
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
        let topo = self.shared.topo.clone();
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
        let topo = self.shared.topo.clone();
        for &e in &topo.out[node] {
            self.kill(e, false);
        }
    }

    /// When nothing runs, deferred dead edges are final unless an approval on the same cycle may still revive them.
    fn flush_deferred(&mut self) -> bool {
        let topo = self.shared.topo.clone();
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
}

/// What a routing call may do besides answering: report retries. It has no tools and streams nothing.
struct RouteIo {
    shared: Arc<Shared>,
    node: usize,
}

#[async_trait::async_trait]
impl crate::model::NodeIo for RouteIo {
    fn progress(&self, _: &str) {}

    async fn call_tool(&self, tool: &str, _: Value) -> Result<Value, String> {
        Err(format!("no tools while routing (asked for `{tool}`)"))
    }

    fn retry_notice(&self, message: &str) {
        self.shared.llm_error(self.node, message);
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    started.elapsed().as_millis() as u64
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

async fn recv_opt(rx: &mut Option<mpsc::UnboundedReceiver<Command>>) -> Option<Command> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
