//! Executing one agent or script node inside its own task: `for_each` items, retries of transient failures, the
//! output schema check with one repair turn, and subagents offered as tools. The scheduler owns all run state; this
//! code only reads a snapshot of the context and reports back.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};

use super::Shared;
use crate::answers::AnswerStatus;
use crate::code::{self, Body, Call, CodeError, Language};
use crate::document::{Node, NodeType, ToolApproval};
use crate::events::{EventKind, ToolRequest, Usage};
use crate::graph::NodeIx;
use crate::journal::{self, Entry, What};
use crate::model::{ExecuteRequest, ModelError, NodeIo, ToolSpec};
use crate::result::ToolCall;
use crate::template::{self, Scope};

/// What a node task reports back to the scheduler.
pub(crate) struct NodeOutcome {
    pub data: Result<Value, String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// The failure's code, when it has one (`ModelError::code`).
    pub code: Option<String>,
}

impl NodeOutcome {
    /// A node that completed with `data` without running a task (start, `if`, approvals, pinned outputs).
    pub fn data(data: Value) -> NodeOutcome {
        NodeOutcome { data: Ok(data), tool_calls: Vec::new(), usage: None, code: None }
    }

    /// A node task that did not complete: it panicked or was cancelled.
    pub fn failed(message: String) -> NodeOutcome {
        NodeOutcome { data: Err(message), tool_calls: Vec::new(), usage: None, code: None }
    }
}

/// Where a piece of a node task's work is, for its journal (`crate::journal`): the node's iteration, and the place
/// inside the task (`i2` for a `for_each` item, `c1/child` for a subagent asked by a tool call).
#[derive(Debug, Clone)]
pub(super) struct Place {
    iteration: u32,
    at: String,
}

impl Place {
    fn task(iteration: u32) -> Place {
        Place { iteration, at: String::new() }
    }

    /// `part` inside this place (`i2.t0`).
    fn within(&self, part: &str) -> String {
        if self.at.is_empty() {
            part.to_string()
        } else {
            format!("{}.{part}", self.at)
        }
    }

    fn item(&self, index: usize) -> Place {
        Place { iteration: self.iteration, at: self.within(&format!("i{index}")) }
    }

    /// A subagent's work, under the tool call at `call` that asked it.
    fn subagent(&self, call: &str, child: &str) -> Place {
        Place { iteration: self.iteration, at: format!("{call}/{child}") }
    }
}

/// Runs an agent or script node, with `for_each` when it has one.
pub(super) async fn execute(shared: Arc<Shared>, node: NodeIx, iteration: u32, scope: Scope) -> NodeOutcome {
    let n = &shared.workflow.nodes[node];
    let calls = Arc::new(Mutex::new(Vec::new()));
    let usage = Arc::new(Mutex::new(None::<Usage>));
    let place = Place::task(iteration);
    let data = match &n.for_each {
        None => execute_once(&shared, node, &scope, &calls, &usage, 0, &place).await,
        Some(for_each) => {
            let items = match template::evaluate(&for_each.items, &scope) {
                Ok(Value::Array(items)) => Ok(items),
                Ok(Value::Null) => Ok(Vec::new()),
                Ok(other) => Err(ModelError::fatal(format!(
                    "`for_each.items` ({}) gave {}, not a list",
                    for_each.items,
                    code::kind_of(&other)
                ))),
                Err(e) => {
                    Err(ModelError::fatal(format!("`for_each.items` ({}) could not be evaluated: {e}", for_each.items)))
                }
            };
            match items {
                Err(e) => Err(e),
                Ok(items) => {
                    let limit = for_each.concurrency.unwrap_or(1).max(1) as usize;
                    let runs = futures::stream::iter(items.into_iter().enumerate().map(|(index, item)| {
                        let mut scope = scope.clone();
                        scope.item = Some((item, index));
                        let (shared, calls, usage) = (&shared, &calls, &usage);
                        let place = place.item(index);
                        async move { execute_once(shared, node, &scope, calls, usage, 0, &place).await }
                    }))
                    .buffered(limit)
                    .collect::<Vec<_>>()
                    .await;
                    runs.into_iter().collect::<Result<Vec<Value>, ModelError>>().map(|items| json!({ "items": items }))
                }
            }
        }
    };
    let tool_calls = std::mem::take(&mut *calls.lock().unwrap());
    let usage = usage.lock().unwrap().take();
    let (data, code) = match data {
        Ok(data) => (Ok(data), None),
        Err(e) => (Err(e.message), e.code.map(str::to_string)),
    };
    NodeOutcome { data, tool_calls, usage, code }
}

type Calls = Arc<Mutex<Vec<ToolCall>>>;
type UsageCell = Arc<Mutex<Option<Usage>>>;

/// One execution of a node (one item of a `for_each`), with retries. `depth` > 0 for subagents.
fn execute_once<'a>(
    shared: &'a Arc<Shared>,
    node: NodeIx,
    scope: &'a Scope,
    calls: &'a Calls,
    usage: &'a UsageCell,
    depth: u32,
    place: &'a Place,
) -> BoxFuture<'a, Result<Value, ModelError>> {
    async move {
        let n = &shared.workflow.nodes[node];
        let retries = n.retry.as_ref().map_or(0, |r| r.max);
        let mut backoff = n.retry.as_ref().and_then(|r| r.backoff_ms).unwrap_or(0);
        let mut attempt = 0;
        loop {
            let result = match n.node_type {
                NodeType::Script => run_script(shared, node, scope, place).await,
                NodeType::Workflow => super::child::run_child(shared, node, scope, place.iteration).await,
                _ => run_agent(shared, node, scope, calls, usage, depth, place).await,
            };
            match result {
                Ok(data) => return Ok(data),
                Err(e) if e.retryable && attempt < retries => {
                    attempt += 1;
                    shared.llm_error(
                        node,
                        &format!("attempt {attempt} of {} failed: {}; retrying", retries + 1, e.message),
                    );
                    if backoff > 0 {
                        tokio::time::sleep(Duration::from_millis(backoff)).await;
                        backoff = backoff.saturating_mul(2);
                    }
                }
                Err(e) => {
                    shared.llm_error(node, &e.message);
                    return Err(e);
                }
            }
        }
    }
    .boxed()
}

/// A script node: an answers file's answer when it has one (a pinned output never gets here), else its code, run
/// with the user's consent (`crate::code`). Its idempotency key names its place as `s0` (`i2.s0` for a `for_each`
/// item): a step run again after a crash, or retried, has the same key.
async fn run_script(shared: &Arc<Shared>, node: NodeIx, scope: &Scope, place: &Place) -> Result<Value, ModelError> {
    let n = &shared.workflow.nodes[node];
    let call_index = shared.next_call(node);
    if let Some(answer) = shared.answers.as_ref().and_then(|s| s.answer(&n.id, call_index)) {
        if answer.status == AnswerStatus::Failed {
            return Err(ModelError::retryable(answer.error.clone().unwrap_or_else(|| "scripted failure".into())));
        }
        return Ok(match (&answer.data, &answer.text) {
            (Some(d), _) => d.clone(),
            (None, Some(t)) => json!({ "text": t }),
            (None, None) => json!({}),
        });
    }
    if n.language.as_deref() == Some("tea-action") {
        let action =
            n.code.as_deref().unwrap_or_default().lines().find_map(|l| l.strip_prefix("uses: ")).unwrap_or("?");
        return Err(ModelError::fatal(format!(
            "TEA action `{}` is not supported yet: pin this node's output or answer it from an answers file",
            action.trim()
        )));
    }
    let language = Language::parse(n.language.as_deref()).map_err(|e| ModelError::fatal(e.to_string()))?;
    let (body, text) = match (&n.module, &n.code) {
        (Some(module), _) => (Body::Module(module.clone()), ""),
        (None, Some(code)) => (Body::Inline(code.clone()), code.as_str()),
        (None, None) => {
            return Err(ModelError::fatal(format!(
                "script node `{}` has no code: write its code, name a module, or pin its output",
                n.id
            )))
        }
    };
    if !shared.code.allowed() {
        return Err(ModelError::fatal(format!(
            "code step `{}` ({language}) did not run: code from a workflow file runs only with your consent, given \
             for this run or recorded for this version of the workflow's code",
            n.id
        ))
        .with_code("CODE_NEEDS_CONSENT"));
    }
    let call = Call {
        node: n.id.clone(),
        language,
        body,
        names: code_names(shared, node, scope, text),
        timeout: n.timeout_seconds.map_or(code::DEFAULT_TIMEOUT, Duration::from_secs),
        key: journal::idempotency_key(shared.emitter.run_id(), &n.id, place.iteration, &place.within("s0")),
    };
    let print = |stream: code::Stream, line: &str| {
        shared.emitter.emit(EventKind::log(Some(&n.id), stream.log_type(), line.to_string()));
    };
    shared.code.run(&call, &print).await.map_err(|e| match e {
        CodeError::MissingInterpreter { .. } | CodeError::Module { .. } => ModelError::fatal(e.to_string()),
        e => ModelError::retryable(e.to_string()),
    })
}

/// What a code step sees (docs/formats.md): `state`, `input`, `context` (input and each completed node's output),
/// `item` and `index` inside a `for_each`, and `parallel_results` (one entry per node that led here: its id as
/// `branch`, its `output`, and the `state` with that output merged) when the code reads it — TEA's fan-in.
fn code_names(shared: &Shared, node: NodeIx, scope: &Scope, code: &str) -> serde_json::Map<String, Value> {
    let mut names = serde_json::Map::new();
    let state = scope.state_json();
    if code.contains("parallel_results") {
        // Each branch's state as TEA gives it: the state here, without what only the other branches wrote, with
        // this branch's output merged.
        let branches: Vec<(&String, &Arc<Value>)> = shared.topo.incoming[node]
            .iter()
            .filter_map(|&e| shared.topo.ends[e])
            .filter_map(|(from, _)| {
                let id = &shared.workflow.nodes[from].id;
                scope.results.get(id).map(|output| (id, output))
            })
            .collect();
        let written = |output: &Value| -> Vec<String> {
            output.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
        };
        let results: Vec<Value> = branches
            .iter()
            .map(|(id, output)| {
                let mut branch_state = state.clone();
                let own = written(output);
                if let Value::Object(merged) = &mut branch_state {
                    for (_, theirs) in branches.iter().filter(|(other, _)| other != id) {
                        for key in written(theirs).iter().filter(|k| !own.contains(k)) {
                            merged.remove(key);
                        }
                    }
                    if let Value::Object(mine) = &***output {
                        merged.extend(mine.iter().map(|(k, v)| (k.clone(), v.clone())));
                    }
                }
                json!({"branch": id, "output": ***output, "state": branch_state, "success": true, "error": null})
            })
            .collect();
        names.insert("parallel_results".into(), Value::Array(results));
    }
    names.insert("state".into(), state);
    names.insert("input".into(), (*scope.input).clone());
    names.insert("context".into(), scope.context_json());
    if let Some((item, index)) = &scope.item {
        names.insert("item".into(), item.clone());
        names.insert("index".into(), json!(index));
    }
    names
}

async fn run_agent(
    shared: &Arc<Shared>,
    node: NodeIx,
    scope: &Scope,
    calls: &Calls,
    usage: &UsageCell,
    depth: u32,
    place: &Place,
) -> Result<Value, ModelError> {
    let n = &shared.workflow.nodes[node];
    let system_prompt = match &n.system_prompt {
        Some(t) => template::render(t, scope).map_err(|e| ModelError::fatal(format!("system_prompt: {e}")))?,
        None => String::new(),
    };
    let prompt = render_prompt(n, scope).map_err(ModelError::fatal)?;
    let (tools, workflow_tools) = tool_specs(shared, node).await;
    let first_tool = first_tool(shared, node, &tools);
    let io = AgentIo {
        shared: shared.clone(),
        node,
        workflow_tools,
        scope: scope.clone(),
        calls: calls.clone(),
        usage: usage.clone(),
        depth,
        place: place.clone(),
        turns: AtomicU32::new(0),
        tool_calls: AtomicU32::new(0),
        forked: Mutex::new(None),
    };
    let model = model_for(n.model.as_deref(), shared.default_model.as_deref(), scope)?;
    let model_ref = model.as_deref();
    let tool_names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let definition = journal::digest(&json!({
        "system": n.system_prompt, "prompt": n.user_prompt, "model": model_ref, "schema": n.output_schema,
        "effort": n.reasoning_effort, "tools": tool_names, "first": first_tool,
    }));
    let mut repair: Option<String> = None;
    loop {
        let request = ExecuteRequest {
            node: &n.id,
            model: model_ref,
            system_prompt: &system_prompt,
            prompt: &prompt,
            scope,
            output_schema: n.output_schema.as_ref(),
            reasoning_effort: n.reasoning_effort,
            tools: &tools,
            plain_instruction: n
                .user_prompt
                .as_deref()
                .is_some_and(|p| !p.trim().is_empty() && !template::is_template(p)),
            call_index: shared.next_call(node),
            repair: repair.as_deref(),
            // Only the first model call of the node's execution is forced, not the repair turn.
            first_tool: first_tool.as_deref().filter(|_| repair.is_none()),
            definition: Some(&definition),
        };
        let output = match shared.model.execute(&request, &io).await {
            // A fork's answer at this turn is the model's answer: the conversation ends with it.
            Err(_) if io.forked.lock().unwrap().is_some() => {
                let text = io.forked.lock().unwrap().take().unwrap_or_default();
                return super::reuse::answer_data(&text, n.output_schema.is_some()).map_err(ModelError::fatal);
            }
            other => other?,
        };
        // A run on a model keeps each call under the key evaluations record calls by (`journal::What::Asked`);
        // a run with no log (an evaluation's case) has nowhere to keep it, and does not compute it.
        if shared.answers.is_none() && shared.emitter.keeps_journal() {
            let call = crate::recorded::Call {
                node: n.id.clone(),
                data: output.data.clone(),
                text: output.text.clone(),
                choice: None,
                usage: output.usage.clone(),
                definition: Some(definition.clone()),
            };
            let key = crate::recorded::execute_key(&request);
            let at = place.within(&format!("x{}", request.call_index));
            io.journal(at, What::Asked { key, call }).await;
        }
        if let Some(u) = &output.usage {
            let mut cell = usage.lock().unwrap();
            cell.get_or_insert_with(Usage::default).add(u);
        }
        let Some(schema) = &n.output_schema else {
            if let Some(text) = &output.text {
                shared.emitter.emit(EventKind::log(Some(&n.id), "llm_response", text.clone()));
            }
            return Ok(match (output.data, output.text) {
                (Some(data), _) => data,
                (None, text) => json!({ "text": text.unwrap_or_default() }),
            });
        };
        let data = match (output.data, output.text) {
            (Some(d), _) => Ok(d),
            (None, Some(t)) => serde_json::from_str::<Value>(&t).map_err(|e| format!("the answer is not JSON: {e}")),
            (None, None) => Err("the answer is empty".to_string()),
        };
        let problem = match data {
            Ok(data) => match schema_errors(schema, &data) {
                None => return Ok(data),
                Some(problem) => problem,
            },
            Err(problem) => problem,
        };
        if repair.is_some() {
            return Err(ModelError::fatal(format!(
                "the answer does not match the output schema, even after one repair turn: {problem}"
            )));
        }
        shared.emitter.emit(EventKind::NodeWarning {
            node: n.id.clone(),
            message: format!("the answer does not match the output schema ({problem}); asking the model to repair it"),
        });
        repair = Some(problem);
    }
}

fn render_prompt(n: &Node, scope: &Scope) -> Result<String, String> {
    match n.user_prompt.as_deref() {
        Some(p) if !p.trim().is_empty() => template::render(p, scope).map_err(|e| format!("user_prompt: {e}")),
        _ => Ok(scope.previous_output.to_string()),
    }
}

/// The instruction shown in `node:enter`: the rendered prompt, or the template when it cannot be rendered yet.
pub(super) fn instruction(n: &Node, scope: &Scope) -> String {
    match n.node_type {
        NodeType::Agent if n.for_each.is_none() => {
            render_prompt(n, scope).unwrap_or_else(|_| n.user_prompt.clone().unwrap_or_default())
        }
        NodeType::Agent => n.user_prompt.clone().unwrap_or_default(),
        NodeType::Approval => n.message.clone().unwrap_or_default(),
        NodeType::Script => n.code.clone().unwrap_or_default(),
        NodeType::Workflow => n.workflow.clone().unwrap_or_default(),
        _ => String::new(),
    }
}

fn schema_errors(schema: &Value, data: &Value) -> Option<String> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => return Some(format!("the output schema itself is invalid: {e}")),
    };
    let errors: Vec<String> = validator
        .iter_errors(data)
        .take(3)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("{path}: {e}")
            }
        })
        .collect();
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// The tools an agent offers the model: web search, its subagents, the MCP tools its `tools.mcp` names (each as
/// `server__tool`, with the server's description and input schema untouched), and the workflows its
/// `tools.workflows` lists (each under its workflow's tool name, with its input schema), with which file each of
/// those names. A server that is not configured or does not start, or a workflow that cannot be read, leaves the
/// agent without that tool, with a warning on the node.
async fn tool_specs(shared: &Shared, node: NodeIx) -> (Vec<ToolSpec>, Vec<(String, String)>) {
    let n = &shared.workflow.nodes[node];
    let mut tools = Vec::new();
    let mut workflow_tools = Vec::new();
    for entry in n.tools.iter().flat_map(|t| t.mcp.iter()) {
        match shared.mcp.tools_for(entry).await {
            Ok(found) => {
                tools.extend(found.into_iter().filter(|(server, tool)| !denied(n, Some(server), &tool.name)).map(
                    |(server, tool)| ToolSpec {
                        name: crate::mcp::exposed_name(&server, &tool.name),
                        description: tool.description,
                        parameters: tool.input_schema,
                    },
                ))
            }
            Err(e) => shared.emitter.emit(EventKind::NodeWarning {
                node: n.id.clone(),
                message: format!("{e}; the agent runs without `{entry}`"),
            }),
        }
    }
    if n.tools.as_ref().is_some_and(|t| t.web_search) && !denied(n, None, "web_search") {
        tools.push(ToolSpec {
            name: "web_search".into(),
            description: "Search the web (provided by the model's provider).".into(),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
        });
    }
    if n.subagents_enabled() {
        for &child in &shared.topo.subagents[node] {
            let c = &shared.workflow.nodes[child];
            if denied(n, None, &c.id) {
                continue;
            }
            tools.push(ToolSpec {
                name: c.id.clone(),
                description: c
                    .description
                    .clone()
                    .or_else(|| c.name.clone())
                    .unwrap_or_else(|| format!("Ask the `{}` agent.", c.id)),
                parameters: json!({
                    "type": "object",
                    "properties": {"message": {"type": "string", "description": "What to ask the subagent."}},
                    "required": ["message"]
                }),
            });
        }
    }
    for written in n.tools.iter().flat_map(|t| t.workflows.iter()) {
        let Some(children) = &shared.children else { break };
        match children.tool(written).await {
            Ok(tool) if !denied(n, None, &tool.name) => {
                workflow_tools.push((tool.name.clone(), written.clone()));
                tools.push(ToolSpec { name: tool.name, description: tool.description, parameters: tool.parameters });
            }
            Ok(_) => {}
            Err(e) => shared.emitter.emit(EventKind::NodeWarning {
                node: n.id.clone(),
                message: format!("{}; the agent runs without `{written}`", e.message),
            }),
        }
    }
    (tools, workflow_tools)
}

/// Whether the agent's `tools.deny` names this tool: it is never offered, and a call of it is refused.
fn denied(n: &crate::document::Node, server: Option<&str>, tool: &str) -> bool {
    n.tools.as_ref().is_some_and(|t| t.denies(server, tool))
}

/// The tool the agent's `tools.call_first` names, as the model sees it; a warning on the node when the agent is not
/// offered that tool (its server did not start), and the model then chooses freely.
fn first_tool(shared: &Shared, node: NodeIx, tools: &[ToolSpec]) -> Option<String> {
    let n = &shared.workflow.nodes[node];
    let entry = n.tools.as_ref()?.call_first.as_deref()?;
    let name = match entry.split_once('/') {
        Some((server, tool)) => crate::mcp::exposed_name(server, tool),
        None => entry.to_string(),
    };
    if tools.iter().any(|t| t.name == name) {
        return Some(name);
    }
    shared.emitter.emit(EventKind::NodeWarning {
        node: n.id.clone(),
        message: format!(
            "`call_first: {entry}` names a tool the agent does not have in this run; the model chooses freely"
        ),
    });
    None
}

static CALL_IDS: AtomicU64 = AtomicU64::new(1);

tokio::task_local! {
    /// The id of the subagent call the current code runs inside, for `parentCallId`.
    static PARENT_CALL: Option<String>;
}

struct AgentIo {
    shared: Arc<Shared>,
    node: NodeIx,
    /// The workflows offered as tools: (tool name, file as `tools.workflows` writes it).
    workflow_tools: Vec<(String, String)>,
    scope: Scope,
    calls: Calls,
    usage: UsageCell,
    depth: u32,
    place: Place,
    /// Model turns taken so far, and tool calls made so far, in this execution: where the next one is journaled.
    turns: AtomicU32,
    tool_calls: AtomicU32,
    /// The answer a fork gave at the turn reached (`journal::What::Said`): the conversation ends there with it.
    forked: Mutex<Option<String>>,
}

impl AgentIo {
    fn node_id(&self) -> &str {
        &self.shared.workflow.nodes[self.node].id
    }

    /// The idempotency key of the tool call at `at`: the same when the call is made again after a crash.
    fn key(&self, at: &str) -> String {
        journal::idempotency_key(self.shared.emitter.run_id(), self.node_id(), self.place.iteration, at)
    }

    /// Keeps what happened at `at` in the run log, and returns once it is there.
    async fn journal(&self, at: String, what: What) {
        let entry = Entry { node: self.node_id().to_string(), iteration: self.place.iteration, at, what };
        self.shared.emitter.journal(entry).await;
    }

    /// When the agent's `tools.approval` asks for it, waits for a decision on the call; `Some` with what the model
    /// is told when it is rejected.
    async fn approval(&self, tool: &str, server: &str, name: &str, input: &Value) -> Option<String> {
        let n = &self.shared.workflow.nodes[self.node];
        let needed = match n.tools.as_ref().and_then(|t| t.approval) {
            None => false,
            Some(ToolApproval::All) => true,
            // A tool the server did not list is treated as one that may change things.
            Some(ToolApproval::Destructive) => self.shared.mcp.tool(server, name).await.is_none_or(|t| t.destructive),
        };
        if !needed {
            return None;
        }
        let request = ToolRequest { tool: tool.to_string(), input: input.clone() };
        let decision = self.shared.approve_tool(self.node, request).await;
        (decision.verdict != crate::result::Verdict::Approve).then(|| match decision.note.as_str() {
            "" => "rejected by the user".to_string(),
            note => format!("rejected by the user: {note}"),
        })
    }
}

#[async_trait]
impl NodeIo for AgentIo {
    fn progress(&self, text: &str) {
        self.shared.emitter.emit(EventKind::NodeProgress {
            node: self.shared.workflow.nodes[self.node].id.clone(),
            message: text.to_string(),
        });
    }

    fn retry_notice(&self, message: &str) {
        self.shared.llm_error(self.node, message);
    }

    fn note(&self, kind: &str, message: &str) {
        self.shared.note(self.node, kind, message);
    }

    async fn turn(&self, asked: &Value, call: BoxFuture<'_, Result<Value, ModelError>>) -> Result<Value, ModelError> {
        let at = self.place.within(&format!("t{}", self.turns.fetch_add(1, Ordering::Relaxed)));
        if let Some(text) = self.shared.journal.said(self.node_id(), self.place.iteration, &at) {
            self.note(
                "forked",
                &format!("turn {} is the answer given for this fork", self.turns.load(Ordering::Relaxed)),
            );
            *self.forked.lock().unwrap() = Some(text);
            return Err(ModelError::fatal("the conversation ends here with the answer given for this fork"));
        }
        let asked = journal::digest(asked);
        if let Some(answer) = self.shared.journal.turn(self.node_id(), self.place.iteration, &at, &asked) {
            return Ok(answer);
        }
        // A cancelled run's agent asks nothing more (its task runs on when it has child runs to cancel).
        let answer = tokio::select! {
            answer = call => answer?,
            _ = self.shared.cancel.cancelled() => return Err(ModelError::fatal("cancelled")),
        };
        self.journal(at, What::Turn { asked, answer: answer.clone() }).await;
        Ok(answer)
    }

    async fn call_tool(&self, tool: &str, input: Value) -> Result<Value, String> {
        let at = self.place.within(&format!("c{}", self.tool_calls.fetch_add(1, Ordering::Relaxed)));
        // Made before the process that runs this died: what it returned, without calling it again.
        let result = match self.shared.journal.tool(self.node_id(), self.place.iteration, &at, tool, &input) {
            Some(result) => result,
            None => {
                let result = self.call_tool_live(tool, input.clone(), &at).await;
                let what = What::Tool { tool: tool.to_string(), arguments: input.clone(), output: result.clone() };
                self.journal(at, what).await;
                result
            }
        };
        // The node lists every call it made, in this process or before it.
        self.calls.lock().unwrap().push(ToolCall {
            tool: tool.to_string(),
            input,
            output: result.as_ref().ok().cloned(),
            error: result.as_ref().err().cloned(),
        });
        result
    }
}

impl AgentIo {
    /// Calls a tool for real (it was not journaled): `at` is where, for its idempotency key and a subagent's place.
    async fn call_tool_live(&self, tool: &str, input: Value, at: &str) -> Result<Value, String> {
        let shared = &self.shared;
        let parent = &shared.workflow.nodes[self.node];
        let call_id = format!("call_{}", CALL_IDS.fetch_add(1, Ordering::Relaxed));
        shared.emitter.emit(EventKind::ToolCall {
            node: parent.id.clone(),
            tool: tool.to_string(),
            input: input.clone(),
            call_id: call_id.clone(),
        });
        let child = parent
            .subagents_enabled()
            .then(|| shared.topo.subagents[self.node].iter().copied().find(|&c| shared.workflow.nodes[c].id == tool))
            .flatten();
        let workflow = child
            .is_none()
            .then(|| self.workflow_tools.iter().find(|(name, _)| name == tool))
            .flatten()
            .map(|(_, w)| w);
        let mcp_tool = crate::mcp::split_name(tool)
            .filter(|(server, _)| child.is_none() && workflow.is_none() && shared.mcp.is_configured(server));
        // Denied whether or not its server is configured: tools.deny is said before "has no tool".
        let is_denied = match (child, crate::mcp::split_name(tool)) {
            (None, Some((server, name))) => denied(parent, Some(server), name),
            _ => denied(parent, None, tool),
        };
        let result = match child {
            _ if is_denied => Err(format!("`{}` may not call `{tool}`: its tools.deny names it", parent.id)),
            None if workflow.is_some() => {
                let written = workflow.expect("checked");
                super::child::run_tool(shared, self.node, self.place.iteration, at, written, input.clone()).await
            }
            None if mcp_tool.is_some() => {
                let (server, name) = mcp_tool.expect("checked");
                match self.approval(tool, server, name, &input).await {
                    Some(rejected) => Err(rejected),
                    None => match shared.mcp.call(server, name, input.clone(), Some(&self.key(at))).await {
                        // A tool's own error goes back to the model as the tool's result (SEMANTICS §4).
                        Ok(result) => result,
                        Err(e) => Err(e.to_string()),
                    },
                }
            }
            None if tool == "web_search" => {
                Err("web_search is provided by the model's provider; this model has none".to_string())
            }
            None => Err(format!("`{}` has no tool named `{tool}`", parent.id)),
            Some(child) => {
                let parent_call = PARENT_CALL.try_with(Clone::clone).ok().flatten();
                let payload = |extra: Option<(&str, Value)>| {
                    let mut p = json!({
                        "parent": parent.id, "child": tool, "callId": call_id,
                        "parentCallId": parent_call, "depth": self.depth + 1,
                    });
                    if let Some((k, v)) = extra {
                        p[k] = v;
                    }
                    p
                };
                shared.emitter.emit(EventKind::log(Some(&parent.id), "subagent_call_start", payload(None)));
                let message = input
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| input.to_string());
                let mut scope = self.scope.clone();
                scope.previous_output = Arc::from(message.as_str());
                // The child's own tool calls are its business: the parent lists only the calls it made.
                let child_calls = Calls::default();
                let result = PARENT_CALL
                    .scope(
                        Some(call_id.clone()),
                        execute_once(
                            shared,
                            child,
                            &scope,
                            &child_calls,
                            &self.usage,
                            self.depth + 1,
                            &self.place.subagent(at, &shared.workflow.nodes[child].id),
                        ),
                    )
                    .await
                    .map_err(|e| e.message);
                match &result {
                    Ok(data) => shared.emitter.emit(EventKind::log(
                        Some(&parent.id),
                        "subagent_call_end",
                        payload(Some(("output", data.clone()))),
                    )),
                    Err(e) => shared.emitter.emit(EventKind::log(
                        Some(&parent.id),
                        "subagent_call_error",
                        payload(Some(("error", json!(e)))),
                    )),
                }
                result.map(|data| match data.get("text") {
                    Some(text) if data.as_object().is_some_and(|o| o.len() == 1) => text.clone(),
                    _ => data,
                })
            }
        };
        let (output, error) = match &result {
            Ok(v) => (v.clone(), None),
            Err(e) => (Value::Null, Some(e.clone())),
        };
        shared.emitter.emit(EventKind::ToolResult {
            node: parent.id.clone(),
            tool: tool.to_string(),
            output,
            call_id,
            error,
        });
        result
    }
}

/// The node's model: a templated name (`{{ state.model }}`, `openai/{{ state.size }}`) is rendered over the node's
/// scope when it runs; a rendered name without a provider uses the run's default model, as a plain one does on import.
fn model_for(named: Option<&str>, default: Option<&str>, scope: &Scope) -> Result<Option<String>, ModelError> {
    let Some(named) = named else { return Ok(default.map(str::to_string)) };
    if !template::is_template(named) {
        return Ok(Some(named.to_string()));
    }
    let rendered = template::render(named, scope).map_err(|e| ModelError::fatal(format!("model: {e}")))?;
    let rendered = rendered.trim();
    if rendered.is_empty() || !rendered.contains('/') {
        return Ok(default.map(str::to_string));
    }
    Ok(Some(rendered.to_string()))
}
