//! `switchyard serve`: an HTTP API over a PostgreSQL run store that workers share (`switchyard worker`). It starts
//! runs (through the API, webhooks and schedules) by recording them `ready`; it runs nothing itself. Workers take the
//! runs, and keep the log the API reads back.
//!
//! Invariants:
//! - The server knows nothing of executing a run: it writes runs, decisions and cancellations to the store and reads
//!   runs and events from it (`postgres::team`), so any number of instances can serve the same database, and a
//!   restart loses nothing (a follower reconnects with `Last-Event-ID`).
//! - Every route but `/openapi.json` and `/healthz` (`/metrics` too) needs a token (`auth.rs`), or, for a signed webhook, its
//!   signature (`hooks.rs`). Tokens are kept hashed.
//! - Every failure is `{code, message}` (`error.rs`), with the engine's codes; what a request may carry is checked
//!   at the door (`request.rs`): nothing with a NUL character reaches the store.
//! - The OpenAPI document is generated from the handlers (`openapi.rs`), never written by hand.

pub mod api;
pub mod auth;
pub mod commands;
pub mod error;
pub mod hooks;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod registry;
pub mod request;
pub mod retention;
pub mod schedules;
pub mod workers;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use switchyard_engine::store::postgres::{Follower, PgStore};

use crate::registry::Registry;

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    pub store: PgStore,
    pub registry: Arc<Registry>,
    pub follower: Follower,
    /// Runs started here are answered by this answers file (`serve --answers`): offline, for demos and tests.
    pub answers: Option<Arc<PathBuf>>,
    /// Becomes true when the server starts stopping: event streams end then, so that stopping does not wait for
    /// their clients.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// What this instance counts for `/metrics`.
    pub metrics: Arc<metrics::Metrics>,
}

/// How a server serves.
#[derive(Debug, Clone)]
pub struct Options {
    pub listen: SocketAddr,
    /// The folder of workflow files it serves.
    pub workflows: PathBuf,
    pub answers: Option<PathBuf>,
    /// The built web app (`npm run build` makes `dist/`), served at `/` when given.
    pub ui: Option<PathBuf>,
    /// Prune ended runs on a schedule (`--prune-older-than`); none: never.
    pub retention: Option<retention::Retention>,
}

/// Why a server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {detail} (is another server on that port? pick one with --listen)")]
    Listen { addr: SocketAddr, detail: String },
    #[error("{0}")]
    Workflows(registry::ScanError),
    #[error(transparent)]
    Store(#[from] switchyard_engine::store::postgres::PgError),
}

impl ServeError {
    pub fn code(&self) -> &'static str {
        match self {
            ServeError::Listen { .. } => "SERVE_LISTEN",
            ServeError::Workflows(_) => "SERVE_WORKFLOWS",
            ServeError::Store(e) => e.code(),
        }
    }
}

/// The routes, over `state`.
pub fn router(state: AppState, ui: Option<PathBuf>) -> Router {
    let api = Router::new()
        .route("/workflows", get(api::workflows))
        .route("/workflows/{name}/versions", get(api::workflow_versions))
        .route("/runs", get(api::list_runs).post(api::start_run))
        .route("/runs/{id}", get(api::show_run))
        .route("/runs/{id}/events", get(api::follow_run))
        .route("/runs/{id}/decisions", post(api::decide))
        .route("/runs/{id}/cancel", post(api::cancel))
        .route("/workers", get(workers::workers))
        .route("/commands/{name}", post(commands::call))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_token))
        // Under /api/, a path that is no route is said so as JSON, never answered with the web app's page.
        .fallback(no_route);
    // `/metrics` needs a token, as the API does.
    let metrics = Router::new()
        .route("/metrics", get(metrics::scrape))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_token));
    let counted = state.clone();
    let router = Router::new()
        .merge(metrics)
        .route("/openapi.json", get(openapi::document))
        .route("/healthz", get(|| async { "ok" }))
        .route("/hooks/{name}", post(hooks::deliver))
        .nest("/api", api)
        // The workflows as MCP tools over Streamable HTTP (`mcp.rs`), behind the same token as the API.
        .merge(
            Router::new()
                .route_service("/mcp", mcp::service(state.clone()))
                .route_layer(axum::middleware::from_fn(mcp::session_ended))
                .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_token)),
        )
        .method_not_allowed_fallback(|| async {
            error::ApiError::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                "this route does not take that method: /openapi.json says which it takes",
            )
        })
        .with_state(state);
    let router = match ui {
        // The web app is its files: `/` (and `/?workflow=…`) is its page, any other path is one of its files or
        // 404 `NO_SUCH_PAGE` (the app has no paths of its own), never the page answering 200 for what is not there.
        Some(dir) => {
            router.fallback_service(tower_http::services::ServeDir::new(dir).fallback(axum::routing::any(no_page)))
        }
        None => router.fallback(no_route),
    };
    // Every request is counted by its route's pattern and its status (`/metrics`).
    let router = router.layer(axum::middleware::from_fn_with_state(counted, metrics::count));
    // Whatever refuses a request before a handler does (a body over the limit, a file service), it is said as
    // `{code, message}`.
    router.layer(axum::middleware::from_fn(request::json_failures)).layer(axum::middleware::from_fn(request::linger))
}

/// What a path that is no route gets.
async fn no_route() -> error::ApiError {
    error::ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        "NO_SUCH_ROUTE",
        "there is no such route: /openapi.json lists them",
    )
}

/// What a path that is neither a route nor a file of the web app gets.
async fn no_page() -> error::ApiError {
    error::ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        "NO_SUCH_PAGE",
        "there is no such page: the web app is at /, the API under /api/ (/openapi.json lists its routes)",
    )
}

/// Serves until `shutdown` completes: reads the workflows folder (and again every `rescan`), fires schedules, prunes
/// (when `options.retention` says to), and answers requests. `report` hears what happens, one line at a time.
pub async fn serve(
    store: PgStore,
    options: Options,
    report: Arc<dyn Fn(String) + Send + Sync>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    // Listening first: a port in use is said before anything is written to the database.
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|e| ServeError::Listen { addr: options.listen, detail: e.to_string() })?;
    let registry = Arc::new(Registry::new(&options.workflows));
    let first = registry.scan(&store).await.map_err(ServeError::Workflows)?;
    tell(&report, first);
    check_secrets(&registry, &report);
    let follower = store.follow().await?;
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let state = AppState {
        store: store.clone(),
        registry: registry.clone(),
        follower,
        answers: options.answers.map(Arc::new),
        stopping,
        metrics: Arc::default(),
    };
    let addr = listener.local_addr().unwrap_or(options.listen);
    report(format!(
        "serving {} workflow(s) from {} on http://{addr}",
        registry.catalog.read().expect("not poisoned").workflows.len(),
        registry.folder().display()
    ));
    let rescan = {
        let (registry, store, report) = (registry.clone(), store.clone(), report.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(2)).await;
                match registry.scan(&store).await {
                    Ok(scanned) => tell(&report, scanned),
                    Err(e) => report(format!("warning: {e}")),
                }
            }
        })
    };
    let firing = {
        let (state, report) = (state.clone(), report.clone());
        tokio::spawn(schedules::keep_firing(state, move |line| report(line)))
    };
    let pruning = options.retention.map(|retention| {
        let (store, report) = (store.clone(), report.clone());
        tokio::spawn(retention::keep_pruning(store, retention, move |line| report(line)))
    });
    let app = router(state, options.ui);
    let shutdown = async move {
        shutdown.await;
        stop.send_replace(true);
    };
    let served = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
    rescan.abort();
    firing.abort();
    if let Some(pruning) = pruning {
        pruning.abort();
    }
    served.map_err(|e| ServeError::Listen { addr, detail: e.to_string() })
}

/// Says what a scan found.
fn tell(report: &Arc<dyn Fn(String) + Send + Sync>, scanned: registry::Scanned) {
    for (name, version) in scanned.registered {
        report(format!("workflow {name} version {version}"));
    }
    for (path, problem) in scanned.problems {
        report(format!("warning: {}: {problem}", path.display()));
    }
}

/// Warns of signed webhooks whose secret is not in this server's environment: their deliveries would be refused.
fn check_secrets(registry: &Registry, report: &Arc<dyn Fn(String) + Send + Sync>) {
    let catalog = registry.catalog.read().expect("not poisoned");
    for (hook, (_, trigger)) in &catalog.hooks {
        if let Some(var) = trigger.secret_env.as_deref().filter(|v| std::env::var_os(v).is_none()) {
            report(format!(
                "warning: webhook `{hook}` is signed with the secret in ${var}, which is not set here: its deliveries \
                 are refused (HOOK_SECRET_MISSING) until it is"
            ));
        }
    }
}
