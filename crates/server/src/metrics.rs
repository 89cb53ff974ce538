//! `GET /metrics`: what the server can count, in Prometheus' text format (version 0.0.4). It needs a token, as the
//! API does: the counts say how busy a team's workflows are, which is not for everyone who can reach the port.
//!
//! Invariants:
//! - What every instance sees alike comes from the database at the moment of the scrape (runs by status, the queue,
//!   claims, decisions, deliveries, lease holders): two instances report the same values for those.
//! - What only this instance sees (its HTTP requests, by route and status code) is counted here, from its start;
//!   a route is its pattern (`/api/runs/{id}`), never the path a client sent, so the number of series is bounded.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::AppState;

/// What this instance counts itself.
#[derive(Default)]
pub struct Metrics {
    /// HTTP requests answered, by (route, status code).
    requests: Mutex<BTreeMap<(String, u16), u64>>,
}

/// The middleware that counts every request by its route's pattern and its answer's status code.
pub async fn count(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |m| m.as_str()).to_string();
    let response = next.run(request).await;
    let key = (route, response.status().as_u16());
    *state.metrics.requests.lock().expect("not poisoned").entry(key).or_default() += 1;
    response
}

#[utoipa::path(get, path = "/metrics", tag = "operations", security(("token" = [])),
    responses((status = 200, content_type = "text/plain", body = String,
        description = "Prometheus text format 0.0.4 (docs/server.md lists the metrics)"),
        (status = 401, body = ApiError), (status = 503, body = ApiError)))]
pub async fn scrape(State(state): State<AppState>) -> Result<Response, ApiError> {
    let counts = state.store.counts().await?;
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, i64)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    };
    const STATUSES: [&str; 7] = ["ready", "running", "paused", "interrupted", "completed", "failed", "cancelled"];
    let by_status: BTreeMap<&str, i64> = counts.runs.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    let runs =
        STATUSES.iter().map(|s| (format!("{{status=\"{s}\"}}"), by_status.get(s).copied().unwrap_or(0))).collect();
    family("switchyard_runs", "gauge", "Runs in the database by status.", runs);
    let bare = |n: i64| vec![(String::new(), n)];
    let ready = by_status.get("ready").copied().unwrap_or(0);
    family("switchyard_queue_depth", "gauge", "Runs waiting for a worker (status ready).", bare(ready));
    family("switchyard_run_claims_total", "counter", "Claims of the runs in the database.", bare(counts.claims));
    let help = "Claims after a run's first: taken over after its holder stopped, or taken again after a pause.";
    family("switchyard_run_reclaims_total", "counter", help, bare(counts.reclaims));
    family("switchyard_decisions_total", "counter", "Decisions kept for runs in the database.", bare(counts.decisions));
    let help = "Webhook deliveries kept with an idempotency key.";
    family("switchyard_webhook_deliveries_total", "counter", help, bare(counts.deliveries));
    let help = "Holders of a live lease: workers (and terminals) whose heartbeats keep a run.";
    family("switchyard_live_lease_holders", "gauge", help, bare(counts.holders));
    let requests = state.metrics.requests.lock().expect("not poisoned").clone();
    let requests = requests
        .into_iter()
        .map(|((route, code), n)| (format!("{{route=\"{}\",code=\"{code}\"}}", escape(&route)), n as i64))
        .collect();
    let help = "HTTP requests this instance answered, by route pattern and status code.";
    family("switchyard_http_requests_total", "counter", help, requests);
    Ok(([(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], out).into_response())
}

/// A label value as the text format writes it.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
