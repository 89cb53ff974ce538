//! The executor (SEMANTICS §2–§6). One scheduler task owns all run state and makes every routing decision;
//! agent and script nodes, and model routing calls, run in spawned tasks that report back over a channel. That keeps
//! the semantics in one place (`state/`: one `apply(step, now) -> effects`), makes event order deterministic per node, and lets a paused or interrupted
//! run be rebuilt from its recorded inputs and go on, in this process or another (docs/runs.md).

mod child;
mod input;
mod node;
mod reuse;
mod state;

pub use crate::record::{Input, Recorded, Recording};
use crate::result::RunStatus;
pub use crate::result::{Decision, UnknownVerdict, Verdict};
pub use child::{
    child_event, ChildCall, ChildFailed, ChildIo, ChildTool, Children, ParentLink, CHILD_EVENT, PATH_SEPARATOR,
};
pub use input::Rebuild;
pub use reuse::{Fork, Reuse, ReusedResult};
pub use state::output_text;
use state::{stand, Effect, RunState, Standing, Step, Unfit};

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::answers::Answers;
use crate::document::Workflow;
use crate::events::EventKind;
use crate::graph::{NodeIx, Topology};
use crate::log::{Emitter, Observer, RunLog};
use crate::model::{Choice, Model, RouteAnswer, RouteRequest};
use crate::result::RunResult;
use crate::template::Scope;

/// Where a branch ends on a routing decision, in route events and trace edges.
pub const END: &str = "(end)";

message_error!(
    /// A recording a run cannot be rebuilt from (to resume or replay it): it does not fit the workflow, or it stops
    /// where it cannot have stopped.
    RebuildError
);

message_error!(
    /// A decision the run does not take: no such pending approval, or the run has ended.
    DecisionError
);

/// Why a recorded run cannot go on: its recording does not fit, or a decision given with it is not taken.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(transparent)]
    Rebuild(#[from] RebuildError),
    #[error(transparent)]
    Decision(#[from] DecisionError),
}

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
    /// `model` was given for the run (`--model`, the app's model picker), not found as a default (the settings'
    /// default model, a local model server): it overrides its child runs' default models too
    /// (docs/subworkflows.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_given: bool,
    /// Overrides the workflow's concurrency.
    pub concurrency: Option<u32>,
    /// Results, routes and decisions taken from an earlier run for the nodes upstream of the one run from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<Reuse>,
    /// The prices the run is costed with, by `provider/model` (`usage::kept_prices`): those of the settings of the
    /// process that started it, for the models it can use. None for a run recorded before runs kept their prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<std::collections::BTreeMap<String, crate::usage::Price>>,
    /// A child run's place in its parent run (a `workflow` node's, docs/subworkflows.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentLink>,
}

/// What a run needs besides the workflow: the model, an optional script, the run log and observers.
#[derive(Clone)]
pub struct Runtime {
    pub model: Arc<dyn Model>,
    /// Answers for script nodes and approvals (and, through `AnswersModel`, for agents and routes).
    pub answers: Option<Arc<Answers>>,
    pub log: Option<Arc<dyn RunLog>>,
    pub observers: Vec<Arc<dyn Observer>>,
    /// Consent and setup for code steps; the default runs no code.
    pub code: crate::code::Code,
    /// The MCP servers agents may use (from the settings); started on first use, stopped with the run.
    pub mcp: Arc<crate::mcp::McpSessions>,
    /// Who runs the child workflows of `workflow` nodes (the session); without, such a node fails.
    pub children: Option<Arc<dyn Children>>,
}

/// How a run ended, or where it paused (`RunHandle::finish`).
pub struct Outcome {
    pub result: RunResult,
    /// The first run-log write failure, if any.
    pub log_error: Option<String>,
    /// A paused run's earliest approval deadline, in Unix milliseconds: when it must be woken to time out.
    pub wake_at_ms: Option<i64>,
}

enum Command {
    Decide { node: String, decision: Decision, reply: oneshot::Sender<Result<(), String>> },
    Cancel(Option<String>),
}

/// A launched run: decide its approvals and cancel it through it (or a [`RunController`]), and `finish` it for its
/// [`Outcome`].
pub struct RunHandle {
    pub run_id: String,
    commands: mpsc::UnboundedSender<Command>,
    driving: Driving,
}

/// Where a launched run is driven.
enum Driving {
    /// Until its first pause: by whoever awaits `finish`, in that task. Dropping that future stops the run at once,
    /// where it is, as a process that dies stops it.
    Here(std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>>),
    /// Until its end: in a task of its own, which goes on while paused, waiting for decisions.
    Spawned(tokio::task::JoinHandle<Outcome>),
}

/// A cheap, clonable way to decide approvals and cancel a live run from anywhere (the app keeps one per run).
#[derive(Clone)]
pub struct RunController {
    commands: mpsc::UnboundedSender<Command>,
}

impl RunController {
    /// Decides a pending approval; fails when that node is not waiting.
    pub async fn decide(&self, node: &str, decision: Decision) -> Result<(), DecisionError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::Decide { node: node.to_string(), decision, reply })
            .map_err(|_| "the run has ended".to_string())?;
        rx.await.map_err(|_| DecisionError::from("the run has ended"))?.map_err(DecisionError)
    }

    pub fn cancel(&self) {
        self.cancel_by(None);
    }

    /// Cancels the run, naming who asked (a token's name): its `workflow:end` says so.
    pub fn cancel_by(&self, by: Option<String>) {
        let _ = self.commands.send(Command::Cancel(by));
    }

    /// Sends a decision without waiting for the run to take it: for whoever drives the run's future itself (a
    /// worker), which would otherwise wait on itself. Refused quietly when that node does not wait.
    pub fn send_decision(&self, node: &str, decision: Decision) {
        let (reply, _) = oneshot::channel();
        let _ = self.commands.send(Command::Decide { node: node.to_string(), decision, reply });
    }
}

impl RunHandle {
    pub fn controller(&self) -> RunController {
        RunController { commands: self.commands.clone() }
    }

    /// Decides a pending approval; fails when that node is not waiting.
    pub async fn decide(&self, node: &str, decision: Decision) -> Result<(), DecisionError> {
        self.controller().decide(node, decision).await
    }

    pub fn cancel(&self) {
        self.controller().cancel()
    }

    /// The run's outcome: where it paused first (`Until::Pause`, driven here) or how it ended (`Until::End`).
    pub async fn finish(self) -> Outcome {
        match self.driving {
            Driving::Here(going) => going.await,
            Driving::Spawned(join) => join.await.expect("the run task does not panic"),
        }
    }
}

/// Read-only parts shared with node tasks.
pub(crate) struct Shared {
    pub workflow: Arc<Workflow>,
    pub topo: Arc<Topology>,
    pub model: Arc<dyn Model>,
    pub answers: Option<Arc<Answers>>,
    pub emitter: Emitter,
    pub default_model: Option<String>,
    /// This run's code steps: warm interpreter workers, stopped when the run ends.
    pub code: crate::code::CodeRunner,
    pub mcp: Arc<crate::mcp::McpSessions>,
    /// Model calls made so far, per node (by `NodeIx`).
    model_calls: Vec<std::sync::atomic::AtomicU32>,
    /// What the node tasks a rebuilt run starts again did before (their model turns and tool calls).
    pub journal: crate::journal::Journal,
    /// Where node tasks ask the scheduler to approve a tool call.
    tool_asks: mpsc::UnboundedSender<ToolAsk>,
    /// Who runs child workflows (`Runtime::children`).
    pub children: Option<Arc<dyn Children>>,
    /// Cancelled when the run's tasks are (the run is cancelled, or fails), not when it pauses: a `workflow` node's
    /// task cancels its child then, and reports once the child has ended.
    pub cancel: CancellationToken,
}

/// A node task's request to call a tool that needs approval; the decision comes back on `reply`.
struct ToolAsk {
    node: NodeIx,
    request: crate::events::ToolRequest,
    reply: oneshot::Sender<Decision>,
}

impl Shared {
    /// A model-call problem of `node` as AgentFlow's `llm_error` log event (retries, fallbacks).
    pub fn llm_error(&self, node: NodeIx, message: &str) {
        self.note(node, "llm_error", message);
    }

    /// A log event of `kind` on `node` (what a model call's wrapper says of it: `asked_again`, `forked`, …).
    pub fn note(&self, node: NodeIx, kind: &str, message: &str) {
        self.emitter.emit(EventKind::log(Some(&self.workflow.nodes[node].id), kind, message.to_string()));
    }

    /// Asks the scheduler to approve a tool call of `node`'s task and waits for the decision. When the run stops
    /// first (it paused and this process ends, or it was cancelled) the task waits until it is dropped: a call
    /// nobody decided never runs.
    pub async fn approve_tool(&self, node: NodeIx, request: crate::events::ToolRequest) -> Decision {
        let (reply, decision) = oneshot::channel();
        if self.tool_asks.send(ToolAsk { node, request, reply }).is_err() {
            return std::future::pending().await;
        }
        match decision.await {
            Ok(decision) => decision,
            Err(_) => std::future::pending().await,
        }
    }

    /// The index of this call among the node's model calls in this run.
    pub fn next_call(&self, node: NodeIx) -> u32 {
        self.model_calls[node].fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// How many model calls `node` made in this run.
    fn calls(&self, node: NodeIx) -> u32 {
        self.model_calls[node].load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A new run id (a UUID).
pub fn new_run_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// What a run starts from.
pub enum Start {
    /// The beginning.
    Fresh,
    /// A recorded run — paused, or interrupted when its process died — rebuilt from its recorded inputs (no node
    /// that completed runs again; those that were running do), then given `decisions` (node, decision).
    Recorded { recording: Recording, decisions: Vec<(String, Decision)>, refused: RefusedDecision },
}

/// How far a launched run goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// Its first pause (or its end): `finish` returns there. The run is driven by whoever awaits `finish`.
    Pause,
    /// Its end: while paused it waits for decisions through its handle. The run has a task of its own.
    End,
}

/// What it takes to launch a run besides its runtime: the workflow and options it starts with (those it started
/// with, for a recorded run), what it starts from and how far it goes.
pub struct Launch {
    pub workflow: Arc<Workflow>,
    pub options: RunOptions,
    pub start: Start,
    pub until: Until,
    /// A recorded run taken over from a holder that stopped answering: (`from`, `by`), recorded as it goes live
    /// (`Input::TakenOver`), so that its history says so.
    pub taken_over: Option<(String, Option<String>)>,
}

impl Launch {
    /// A run from the beginning to its first pause.
    pub fn fresh(workflow: Arc<Workflow>, options: RunOptions) -> Launch {
        Launch { workflow, options, start: Start::Fresh, until: Until::Pause, taken_over: None }
    }

    /// A recorded run going on to its next pause, with no decision given.
    pub fn recorded(workflow: Arc<Workflow>, options: RunOptions, recording: Recording) -> Launch {
        let start = Start::Recorded { recording, decisions: Vec::new(), refused: RefusedDecision::Fail };
        Launch { workflow, options, start, until: Until::Pause, taken_over: None }
    }

    /// The same run, going as far as `until`.
    pub fn until(self, until: Until) -> Launch {
        Launch { until, ..self }
    }

    /// The same recorded run, given these decisions once rebuilt (a person's: one its run cannot take fails).
    pub fn deciding(self, decisions: Vec<(String, Decision)>) -> Launch {
        match self.start {
            Start::Recorded { recording, refused, .. } => {
                Launch { start: Start::Recorded { recording, decisions, refused }, ..self }
            }
            Start::Fresh => self,
        }
    }
}

/// What launching does with a decision its run cannot take (the node does not wait for one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedDecision {
    /// The launch fails with `DecisionError`: a person asked for it and is told (`switchyard resume --approve`).
    Fail,
    /// The decision is left out and the run goes on: it was kept for the run earlier (a server's), and what it
    /// answered is no longer asked. Refusing would stop the run at every claim, for ever.
    Skip,
}

/// The one way into a run: starts it (or rebuilds a recorded one and gives it its decisions) and returns its handle.
/// A recording that does not fit the workflow, or a decision refused with `RefusedDecision::Fail`, fails here, before
/// anything runs.
pub fn launch(launch: Launch, runtime: Runtime) -> Result<RunHandle, ResumeError> {
    let Launch { workflow, options, start, until, taken_over } = launch;
    let scheduler = match start {
        Start::Fresh => Scheduler::new(workflow, options, runtime),
        Start::Recorded { recording, decisions, refused } => {
            let mut scheduler = Scheduler::rebuilt(workflow, options, recording, runtime).map_err(RebuildError)?;
            if refused == RefusedDecision::Fail {
                // Refused before the run goes live: a refused launch adds nothing to the run's log.
                for (node, decision) in &decisions {
                    let input = Input::Decided { node: node.clone(), decision: decision.clone(), immediate: false };
                    scheduler.state.admit(&input).map_err(|e| DecisionError(e.to_string()))?;
                }
            }
            let over = scheduler.rebuild.as_ref().is_some_and(|r| r.over);
            scheduler.go_live();
            // A takeover is history only for a run that goes on: one its recording already ends just ends.
            if let Some((from, by)) = taken_over.filter(|_| !over) {
                let _ = scheduler.input(Input::TakenOver { from, by });
            }
            for (node, decision) in decisions {
                let taken = scheduler.input(Input::Decided { node, decision, immediate: false });
                if refused == RefusedDecision::Fail {
                    taken.map_err(|e| DecisionError(e.to_string()))?;
                }
            }
            scheduler
        }
    };
    let run_id = scheduler.run_id.clone();
    let (commands, rx) = mpsc::unbounded_channel();
    let going = scheduler.drive(rx, until);
    let driving = match until {
        Until::Pause => Driving::Here(Box::pin(going)),
        Until::End => Driving::Spawned(tokio::spawn(going)),
    };
    Ok(RunHandle { run_id, commands, driving })
}

/// Plays a recorded run again from its recorded inputs, with no model call, no tool call and no task: the same
/// results, trace and events (timestamps aside), delivered to `runtime`'s log and observers. It runs nothing, so it
/// is not a way into a run.
pub fn replay(
    workflow: Arc<Workflow>,
    options: RunOptions,
    recording: Recording,
    runtime: Runtime,
) -> Result<Outcome, RebuildError> {
    let mut scheduler = Scheduler::new(workflow, options, runtime);
    scheduler.rebuild = Some(Replaying::new(Rebuild::Replay, recording));
    scheduler.fast_forward()?;
    // Work still out when the recording ends was interrupted: the replay ends there, failed.
    scheduler.apply(Step::Interrupted);
    if let Some(r) = scheduler.rebuild.as_mut() {
        r.parked.clear();
    }
    Ok(scheduler.end())
}

enum Done {
    Node { node: NodeIx, iteration: u32, started: Instant, outcome: node::NodeOutcome },
    Route { node: NodeIx, answer: Result<RouteAnswer, String> },
}

/// Work a rebuild started but does not run: a node task or a routing call, waiting for its recorded input (or, when
/// a resumed run goes on for real, to be started).
enum Parked {
    Node { node: NodeIx, iteration: u32, started: Instant, scope: Scope },
    Route { node: NodeIx, ask: RouteAsk },
}

/// What a routing call asks.
pub struct RouteAsk {
    context: Value,
    choices: Vec<Choice>,
    visit: u32,
    model: Option<String>,
}

/// How far a replay looks ahead for the event it derives next, past what node tasks emitted meanwhile.
const LOOK_AHEAD: usize = 64;

/// A rebuild in progress: the recorded inputs not applied yet.
struct Replaying {
    mode: Rebuild,
    inputs: VecDeque<Recorded>,
    /// Recorded events not shown yet (a replay shows those the scheduler does not derive).
    events: VecDeque<crate::events::Event>,
    /// The last recorded event's number.
    last_seq: u64,
    parked: Vec<Parked>,
    /// When each recorded event was emitted (its number, Unix milliseconds), in order.
    times: Vec<(u64, i64)>,
    /// The recorded inputs took the run to its end (its holder died after its last step, before it said so): it has
    /// nothing left but to end, and an input given now would come after its end in a replay.
    over: bool,
}

impl Replaying {
    fn new(mode: Rebuild, recording: Recording) -> Replaying {
        let last_seq = recording.events.last().map_or(0, |e| e.seq);
        let times = recording
            .events
            .iter()
            .filter_map(|e| Some((e.seq, chrono::DateTime::parse_from_rfc3339(&e.ts).ok()?.timestamp_millis())))
            .collect();
        Replaying {
            mode,
            inputs: recording.inputs.into(),
            events: recording.events.into(),
            last_seq,
            parked: Vec::new(),
            times,
            over: false,
        }
    }

    /// The time the run had when the event numbered `seq` was about to be emitted: when that event was recorded
    /// (else the last one was). A rebuilt run applies each input at the time it had, so an approval requested before
    /// a restart keeps its request time and its deadline.
    fn time_at(&self, seq: u64) -> Option<i64> {
        let at = self.times.partition_point(|&(s, _)| s < seq);
        self.times.get(at).or(self.times.last()).map(|&(_, ms)| ms)
    }
}

/// The loop that carries out a run's effects (`state::Effect`) and feeds its inputs back: answers of node tasks and
/// routing calls spawned here, decisions and cancellation from the handle, approval timers — or, while a run is
/// rebuilt, its recorded inputs. It owns the run's state; nothing else changes it.
struct Scheduler {
    shared: Arc<Shared>,
    run_id: String,
    state: RunState,
    cancel: CancellationToken,
    done_tx: mpsc::UnboundedSender<Done>,
    done_rx: mpsc::UnboundedReceiver<Done>,
    /// Work that completed the moment it started (`spawn_node`), in the order it did: taken before waiting on
    /// `done_rx`.
    completed: VecDeque<Done>,
    /// Nodes a step started, run once the step's effects are carried out (its events come first, as when every
    /// node ran in a task of its own).
    starting: Vec<(NodeIx, u32, Instant, Scope)>,
    /// Node tasks asking to approve a tool call.
    asks: mpsc::UnboundedReceiver<ToolAsk>,
    /// Tasks waiting on a tool call's decision, by node id and call, in the order they asked.
    tool_waiters: Vec<(String, crate::events::ToolRequest, oneshot::Sender<Decision>)>,
    started: bool,
    clock: Clock,
    /// Set while recorded inputs are applied again.
    rebuild: Option<Replaying>,
    /// `workflow:end` as it was emitted: the run's results.
    ended: Option<EventKind>,
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
        let state = RunState::new(workflow.clone(), &options);
        let emitter = Emitter::new(&run_id, 0, runtime.log.clone(), runtime.observers.clone());
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let (tool_asks, asks) = mpsc::unbounded_channel();
        let declared_env = workflow.env.clone();
        // A fork at a turn: its node's conversation before that turn, and the answer given at it.
        let journal = crate::journal::Journal::default();
        for entry in options.reuse.iter().flat_map(|r| r.journal.iter()) {
            journal.keep(entry.clone());
        }
        let shared = Arc::new(Shared {
            children: runtime.children,
            cancel: CancellationToken::new(),
            workflow,
            topo: state.topo.clone(),
            model: runtime.model,
            answers: runtime.answers,
            emitter,
            default_model: state.default_model.clone(),
            code: crate::code::CodeRunner::new(runtime.code, declared_env),
            mcp: runtime.mcp,
            model_calls: (0..state.topo.component.len()).map(|_| Default::default()).collect(),
            journal,
            tool_asks,
        });
        Scheduler {
            shared,
            run_id,
            state,
            cancel: CancellationToken::new(),
            done_tx,
            done_rx,
            completed: VecDeque::new(),
            starting: Vec::new(),
            asks,
            tool_waiters: Vec::new(),
            started: false,
            clock: Clock::new(),
            rebuild: None,
            ended: None,
        }
    }

    /// A run rebuilt from its recording, not live yet: `go_live` lets it go on for real.
    fn rebuilt(
        workflow: Arc<Workflow>,
        options: RunOptions,
        recording: Recording,
        runtime: Runtime,
    ) -> Result<Scheduler, String> {
        let mut s = Scheduler::new(workflow, options, runtime);
        let replaying = Replaying::new(Rebuild::Resume, recording);
        s.shared.emitter.quiet_through(replaying.last_seq);
        s.rebuild = Some(replaying);
        s.fast_forward()?;
        Ok(s)
    }

    /// The time a step is applied at: now, or, while rebuilding, when the run applied it.
    fn now_ms(&self) -> i64 {
        let recorded = self.rebuild.as_ref().and_then(|r| r.time_at(self.shared.emitter.next_seq()));
        recorded.unwrap_or_else(|| self.clock.now_ms())
    }

    /// Applies a step to the state and carries out its effects.
    fn apply(&mut self, step: Step) {
        let effects = self.state.apply(step, self.now_ms());
        self.carry_out(effects);
    }

    /// Keeps an input in the run log (unless it is being applied again from there), then applies it. Every input
    /// goes this way; one the state refuses is neither kept nor applied.
    fn input(&mut self, input: Input) -> Result<(), Unfit> {
        if !self.state.admit(&input)? {
            return Ok(());
        }
        if self.rebuild.is_none() && self.shared.emitter.keeps_inputs() {
            self.shared.emitter.record(input.clone());
        }
        self.apply(Step::Input(input));
        Ok(())
    }

    /// Carries out the state's effects, in order. While rebuilding, work is parked, not started, and the run log is
    /// not told again what it has.
    fn carry_out(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Emit(kind @ EventKind::WorkflowEnd { .. }) => {
                    self.ended = Some(self.shared.emitter.emit_and_return(kind))
                }
                Effect::Emit(kind) => {
                    self.interleave(&kind);
                    self.shared.emitter.emit(kind)
                }
                Effect::Status(status, pending) => {
                    if self.rebuild.is_none() {
                        self.shared.emitter.status(status, &pending);
                    }
                }
                Effect::RunNode { node, iteration, scope } => {
                    let started = Instant::now();
                    match self.rebuild.as_mut() {
                        Some(r) => r.parked.push(Parked::Node { node, iteration, started, scope }),
                        None => self.starting.push((node, iteration, started, scope)),
                    }
                }
                Effect::AskRoute { node, ask } => match self.rebuild.as_mut() {
                    Some(r) => r.parked.push(Parked::Route { node, ask }),
                    None => self.spawn_route(node, ask),
                },
                Effect::ApprovalReached { node, visit } => self.approval_reached(&node, visit),
                Effect::ToolDecided { node, request, decision } => {
                    // None while rebuilding, or when the decision is kept for a task that asks again.
                    if let Some(at) = self.tool_waiters.iter().position(|(n, r, _)| *n == node && *r == request) {
                        let (_, _, reply) = self.tool_waiters.remove(at);
                        let _ = reply.send(decision);
                    }
                }
                Effect::CancelTasks => {
                    self.cancel.cancel();
                    self.shared.cancel.cancel();
                }
            }
        }
        for (node, iteration, started, scope) in std::mem::take(&mut self.starting) {
            self.spawn_node(node, iteration, started, scope);
        }
    }

    /// An answers file may decide an approval the moment it is reached; a rebuild takes that decision from the
    /// recording.
    fn approval_reached(&mut self, node: &str, visit: u32) {
        if self.rebuild.is_some() {
            let immediate = |i: &Input| matches!(i, Input::Decided { node: n, immediate: true, .. } if n == node);
            if self.next_input(immediate) {
                let _ = self.apply_next();
            }
            return;
        }
        // Applied (and its effects carried out) at once, as a rebuild applies the recorded decision: the events
        // come in the same order either way.
        let answered = self.shared.answers.as_ref().and_then(|s| s.approval(node, visit)).cloned();
        if let Some(decision) = answered {
            let decision = Decision::normalize(&decision);
            let input = Input::Decided { node: node.to_string(), decision, immediate: true };
            self.input(input).expect("the approval was just reached");
        }
    }

    /// Begins the run once; a rebuilt run has begun already.
    fn begin_once(&mut self) {
        if !self.started {
            self.started = true;
            self.apply(Step::Begin);
        }
    }

    /// Turns the run's loop until it must wait (`state::stand`).
    fn stand(&mut self) -> Standing {
        stand(self, |s| &s.state, |s, step| s.apply(step))
    }

    /// The main loop. Until its end, it waits for decisions on `commands` while paused; else it returns at a pause.
    async fn drive(mut self, commands: mpsc::UnboundedReceiver<Command>, until: Until) -> Outcome {
        let mut commands = Some(commands);
        self.begin_once();
        loop {
            if self.state.is_live() {
                self.expire_approvals();
            }
            match self.stand() {
                Standing::Over => break,
                Standing::Working => {}
                Standing::Paused => {
                    // Returning at a pause, a command already sent (a cancellation) is taken first.
                    if until == Until::Pause {
                        match commands.as_mut().map(|rx| rx.try_recv()) {
                            Some(Ok(cmd)) => {
                                self.command(cmd);
                                continue;
                            }
                            _ => break,
                        }
                    }
                    let Some(rx) = commands.as_mut() else { break };
                    let deadline = self.state.next_deadline();
                    tokio::select! {
                        cmd = rx.recv() => match cmd {
                            Some(cmd) => self.command(cmd),
                            None => { commands = None; }
                        },
                        _ = self.clock.sleep_until(deadline) => {}
                    }
                    continue;
                }
            }
            if let Some(done) = self.completed.pop_front() {
                self.finished(done);
                continue;
            }
            let deadline = self.state.next_deadline();
            tokio::select! {
                Some(done) = self.done_rx.recv() => self.finished(done),
                Some(ask) = self.asks.recv() => self.tool_asked(ask),
                Some(cmd) = recv_opt(&mut commands) => self.command(cmd),
                _ = self.clock.sleep_until(deadline) => {}
            }
        }
        self.end()
    }

    fn end(mut self) -> Outcome {
        // Only tasks waiting on a tool call's decision can be left (a paused run): they stop with the run.
        self.cancel.cancel();
        self.apply(Step::Finish);
        let Some(EventKind::WorkflowEnd { results, .. }) = self.ended.take() else {
            unreachable!("finishing emits workflow:end")
        };
        // The run is over: its trace is moved into the result, not copied.
        let trace = self.state.take_trace();
        let st = &self.state;
        let result = RunResult {
            run_id: self.run_id.clone(),
            status: st.status(),
            results,
            trace,
            state: match st.state_json() {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            },
            pending: st.pending(),
            error: st.error().map(str::to_string),
        };
        let wake_at_ms = if result.status == RunStatus::Paused { st.next_deadline() } else { None };
        // The run is over when everything it emitted is in the log and with the observers.
        self.shared.emitter.flush();
        Outcome { result, log_error: self.shared.emitter.log_error(), wake_at_ms }
    }

    fn command(&mut self, cmd: Command) {
        match cmd {
            Command::Cancel(by) => {
                let _ = self.input(Input::Cancelled { by });
            }
            Command::Decide { node, decision, reply } => {
                let r = self.input(Input::Decided { node, decision, immediate: false });
                let _ = reply.send(r.map_err(|e| e.to_string()));
            }
        }
    }

    /// A node task asks to approve a tool call: it waits until the decision (`Effect::ToolDecided`).
    fn tool_asked(&mut self, ask: ToolAsk) {
        let ToolAsk { node, request, reply } = ask;
        if !self.state.is_live() {
            return; // the task is being stopped
        }
        let id = self.state.id(node).to_string();
        self.tool_waiters.push((id.clone(), request.clone(), reply));
        let input = Input::ToolAsked { node: id, tool: request.tool, arguments: request.input };
        self.input(input).expect("a live run takes a running node's tool call");
    }

    fn expire_approvals(&mut self) {
        while let Some(node) = self.state.expired(self.clock.now_ms()) {
            self.input(Input::TimedOut { node }).expect("the approval waits");
        }
    }

    fn finished(&mut self, done: Done) {
        let input = match done {
            Done::Node { node, iteration, started, outcome } => {
                let id = self.state.id(node);
                self.shared.journal.ended(id, iteration);
                let calls = self.shared.calls(node);
                input::node_done(id, iteration, outcome, elapsed_ms(started), calls)
            }
            Done::Route { node, answer } => Input::Routed { node: self.state.id(node).to_string(), answer },
        };
        self.input(input).expect("the state awaits the work it started");
    }

    /// Runs an agent or script node: at once, here, when it completes without waiting (a node answered from an
    /// answers file: no task, no thread woken), else in its own task; either way it reports back with `Done::Node`.
    fn spawn_node(&mut self, node: NodeIx, iteration: u32, started: Instant, scope: Scope) {
        // A node task that panics (a bug) fails its node, and so the run, rather than never reporting back.
        let mut running =
            Box::pin(AssertUnwindSafe(node::execute(self.shared.clone(), node, iteration, scope)).catch_unwind());
        // Polled once with a waker that does nothing: a future that is not done yet is polled again (with its task's
        // waker) as soon as its task starts, so whatever it waits on wakes that task.
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if let std::task::Poll::Ready(o) = std::future::Future::poll(running.as_mut(), &mut cx) {
            let outcome = o.unwrap_or_else(|panic| node::NodeOutcome::failed(panicked(panic.as_ref())));
            self.completed.push_back(Done::Node { node, iteration, started, outcome });
            return;
        }
        let tx = self.done_tx.clone();
        let cancel = self.cancel.clone();
        // A task that runs child runs (a `workflow` node's, an agent's with workflow tools) is not dropped when the
        // run is cancelled: it cancels its child run and reports once the child has ended (an agent stops at its
        // next model turn). It stops where it is when the scheduler is gone (the run stopped here, as when its
        // process dies), so that its child can be taken up again.
        let has_child = self.shared.workflow.nodes[node].runs_children();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                o = running => o.unwrap_or_else(|panic| node::NodeOutcome::failed(panicked(panic.as_ref()))),
                _ = cancel.cancelled(), if !has_child => node::NodeOutcome::failed("cancelled".into()),
                _ = tx.closed(), if has_child => return,
            };
            let _ = tx.send(Done::Node { node, iteration, started, outcome });
        });
    }

    /// Asks the model to route in its own task, which reports back with `Done::Route`.
    fn spawn_route(&self, node: NodeIx, ask: RouteAsk) {
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
            let asking = AssertUnwindSafe(shared.model.route(&request, &io)).catch_unwind();
            let answer = tokio::select! {
                a = asking => a.unwrap_or_else(|panic| Err(panicked(panic.as_ref()).into())).map_err(|e| e.message),
                _ = cancel.cancelled() => Err("cancelled".into()),
            };
            // A run on a model keeps the call under the key evaluations record calls by (`journal::What::Asked`).
            if let (Ok(a), None) = (&answer, &shared.answers) {
                let call = crate::recorded::Call {
                    node: n.id.clone(),
                    data: None,
                    text: None,
                    choice: Some(a.choice.clone()),
                    usage: a.usage.clone(),
                    definition: None,
                };
                let what = crate::journal::What::Asked { key: crate::recorded::route_key(&request), call };
                let entry =
                    crate::journal::Entry { node: n.id.clone(), iteration: visit, at: format!("r{visit}"), what };
                shared.emitter.journal(entry).await;
            }
            let _ = tx.send(Done::Route { node, answer });
        });
    }

    // ---- rebuilding from recorded inputs

    /// Applies the recorded inputs in order, as the run did: nodes and routing calls that start are parked, not
    /// run; each recorded input settles the parked work it names. Returns at the end of the recording, or with why
    /// the recording does not fit this workflow.
    fn fast_forward(&mut self) -> Result<(), String> {
        self.begin_once();
        loop {
            // Timers fired where the live loop checks them: before ready nodes start, once their approval waits (a
            // timer that fired in a later process is applied after the turn that reached its approval again).
            while self.state.is_live()
                && self.next_input(|i| matches!(i, Input::TimedOut { .. }) && self.state.admit(i).is_ok())
            {
                self.apply_next()?;
            }
            if self.stand() == Standing::Over {
                if let Some(r) = self.rebuild.as_mut() {
                    r.over = true;
                }
                break;
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

    /// Applies the next recorded input, numbering events on from where it was applied, and settles the parked work
    /// it ends.
    fn apply_next(&mut self) -> Result<(), String> {
        let Some(recorded) = self.rebuild.as_mut().and_then(|r| r.inputs.pop_front()) else { return Ok(()) };
        self.catch_up(recorded.seq);
        let unfit = |e: Unfit| format!("the recording does not fit this workflow: {e}");
        let input = recorded.input;
        // What a task did before it ended or the recording stopped: a task started again is fed it (a replay runs
        // no task, and needs none of it).
        if let Input::Journaled(entry) = input {
            if self.rebuild.as_ref().is_some_and(|r| r.mode == Rebuild::Resume) {
                self.shared.journal.keep(*entry);
            }
            return Ok(());
        }
        // Checked once here; a recorded input is not kept again, so it is applied as it is (not through `input`).
        if !self.state.admit(&input).map_err(unfit)? {
            return Ok(());
        }
        let topo = self.state.topo.clone();
        match &input {
            Input::NodeDone { node, iteration, model_calls, .. } => {
                let at = topo.index[node];
                self.unpark(|p| matches!(p, Parked::Node { node, iteration: i, .. } if *node == at && i == iteration));
                self.shared.model_calls[at].store(*model_calls, std::sync::atomic::Ordering::Relaxed);
                self.shared.journal.ended(node, *iteration);
            }
            Input::Routed { node, .. } => {
                let at = topo.index[node];
                self.unpark(|p| matches!(p, Parked::Route { node, .. } if *node == at));
            }
            _ => {}
        }
        self.apply(Step::Input(input));
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

    /// Before a derived event in a replay: the recorded events node tasks emitted just before it are shown first. A
    /// task runs as soon as it is started, so what it emits (streamed text, tool calls, its logs) can be numbered
    /// between the events of the step that started it — a sibling's `node:enter` — which a replay derives in one go.
    /// They are found by looking ahead for the event about to be derived, past task events only.
    fn interleave(&mut self, kind: &EventKind) {
        let Some(r) = self.rebuild.as_mut().filter(|r| r.mode == Rebuild::Replay) else { return };
        let next = self.shared.emitter.next_seq();
        while r.events.front().is_some_and(|e| e.seq < next) {
            r.events.pop_front();
        }
        let derived = crate::events::comparable(kind);
        let Some(at) = r.events.iter().take(LOOK_AHEAD).position(|e| crate::events::comparable(&e.kind) == derived)
        else {
            return;
        };
        if r.events.iter().take(at).all(|e| e.kind.is_task_event()) {
            for e in r.events.drain(..at) {
                self.shared.emitter.replay(e);
            }
        }
    }

    fn unpark(&mut self, test: impl Fn(&Parked) -> bool) -> Option<Parked> {
        let parked = &mut self.rebuild.as_mut()?.parked;
        let at = parked.iter().position(test)?;
        Some(parked.remove(at))
    }

    /// Ends a rebuild: events are numbered after the recorded ones, and the work that was running when the
    /// recording stopped starts for real.
    fn go_live(&mut self) {
        let Some(r) = self.rebuild.take() else { return };
        self.shared.emitter.skip_to(r.last_seq + 1);
        // Its end is in the log already (its holder died before saying so in its status): ending again writes only
        // the status, not a second end.
        let ended = |e: &crate::events::Event| matches!(e.kind, EventKind::WorkflowEnd { status, .. } if status != crate::result::RunStatus::Paused);
        if r.over && r.events.back().is_some_and(ended) {
            self.shared.emitter.quiet_through(u64::MAX);
        }
        self.shared.emitter.status(self.state.status(), &self.state.pending_nodes());
        // The tasks that were waiting on tool calls are gone; those that start again ask again.
        let _ = self.input(Input::Continued);
        for parked in r.parked {
            match parked {
                Parked::Node { node, iteration, started, scope } => self.spawn_node(node, iteration, started, scope),
                Parked::Route { node, ask } => self.spawn_route(node, ask),
            }
        }
    }
}

/// What a routing call may do besides answering: report retries. It has no tools and streams nothing.
struct RouteIo {
    shared: Arc<Shared>,
    node: NodeIx,
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

    fn note(&self, kind: &str, message: &str) {
        self.shared.note(self.node, kind, message);
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    started.elapsed().as_millis() as u64
}

async fn recv_opt(rx: &mut Option<mpsc::UnboundedReceiver<Command>>) -> Option<Command> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// What a node or routing task that panicked reports as its failure: the panic's message, said to be a bug.
fn panicked(panic: &(dyn std::any::Any + Send)) -> String {
    let said = panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str));
    format!("stopped on an internal error (a bug in Switchyard): {}", said.unwrap_or("a panic"))
}
