//! Lua steps (TEA `language: lua`), run inside Switchyard in a fresh, sandboxed interpreter per step: only the
//! `string`, `table`, `math`, `utf8` and `coroutine` libraries (no files, processes or modules), the names as
//! globals, `print` going to the node's log, and an instruction hook that stops the step at its timeout or when the
//! run is cancelled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{HookTriggers, Lua, LuaOptions, LuaSerdeExt, StdLib, VmState};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::{CodeError, Printer, Stream};

/// Most memory one Lua step may use.
const MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// Sets the flag when dropped: the step's future went away (a cancelled run), so the interpreter stops.
struct Cancel(Arc<AtomicBool>);

impl Drop for Cancel {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

pub(super) async fn run(
    node: &str,
    code: &str,
    names: &Map<String, Value>,
    timeout: Duration,
    print: Printer<'_>,
) -> Result<Value, CodeError> {
    let cancelled = Arc::new(AtomicBool::new(false));
    let _cancel = Cancel(cancelled.clone());
    let (lines, mut printed) = mpsc::unbounded_channel::<String>();
    let (node, code, names) = (node.to_string(), code.to_string(), names.clone());
    let mut step = tokio::task::spawn_blocking(move || execute(&node, &code, &names, timeout, &cancelled, lines));
    loop {
        tokio::select! {
            Some(line) = printed.recv() => print(Stream::Stdout, &line),
            result = &mut step => {
                while let Ok(line) = printed.try_recv() {
                    print(Stream::Stdout, &line);
                }
                return result.map_err(|e| CodeError::Failed(format!("the Lua step stopped: {e}")))?;
            }
        }
    }
}

fn execute(
    node: &str,
    code: &str,
    names: &Map<String, Value>,
    timeout: Duration,
    cancelled: &Arc<AtomicBool>,
    lines: mpsc::UnboundedSender<String>,
) -> Result<Value, CodeError> {
    let failed = |e: mlua::Error| CodeError::Failed(describe(e));
    let libraries = StdLib::STRING | StdLib::TABLE | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE;
    let lua = Lua::new_with(libraries, LuaOptions::default()).map_err(failed)?;
    lua.set_memory_limit(MEMORY_LIMIT).map_err(failed)?;
    let globals = lua.globals();
    for (name, value) in names {
        globals.set(name.as_str(), lua.to_value(value).map_err(failed)?).map_err(failed)?;
    }
    let print_fn = lua
        .create_function(move |_, values: mlua::Variadic<mlua::Value>| {
            let parts: Vec<String> =
                values.iter().map(|v| v.to_string().unwrap_or_else(|_| format!("{v:?}"))).collect();
            let _ = lines.send(parts.join("\t"));
            Ok(())
        })
        .map_err(failed)?;
    globals.set("print", print_fn).map_err(failed)?;
    let deadline = Instant::now() + timeout;
    let timed_out = Arc::new(AtomicBool::new(false));
    let (cancel, late) = (cancelled.clone(), timed_out.clone());
    lua.set_hook(HookTriggers::new().every_nth_instruction(1000), move |_, _| {
        if cancel.load(Ordering::Relaxed) {
            return Err(mlua::Error::runtime("the run was cancelled"));
        }
        if Instant::now() >= deadline {
            late.store(true, Ordering::Relaxed);
            return Err(mlua::Error::runtime("timed out"));
        }
        Ok(VmState::Continue)
    })
    .map_err(failed)?;
    let result = lua.load(code).set_name(format!("={node}")).eval::<mlua::Value>();
    if timed_out.load(Ordering::Relaxed) {
        return Err(CodeError::TimedOut(timeout.as_secs()));
    }
    let value = result.map_err(failed)?;
    lua.from_value::<Value>(value).map_err(|e| CodeError::BadOutput(format!("cannot be read as data: {}", describe(e))))
}

/// A Lua error as one line: the innermost message with its `node:line:` prefix.
fn describe(error: mlua::Error) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => describe((*cause).clone()),
        mlua::Error::RuntimeError(message) | mlua::Error::SyntaxError { message, .. } => {
            message.lines().next().unwrap_or_default().to_string()
        }
        mlua::Error::MemoryError(_) => format!("the step used more than {} MB", MEMORY_LIMIT >> 20),
        other => other.to_string(),
    }
}
