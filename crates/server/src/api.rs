//! The API under `/api/`: workflows, runs, their events as Server-Sent Events, decisions and cancellation. Each
//! handler is a thin shell over the store (`postgres::team`) and the session.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::{Extension, Json};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchyard_engine::session::{self, Follow, Followed};
use switchyard_engine::store::postgres::team::{Caller, Kept, Scope};
use switchyard_engine::store::{Origin, RunFilter, RunQuery, Via};
use switchyard_engine::views::ListedRun;
use utoipa::{IntoParams, ToSchema};

use crate::auth;
use crate::error::ApiError;
use crate::registry::{Served, Submission};
use crate::request::{self, Segment};
use crate::AppState;

/// How many events an event stream reads at a time.
const PAGE: u32 = 500;

/// A served workflow.
#[derive(Serialize, ToSchema)]
pub struct WorkflowInfo {
    pub name: String,
    pub version: i32,
    /// The file it is read from, on the server.
    pub path: String,
    /// `POST /hooks/NAME` starts a run of it.
    pub webhooks: Vec<String>,
    /// Schedules and their cron expressions (UTC).
    pub schedules: Vec<(String, String)>,
}

/// The workflows the server serves, and the files it could not serve.
#[derive(Serialize, ToSchema)]
pub struct Workflows {
    pub workflows: Vec<WorkflowInfo>,
    /// (file, problem): fix the file and the server reads it again.
    pub problems: Vec<(String, String)>,
}

#[utoipa::path(get, path = "/api/workflows", tag = "workflows", security(("token" = [])),
    responses((status = 200, body = Workflows), (status = 401, body = ApiError)))]
pub async fn workflows(State(state): State<AppState>) -> Json<Workflows> {
    let catalog = state.registry.catalog.read().expect("not poisoned");
    let workflows = catalog
        .workflows
        .iter()
        .map(|(name, s)| WorkflowInfo {
            name: name.clone(),
            version: s.version,
            path: s.path.display().to_string(),
            webhooks: s.workflow.triggers.iter().filter_map(|t| t.webhook.clone()).collect(),
            schedules: s
                .workflow
                .triggers
                .iter()
                .filter_map(|t| Some((t.schedule.clone()?, t.cron.clone().unwrap_or_default())))
                .collect(),
        })
        .collect();
    let problems = catalog.problems.iter().map(|(p, why)| (p.display().to_string(), why.clone())).collect();
    Json(Workflows { workflows, problems })
}

/// One version of a served workflow: each change to its file that loads is a new one, numbered from 1.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowVersion {
    pub version: i32,
    /// SHA-256 of its document, as JSON.
    pub hash: String,
    /// The file it was read from, on the server.
    pub path: String,
    /// When the server first served it: RFC 3339, UTC.
    pub registered_at: String,
}

/// Every version of a served workflow the server kept, newest first (also those of a workflow whose file was
/// removed since: its runs name them). A run's `version` says which of them it ran.
#[utoipa::path(get, path = "/api/workflows/{name}/versions", tag = "workflows", security(("token" = [])),
    params(("name" = String, Path, description = "The workflow's name")),
    responses((status = 200, body = Vec<WorkflowVersion>), (status = 401, body = ApiError), (status = 404, body = ApiError)))]
pub async fn workflow_versions(
    State(state): State<AppState>,
    Segment(name): Segment,
) -> Result<Json<Vec<WorkflowVersion>>, ApiError> {
    let versions = state.store.versions_of(&name).await?;
    if versions.is_empty() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NO_SUCH_WORKFLOW",
            format!(
                "no workflow `{}` was ever served here: GET /api/workflows lists them",
                name.chars().take(100).collect::<String>()
            ),
        ));
    }
    Ok(Json(
        versions
            .into_iter()
            .map(|v| WorkflowVersion { version: v.version, hash: v.hash, path: v.path, registered_at: v.registered_at })
            .collect(),
    ))
}

/// Starts a run of a served workflow.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// The workflow's name.
    pub workflow: String,
    /// The run's input (checked against the workflow's `input_schema`).
    #[serde(default)]
    pub input: Option<Value>,
}

/// A run that was started (or found, for a redelivered webhook).
#[derive(Serialize, ToSchema)]
pub struct Started {
    pub id: String,
    pub workflow: String,
    pub version: i32,
    /// False when a delivery with the same idempotency key started it before.
    pub new: bool,
    /// True when that earlier delivery's run was pruned (retention): this one started nothing, and the run `id` is
    /// no longer kept.
    pub pruned: bool,
    /// What happened, when it is not what `new` says: a redelivery whose run was pruned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[utoipa::path(post, path = "/api/runs", tag = "runs", security(("token" = [])), request_body = StartRun,
    responses((status = 201, body = Started), (status = 403, body = ApiError), (status = 404, body = ApiError), (status = 422, body = ApiError)))]
pub async fn start_run(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    start: Result<Json<StartRun>, JsonRejection>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    auth::require(&caller, Scope::Run, "start a run")?;
    let Json(start) = start.map_err(body_error)?;
    let started = state.start(&start.workflow, start.input, Start::Now(Origin::new(Via::Api, &caller.name))).await?;
    Ok((StatusCode::CREATED, Json(started)))
}

/// How a run is started.
pub enum Start {
    /// Now, as `Origin` says: through the API or `/mcp`, by a token.
    Now(Origin),
    /// By a webhook delivery with this idempotency key.
    Delivery { hook: String, key: String },
}

impl AppState {
    /// Starts a run of `workflow` (by name) with `input`, `ready` for a worker.
    pub async fn start(&self, workflow: &str, input: Option<Value>, how: Start) -> Result<Started, ApiError> {
        let Some(served) = self.registry.served(workflow) else {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "NO_SUCH_WORKFLOW",
                format!("no workflow `{workflow}` is served here: GET /api/workflows lists them"),
            ));
        };
        self.start_served(served, input, how).await
    }

    /// Starts a run of this version of a served workflow (the one a caller checked, even if the file changed since).
    pub async fn start_served(&self, served: Served, input: Option<Value>, how: Start) -> Result<Started, ApiError> {
        if let Some(input) = &input {
            request::json("input", input)?;
        }
        session::check_input(&served.workflow, input.as_ref())?;
        let (name, version) = (served.workflow.name.clone(), served.version);
        let origin = match &how {
            Start::Now(origin) => origin.clone(),
            Start::Delivery { hook, .. } => Origin::new(Via::Webhook, hook),
        };
        let submission = Submission::new(served, input, self.answers.as_deref().map(|a| a.as_path()), origin);
        let run = submission.new_run();
        let (id, new, pruned) = match how {
            Start::Now(_) => {
                self.store.submit(&run).await?;
                (submission.id.clone(), true, false)
            }
            Start::Delivery { hook, key } => {
                let delivered = self.store.deliver(&hook, &key, &run).await?;
                if delivered.pruned {
                    let message = format!(
                        "delivery key `{key}` of webhook `{hook}` started run {} before, which was pruned since \
                         (retention): this redelivery starts nothing",
                        delivered.run
                    );
                    return Ok(Started {
                        id: delivered.run,
                        workflow: name,
                        version,
                        new: false,
                        pruned: true,
                        message: Some(message),
                    });
                }
                (delivered.run, delivered.new, false)
            }
        };
        Ok(Started { id, workflow: name, version, new, pruned, message: None })
    }
}

/// The most runs one page lists.
pub const MAX_PAGE: usize = 1000;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// At most this many, newest first (default 100, at most 1000). A page shorter than this is the last.
    pub limit: Option<usize>,
    /// The next page: runs listed after this run (the `id` of the last run of the page before).
    pub before: Option<String>,
    /// Only runs with one of these statuses, separated by commas (`ready`, `running`, `paused`, `interrupted`,
    /// `completed`, `failed`, `cancelled`).
    pub status: Option<String>,
    /// Only runs of the workflow of this name.
    pub workflow: Option<String>,
    /// Only runs started at or after this time: RFC 3339, a day (`2026-11-28`, UTC), or an age (`30m`, `2h`, `7d`).
    pub since: Option<String>,
    /// Only runs started before this time (as `since`).
    pub until: Option<String>,
    /// Only runs whose id begins with this (the short ids History shows).
    pub id: Option<String>,
    /// Only runs whose id begins with this, or whose workflow's name or file has it in them (in any case): what
    /// History's search box finds.
    pub search: Option<String>,
    /// With `workflow`: its runs' child runs too, at any depth (`true`; each names its parent in `parent`).
    pub with_children: Option<bool>,
}

impl ListQuery {
    /// The store's query, or why the parameters name none.
    pub fn query(self) -> Result<RunQuery, ApiError> {
        for text in [&self.before, &self.workflow, &self.id, &self.search].into_iter().flatten() {
            request::text("a query parameter", text)?;
        }
        let limit = self.limit.unwrap_or(100);
        if limit > MAX_PAGE {
            return Err(query_error_text(&format!("limit {limit} is over {MAX_PAGE}: page with `before`")));
        }
        let filter = RunFilter {
            limit: Some(limit as u32),
            before: self.before,
            status: self.status.iter().flat_map(|s| s.split(',')).map(str::to_string).collect(),
            workflow: self.workflow,
            since: self.since,
            until: self.until,
            id: self.id,
            search: self.search,
            with_children: self.with_children.unwrap_or(false),
        };
        filter.query(limit).map_err(|(field, why)| query_error_text(&format!("{field}: {why}")))
    }
}

/// Runs, newest first, as `switchyard runs --json` prints them (`views::ListedRun`: `workflow` is the file it was
/// started from, `name` the workflow's name), a page at a time and filtered: the next page is
/// `?before=ID` with the last run's id and the same filters.
#[utoipa::path(get, path = "/api/runs", tag = "runs", security(("token" = [])), params(ListQuery),
    responses((status = 200, body = Vec<Object>), (status = 400, body = ApiError), (status = 401, body = ApiError),
        (status = 404, body = ApiError)))]
pub async fn list_runs(
    State(state): State<AppState>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Vec<ListedRun>>, ApiError> {
    let Query(query) = query.map_err(query_error)?;
    let mut query = query.query()?;
    if let Some(before) = query.before.take() {
        query.before = Some(state.store.resolve(&before).await?);
    }
    let rows = session::priced_rows(state.store.find(&query).await?);
    Ok(Json(rows.into_iter().map(ListedRun::from).collect()))
}

/// A run as `switchyard show --json` gives it: its row and its result, rebuilt from its log, and the child runs its
/// `workflow` nodes and workflow tool calls started (`children`: `[{id, node, iteration, item, call, status}]`, by node,
/// iteration, item and call; `call` only for a tool call's).
#[utoipa::path(get, path = "/api/runs/{id}", tag = "runs", security(("token" = [])),
    params(("id" = String, Path, description = "The run's id")),
    responses((status = 200, body = Object), (status = 404, body = ApiError)))]
pub async fn show_run(State(state): State<AppState>, Segment(id): Segment) -> Result<Json<Value>, ApiError> {
    let id = state.store.resolve(&id).await?;
    let (row, result) = session::show_stored(state.store.load(&id).await?).await?;
    let mut children = Vec::new();
    for child in state.store.children(&id).await? {
        let status = state.store.get(&child.id).await?.status;
        children.push(switchyard_engine::views::Child::new(child, status));
    }
    Ok(Json(serde_json::json!({ "run": row, "result": result, "children": children })))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FollowQuery {
    /// Events numbered after this one (as `Last-Event-ID` says on a reconnection, which wins).
    pub after: Option<u64>,
}

/// A run's events as Server-Sent Events: each event's `id` is its number, its `event` its kind, its `data` the
/// event as the run log keeps it. A client that reconnects with `Last-Event-ID` gets every event after that one,
/// with no gap and none twice. The stream ends with an `end` event once the run has ended and everything is sent;
/// while the run waits for a person it stays open.
#[utoipa::path(get, path = "/api/runs/{id}/events", tag = "runs", security(("token" = [])),
    params(("id" = String, Path, description = "The run's id"), FollowQuery),
    responses((status = 200, content_type = "text/event-stream", body = String), (status = 404, body = ApiError)))]
pub async fn follow_run(
    State(state): State<AppState>,
    Segment(id): Segment,
    query: Result<Query<FollowQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let Query(query) = query.map_err(query_error)?;
    let last = match last_event_id(&headers)? {
        Some(last) => last,
        None => {
            query.after.map(|after| seq("after", after)).transpose().map_err(|e| query_error_text(&e))?.unwrap_or(0)
        }
    };
    // Unknown runs are refused before the stream starts; a short id names the run it begins.
    let id = state.store.resolve(&id).await?;
    let mut stopping = state.stopping.clone();
    let (tx, rx) = tokio::sync::mpsc::channel::<SseEvent>(256);
    let store = state.store.clone();
    // Pages of 500 events; woken by the batches the store announces, and read every few seconds regardless.
    let mut follow = Follow::paged(&id, last, Duration::from_secs(5), PAGE as usize, move |run, after| {
        let store = store.clone();
        async move { Ok((store.get(&run).await?.status.ended(), store.events_after(&run, after, PAGE).await?)) }
    })
    .announced_by(state.follower.subscribe());
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                next = follow.next() => next,
                _ = tx.closed() => return,
                // The server is stopping: the stream ends, and its client reconnects (to another instance, or to
                // this one restarted) from its last event.
                _ = stopping.wait_for(|s| *s) => return,
            };
            match next {
                Ok(Followed::Events(events)) => {
                    for event in events {
                        let data = serde_json::to_string(&event).unwrap_or_default();
                        let sse =
                            SseEvent::default().id(event.seq.to_string()).event(event.kind.type_name()).data(data);
                        if tx.send(sse).await.is_err() {
                            return; // the client went away
                        }
                    }
                }
                Ok(Followed::Ended) => {
                    let _ = tx.send(SseEvent::default().event("end").data("{}")).await;
                    return;
                }
                // The database is away: the follower reads again shortly (the client keeps its place either way).
                Err(_) => {}
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// A person's decision on a pending approval.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Decide {
    /// The approval node (or the agent whose tool call waits).
    pub node: String,
    /// `approve` or `reject`.
    pub decision: String,
    #[serde(default)]
    pub note: Option<String>,
}

/// What happened to a decision.
#[derive(Serialize, ToSchema)]
pub struct Decided {
    /// False when the same approval was decided before (a decision sent twice is applied once).
    pub kept: bool,
}

#[utoipa::path(post, path = "/api/runs/{id}/decisions", tag = "runs", security(("token" = [])), request_body = Decide,
    params(("id" = String, Path, description = "The run's id")),
    responses((status = 202, body = Decided), (status = 403, body = ApiError), (status = 404, body = ApiError), (status = 409, body = ApiError),
        (status = 422, body = ApiError)))]
pub async fn decide(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Segment(id): Segment,
    decide: Result<Json<Decide>, JsonRejection>,
) -> Result<(StatusCode, Json<Decided>), ApiError> {
    auth::require(&caller, Scope::Decide, "decide an approval")?;
    let Json(decide) = decide.map_err(body_error)?;
    let kept = state.decide(&id, &decide.node, &decide.decision, decide.note, &caller.name).await?;
    Ok((StatusCode::ACCEPTED, Json(Decided { kept: kept == Kept::New })))
}

impl AppState {
    /// Keeps a person's decision on a pending approval of run `id`, made by `by` (a token's name): once, however often
    /// it is sent.
    pub async fn decide(
        &self,
        id: &str,
        node: &str,
        decision: &str,
        note: Option<String>,
        by: &str,
    ) -> Result<Kept, ApiError> {
        request::text("node", node)?;
        if let Some(note) = &note {
            request::text("note", note)?;
        }
        // The one parser says what the words are and words the refusal (INVALID_DECISION).
        let decision = switchyard_engine::run::Decision::parse(decision, note.unwrap_or_default())
            .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.code(), e.to_string()))?
            .by(by);
        let id = &self.store.resolve(id).await?;
        // One snapshot: a decision sent twice must see the first one's settlement everywhere or nowhere.
        let at = self.store.approval(id, node).await?;
        let Some(round) = at.waiting() else {
            // Decided before: a decision sent twice, after the first was applied, lands here.
            if at.settled > 0 {
                return Ok(Kept::Already);
            }
            let waiting = if at.ended {
                "nothing: it has ended".to_string()
            } else if at.pending.is_empty() {
                "no decision".to_string()
            } else {
                at.pending.join(", ")
            };
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "NOT_PENDING",
                format!("run `{id}` does not wait for `{node}`; it waits for {waiting}"),
            ));
        };
        Ok(self.store.keep_decision(id, node, round, &decision).await?)
    }
}

/// What happened to a cancellation.
#[derive(Serialize, ToSchema)]
pub struct Cancelled {
    /// False when the run had ended already.
    pub asked: bool,
}

#[utoipa::path(post, path = "/api/runs/{id}/cancel", tag = "runs", security(("token" = [])),
    params(("id" = String, Path, description = "The run's id")),
    responses((status = 202, body = Cancelled), (status = 403, body = ApiError), (status = 404, body = ApiError)))]
pub async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Segment(id): Segment,
) -> Result<(StatusCode, Json<Cancelled>), ApiError> {
    auth::require(&caller, Scope::Decide, "cancel a run")?;
    let id = state.store.resolve(&id).await?;
    let asked = state.store.request_cancel(&id, Some(&caller.name)).await?;
    Ok((StatusCode::ACCEPTED, Json(Cancelled { asked })))
}

/// A body the handler cannot read, as `{code, message}`.
fn body_error(e: JsonRejection) -> ApiError {
    let status = e.status();
    if let Some(too_large) = request::too_large(status) {
        return too_large;
    }
    ApiError::new(
        status,
        "INVALID_BODY",
        format!("{}: send JSON of the shape /openapi.json gives this route", e.body_text()),
    )
}

/// Query parameters the handler cannot read, as `{code, message}`.
fn query_error(e: QueryRejection) -> ApiError {
    query_error_text(&e.body_text())
}

fn query_error_text(e: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "INVALID_QUERY", format!("{e}: /openapi.json gives this route's parameters"))
}

/// An event's number as a client names it (`after`, `Last-Event-ID`): the log numbers events up to `i64::MAX`, and
/// a larger number would name none of them.
fn seq(what: &str, n: u64) -> Result<u64, String> {
    if n > i64::MAX as u64 {
        return Err(format!("{what} {n} is past the last number an event can have ({})", i64::MAX));
    }
    Ok(n)
}

/// The `Last-Event-ID` a reconnecting client sends, when it sends one: the number of the last event it has. Anything
/// else is refused rather than read as "from the first event", which would send it every event again.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else { return Ok(None) };
    let refuse = |why: String| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_HEADER",
            format!("Last-Event-ID: {why}; send the `id` of the last event received, or no Last-Event-ID to start from the first"),
        )
    };
    let text = value.to_str().map_err(|_| refuse("not a number".into()))?.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let n = text
        .parse::<u64>()
        .map_err(|_| refuse(format!("`{}` is not an event's number", text.chars().take(40).collect::<String>())))?;
    seq("Last-Event-ID", n).map(Some).map_err(refuse)
}
