//! A `workflow` node's task (docs/subworkflows.md): it renders the child run's input and asks whoever runs child
//! workflows for this run (`Runtime::children`: the session, which knows files and the run store) to run the child
//! to its end. The child is a run of its own, through the one way into a run; this module knows nothing of files or
//! stores. What the child emits comes back here and goes into this run's stream as `child_event` log events, marked
//! with the child's run and its path; an approval the child waits for becomes a pending approval of this node (the
//! tool-call approval machinery: `Shared::approve_tool`), decided from here. An agent's workflow tool
//! (`tools.workflows`) is a child run the same way, asked for by a tool call (`run_tool`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::Shared;
use crate::events::{Event, EventKind, ToolRequest};
use crate::graph::NodeIx;
use crate::model::ModelError;
use crate::result::Decision;
use crate::template::{self, Scope};

/// The log type of an event of a child run carried in its parent's stream.
pub const CHILD_EVENT: &str = "child_event";

/// How a path names a child's node inside its parent's: `summarize › review`.
pub const PATH_SEPARATOR: &str = " › ";

/// One child run a `workflow` node asks for: where it is in its parent (run, node, iteration, `for_each` item), the
/// child workflow as the node names it, and its input.
#[derive(Debug, Clone)]
pub struct ChildCall {
    pub parent_run: String,
    pub node: String,
    pub iteration: u32,
    pub item: Option<usize>,
    /// The child workflow's file as the node writes it (relative to the parent's file).
    pub workflow: String,
    /// The child run's input; for a tool call, the arguments the model gave (`Children::run` makes them the input
    /// as the workflow served as a tool takes them).
    pub input: Value,
    /// Where in the agent's conversation the tool call that asked for it is (`c0`, `i2.c1`); none for a `workflow`
    /// node's child.
    pub call: Option<String>,
}

/// Where a child run is in its parent: kept with the child run (`RunOptions::parent`), and what its id is made from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentLink {
    pub run: String,
    pub node: String,
    pub iteration: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<usize>,
    /// The agent's tool call that asked for the child (a workflow offered as a tool, `tools.workflows`): where in
    /// its conversation it is, as the journal names it (`c0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
}

impl ChildCall {
    pub fn link(&self) -> ParentLink {
        ParentLink {
            run: self.parent_run.clone(),
            node: self.node.clone(),
            iteration: self.iteration,
            item: self.item,
            call: self.call.clone(),
        }
    }
}

/// A child workflow as an agent's model is offered it (`tools.workflows`): its tool name, what it does, and the
/// arguments it takes (its `input_schema`, or `{message}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ChildTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Why a child run gave no output: its message, and a stable code when it has one.
#[derive(Debug, Clone)]
pub struct ChildFailed {
    pub message: String,
    pub code: Option<&'static str>,
}

impl ChildFailed {
    pub fn new(message: impl Into<String>, code: Option<&'static str>) -> ChildFailed {
        ChildFailed { message: message.into(), code }
    }
}

/// What a child run may do in its parent while it runs: show its events, wait for a person's decision, and learn
/// that the parent was cancelled.
#[async_trait]
pub trait ChildIo: Send + Sync {
    /// An event of the child run, as the child's own stream has it (a grandchild's events come as the child's
    /// `child_event` logs).
    fn event(&self, event: &Event);
    /// The child waits for a decision: `request` names the waiting node by its path inside the child (`review`,
    /// `inner › review`); returns the decision, taken in the parent.
    async fn decide(&self, request: ToolRequest) -> Decision;
    /// Completes when the parent run is cancelled: the child is cancelled then.
    async fn cancelled(&self);
}

/// Runs child workflows for a run's `workflow` nodes (the session's, over the run store).
#[async_trait]
pub trait Children: Send + Sync {
    /// Runs the child to its end (or takes up the child run this call made before, found by its link), and returns
    /// its output: what the child returns (its end node's data).
    async fn run(&self, call: ChildCall, io: Arc<dyn ChildIo>) -> Result<Value, ChildFailed>;
    /// The child workflow `workflow` (relative to the parent's file) as a tool an agent's model is offered.
    async fn tool(&self, workflow: &str) -> Result<ChildTool, ChildFailed>;
}

/// A `workflow` node's task (one item of its `for_each`).
pub(super) async fn run_child(
    shared: &Arc<Shared>,
    node: NodeIx,
    scope: &Scope,
    iteration: u32,
) -> Result<Value, ModelError> {
    let n = &shared.workflow.nodes[node];
    let Some(children) = shared.children.clone() else {
        return Err(ModelError::fatal(format!(
            "workflow node `{}` did not run: this run was started without a session, which runs child workflows",
            n.id
        ))
        .with_code("CHILD_NOT_RUNNABLE"));
    };
    let input = child_input(n.input.as_ref(), scope).map_err(ModelError::fatal)?;
    let item = scope.item.as_ref().map(|(_, index)| *index);
    let call = ChildCall {
        parent_run: shared.emitter.run_id().to_string(),
        node: n.id.clone(),
        iteration,
        item,
        workflow: n.workflow.clone().unwrap_or_default(),
        input,
        call: None,
    };
    let io = Arc::new(Io { shared: shared.clone(), node, item });
    children.run(call, io).await.map_err(|f| {
        let e = ModelError::fatal(f.message);
        match f.code {
            Some(code) => e.with_code(code),
            None => e,
        }
    })
}

/// A tool call of an agent (`node`) that runs the workflow `workflow` (one of its `tools.workflows`) as a child run
/// of its own: `at` is where the call is in the agent's conversation, so that the same call after a crash takes up
/// the same child. The child's events go into this run's stream under the agent's path, and a decision it waits
/// for is asked of this agent, as a `workflow` node's child's is. Its output is the tool's result; a child that did
/// not complete is the tool's error, for the model to read.
pub(super) async fn run_tool(
    shared: &Arc<Shared>,
    node: NodeIx,
    iteration: u32,
    at: &str,
    workflow: &str,
    arguments: Value,
) -> Result<Value, String> {
    let n = &shared.workflow.nodes[node];
    let Some(children) = shared.children.clone() else {
        return Err(format!(
            "`{workflow}` did not run: this run was started without a session, which runs child workflows"
        ));
    };
    let call = ChildCall {
        parent_run: shared.emitter.run_id().to_string(),
        node: n.id.clone(),
        iteration,
        item: None,
        workflow: workflow.to_string(),
        input: arguments,
        call: Some(at.to_string()),
    };
    let io = Arc::new(Io { shared: shared.clone(), node, item: None });
    children.run(call, io).await.map_err(|f| match f.code {
        Some(code) => format!("{} [{code}]", f.message),
        None => f.message,
    })
}

/// The child run's input: the node's `input` rendered field by field (a value that is one `{{ expression }}` gives
/// the expression's value), or, without `input`, the previous output.
pub(super) fn child_input(input: Option<&indexmap::IndexMap<String, Value>>, scope: &Scope) -> Result<Value, String> {
    let Some(fields) = input else { return Ok(Value::String(scope.previous_output.to_string())) };
    let mut out = Map::new();
    for (key, value) in fields {
        let rendered = match value {
            Value::String(text) => match single_expression(text) {
                Some(expression) => template::evaluate(expression, scope)
                    .map_err(|e| format!("`input.{key}` ({text}) could not be evaluated: {e}"))?,
                None => Value::String(
                    template::render(text, scope).map_err(|e| format!("`input.{key}` could not be rendered: {e}"))?,
                ),
            },
            other => other.clone(),
        };
        out.insert(key.clone(), rendered);
    }
    Ok(Value::Object(out))
}

/// The expression of a template that is one `{{ … }}` and nothing else.
fn single_expression(text: &str) -> Option<&str> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?;
    (!inner.contains("{{") && !inner.contains("}}")).then_some(inner.trim())
}

/// What a child's stream item says in its parent's: the child's run, its path (this node, then the child's nodes
/// for a grandchild's events), the `for_each` item, and the event as the child run has it.
pub fn child_event(node: &str, item: Option<usize>, event: &Event) -> Value {
    // A grandchild's event, carried in the child's stream: carried on flat, its path longer by this node.
    if let EventKind::Log { log_type, content, .. } = &event.kind {
        if log_type == CHILD_EVENT {
            let mut content = content.clone();
            let inner = content["path"].as_str().unwrap_or_default().to_string();
            content["path"] = json!(format!("{}{PATH_SEPARATOR}{inner}", path_of(node, item)));
            return content;
        }
    }
    json!({"childRun": event.run, "path": path_of(node, item), "event": event})
}

fn path_of(node: &str, item: Option<usize>) -> String {
    match item {
        Some(i) => format!("{node}[{i}]"),
        None => node.to_string(),
    }
}

struct Io {
    shared: Arc<Shared>,
    node: NodeIx,
    item: Option<usize>,
}

#[async_trait]
impl ChildIo for Io {
    fn event(&self, event: &Event) {
        let id = &self.shared.workflow.nodes[self.node].id;
        self.shared.emitter.emit(EventKind::log(Some(id), CHILD_EVENT, child_event(id, self.item, event)));
    }

    async fn decide(&self, request: ToolRequest) -> Decision {
        self.shared.approve_tool(self.node, request).await
    }

    async fn cancelled(&self) {
        self.shared.cancel.cancelled().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_is_one_expression_keeps_its_type_and_others_render_as_text() {
        assert_eq!(single_expression("{{ fetch.items }}"), Some("fetch.items"));
        assert_eq!(single_expression(" {{a}} "), Some("a"));
        assert_eq!(single_expression("{{ a }} and {{ b }}"), None);
        assert_eq!(single_expression("text"), None);
    }
}
