//! What a run produces (SEMANTICS §6): a result per node, the pending approvals and the trace.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Completed,
    Failed,
    Paused,
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Paused => "paused",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeStatus {
    Success,
    Failed,
    Skipped,
}

impl NodeStatus {
    /// The word every front end shows for it (`success` is the value in events and results, as SWEny names it).
    pub fn word(self) -> &'static str {
        match self {
            NodeStatus::Success => "succeeded",
            NodeStatus::Failed => "failed",
            NodeStatus::Skipped => "skipped",
        }
    }
}

/// A tool the model called while a node ran.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub tool: String,
    #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
    pub input: Value,
    /// Absent when the tool failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<specta_typescript::Any>))]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeResult {
    pub status: NodeStatus,
    #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
    pub data: Value,
    pub tool_calls: Vec<ToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A stable code for a failure whose fix depends on the front end (`NO_MODEL`, `CODE_NEEDS_CONSENT`,
    /// `UNKNOWN_PROVIDER`): each shell says what to do in its own words. Absent in logs written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

impl NodeResult {
    pub fn success(data: Value, tool_calls: Vec<ToolCall>) -> NodeResult {
        NodeResult { status: NodeStatus::Success, data, tool_calls, error: None, error_code: None }
    }

    pub fn failed(message: String, tool_calls: Vec<ToolCall>) -> NodeResult {
        NodeResult {
            status: NodeStatus::Failed,
            data: serde_json::json!({ "error": message }),
            tool_calls,
            error: Some(message),
            error_code: None,
        }
    }

    pub fn with_code(mut self, code: Option<String>) -> NodeResult {
        self.error_code = code;
        self
    }

    pub fn skipped() -> NodeResult {
        NodeResult {
            status: NodeStatus::Skipped,
            data: Value::Object(Default::default()),
            tool_calls: Vec::new(),
            error: None,
            error_code: None,
        }
    }
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceStep {
    pub node: String,
    pub status: NodeStatus,
    /// 1 for a node's first execution, 2 for its second (through a bounded cycle), …
    pub iteration: u32,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEdge {
    pub from: String,
    /// A node id, or `(end)` when a branch ended on a routing decision.
    pub to: String,
    pub reason: String,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub steps: Vec<TraceStep>,
    pub edges: Vec<TraceEdge>,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    pub node: String,
    pub message: String,
    /// What the person is deciding about: the output that reached the approval (for a tool call, its arguments).
    pub previous_output: String,
    /// Set when an agent's tool call waits, not an approval node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolRequest>,
    /// Set when a child run's approval waits (a `workflow` node's, or a workflow tool's): which child and where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<ChildApproval>,
}

/// The approval a child run waits for, shown on its parent's node: the child run, and the path below the parent's
/// node to the child's approval (`review`; a grandchild's, `inner › review`).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildApproval {
    pub run: String,
    pub node: String,
}

impl ChildApproval {
    /// The child approval a tool request stands for (`run::ChildIo::decide`), if it is one.
    pub fn of(request: &ToolRequest) -> Option<ChildApproval> {
        child_waiting(request)?;
        let run = request.input.get("childRun").and_then(Value::as_str).unwrap_or_default();
        Some(ChildApproval { run: run.to_string(), node: request.tool.clone() })
    }
}

impl PendingApproval {
    /// Where it waits: the node, or for a child run's approval (a `workflow` node's) the path down to the child's
    /// node, `summarize › review` (docs/subworkflows.md). `--decide PATH=approve` decides it.
    pub fn path(&self) -> String {
        match &self.child {
            Some(child) => format!("{} › {}", self.node, child.node),
            None => self.node.clone(),
        }
    }
}

/// When the approval a child run waits for times out (`deadlineMs`, Unix milliseconds), if it does.
pub fn child_deadline(request: &ToolRequest) -> Option<i64> {
    child_waiting(request)?;
    request.input.get("deadlineMs").and_then(Value::as_i64)
}

/// A tool request that is a child run waiting for a decision (`run::ChildIo::decide`): what the child's approval
/// asks, and what reached it.
pub fn child_waiting(request: &ToolRequest) -> Option<(&str, &str)> {
    let input = request.input.as_object()?;
    input.get("childRun")?;
    let message = input.get("message").and_then(Value::as_str).unwrap_or_default();
    let previous = input.get("previousOutput").and_then(Value::as_str).unwrap_or_default();
    Some((message, previous))
}

/// The outcome of a run, or of a run so far when it is paused.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub run_id: String,
    pub status: RunStatus,
    /// Final result per node, in document order; the latest when a node ran several times.
    pub results: indexmap::IndexMap<String, NodeResult>,
    pub trace: Trace,
    pub pending: Vec<PendingApproval>,
    /// The merged `state` at the end (SEMANTICS §2): all results' data, in completion order.
    #[cfg_attr(feature = "specta", specta(type = std::collections::BTreeMap<String, specta_typescript::Any>))]
    pub state: serde_json::Map<String, Value>,
    /// Why the run failed or was cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunResult {
    /// The typed result of one node.
    pub fn node(&self, id: &str) -> Option<NodeResult> {
        self.results.get(id).cloned()
    }

    /// Node ids of the trace steps with the given status, in order.
    pub fn steps_with(&self, status: NodeStatus) -> Vec<&str> {
        self.trace.steps.iter().filter(|s| s.status == status).map(|s| s.node.as_str()).collect()
    }
}

/// Token counts of one model call, where the provider reports them.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub input_tokens: u64,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub output_tokens: u64,
    /// Of the input tokens, those the provider read from its prompt cache (priced at `cached_input` where the
    /// price table gives one). Reported by OpenAI-compatible servers and Anthropic.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub cached_input_tokens: u64,
}

impl Usage {
    /// Adds another call's tokens. The counts come from providers and recorded-calls files, so they may be anything:
    /// a sum that would overflow stays at `u64::MAX` ([`SATURATED`]), which no `max_tokens` check passes.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_input_tokens = self.cached_input_tokens.saturating_add(other.cached_input_tokens);
    }

    /// Input and output tokens together (at most [`SATURATED`]).
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// A token count that reached `u64::MAX`: a sum that would have overflowed stays here rather than wrapping around.
pub const SATURATED: u64 = u64::MAX;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A tool call an agent asks to make, waiting for approval: the tool as the model named it and its arguments.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    pub tool: String,
    #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
    pub input: Value,
}

/// How an approval was decided. Each verdict leaves the approval node by the handle of the same name.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Approve,
    Reject,
    /// Nobody decided before the approval's timeout (only when a `timeout` edge leaves it; otherwise it rejects).
    Timeout,
}

impl Verdict {
    /// The verdict as documents, events and recordings write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::Reject => "reject",
            Verdict::Timeout => "timeout",
        }
    }

    /// The approval node's handle this verdict leaves by.
    pub fn handle(self) -> &'static str {
        match self {
            Verdict::Approve => crate::document::handle::APPROVE,
            Verdict::Reject => crate::document::handle::REJECT,
            Verdict::Timeout => crate::document::handle::TIMEOUT,
        }
    }

    /// How the run's log says it: `approved`, `rejected`, `timed out`.
    pub fn said(self) -> &'static str {
        match self {
            Verdict::Approve => "approved",
            Verdict::Reject => "rejected",
            Verdict::Timeout => "timed out",
        }
    }
}

/// A person's (or a script's) decision on a pending approval, normalized as AgentFlow normalizes it (docs/format.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    #[serde(rename = "decision")]
    pub verdict: Verdict,
    pub note: String,
    /// Who made it, when a server knows (the token's name); none for a decision made on this machine, by a script,
    /// or in logs written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl Decision {
    pub fn new(verdict: Verdict, note: impl Into<String>) -> Decision {
        Decision { verdict, note: note.into(), by: None }
    }

    /// The same decision, made by `by` (a token's name).
    pub fn by(self, by: impl Into<String>) -> Decision {
        Decision { by: Some(by.into()), ..self }
    }

    /// A person's decision as every front end takes it (`--decide NODE=approve`, the HTTP body's `decision`, the
    /// app's `decide`): the words are `approve` and `reject`, nothing else. The one place that says so.
    pub fn parse(word: &str, note: impl Into<String>) -> Result<Decision, UnknownVerdict> {
        let verdict = match word {
            "approve" => Verdict::Approve,
            "reject" => Verdict::Reject,
            _ => return Err(UnknownVerdict { word: word.to_string() }),
        };
        Ok(Decision::new(verdict, note))
    }

    /// A string containing "reject" (any case) rejects; an object's `decision` decides; nothing approves.
    pub fn normalize(value: &Value) -> Decision {
        let verdict =
            |said: &str| if said.to_lowercase().contains("reject") { Verdict::Reject } else { Verdict::Approve };
        match value {
            Value::String(s) => Decision::new(verdict(s), ""),
            Value::Object(o) => Decision::new(
                verdict(o.get("decision").and_then(Value::as_str).unwrap_or("")),
                o.get("note").and_then(Value::as_str).unwrap_or(""),
            ),
            _ => Decision::new(Verdict::Approve, ""),
        }
    }
}

/// A decision written with a word that is neither `approve` nor `reject` ([`Decision::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("decision `{word}`: write approve or reject")]
pub struct UnknownVerdict {
    pub word: String,
}

impl UnknownVerdict {
    /// Its stable code (docs/errors.md).
    pub fn code(&self) -> &'static str {
        "INVALID_DECISION"
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RouteAnswer {
    /// The chosen id as the model named it; the executor checks it against the choices.
    pub choice: String,
    /// Said beside the decision in the route event (e.g. that a script did not cover it).
    pub note: Option<String>,
    /// Tokens the routing call used, where the provider reports them; the `route` event carries them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_is_approve_or_reject_and_any_other_word_is_refused_with_its_code() {
        assert_eq!(Decision::parse("approve", "ship it"), Ok(Decision::new(Verdict::Approve, "ship it")));
        assert_eq!(Decision::parse("reject", ""), Ok(Decision::new(Verdict::Reject, "")));
        for word in ["Approve", "timeout", "yes", ""] {
            let refused = Decision::parse(word, "").unwrap_err();
            assert_eq!(refused.code(), "INVALID_DECISION");
            assert_eq!(refused.to_string(), format!("decision `{word}`: write approve or reject"));
        }
    }

    #[test]
    fn a_decision_is_written_as_the_api_and_the_run_log_write_it() {
        let decision = Decision::parse("reject", "too risky").unwrap();
        assert_eq!(
            serde_json::to_value(&decision).unwrap(),
            serde_json::json!({"decision": "reject", "note": "too risky"})
        );
    }
}
