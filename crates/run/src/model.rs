//! The model interface (ARCHITECTURE.md, "model interface"): execute a node, and route among choices. The executor only
//! talks to models through this trait; the scripted model and the HTTP providers implement it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::document::ReasoningEffort;
pub use crate::result::RouteAnswer;
use crate::result::Usage;
use crate::template::Scope;

/// A tool offered to the model (a subagent, or a provider's web search).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the tool's input.
    pub parameters: Value,
}

/// Everything a model needs to execute one agent node once.
pub struct ExecuteRequest<'a> {
    pub node: &'a str,
    /// `provider/model`, resolved from the node, the run and the workflow defaults.
    pub model: Option<&'a str>,
    pub system_prompt: &'a str,
    /// The rendered user prompt.
    pub prompt: &'a str,
    /// The context the node sees (input, completed nodes, state); read lazily.
    pub scope: &'a Scope,
    pub output_schema: Option<&'a Value>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub tools: &'a [ToolSpec],
    /// The prompt is instruction text that uses no template (as in SWEny files): providers append the context to
    /// it, as SWEny does. Not set for templates or when the prompt is the previous output.
    pub plain_instruction: bool,
    /// How many times this node's model was called before in this run (scripts key answers on it).
    pub call_index: u32,
    /// Set on the repair turn: why the previous answer did not match the output schema.
    pub repair: Option<&'a str>,
    /// A tool (as named in `tools`) the model must call in its first turn; later turns choose freely.
    pub first_tool: Option<&'a str>,
    /// A digest of the node as written — its prompts as templates, model, tools, schema — not of what reached it:
    /// recorded calls say whether a call changed because the node was edited or because its inputs changed.
    pub definition: Option<&'a str>,
}

/// What the model answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelOutput {
    /// Structured data, when the model returned an object (always, with an output schema).
    pub data: Option<Value>,
    /// Free text, when it did not.
    pub text: Option<String>,
    pub usage: Option<Usage>,
}

/// A model call that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelError {
    pub message: String,
    /// Whether trying again may help (timeouts, 429, 5xx, scripted failures).
    pub retryable: bool,
    /// A stable code when the fix depends on the front end (`NO_MODEL`, `CODE_NEEDS_CONSENT`): the node's result
    /// carries it as `errorCode`, so each shell can say what to do in its own words.
    pub code: Option<&'static str>,
}

impl ModelError {
    pub fn retryable(message: impl Into<String>) -> ModelError {
        ModelError { message: message.into(), retryable: true, code: None }
    }

    pub fn fatal(message: impl Into<String>) -> ModelError {
        ModelError { message: message.into(), retryable: false, code: None }
    }

    pub fn with_code(mut self, code: &'static str) -> ModelError {
        self.code = Some(code);
        self
    }
}

impl From<String> for ModelError {
    fn from(message: String) -> ModelError {
        ModelError::fatal(message)
    }
}

/// One routing choice: a target node id and the edge's `when` text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub id: String,
    pub description: String,
}

/// The choice id of the "none of the above / default path" option.
pub const DEFAULT_CHOICE: &str = "__default__";

pub struct RouteRequest<'a> {
    pub node: &'a str,
    pub model: Option<&'a str>,
    pub question: &'a str,
    /// The route view of the context (SEMANTICS §3): scoped by output schemas.
    pub context: &'a Value,
    pub choices: &'a [Choice],
    /// How many routing decisions were made at this node before in this run.
    pub visit: u32,
}

/// What a running node offers the model while it executes: streaming and tools.
#[async_trait]
pub trait NodeIo: Send + Sync {
    /// A piece of streamed text (`node:progress`).
    fn progress(&self, text: &str);
    /// Calls a tool; an error is returned to the model as the tool's result and does not fail the node.
    async fn call_tool(&self, tool: &str, input: Value) -> Result<Value, String>;
    /// A transient failure is being retried (shown as an `llm_error` log event).
    fn retry_notice(&self, message: &str);
    /// Something the run's log should say about this node's call (a log event of `kind`).
    fn note(&self, kind: &str, message: &str) {
        let _ = (kind, message);
    }
    /// One model turn of an agent's conversation. `asked` is what the turn asks (model, messages, tools, schema:
    /// everything that decides the answer); `call` asks the model and gives its answer as the provider reads it
    /// back. A rebuilt agent is answered from the run's journal when this turn was journaled asking the same, so a
    /// resumed conversation asks only what it had not asked (the run's journal); otherwise the answer is journaled
    /// before the agent goes on. A provider calls this for every turn of its tool-calling loop.
    async fn turn(
        &self,
        asked: &Value,
        call: futures::future::BoxFuture<'_, Result<Value, ModelError>>,
    ) -> Result<Value, ModelError> {
        let _ = asked;
        call.await
    }
}

#[async_trait]
pub trait Model: Send + Sync {
    async fn execute(&self, request: &ExecuteRequest<'_>, io: &dyn NodeIo) -> Result<ModelOutput, ModelError>;
    async fn route(&self, request: &RouteRequest<'_>, io: &dyn NodeIo) -> Result<RouteAnswer, ModelError>;
}
