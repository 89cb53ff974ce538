//! Recorded model calls (docs/evals.md, "Change-aware replay"): every model call is keyed by what determines it —
//! the node, the model, the prompts as rendered from the inputs the node saw, its output schema and tools (and for a
//! routing call, the choices and the route view). A call whose key was recorded is answered from the record instead
//! of the model; any other call goes to the model and is recorded. Editing one node's prompt therefore calls the
//! model for that node, and for the nodes whose prompts its new output changes, and for nothing else. Offline, a call
//! with no record fails the node, saying so.
//!
//! The record is a JSON file kept beside an evaluation file (`NAME.evals.calls.json`), sorted for stable diffs, meant
//! to be committed so CI replays at zero tokens. It holds what models answered, never keys or settings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::{ExecuteRequest, Model, ModelError, ModelOutput, NodeIo, RouteAnswer, RouteRequest};
use crate::result::Usage;

pub use crate::journal::Call;

/// Why a call was not answered from the record, for a person: shown on the node, in the case's report, and in the
/// error offline.
pub fn why_asked(calls: &Calls, node: &str, definition: Option<&str>) -> String {
    let known = calls.known.lock().unwrap();
    let mut same_node = known.values().filter(|c| c.node == node).peekable();
    if same_node.peek().is_none() {
        return "never recorded".into();
    }
    match definition {
        Some(d) if same_node.any(|c| c.definition.as_deref() == Some(d)) => "what reached it changed".into(),
        Some(_) => "its prompt, model, tools or schema changed".into(),
        None => "its prompt, inputs or model changed".into(),
    }
}

/// The log event type that says a node's model was asked because the record did not answer it, and why.
pub const ASKED_AGAIN: &str = "asked_again";

/// The record file's shape.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CallsFile {
    version: u32,
    calls: BTreeMap<String, Call>,
}

/// How many calls were answered how, and the tokens the record saved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallCounts {
    /// Calls that went to a model.
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub model_calls: u64,
    /// Calls answered from the record.
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub reused: u64,
    /// Tokens the reused calls used when they were recorded.
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub tokens_saved: u64,
}

/// Why the record of model calls could not be read or written, each with its stable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallsError {
    /// The file exists and cannot be read, or is not a record of calls (`CALLS_UNREADABLE`).
    #[error("{0}")]
    Unreadable(String),
    /// The record could not be written (`CALLS_UNWRITABLE`).
    #[error("{0}")]
    Unwritable(String),
}

impl CallsError {
    pub fn code(&self) -> &'static str {
        match self {
            CallsError::Unreadable(_) => "CALLS_UNREADABLE",
            CallsError::Unwritable(_) => "CALLS_UNWRITABLE",
        }
    }
}

/// The record of an evaluation file's model calls, shared by its cases.
pub struct Calls {
    path: PathBuf,
    known: Mutex<BTreeMap<String, Call>>,
    /// Keys answered in this session (from the record or a model): what is kept when the record is pruned.
    used: Mutex<BTreeSet<String>>,
    changed: AtomicBool,
    /// Whether recorded calls answer: not when they are only counted (`counting`).
    answers: bool,
    model_calls: AtomicU64,
    reused: AtomicU64,
    tokens_saved: AtomicU64,
}

impl Calls {
    /// The record at `path`; empty when the file does not exist.
    pub fn open(path: &Path) -> Result<Calls, CallsError> {
        let file: CallsFile = match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                CallsError::Unreadable(format!(
                    "{}: the recorded calls are not readable ({e}); delete the file to record them again",
                    path.display()
                ))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => CallsFile::default(),
            Err(e) => {
                return Err(CallsError::Unreadable(format!("{}: cannot read the recorded calls: {e}", path.display())))
            }
        };
        Ok(Calls::with(path.to_path_buf(), file.calls))
    }

    /// No record at all: every call is unrecorded, and nothing is ever saved.
    pub fn none() -> Calls {
        Calls::with(PathBuf::new(), BTreeMap::new())
    }

    /// Calls counted and never answered from a record, nor saved: each asks the model (`--repeat`, which asks
    /// whether the models agree with themselves).
    pub fn counting() -> Calls {
        Calls { answers: false, ..Calls::none() }
    }

    fn with(path: PathBuf, calls: BTreeMap<String, Call>) -> Calls {
        Calls {
            path,
            known: Mutex::new(calls),
            used: Mutex::default(),
            changed: AtomicBool::new(false),
            answers: true,
            model_calls: AtomicU64::new(0),
            reused: AtomicU64::new(0),
            tokens_saved: AtomicU64::new(0),
        }
    }

    pub fn counts(&self) -> CallCounts {
        CallCounts {
            model_calls: self.model_calls.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
            tokens_saved: self.tokens_saved.load(Ordering::Relaxed),
        }
    }

    /// Writes the record when a call was added; with `prune`, calls nobody asked for this time are dropped (every
    /// case ran, so they belong to prompts that no longer exist).
    pub fn save(&self, prune: bool) -> Result<bool, CallsError> {
        if !self.answers {
            return Ok(false);
        }
        let mut calls = self.known.lock().unwrap().clone();
        if prune {
            let used = self.used.lock().unwrap();
            let before = calls.len();
            calls.retain(|k, _| used.contains(k));
            if calls.len() != before {
                self.changed.store(true, Ordering::Relaxed);
            }
        }
        if !self.changed.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let mut text = serde_json::to_string_pretty(&CallsFile { version: 1, calls }).expect("calls are JSON");
        text.push('\n');
        std::fs::write(&self.path, text)
            .map_err(|e| CallsError::Unwritable(format!("cannot write {}: {e}", self.path.display())))?;
        Ok(true)
    }

    fn lookup(&self, key: &str) -> Option<Call> {
        if !self.answers {
            return None;
        }
        let found = self.known.lock().unwrap().get(key).cloned();
        if let Some(call) = &found {
            self.used.lock().unwrap().insert(key.to_string());
            self.reused.fetch_add(1, Ordering::Relaxed);
            let tokens = call.usage.as_ref().map_or(0, Usage::tokens);
            let _ = self
                .tokens_saved
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| Some(t.saturating_add(tokens)));
        }
        found
    }

    /// Adds calls a run made (`switchyard eval add`): a later evaluation answers them from the record. Returns how
    /// many were not recorded before.
    pub fn add(&self, calls: impl IntoIterator<Item = (String, Call)>) -> usize {
        let mut known = self.known.lock().unwrap();
        let mut added = 0;
        for (key, call) in calls {
            if known.insert(key, call).is_none() {
                added += 1;
            }
        }
        if added > 0 {
            self.changed.store(true, Ordering::Relaxed);
        }
        added
    }

    fn record(&self, key: String, call: Call) {
        self.model_calls.fetch_add(1, Ordering::Relaxed);
        self.used.lock().unwrap().insert(key.clone());
        self.known.lock().unwrap().insert(key, call);
        self.changed.store(true, Ordering::Relaxed);
    }
}

/// A model that answers from the record when it can. `inner` is the real model; `None` offline.
pub struct RecordedModel {
    pub calls: Arc<Calls>,
    pub inner: Option<Arc<dyn Model>>,
}

/// A call's key: the same digest the journal keeps of what a model turn asks.
fn key(what: Value) -> String {
    crate::journal::digest(&what)
}

/// The key of an agent's model call: what decides its answer. Written straight into the digest from the request's
/// parts (an evaluation that replays its calls takes one per model call): the same JSON, field for field, as the
/// object `{kind, node, model, system, prompt, context, schema, effort, tools, first_tool, call}` keys were always
/// the digest of, so records made before stay valid.
pub fn execute_key(r: &ExecuteRequest<'_>) -> String {
    // `E`: the request's reasoning effort, whatever type the model layer gives it.
    #[derive(Serialize)]
    struct Asked<'a, E> {
        kind: &'static str,
        node: &'a str,
        model: Option<&'a str>,
        system: &'a str,
        prompt: &'a str,
        context: Value,
        schema: Option<&'a Value>,
        effort: E,
        tools: Vec<(&'a str, &'a str, &'a Value)>,
        first_tool: Option<&'a str>,
        call: u32,
    }
    crate::journal::digest(&Asked {
        kind: "execute",
        node: r.node,
        model: r.model,
        system: r.system_prompt,
        prompt: r.prompt,
        // A plain instruction has the context appended by the provider: the context is an input too.
        context: if r.plain_instruction { r.scope.context_json() } else { Value::Null },
        schema: r.output_schema,
        effort: r.reasoning_effort,
        tools: r.tools.iter().map(|t| (t.name.as_str(), t.description.as_str(), &t.parameters)).collect(),
        first_tool: r.first_tool,
        call: r.call_index,
    })
}

/// The key of a routing call: what decides its choice.
pub fn route_key(r: &RouteRequest<'_>) -> String {
    key(json!({
        "kind": "route",
        "node": r.node,
        "model": r.model,
        "question": r.question,
        "context": r.context,
        "choices": r.choices,
        "visit": r.visit,
    }))
}

/// Offline, a call with no record fails its node, saying which of three it is: the node was never recorded, its call
/// changed since it was, or `--repeat` keeps the record from answering at all.
fn unrecorded(calls: &Calls, node: &str, definition: Option<&str>) -> ModelError {
    let message = if !calls.answers {
        format!(
            "no recorded call answers `{node}`: --repeat above 1 asks the models every time, and --offline calls no model; drop --repeat to replay the recorded calls, or --offline to ask the models"
        )
    } else {
        match why_asked(calls, node, definition).as_str() {
            "never recorded" => format!(
                "no recorded call for `{node}`: none was ever recorded for it, and --offline calls no model; run without --offline to record it"
            ),
            why => format!(
                "the call of `{node}` changed since it was recorded ({why}), and --offline calls no model; run without --offline to record it again"
            ),
        }
    };
    let mut e = ModelError::fatal(message);
    e.code = Some("OFFLINE_UNRECORDED");
    e
}

#[async_trait]
impl Model for RecordedModel {
    async fn execute(&self, request: &ExecuteRequest<'_>, io: &dyn NodeIo) -> Result<ModelOutput, ModelError> {
        // The repair turn of a schema mismatch goes to the model as it is: its answer is recorded under the first key.
        let key = execute_key(request);
        if let Some(call) = self.calls.lookup(&key) {
            if let Some(text) = &call.text {
                io.progress(text);
            }
            return Ok(ModelOutput { data: call.data, text: call.text, usage: None });
        }
        let Some(inner) = &self.inner else { return Err(unrecorded(&self.calls, request.node, request.definition)) };
        if self.calls.answers {
            io.note(ASKED_AGAIN, &why_asked(&self.calls, request.node, request.definition));
        }
        let output = inner.execute(request, io).await?;
        let call = Call {
            node: request.node.to_string(),
            data: output.data.clone(),
            text: output.text.clone(),
            choice: None,
            usage: output.usage.clone(),
            definition: request.definition.map(str::to_string),
        };
        self.calls.record(key, call);
        Ok(output)
    }

    async fn route(&self, request: &RouteRequest<'_>, io: &dyn NodeIo) -> Result<RouteAnswer, ModelError> {
        let key = route_key(request);
        if let Some(call) = self.calls.lookup(&key) {
            let choice = call.choice.unwrap_or_default();
            return Ok(RouteAnswer { choice, note: Some("recorded".into()), usage: None });
        }
        let Some(inner) = &self.inner else { return Err(unrecorded(&self.calls, request.node, None)) };
        if self.calls.answers {
            io.note(ASKED_AGAIN, &why_asked(&self.calls, request.node, None));
        }
        let answer = inner.route(request, io).await?;
        let call = Call {
            node: request.node.to_string(),
            data: None,
            text: None,
            choice: Some(answer.choice.clone()),
            usage: answer.usage.clone(),
            definition: None,
        };
        self.calls.record(key, call);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_a_call_with_no_record_says_whether_its_node_was_never_recorded_or_its_call_changed() {
        let known = BTreeMap::from([(
            "k1".to_string(),
            Call {
                node: "draft".into(),
                data: None,
                text: Some("ok".into()),
                choice: None,
                usage: None,
                definition: Some("d1".into()),
            },
        )]);
        let calls = Calls::with(PathBuf::from("x.evals.calls.json"), known);
        let changed = unrecorded(&calls, "draft", None);
        assert_eq!(changed.code, Some("OFFLINE_UNRECORDED"));
        assert!(changed.message.contains("the call of `draft` changed since it was recorded"), "{}", changed.message);
        assert!(changed.message.contains("run without --offline to record it again"), "{}", changed.message);
        // Whether the node was edited, or only what reached it changed: told apart by the node's definition.
        let edited = unrecorded(&calls, "draft", Some("d2"));
        assert!(edited.message.contains("(its prompt, model, tools or schema changed)"), "{}", edited.message);
        let fed = unrecorded(&calls, "draft", Some("d1"));
        assert!(fed.message.contains("(what reached it changed)"), "{}", fed.message);
        let never = unrecorded(&calls, "publish", Some("d1"));
        assert!(never.message.contains("no recorded call for `publish`: none was ever recorded"), "{}", never.message);
        assert!(!never.message.contains("changed"), "{}", never.message);
        let repeated = unrecorded(&Calls::counting(), "draft", None);
        assert!(repeated.message.contains("--repeat above 1") && repeated.message.contains("drop --repeat"));
    }

    #[test]
    fn a_calls_key_is_the_digest_of_the_object_records_were_always_keyed_by() {
        let scope = crate::template::Scope::new(json!({"topic": "disks"}));
        let schema = json!({"type": "object", "properties": {"n": {"type": "number"}}});
        let tools = [crate::model::ToolSpec {
            name: "s__find".into(),
            description: "Finds \"it\"".into(),
            parameters: json!({"type": "object"}),
        }];
        for plain_instruction in [false, true] {
            let request = ExecuteRequest {
                node: "draft",
                model: Some("local/m"),
                system_prompt: "Be brief.",
                prompt: "Write about é\n",
                scope: &scope,
                output_schema: Some(&schema),
                reasoning_effort: Some(crate::document::ReasoningEffort::High),
                tools: &tools,
                plain_instruction,
                call_index: 2,
                repair: None,
                first_tool: Some("s__find"),
                definition: None,
            };
            let before: Vec<Value> =
                request.tools.iter().map(|t| json!([t.name, t.description, t.parameters])).collect();
            let before = crate::journal::digest(&json!({
                "kind": "execute", "node": request.node, "model": request.model, "system": request.system_prompt,
                "prompt": request.prompt,
                "context": if plain_instruction { scope.context_json() } else { Value::Null },
                "schema": request.output_schema, "effort": request.reasoning_effort, "tools": before,
                "first_tool": request.first_tool, "call": request.call_index,
            }));
            assert_eq!(execute_key(&request), before, "plain instruction: {plain_instruction}");
        }
    }

    #[test]
    fn the_tokens_a_record_saved_stay_at_the_most_a_count_holds_when_its_calls_claim_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.evals.calls.json");
        let call =
            |node: &str| json!({"node": node, "text": "ok", "usage": {"inputTokens": u64::MAX, "outputTokens": 7}});
        let file = json!({"version": 1, "calls": {"k1": call("a"), "k2": call("b")}});
        std::fs::write(&path, file.to_string()).unwrap();
        let calls = Calls::open(&path).unwrap();
        assert!(calls.lookup("k1").is_some() && calls.lookup("k2").is_some());
        assert_eq!(calls.counts(), CallCounts { model_calls: 0, reused: 2, tokens_saved: u64::MAX });
    }
}
