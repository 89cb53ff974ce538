//! Code steps: a script node's `code` (or `module`) run for real in its language, with the user's consent.
//!
//! - Python and JavaScript run in a worker process per language, started on the first step that needs it and
//!   kept warm for the rest of the run (a pool: parallel steps get a worker each). Bash runs one process per step.
//!   Lua runs in-process in a sandboxed interpreter (no `io`, `os`, `package` or `debug`).
//! - The contract is the source systems' own (see `docs/formats.md`): the code is the body of a function whose
//!   parameters are the names of [`Call::names`] (`state`, `input`, `context`, …) and whose returned object (a dict,
//!   a table) is the node's output; `None` / `undefined` / `nil` is `{}` and any other value `{"result": value}`. A
//!   Python body without `return` gives its top-level names instead (TEA). An OpenExpertise tool is a module whose
//!   default export is called with the state. A bash step gets the names as one JSON object on stdin and prints its
//!   output object on stdout.
//! - Every process runs in the workflow file's folder, in its own process group, with only `PATH` and the variables
//!   the workflow names under `env:`, and the step's idempotency key as `SWITCHYARD_IDEMPOTENCY_KEY` ([`Call::key`]).
//!   A timeout or a cancelled run kills the whole group. What the code prints on stdout and stderr becomes `log`
//!   events of the node, a line each.
//! - Nothing here decides consent: the run is given [`Code::allowed`] by the session layer ([`consent`]).

pub mod consent;
mod lua;
mod worker;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Map, Value};

pub use switchyard_document::language::{Language, UnsupportedLanguage};
use worker::Worker;

/// How long a code step may run when its node sets no `timeout_seconds`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// What a run needs to execute code steps. Not stored with the run: consent is decided again when a run resumes,
/// and interpreter paths and environment values belong to the machine, not the run.
#[derive(Debug, Clone, Default)]
pub struct Code {
    /// The user allowed this workflow's code to run (`--allow-code`, a trusted fingerprint, the app's prompt).
    pub allowed: bool,
    /// The folder code runs in and modules are found from: the workflow file's. `None`: the current folder.
    pub dir: Option<PathBuf>,
    /// Interpreters to use instead of `python3`, `node` and `bash` found on `PATH`.
    pub interpreters: BTreeMap<Language, PathBuf>,
}

impl Code {
    /// Interpreter overrides from `SWITCHYARD_PYTHON`, `SWITCHYARD_NODE` and `SWITCHYARD_BASH`, as both shells
    /// read them.
    pub fn interpreters_from_env() -> BTreeMap<Language, PathBuf> {
        [
            (Language::Python, "SWITCHYARD_PYTHON"),
            (Language::JavaScript, "SWITCHYARD_NODE"),
            (Language::Bash, "SWITCHYARD_BASH"),
        ]
        .into_iter()
        .filter_map(|(language, var)| std::env::var_os(var).map(|path| (language, PathBuf::from(path))))
        .collect()
    }
}

/// What a code step runs.
#[derive(Debug, Clone)]
pub enum Body {
    /// A function body written in the node.
    Inline(String),
    /// A module file (JavaScript, or Python) whose default export (`run` in Python) is called, relative to the
    /// workflow's folder.
    Module(String),
}

/// One execution of a code step.
#[derive(Debug, Clone)]
pub struct Call {
    /// The node id, for messages and the file name in tracebacks.
    pub node: String,
    pub language: Language,
    pub body: Body,
    /// The names the code sees, each a parameter of the function the body is (and the keys of bash's stdin).
    pub names: Map<String, Value>,
    pub timeout: Duration,
    /// The step's idempotency key (`crate::journal::idempotency_key`), in the process's environment as
    /// [`IDEMPOTENCY_ENV`]: the same when the step runs again after a crash or a retry. Lua steps, which have no
    /// environment (and no way to change anything outside), do not see it.
    pub key: String,
}

/// The environment variable a code step reads its idempotency key from.
pub const IDEMPOTENCY_ENV: &str = "SWITCHYARD_IDEMPOTENCY_KEY";

/// Where a line the code printed came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// The `log` event type a printed line becomes.
    pub fn log_type(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// Receives what the code prints, a line at a time.
pub type Printer<'a> = &'a (dyn Fn(Stream, &str) + Send + Sync);

/// Why a code step did not produce an output. Every message says what happened and, where there is one, what to do.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CodeError {
    #[error("{language} is needed to run this step but `{program}` cannot be started ({reason}); {install}")]
    MissingInterpreter { language: Language, program: String, reason: String, install: &'static str },
    #[error("{0}")]
    Failed(String),
    #[error("stopped after {0} s (the node's timeout_seconds); the process and its children were killed")]
    TimedOut(u64),
    #[error("the step's output {0}")]
    BadOutput(String),
    #[error("the module `{module}` cannot be read from {dir}: {reason}")]
    Module { module: String, dir: String, reason: String },
}

/// The code steps of one run: warm workers per language, killed when the run ends.
pub struct CodeRunner {
    code: Code,
    /// The environment variables the workflow declares (`env:`); their values are read when a process starts.
    env: Vec<String>,
    idle: Mutex<Vec<Worker>>,
}

impl CodeRunner {
    pub fn new(code: Code, env: Vec<String>) -> CodeRunner {
        CodeRunner { code, env, idle: Mutex::new(Vec::new()) }
    }

    pub fn allowed(&self) -> bool {
        self.code.allowed
    }

    fn dir(&self) -> PathBuf {
        self.code.dir.clone().unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")))
    }

    fn environment(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = Vec::new();
        if let Some(path) = std::env::var_os("PATH") {
            env.push(("PATH".into(), path.to_string_lossy().into_owned()));
        }
        for name in &self.env {
            if let Ok(value) = std::env::var(name) {
                env.push((name.clone(), value));
            }
        }
        env
    }

    /// Runs one step. Dropping the returned future (a cancelled run) kills the step's process group.
    pub async fn run(&self, call: &Call, print: Printer<'_>) -> Result<Value, CodeError> {
        let output = match call.language {
            Language::Lua => {
                let Body::Inline(code) = &call.body else {
                    return Err(CodeError::Failed("a Lua step is written inline; modules are JavaScript".into()));
                };
                lua::run(&call.node, code, &call.names, call.timeout, print).await?
            }
            Language::Bash => {
                let Body::Inline(code) = &call.body else {
                    return Err(CodeError::Failed("a bash step is written inline; modules are JavaScript".into()));
                };
                let program = self.program(Language::Bash);
                let mut env = self.environment();
                env.push((IDEMPOTENCY_ENV.into(), call.key.clone()));
                worker::run_bash(&program, code, &call.names, &self.dir(), &env, call.timeout, print).await?
            }
            Language::Python | Language::JavaScript => {
                let request = self.request(call)?;
                let mut worker = match self.take_idle(call.language) {
                    Some(w) => w,
                    None => {
                        Worker::start(call.language, &self.program(call.language), &self.dir(), &self.environment())?
                    }
                };
                let answer = worker.call(&request, call.timeout, print).await;
                if worker.reusable() {
                    self.idle.lock().unwrap().push(worker);
                }
                answer?
            }
        };
        as_output(output)
    }

    fn program(&self, language: Language) -> PathBuf {
        self.code.interpreters.get(&language).cloned().unwrap_or_else(|| PathBuf::from(language.program()))
    }

    fn take_idle(&self, language: Language) -> Option<Worker> {
        let mut idle = self.idle.lock().unwrap();
        let at = idle.iter().position(|w| w.language() == language)?;
        Some(idle.swap_remove(at))
    }

    fn request(&self, call: &Call) -> Result<Value, CodeError> {
        let mut request = Map::new();
        request.insert("node".into(), Value::from(call.node.clone()));
        // A warm worker serves many steps: it sets the key in its environment for each (children it starts see it).
        request.insert("key".into(), Value::from(call.key.clone()));
        request.insert("names".into(), Value::Object(call.names.clone()));
        match &call.body {
            Body::Inline(code) => {
                request.insert("code".into(), Value::from(code.clone()));
            }
            Body::Module(module) => {
                let path = self.dir().join(module);
                if let Err(e) = std::fs::metadata(&path) {
                    return Err(CodeError::Module {
                        module: module.clone(),
                        dir: self.dir().display().to_string(),
                        reason: e.to_string(),
                    });
                }
                request.insert("module".into(), Value::from(path.display().to_string()));
            }
        }
        Ok(Value::Object(request))
    }
}

/// A step's returned value as a node output: an object as it is, nothing as `{}`, anything else as `{"result": …}`
/// (TEA's rule for Python and Lua bodies).
fn as_output(value: Value) -> Result<Value, CodeError> {
    Ok(match value {
        Value::Null => Value::Object(Map::new()),
        Value::Object(_) => value,
        // Lua cannot tell an empty table from an empty list.
        Value::Array(items) if items.is_empty() => Value::Object(Map::new()),
        other => Value::Object(Map::from_iter([("result".to_string(), other)])),
    })
}

/// A module path, as the consent fingerprint reads it.
pub(crate) fn module_path(dir: &Path, module: &str) -> PathBuf {
    dir.join(module)
}

/// How messages name a JSON value's kind.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
