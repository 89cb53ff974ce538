//! The app's commands over HTTP, for the canvas in a browser: `POST /api/commands/NAME` with the command's arguments
//! as one JSON object, named as the generated client names them (`ui/src/bindings.ts`: `{runId, node, …}`),
//! answered with what the desktop shell's command of that name returns (the shapes of `switchyard_engine::views`),
//! or `{code, message}`. The browser calls these through the same generated client as the desktop app; only the
//! transport differs (`ui/src/transport`).
//!
//! Invariants:
//! - Each command is a thin shell over the store, the registry or the session, as its `/api/...` route is: a
//!   decision here is the decision `POST /api/runs/{id}/decisions` keeps.
//! - The server's documents are its served workflows: a browser opens them by their file or name, and runs them as
//!   they are served (a changed canvas is refused, never run as if saved).
//! - What belongs to a person's own machine (their files, settings, preferences, evaluations) is not here: those
//!   commands are refused with `NOT_ON_SERVER`, saying where to do it.

use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use switchyard_engine::code::consent::Consent;
use switchyard_engine::format::{self, Format};
use switchyard_engine::node_types;
use switchyard_engine::providers::{DefaultModel, DefaultSource, Settings};
use switchyard_engine::session;
use switchyard_engine::store::Store;
use switchyard_engine::validate;
use switchyard_engine::views::{self, Opened, OpenedRun, RunSummary, Startup};
use switchyard_engine::Workflow;

use crate::api::Start;
use crate::error::{blocking, ApiError};
use crate::registry::Served;
use crate::request::{self, Segment};
use crate::AppState;

/// How many runs History lists.
const HISTORY: usize = 200;

#[utoipa::path(post, path = "/api/commands/{name}", tag = "commands", security(("token" = [])),
    params(("name" = String, Path, description = "The command, as the app names it (`list_runs`, `open_run`, …)")),
    request_body = Object,
    responses((status = 200, body = Object), (status = 404, body = ApiError), (status = 413, body = ApiError),
        (status = 422, body = ApiError)))]
pub async fn call(
    State(state): State<AppState>,
    Segment(name): Segment,
    body: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = body.map_err(request::body_rejection)?;
    // Read here, not by an extractor: a body that is not JSON is `INVALID_BODY` as `{code, message}`.
    let args: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_BODY",
                format!("the arguments of `{name}` are not JSON: {e}"),
            )
        })?
    };
    // Nothing a command is given reaches the store with a NUL in it (a run's id, a decision's note, a run's input).
    request::json("arguments", &args)?;
    let value = match name.as_str() {
        "node_types" => to_value(node_types::specs()),
        "list_runs" => {
            let store = state.store.clone();
            let rows = blocking(move || Ok(session::recent_runs(&store, HISTORY)?)).await?;
            to_value(rows.into_iter().map(|row| RunSummary { row, live: false, server: None }).collect::<Vec<_>>())
        }
        "open_run" => {
            let RunId { run_id } = parse(&name, args)?;
            let store = state.store.clone();
            to_value(blocking(move || Ok(OpenedRun::new(Store::load(&store, &run_id)?))).await?)
        }
        "run_events" => {
            let RunId { run_id } = parse(&name, args)?;
            let store = state.store.clone();
            to_value(blocking(move || Ok(Store::events(&store, &run_id)?)).await?)
        }
        "run_turns" => {
            let RunId { run_id } = parse(&name, args)?;
            let store = state.store.clone();
            to_value(blocking(move || Ok(views::turn_views(session::turns(&store, &run_id)?))).await?)
        }
        "decide" => {
            let a: DecideArgs = parse(&name, args)?;
            state.decide(&a.run_id, &a.node, &a.decision, Some(a.note).filter(|n| !n.is_empty())).await?;
            Value::Null
        }
        "cancel_run" => {
            let RunId { run_id } = parse(&name, args)?;
            let store = state.store.clone();
            blocking(move || Ok(store.request_cancel(&run_id)?)).await?;
            Value::Null
        }
        "start_run" => {
            let StartArgs { request } = parse(&name, args)?;
            if request.from_node.is_some() {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "NOT_ON_SERVER",
                    "Running from a node is not available in a browser: Run runs the whole workflow on the server",
                ));
            }
            let served = state.served_for(request.workflow_path.as_deref(), &request.workflow.name)?;
            if !same_document(&served.workflow, &request.workflow) {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "CHANGED_HERE",
                    format!(
                        "this canvas has changes that {} on the server does not have, and the server runs its workflows \
                         as they are served: undo them (Ctrl+Z), or edit that file in the server's workflows folder \
                         (the server reads it again within 2 s), then Run",
                        served.path.display()
                    ),
                ));
            }
            let started = state.start_served(served, request.input, Start::Now).await?;
            Value::String(started.id)
        }
        "open_file" => {
            let OpenFile { path } = parse(&name, args)?;
            let served = state.served_for(Some(&path), &path)?;
            to_value(served_document(&served))
        }
        "startup_file" => {
            // The workflow `?workflow=NAME` names, else the first served one.
            let StartupArgs { workflow } = parse(&name, args).unwrap_or(StartupArgs { workflow: None });
            let catalog = state.registry.catalog.read().expect("not poisoned");
            let served = match workflow {
                Some(w) => Some(catalog.workflows.get(&w).ok_or_else(|| {
                    ApiError::new(
                        StatusCode::NOT_FOUND,
                        "NO_SUCH_WORKFLOW",
                        format!("the server serves no workflow `{w}`: check the name in the address (?workflow=NAME)"),
                    )
                })?),
                None => catalog.workflows.values().next(),
            };
            to_value(served.map(|s| Startup { path: s.path.display().to_string(), answers_path: None }))
        }
        "validate" => {
            // Providers are the workers' (their settings): the server checks the document, as for a scripted run.
            let Validate { workflow, format } = parse(&name, args)?;
            let mut options = session::validation_options(None, true);
            options.format = format.as_deref().and_then(switchyard_engine::format::Format::from_name);
            to_value(validate::validate(&workflow, &options))
        }
        "code_consent" => {
            // The workers decide whether code runs (`switchyard worker --allow-code`): a browser asks nothing, and
            // is shown no code (a step's module is a file path: reading it here would read any file for a caller).
            let Validate { .. } = parse(&name, args)?;
            to_value(Consent { steps: Vec::new(), fingerprint: None, trusted: true })
        }
        // Settings are each worker's own (its settings file): a browser sees the defaults and cannot save them.
        "get_settings" => json!({ "settings": Settings::default(), "problem": null }),
        "default_model" => to_value(DefaultModel {
            model: None,
            source: DefaultSource::None,
            detail: "the server's workers choose the model: their settings, or the model each node names".into(),
        }),
        "to_yaml" => {
            let Validate { workflow, .. } = parse(&name, args)?;
            Value::String(format::to_yaml(&workflow))
        }
        "parse_document" => {
            let a: Parse = parse(&name, args)?;
            let forced = match a.format {
                Some(f) => Some(Format::from_name(&f).ok_or_else(|| {
                    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "UNKNOWN_FORMAT", format!("unknown format `{f}`"))
                })?),
                None => None,
            };
            let loaded = format::load_str(&a.text, forced, None)
                .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.code, e.to_string()))?;
            to_value(Opened::loaded(loaded, None))
        }
        other => return Err(not_here(other)),
    };
    Ok(Json(value))
}

impl AppState {
    /// The served workflow a document names: by its file on the server, else by its name.
    fn served_for(&self, path: Option<&str>, name: &str) -> Result<Served, ApiError> {
        let catalog = self.registry.catalog.read().expect("not poisoned");
        let by_path = path.and_then(|p| catalog.workflows.values().find(|s| s.path.to_string_lossy() == p));
        by_path.or_else(|| catalog.workflows.get(name)).cloned().ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "NO_SUCH_WORKFLOW",
                format!("the server serves no workflow `{name}`: put its file in the server's workflows folder"),
            )
        })
    }
}

/// A served workflow as the window opens it: its file on the server is its path.
fn served_document(served: &Served) -> Opened {
    Opened {
        workflow: (*served.workflow).clone(),
        format: served.format.name().into(),
        notes: served.notes.to_vec(),
        path: Some(served.path.display().to_string()),
    }
}

/// Whether the canvas's document is the served one, compared as the files would be written, without where the
/// nodes are drawn (the canvas lays out a file that gives no positions, and a person may move a card).
fn same_document(served: &Workflow, canvas: &Workflow) -> bool {
    let unplaced = |w: &Workflow| {
        let mut w = w.clone();
        w.nodes.iter_mut().for_each(|n| n.position = None);
        format::to_yaml(&w)
    };
    unplaced(served) == unplaced(canvas)
}

/// Why a command is not answered here, and where to do it instead.
fn not_here(name: &str) -> ApiError {
    let (what, where_) = match name {
        "save_file" | "script_beside" | "trust_code" => {
            ("Saving", "the server's workflows are files in its folder: edit them there")
        }
        "save_settings" | "probe_mcp" => ("Settings", "the server's workers read their own settings file"),
        "resume_run" | "replay_run" => {
            ("Resuming and replaying", "the server's workers carry runs on by themselves: open the run to follow it")
        }
        "eval_suite" | "run_evals" | "save_test_case" => {
            ("Evaluations", "run them with `switchyard eval` or in the desktop app")
        }
        _ => ("This", "the desktop app has it"),
    };
    ApiError::new(
        StatusCode::NOT_FOUND,
        "NOT_ON_SERVER",
        format!("{what} is not available in a browser (`{name}`): {where_}"),
    )
}

fn parse<T: DeserializeOwned>(name: &str, args: Value) -> Result<T, ApiError> {
    serde_json::from_value(args).map_err(|e| {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_BODY", format!("the arguments of `{name}`: {e}"))
    })
}

fn to_value<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).expect("views serialize")
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunId {
    run_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DecideArgs {
    run_id: String,
    node: String,
    decision: String,
    #[serde(default)]
    note: String,
}

/// `start_run`'s request: what the server reads of it (the answers and model are the server's and workers').
#[derive(Deserialize)]
struct StartArgs {
    request: RunRequestArgs,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunRequestArgs {
    workflow: Workflow,
    workflow_path: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    /// Running from a node (with an earlier run's results upstream) is the desktop app's.
    #[serde(default)]
    from_node: Option<String>,
}

#[derive(Deserialize)]
struct OpenFile {
    path: String,
}

#[derive(Deserialize)]
struct StartupArgs {
    #[serde(default)]
    workflow: Option<String>,
}

#[derive(Deserialize)]
struct Validate {
    workflow: Workflow,
    /// The system the document was read from: its own graph rules apply (as the desktop's `validate`).
    #[serde(default)]
    format: Option<String>,
}

#[derive(Deserialize)]
struct Parse {
    text: String,
    #[serde(default)]
    format: Option<String>,
}
