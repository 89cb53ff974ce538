//! `GET /api/workers`: the workers that take runs from the server's database, as `switchyard workers` lists them
//! (`store::postgres::PgStore::workers`): each one's queues, the runs it holds and when it last answered.
//!
//! Invariant: read from the database at each request, so every instance lists the same workers; the server keeps
//! nothing of them.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::AppState;

/// One worker.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerInfo {
    /// `host:pid`, as a run's holder is named.
    pub name: String,
    /// The queues it takes runs from; null: every queue.
    pub queues: Option<Vec<String>>,
    /// Runs it takes at once.
    pub jobs: i32,
    /// When it started (RFC 3339, UTC).
    pub started: String,
    /// When it last answered (RFC 3339, UTC), and how many milliseconds ago.
    pub last_heartbeat: String,
    pub heartbeat_age_ms: i64,
    /// `answering`, `not answering` (not seen for a whole lease: its runs are taken over once their leases run out)
    /// or `stopped`.
    pub state: String,
    /// The ids of the runs it holds now, oldest first.
    pub runs: Vec<String>,
}

#[utoipa::path(get, path = "/api/workers", tag = "workers", security(("token" = [])),
    responses((status = 200, body = Vec<WorkerInfo>), (status = 401, body = ApiError)))]
pub async fn workers(State(state): State<AppState>) -> Result<Json<Vec<WorkerInfo>>, ApiError> {
    let workers = state.store.workers().await?;
    Ok(Json(
        workers
            .into_iter()
            .map(|w| WorkerInfo {
                name: w.name,
                queues: w.queues,
                jobs: w.jobs,
                started: w.started,
                last_heartbeat: w.last_heartbeat,
                heartbeat_age_ms: w.heartbeat_age_ms,
                state: w.state,
                runs: w.runs,
            })
            .collect(),
    ))
}
