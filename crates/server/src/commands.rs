//! The app's commands over HTTP, for the canvas in a browser: `POST /api/commands/NAME` with the command's arguments
//! as one JSON object, named as the generated client names them (`ui/src/bindings.ts`: `{runId, node, …}`),
//! answered with what the desktop shell's command of that name returns (the shapes of `switchyard_engine::views`),
//! or `{code, message}`. The dispatch is generated from the list of commands (`switchyard_api::for_each_command!`);
//! this server is the commands' host (`ServerHost`). The browser calls these through the same generated client as
//! the desktop app; only the transport differs (`ui/src/transport`).
//!
//! Invariants:
//! - Each command is the app's own (`switchyard_api`), over the store, the registry or the session as its `/api/...`
//!   route is: a decision here is the decision `POST /api/runs/{id}/decisions` keeps.
//! - The server's documents are its served workflows: a browser opens them by their file or name, and runs them as
//!   they are served (a changed canvas is refused, never run as if saved); no path a request names is read.
//! - What belongs to a person's own machine (their files, settings, preferences, evaluations) is not here: the host
//!   refuses those commands with `NOT_ON_SERVER`, saying where to do it, before reading their arguments.

use async_trait::async_trait;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Extension;
use axum::Json;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};
use switchyard_api::{client::camel, CommandError, Events, Host, Needs, RunArgs};
use switchyard_engine::code::consent::Consent;
use switchyard_engine::events::Event;
use switchyard_engine::format::{self, Format};
use switchyard_engine::providers::{DefaultModel, DefaultSource};
use switchyard_engine::session;
use switchyard_engine::store::postgres::team::{Caller, Scope};
use switchyard_engine::store::postgres::PgError;
use switchyard_engine::store::{Origin, RunQuery, RunRow, StoreError, StoredRun, Via};
use switchyard_engine::validate;
use switchyard_engine::views::{Opened, Startup};
use switchyard_engine::Workflow;

use crate::api::Start;
use crate::auth;
use crate::error::ApiError;
use crate::registry::Served;
use crate::request::{self, Segment};
use crate::AppState;

/// The page a command comes from: the workflow its address names (`/?workflow=NAME`), which `startup_file` opens.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Page {
    /// The served workflow the page's address names.
    pub workflow: Option<String>,
}

#[utoipa::path(post, path = "/api/commands/{name}", tag = "commands", security(("token" = [])),
    params(("name" = String, Path, description = "The command, as the app names it (`list_runs`, `open_run`, …)"),
        Page),
    request_body = Object,
    responses((status = 200, body = Object), (status = 404, body = ApiError), (status = 413, body = ApiError),
        (status = 422, body = ApiError)))]
pub async fn call(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Segment(name): Segment,
    page: Result<Query<Page>, QueryRejection>,
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
    let Query(page) = page.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_QUERY",
            format!("{}: ?workflow=NAME is all it takes", e.body_text()),
        )
    })?;
    let host = ServerHost { state, page, caller };
    Ok(Json(dispatch(&host, &name, args).await.map_err(refusal)?))
}

/// A command's arguments: one JSON object, each named as the generated clients name it.
struct Args<'a> {
    command: &'a str,
    given: Map<String, Value>,
}

impl<'a> Args<'a> {
    fn new(command: &'a str, args: Value) -> Result<Args<'a>, CommandError> {
        match args {
            Value::Null => Ok(Args { command, given: Map::new() }),
            Value::Object(given) => Ok(Args { command, given }),
            _ => Err(invalid(command, "they are one JSON object, each argument by its name".into())),
        }
    }

    /// The argument `name` (`run_id` is sent as `runId`); one not given is `null` (none, for an optional one).
    fn take<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, CommandError> {
        let key = camel(name);
        let given = self.given.remove(&key);
        let missing = given.is_none();
        serde_json::from_value(given.unwrap_or(Value::Null)).map_err(|e| match missing {
            true => invalid(self.command, format!("missing field `{key}`")),
            false => invalid(self.command, format!("`{key}`: {e}")),
        })
    }
}

fn invalid(command: &str, detail: String) -> CommandError {
    CommandError::new("INVALID_BODY", format!("the arguments of `{command}`: {detail}"))
}

/// One entry of the list: the command, if it is `name`. The host is asked first whether it has what the command
/// needs, so a refused command is refused whatever its arguments.
macro_rules! server_dispatch {
    ($( $(#[$meta:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(; $ch:ident : $cht:ty)? ) -> $ret:ty,
        $kind:ident, $needs:ident $(, $flag:ident $(($with:ident))?)?; )*) => {
        /// The command `name` with `args` on `host`: its value as JSON. A command the list does not have is one the
        /// desktop app may have.
        async fn dispatch(host: &ServerHost, name: &str, args: Value) -> Result<Value, CommandError> {
            $(
                if name == stringify!($name) {
                    host.offers(Needs::$needs, name)?;
                    #[allow(unused_mut, unused_variables)]
                    let mut args = Args::new(name, args)?;
                    $( let $arg: $ty = args.take(stringify!($arg))?; )*
                    let value = switchyard_api::$name(host, $($arg,)* $(Events::<$cht>::none())?).await?;
                    return Ok(serde_json::to_value(value).expect("views serialize"));
                }
            )*
            Err(CommandError::not_on_server(Needs::Desktop, Some(name)))
        }
    };
}

switchyard_api::for_each_command!(server_dispatch);

/// A command's refusal as the API answers it: the status its code says.
fn refusal(e: CommandError) -> ApiError {
    let status = match e.code.as_str() {
        "NOT_ON_SERVER" => StatusCode::NOT_FOUND,
        "CHANGED_HERE" => StatusCode::CONFLICT,
        code => match ApiError::status_of(code) {
            // The server's own failures; any other code is the request's (a document that cannot be read, …).
            StatusCode::INTERNAL_SERVER_ERROR if !(code.starts_with("STORE_") || code == "INTERNAL") => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            status => status,
        },
    };
    ApiError::new(status, &e.code, e.message)
}

/// The server as the commands' host: its served workflows, its store, runs submitted for its workers.
pub struct ServerHost {
    state: AppState,
    page: Page,
    /// Whose token the command came with: what it may do (`auth::require`).
    caller: Caller,
}

/// A failed read of the store, with the code the desktop's store gives it (`From<PgError> for StoreError`).
fn stored(e: PgError) -> CommandError {
    CommandError::from(StoreError::from(e))
}

fn from_api(e: ApiError) -> CommandError {
    CommandError::new(&e.code, e.message)
}

#[async_trait]
impl Host for ServerHost {
    fn offers(&self, needs: Needs, command: &str) -> Result<(), CommandError> {
        match needs {
            Needs::Any => Ok(()),
            _ => Err(CommandError::not_on_server(needs, Some(command))),
        }
    }

    /// The newest runs, awaited from the PostgreSQL store.
    async fn stored_runs(&self, mut query: RunQuery) -> Result<Vec<RunRow>, CommandError> {
        if let Some(before) = query.before.take() {
            query.before = Some(self.state.store.resolve(&before).await.map_err(stored)?);
        }
        self.state.store.find(&query).await.map_err(stored)
    }

    async fn stored_run(&self, run_id: String) -> Result<StoredRun, CommandError> {
        self.state.store.load(&run_id).await.map_err(stored)
    }

    async fn stored_events(&self, run_id: String) -> Result<Vec<Event>, CommandError> {
        self.state.store.events(&run_id).await.map_err(stored)
    }

    /// Only a served workflow, by its file on the server or its name: no other path is read.
    async fn open_file(&self, path: String) -> Result<Opened, CommandError> {
        let served = self.state.served_for(Some(&path), &path).map_err(from_api)?;
        Ok(served_document(&served))
    }

    /// The workflow the page's address names (`?workflow=NAME`), else the first served one.
    async fn startup_file(&self) -> Result<Option<Startup>, CommandError> {
        let catalog = self.state.registry.catalog.read().expect("not poisoned");
        let served = match &self.page.workflow {
            Some(w) => Some(catalog.workflows.get(w).ok_or_else(|| {
                CommandError::new(
                    "NO_SUCH_WORKFLOW",
                    format!("the server serves no workflow `{w}`: check the name in the address (?workflow=NAME)"),
                )
            })?),
            None => catalog.workflows.values().next(),
        };
        Ok(served.map(|s| Startup { path: s.path.display().to_string(), answers_path: None }))
    }

    /// Providers are the workers' (their settings): the server checks the document, as for a scripted run.
    /// The path a request names is never read: a browser's canvas says its children are not checked
    /// (`CHILD_NOT_CHECKED`), and `switchyard validate` on the server's machine checks them.
    async fn validation_options(
        &self,
        _scripted: bool,
        format: Option<Format>,
        _workflow_path: Option<String>,
    ) -> Result<validate::Options, CommandError> {
        Ok(session::validation_options(session::Checking { scripted: true, format, ..Default::default() }))
    }

    async fn default_model(&self) -> Result<DefaultModel, CommandError> {
        Ok(DefaultModel {
            model: None,
            source: DefaultSource::None,
            detail: "the server's workers choose the model: their settings, or the model each node names".into(),
        })
    }

    /// The workers decide whether code runs (`switchyard worker --allow-code`): a browser asks nothing, and is shown
    /// no code (a step's module is a file path: reading it here would read any file for a caller).
    async fn code_consent(&self, _workflow: Workflow, _path: Option<String>) -> Result<Consent, CommandError> {
        Ok(Consent { steps: Vec::new(), fingerprint: None, trusted: true })
    }

    /// Submits the served workflow for a worker; the browser follows the run's event stream.
    async fn start_run(&self, request: RunArgs, _events: Events<Vec<Event>>) -> Result<String, CommandError> {
        auth::require(&self.caller, Scope::Run, "start a run").map_err(from_api)?;
        if request.from_node.is_some() {
            return Err(CommandError::new(
                "NOT_ON_SERVER",
                "Running from a node is not available in a browser: Run runs the whole workflow on the server",
            ));
        }
        if request.fork.is_some() {
            return Err(CommandError::new(
                "NOT_ON_SERVER",
                "Forking a run is not available in a browser: fork it with switchyard run --fork RUN --at \
                 NODE[#TURN] --answer TEXT, or in the desktop app",
            ));
        }
        let served =
            self.state.served_for(request.workflow_path.as_deref(), &request.workflow.name).map_err(from_api)?;
        if !same_document(&served.workflow, &request.workflow) {
            return Err(CommandError::new(
                "CHANGED_HERE",
                format!(
                    "this canvas has changes that {} on the server does not have, and the server runs its workflows \
                     as they are served: undo them (Ctrl+Z), or edit that file in the server's workflows folder \
                     (the server reads it again within 2 s), then Run",
                    served.path.display()
                ),
            ));
        }
        let started = self
            .state
            .start_served(served, request.input, Start::Now(Origin::new(Via::Api, &self.caller.name)))
            .await
            .map_err(from_api)?;
        Ok(started.id)
    }

    /// Kept for the run's worker, checked as `POST /api/runs/{id}/decisions` checks it.
    async fn decide(&self, run_id: String, node: String, decision: String, note: String) -> Result<(), CommandError> {
        auth::require(&self.caller, Scope::Decide, "decide an approval").map_err(from_api)?;
        let note = Some(note).filter(|n| !n.is_empty());
        self.state.decide(&run_id, &node, &decision, note, &self.caller.name).await.map_err(from_api)?;
        Ok(())
    }

    /// Kept for the run's worker.
    async fn cancel_run(&self, run_id: String) -> Result<(), CommandError> {
        auth::require(&self.caller, Scope::Decide, "cancel a run").map_err(from_api)?;
        self.state.store.request_cancel(&run_id, Some(&self.caller.name)).await.map_err(|e| from_api(e.into()))?;
        Ok(())
    }
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
