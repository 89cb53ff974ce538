//! `switchyard mcp serve [FILE|DIR]…`: the workflows as MCP tools, over stdio. A shell like `run`: each call is a run
//! prepared, begun (claimed in the local run store) and driven through the engine's session, exactly as `run` does.
//!
//! Invariants:
//! - Only the workflows are tools: a workflow's own MCP servers and code steps are never listed or callable here
//!   (they run inside its run, as they would with `run`, and code only with the consent `run` asks for).
//! - stdout is the MCP transport: nothing else is written to it (problems go to stderr).
//! - A call that reaches an approval is decided once, by whoever decides first: the client's person (elicitation),
//!   or anyone else through the store (`switchyard resume RUN --decide`, the app); the run is claimed to take a
//!   decision, and a decision is applied only to the pause it was asked about. The call then goes on following the run
//!   in the store until it ends or pauses again.
//! - A cancelled call (notifications/cancelled) cancels its run, whether it works or waits for a decision.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    ServerCapabilities,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler, ServiceExt};
use switchyard_engine::document::Workflow;
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::format::{self, Format};
use switchyard_engine::log::{LogError, Observer};
use switchyard_engine::run::Decision;
use switchyard_engine::session::{self, Drive, Followed, Held, RunRequest, Sinks, WorkflowRef};
use switchyard_engine::store::{Store, StoredStatus};
use switchyard_engine::workflow_tool::{self, Decide, WorkflowTool};
use switchyard_engine::{RunResult, RunStatus};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::out::errln;
use crate::running::{open_runs, unless_lost};
use crate::{coded, Unusable};

/// How often a call waiting for a decision reads the run from the store (a decision made in another process).
const POLL: Duration = Duration::from_millis(250);

pub(crate) struct McpServeArgs {
    pub(crate) paths: Vec<PathBuf>,
    pub(crate) answers: Option<PathBuf>,
    pub(crate) model: Option<String>,
    pub(crate) allow_code: bool,
    pub(crate) format: Option<Format>,
}

/// One workflow served as a tool.
struct Served {
    tool: WorkflowTool,
    file: PathBuf,
    workflow: Workflow,
}

/// Loads the workflows named (files, or the workflow files of folders); those that do not load are said on stderr
/// and left out.
fn collect(paths: &[PathBuf], format: Option<Format>) -> Vec<Served> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            match switchyard_engine::files::workflow_files(path) {
                Ok(found) => files.extend(found),
                Err(e) => errln!("warning: {}: cannot read the folder: {e}; skipped", path.display()),
            }
        } else {
            files.push(path.clone());
        }
    }
    let mut served: Vec<Served> = Vec::new();
    for file in files {
        let loaded = match format::load_file(&file, format) {
            Ok(loaded) => loaded,
            Err(e) => {
                errln!("warning: {e}; not served");
                continue;
            }
        };
        let tool = WorkflowTool::new(&loaded.workflow);
        if let Some(other) = served.iter().find(|s| s.tool.name == tool.name) {
            errln!(
                "warning: {}: its tool name `{}` is taken by {} already; not served (rename one workflow)",
                file.display(),
                tool.name,
                other.file.display()
            );
            continue;
        }
        served.push(Served { tool, file, workflow: loaded.workflow });
    }
    served
}

pub(crate) async fn cmd(db: Option<&str>, args: McpServeArgs) -> Result<u8, Unusable> {
    let served = collect(&args.paths, args.format);
    if served.is_empty() {
        return Err(coded(
            "MCP_NO_TOOLS",
            "no workflow to serve: name workflow files or folders that hold some (the ones that did not load are said above)",
        ));
    }
    let store = open_runs(db)?;
    for s in &served {
        errln!("serving {} as tool `{}`", s.file.display(), s.tool.name);
    }
    let server = Server { inner: Arc::new(Inner { served, store, args }) };
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| coded("MCP_SERVE_FAILED", format!("the MCP session could not start: {e}")))?;
    let _ = running.waiting().await;
    Ok(0)
}

#[derive(Clone)]
struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    served: Vec<Served>,
    store: Arc<dyn Store>,
    args: McpServeArgs,
}

/// The newest MCP revision served: the last with `initialize` and server-to-client requests, which elicitation
/// needs (2026-07-28 asks for input through `InputRequiredResult` instead, not done here).
const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

impl ServerHandler for Server {
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&PROTOCOL))
    }

    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(PROTOCOL)
            .with_server_info(Implementation::new("switchyard", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool runs a Switchyard workflow. A run that reaches an approval asks you through elicitation \
                 when your client supports it; otherwise the call answers that the run waits, with the command that \
                 decides it.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.inner.served.iter().map(|s| s.tool.tool()).collect()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(index) = self.inner.served.iter().position(|s| s.tool.name == request.name) else {
            return Err(McpError::invalid_params(format!("no tool `{}`", request.name), None));
        };
        let progress = context.meta.get_progress_token().map(|token| forward_progress(context.peer.clone(), token));
        let call = Call {
            inner: self.inner.clone(),
            index,
            peer: context.peer.clone(),
            progress,
            cancelled: context.ct.clone(),
        };
        Ok(call.run(request.arguments.unwrap_or_default()).await.into())
    }
}

/// One tool call: its run, from start to end (or to a pause nobody here can decide).
struct Call {
    inner: Arc<Inner>,
    index: usize,
    peer: Peer<RoleServer>,
    /// Where the call's progress goes, when the client sent a progress token.
    progress: Option<UnboundedSender<Said>>,
    cancelled: CancellationToken,
}

/// What goes to a call's progress task: a message, or a wish to know that all those before were sent.
enum Said {
    Progress(String),
    Flushed(tokio::sync::oneshot::Sender<()>),
}

/// A task that sends a call's progress notifications in order, numbered from 1.
fn forward_progress(peer: Peer<RoleServer>, token: ProgressToken) -> UnboundedSender<Said> {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Said>();
    tokio::spawn(async move {
        let mut n = 0u64;
        while let Some(said) = receiver.recv().await {
            match said {
                Said::Progress(message) => {
                    n += 1;
                    let param = ProgressNotificationParam::new(token.clone(), n as f64).with_message(message);
                    let _ = peer.notify_progress(param).await;
                }
                Said::Flushed(done) => {
                    let _ = done.send(());
                }
            }
        }
    });
    sender
}

/// Sends node entered / finished to a call's progress task.
struct Progress {
    sender: UnboundedSender<Said>,
}

impl Observer for Progress {
    fn on_event(&self, event: &Event) -> Result<(), LogError> {
        let said = match &event.kind {
            EventKind::NodeEnter { node, iteration, .. } if *iteration > 1 => format!("{node} entered ({iteration})"),
            EventKind::NodeEnter { node, .. } => format!("{node} entered"),
            EventKind::NodeExit { node, result, .. } => format!("{node} {}", result.status.word()),
            EventKind::ApprovalRequested(p) => format!("{} waits for a decision", p.node),
            _ => return Ok(()),
        };
        let _ = self.sender.send(Said::Progress(said));
        Ok(())
    }
}

impl Call {
    fn served(&self) -> &Served {
        &self.inner.served[self.index]
    }

    /// The observers of a drive: progress notifications when the client asked for them.
    fn sinks(&self) -> Sinks {
        let Some(sender) = self.progress.clone() else { return Sinks::default() };
        Sinks { log: None, observers: vec![Arc::new(Progress { sender })] }
    }

    async fn run(self, arguments: JsonObject) -> CallToolResult {
        let result = match self.go(arguments).await {
            Ok(result) => result,
            Err(unusable) => refused(&unusable),
        };
        // Every progress notification goes before the answer: none comes after it.
        if let Some(sender) = &self.progress {
            let (done, flushed) = tokio::sync::oneshot::channel();
            if sender.send(Said::Flushed(done)).is_ok() {
                let _ = flushed.await;
            }
        }
        result
    }

    async fn go(&self, arguments: JsonObject) -> Result<CallToolResult, Unusable> {
        let served = self.served();
        let args = &self.inner.args;
        let store = self.inner.store.clone();
        let request = RunRequest {
            workflow_ref: Some(WorkflowRef::new(&served.file, args.format)),
            input: self.served().tool.input(arguments),
            answers_path: args.answers.clone(),
            model: args.model.clone(),
            allow_code: args.allow_code,
            ..RunRequest::default()
        };
        let prepared = session::prepare(served.workflow.clone(), request, Some(&*store)).await?;
        let carry = prepared.carry();
        let held = session::begin(store.clone(), &prepared)?;
        let lost = Held::lost(&held);
        let driving = session::drive(Drive::fresh(prepared, Some(held)), self.sinks()).await?;
        let run_id = driving.run_id.clone();
        let mut result = self.finish(driving, lost).await?;
        loop {
            if result.status != RunStatus::Paused {
                return Ok(self.answer(&result));
            }
            let elicit = self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
            if !elicit {
                return Ok(self.answer(&result));
            }
            // Decided here (the person, through the client) or elsewhere (the store): the first wins.
            let seen = last_seq(&*store, &run_id)?;
            let Some(pending) = result.pending.first().cloned() else { return Ok(self.answer(&result)) };
            tokio::select! {
                biased;
                _ = self.cancelled.cancelled() => {
                    let outcome = session::end_paused(store.clone(), &run_id, carry.clone()).await?;
                    return Ok(self.answer(&outcome.result));
                }
                decided = self.ask(&run_id, &pending.node, &pending.message, &pending.previous_output) => {
                    // A cancellation that came before the answer is taken first. The transport cancels the call
                    // before it hands over any message after the cancellation, but both can land while this select
                    // is being polled (after it looked at the cancellation): so it is looked at again here.
                    if self.cancelled.is_cancelled() {
                        let outcome = session::end_paused(store.clone(), &run_id, carry.clone()).await?;
                        return Ok(self.answer(&outcome.result));
                    }
                    match decided {
                        Some(decision) => {
                            if let Some(next) = self.decide(&run_id, seen, &pending.node, decision).await? {
                                result = next;
                                continue;
                            }
                        }
                        // Dismissed: the run waits, as without elicitation.
                        None => return Ok(self.answer(&result)),
                    }
                }
                moved = moved_on(store.clone(), &run_id, seen) => { moved?; }
            }
            // Someone else took the run on: follow it until it ends or pauses again.
            result = self.settled(&run_id, seen).await?;
        }
    }

    /// Drives a run to its pause or end; a cancelled call cancels it.
    async fn finish(
        &self,
        driving: session::Driving,
        lost: switchyard_engine::store::Signal,
    ) -> Result<RunResult, Unusable> {
        let run_id = driving.run_id.clone();
        let controller = driving.controller();
        let cancelled = self.cancelled.clone();
        let watch = tokio::spawn(async move {
            cancelled.cancelled().await;
            controller.cancel();
        });
        let outcome = unless_lost(lost, driving.finish()).await;
        watch.abort();
        match outcome {
            Some(outcome) => Ok(outcome.result),
            None => Err(coded(
                "RUN_CLAIM_LOST",
                format!("run {run_id} was taken over by another process, or its log could not be written"),
            )),
        }
    }

    /// Asks the client's person to approve or reject, with a note. None when they dismiss the question.
    async fn ask(&self, run_id: &str, node: &str, message: &str, about: &str) -> Option<Decision> {
        let answer = self.peer.create_elicitation(workflow_tool::question(run_id, node, message, about)).await.ok()?;
        workflow_tool::decision(answer)
    }

    /// Applies this call's decision, unless the run has moved on since it was asked (then None: it was decided
    /// elsewhere first).
    async fn decide(
        &self,
        run_id: &str,
        seen: u64,
        node: &str,
        decision: Decision,
    ) -> Result<Option<RunResult>, Unusable> {
        let store = self.inner.store.clone();
        let Ok(resuming) = session::open_to_resume(store.clone(), run_id, self.inner.args.allow_code) else {
            return Ok(None);
        };
        let now = resuming.stored.recording.events.last().map(|e| e.seq).unwrap_or(0);
        if now != seen {
            return Ok(None);
        }
        let lost = resuming.held.lost();
        let drive = Drive::stored(resuming).deciding(vec![(node.to_string(), decision)]);
        let driving = session::drive(drive, self.sinks()).await?;
        Ok(Some(self.finish(driving, lost).await?))
    }

    /// Follows a run another process carries on (from the event after `seen`) until its log says it paused or ended
    /// and its row says so too.
    async fn settled(&self, run_id: &str, seen: u64) -> Result<RunResult, Unusable> {
        let store = self.inner.store.clone();
        let mut following = session::follow(store.clone(), run_id, seen, POLL);
        let mut stopped = false;
        loop {
            let next = tokio::select! {
                biased;
                _ = self.cancelled.cancelled() => {
                    return Err(coded(
                        "MCP_CALL_CANCELLED",
                        format!("the call was cancelled while run {run_id} went on elsewhere"),
                    ));
                }
                next = tokio::time::timeout(POLL, following.next()) => next,
            };
            match next {
                Ok(Ok(Followed::Events(events))) => {
                    stopped = events.last().is_some_and(|e| {
                        matches!(e.kind, EventKind::WorkflowPaused { .. } | EventKind::WorkflowEnd { .. })
                    });
                }
                Ok(Ok(Followed::Ended)) => stopped = true,
                Ok(Err(e)) => return Err(coded(e.code(), e.to_string())),
                Err(_) => {}
            }
            if stopped {
                let status = read(store.clone(), run_id.to_string()).await?;
                if status.ended() || status == StoredStatus::Paused {
                    let (_, result) = session::show(&*store, run_id)?;
                    return Ok(result);
                }
            }
        }
    }

    /// The tool's answer for a run that ended (or was cancelled), or paused.
    fn answer(&self, r: &RunResult) -> CallToolResult {
        self.served().tool.answer(r, &Decide::Resume)
    }
}

/// A call that could not run: its `{code, message}`.
fn refused(unusable: &Unusable) -> CallToolResult {
    workflow_tool::refused(&unusable.message, &unusable.errors)
}

fn last_seq(store: &dyn Store, run_id: &str) -> Result<u64, Unusable> {
    let events = store.events_after(run_id, 0).map_err(|e| coded(e.code(), e.to_string()))?;
    Ok(events.last().map(|e| e.seq).unwrap_or(0))
}

async fn read(store: Arc<dyn Store>, run_id: String) -> Result<StoredStatus, Unusable> {
    tokio::task::spawn_blocking(move || store.get(&run_id).map(|row| row.status))
        .await
        .expect("reading a run does not panic")
        .map_err(|e| coded(e.code(), e.to_string()))
}

/// Completes when the run's log grows past `seen`, or it ends: another process took it on (a decision from the CLI,
/// the app).
async fn moved_on(store: Arc<dyn Store>, run_id: &str, seen: u64) -> Result<(), Unusable> {
    let mut following = session::follow(store, run_id, seen, POLL);
    match following.next().await {
        Ok(_) => Ok(()),
        Err(e) => Err(coded(e.code(), e.to_string())),
    }
}
