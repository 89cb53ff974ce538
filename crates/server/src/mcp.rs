//! `/mcp`: the served workflows as MCP tools over Streamable HTTP, for any agent that speaks MCP. Each workflow is the
//! tool `switchyard mcp serve` makes of it (`switchyard_engine::workflow_tool`); a call starts a run as
//! `POST /api/runs` does (`ready`, for a worker) and follows its log until it ends, answering with its result.
//!
//! Invariants:
//! - Behind the same bearer token as `/api/` (`auth.rs`): a call needs scope `run`, and its person is asked to decide
//!   an approval only when the token may decide (`decide`); a request names no file: the tools are the served folder's
//!   workflows, as `GET /api/workflows` lists them.
//! - The server runs nothing: a call's run is a run like any other (History, `GET /api/runs/{id}`, workers), and it
//!   goes on if the client goes away.
//! - A run that reaches an approval is decided once, by whoever decides first: the client's person (elicitation, kept
//!   as `POST /api/runs/{id}/decisions` keeps a decision) or anyone else through the API or the browser; the call
//!   follows the run until it ends or pauses again. A client without elicitation is told how to decide.
//! - A cancelled call (notifications/cancelled) asks for its run's cancellation, as `POST /api/runs/{id}/cancel`.
//! - MCP sessions live in the instance that opened them (a load balancer in front of several instances must keep a
//!   client on one); the runs they start live in the database, as every run does.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::json;
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::session::{self, Follow, Followed};
use switchyard_engine::store::postgres::team::{Caller, Scope};
use switchyard_engine::store::{Origin, Via};
use switchyard_engine::workflow_tool::{self, Decide, WorkflowTool};
use switchyard_engine::{RunResult, RunStatus};
use tokio_util::sync::CancellationToken;

use crate::api::Start;
use crate::auth;
use crate::error::ApiError;
use crate::AppState;

/// The newest MCP revision served: the last with sessions and server-to-client requests, which elicitation needs.
const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;
/// How often a call reads its run when the store announces nothing (PostgreSQL's NOTIFY wakes it at once).
const POLL: Duration = Duration::from_secs(1);
/// Events read at a time.
const PAGE: u32 = 500;

/// The `/mcp` endpoint over `state`. Host validation is off: the endpoint needs a bearer token, which a page from
/// another site cannot send, and the server answers on whatever name it is published under.
pub fn service(state: AppState) -> StreamableHttpService<Tools, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts().with_legacy_session_mode(true);
    StreamableHttpService::new(
        move || Ok(Tools { state: state.clone() }),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// A session ended by its client (`DELETE /mcp`) is answered 204 No Content, as clients expect (the transport says
/// 202, which the Python SDK takes for a failure).
pub async fn session_ended(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let deleting = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if deleting && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
    }
    response
}

/// One MCP session's handler: the served workflows as tools.
#[derive(Clone)]
pub struct Tools {
    state: AppState,
}

impl Tools {
    /// The served workflows as tools, by workflow name; a workflow whose tool name another took first is left out.
    fn tools(&self) -> Vec<(String, WorkflowTool)> {
        let catalog = self.state.registry.catalog.read().expect("not poisoned");
        let mut tools: Vec<(String, WorkflowTool)> = Vec::new();
        for (name, served) in &catalog.workflows {
            let tool = WorkflowTool::new(&served.workflow);
            if !tools.iter().any(|(_, t)| t.name == tool.name) {
                tools.push((name.clone(), tool));
            }
        }
        tools
    }
}

impl ServerHandler for Tools {
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&PROTOCOL))
    }

    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(PROTOCOL)
            .with_server_info(Implementation::new("switchyard", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool runs a Switchyard workflow on this server's workers. A run that reaches an approval asks \
                 you through elicitation when your client supports it; otherwise the call answers that the run waits, \
                 with how to decide it.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools().iter().map(|(_, t)| t.tool()).collect()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some((workflow, tool)) = self.tools().into_iter().find(|(_, t)| t.name == request.name) else {
            return Err(McpError::invalid_params(format!("no tool `{}`", request.name), None));
        };
        // Whose token the session came with (`auth::require_token` put it in the HTTP request's extensions).
        let caller =
            context.extensions.get::<axum::http::request::Parts>().and_then(|p| p.extensions.get::<Caller>()).cloned();
        let Some(caller) = caller else {
            return Ok(refused(&ApiError::unauthorized("this call carries no token")).into());
        };
        if let Err(e) = auth::require(&caller, Scope::Run, "start a run") {
            return Ok(refused(&e).into());
        }
        let input = tool.input(request.arguments.unwrap_or_default());
        let started = match self.state.start(&workflow, input, Start::Now(Origin::new(Via::Mcp, &caller.name))).await {
            Ok(started) => started,
            Err(e) => return Ok(refused(&e).into()),
        };
        let call = Call {
            state: self.state.clone(),
            tool,
            run: started.id,
            peer: context.peer.clone(),
            progress: context.meta.get_progress_token(),
            sent: 0,
            may_decide: caller.scope >= Scope::Decide,
            by: caller.name.clone(),
            cancelled: context.ct.clone(),
        };
        Ok(call.go().await.unwrap_or_else(|e| refused(&e)).into())
    }
}

/// A call: its run, followed from start to end (or to a pause nobody here decides).
struct Call {
    state: AppState,
    tool: WorkflowTool,
    run: String,
    peer: Peer<RoleServer>,
    progress: Option<ProgressToken>,
    /// Progress notifications sent.
    sent: u64,
    /// The token may decide approvals: its person is asked (else the call answers that the run waits).
    may_decide: bool,
    /// The token's name: who decides and cancels through this call.
    by: String,
    cancelled: CancellationToken,
}

impl Call {
    async fn go(mut self) -> Result<CallToolResult, ApiError> {
        let mut after = 0;
        loop {
            let result = match self.settle(after).await? {
                Some(result) => result,
                // Cancelled: the client will not read an answer.
                None => return Ok(workflow_tool::refused("the call was cancelled", &[])),
            };
            if result.status != RunStatus::Paused {
                return Ok(self.tool.answer(&result, &Decide::Server { may_decide: self.may_decide }));
            }
            let elicit = self.may_decide && self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
            let Some(pending) = result.pending.first().cloned().filter(|_| elicit) else {
                return Ok(self.tool.answer(&result, &Decide::Server { may_decide: self.may_decide }));
            };
            after = self.last_seq().await?;
            let question =
                workflow_tool::question(&self.run, &pending.node, &pending.message, &pending.previous_output);
            let answer = tokio::select! {
                biased;
                _ = self.cancelled.cancelled() => return self.cancel().await,
                answer = self.peer.create_elicitation(question) => answer,
                // Decided elsewhere (the browser, the API): the question is moot; follow the run on.
                moved = self.moved_on(after) => { moved?; continue; }
            };
            // A cancellation that came before the answer is taken first (both can land while the select is polled).
            if self.cancelled.is_cancelled() {
                return self.cancel().await;
            }
            let Some(decision) = answer.ok().and_then(workflow_tool::decision) else {
                // Dismissed: the run waits, as without elicitation.
                return Ok(self.tool.answer(&result, &Decide::Server { may_decide: self.may_decide }));
            };
            let word = decision.verdict.as_str();
            match self.state.decide(&self.run, &pending.node, word, Some(decision.note), &self.by).await {
                // Kept, or decided by someone else first: either way the run goes on; follow it.
                Ok(_) => {}
                Err(e) if e.code == "NOT_PENDING" => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Asks for the run's cancellation; the call's answer (which its client does not read) says so.
    async fn cancel(&self) -> Result<CallToolResult, ApiError> {
        self.state.store.request_cancel(&self.run, Some(&self.by)).await?;
        Ok(workflow_tool::refused(&format!("the call was cancelled, and so was run {}", self.run), &[]))
    }

    /// The number of the run's last event.
    async fn last_seq(&self) -> Result<u64, ApiError> {
        let mut last = 0;
        loop {
            let events = self.state.store.events_after(&self.run, last, PAGE).await?;
            match events.last() {
                Some(e) => last = e.seq,
                None => return Ok(last),
            }
        }
    }

    /// Follows the run (its events after `after`, sent as progress) until it has paused or ended and its row says
    /// so: its result then. None when the call was cancelled (the run's cancellation is asked for).
    async fn settle(&mut self, after: u64) -> Result<Option<RunResult>, ApiError> {
        let store = self.state.store.clone();
        let mut follow = Follow::paged(&self.run, after, POLL, PAGE as usize, move |run, after| {
            let store = store.clone();
            async move { Ok((store.get(&run).await?.status.ended(), store.events_after(&run, after, PAGE).await?)) }
        })
        .announced_by(self.state.follower.subscribe());
        let mut stopped = false;
        loop {
            let next = tokio::select! {
                biased;
                _ = self.cancelled.cancelled() => {
                    self.cancel().await?;
                    return Ok(None);
                }
                next = tokio::time::timeout(POLL, follow.next()) => next,
            };
            match next {
                Ok(Ok(Followed::Events(events))) => {
                    for event in &events {
                        self.said(event).await;
                    }
                    stopped = events
                        .iter()
                        .any(|e| matches!(e.kind, EventKind::WorkflowPaused { .. } | EventKind::WorkflowEnd { .. }));
                }
                Ok(Ok(Followed::Ended)) => stopped = true,
                // The database is away: the follower reads again shortly.
                Ok(Err(_)) | Err(_) => {}
            }
            if stopped {
                let row = self.state.store.get(&self.run).await?;
                if row.status.ended() || row.status == switchyard_engine::store::StoredStatus::Paused {
                    let (_, result) = session::show_stored(self.state.store.load(&self.run).await?).await?;
                    return Ok(Some(result));
                }
            }
        }
    }

    /// Completes when the run's log grows past `after` (someone else decided), or on an error reading it.
    async fn moved_on(&self, after: u64) -> Result<(), ApiError> {
        let store = self.state.store.clone();
        let mut follow = Follow::paged(&self.run, after, POLL, 1, move |run, after| {
            let store = store.clone();
            async move { Ok((store.get(&run).await?.status.ended(), store.events_after(&run, after, 1).await?)) }
        })
        .announced_by(self.state.follower.subscribe());
        follow.next().await?;
        Ok(())
    }

    /// A node entered or finished, or waiting for a decision: a progress notification, when the client asked.
    async fn said(&mut self, event: &Event) {
        let Some(token) = self.progress.clone() else { return };
        let said = match &event.kind {
            EventKind::NodeEnter { node, iteration, .. } if *iteration > 1 => format!("{node} entered ({iteration})"),
            EventKind::NodeEnter { node, .. } => format!("{node} entered"),
            EventKind::NodeExit { node, result, .. } => format!("{node} {}", result.status.word()),
            EventKind::ApprovalRequested(p) => format!("{} waits for a decision", p.node),
            _ => return,
        };
        self.sent += 1;
        let param = ProgressNotificationParam::new(token, self.sent as f64).with_message(said);
        let _ = self.peer.notify_progress(param).await;
    }
}

/// A call refused before its run started, or that could not follow it: the tool's error with `{code, message}`.
fn refused(e: &ApiError) -> CallToolResult {
    workflow_tool::refused(&e.message, &[json!({"code": e.code, "message": e.message})])
}
