//! The one document model every workflow is loaded into, whichever file it came from (SEMANTICS §1).
//!
//! The shape is deliberately flat: a node is one record with a `type` and the fields of that type, so the canonical
//! YAML reads like the canvas inspector and the editor can change a node's type without rebuilding it. Fields that do
//! not belong to a node's type are reported by validation (`FIELD_NOT_FOR_TYPE`) rather than by the parser, so that a
//! half-edited node still loads. Unknown fields, on the other hand, are rejected by the parser with a suggestion:
//! they are almost always typos.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version written under the `switchyard` key of every canonical file.
pub const FORMAT_VERSION: u32 = 1;

/// A workflow: nodes, edges and run defaults.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// Format version. Always `1` for files this version writes.
    pub switchyard: u32,
    /// Human name of the workflow.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema the run input must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<specta_typescript::Any>))]
    pub input_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Defaults::is_empty")]
    pub defaults: Defaults,
    /// How results merge into `state`, per key (default: the latest value wins).
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub state: indexmap::IndexMap<String, StateField>,
    /// Environment variables code steps receive, by name. Their values come from the environment Switchyard runs
    /// in when the step starts; they are never written to the file, the run store or events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The queue a server's runs of this workflow wait in for a worker (`switchyard worker --queues NAME,…`): lowercase
    /// letters, digits and `-`; `default` when none is named. A trigger may name its own. A run started here ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Most runs of this workflow that workers run at once (default: no limit); the others wait `ready` in their queue.
    /// Runs in a terminal or the app are not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_runs: Option<u32>,
    /// What starts runs of this workflow on a server (`switchyard serve`, docs/server.md): webhooks and schedules.
    /// A run started here (`switchyard run`, the app) ignores them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<Trigger>,
    pub nodes: Vec<Node>,
    #[serde(default)]
    pub edges: Vec<Edge>,
}

/// One way a server starts runs of the workflow: a webhook (`webhook: NAME`, `POST /hooks/NAME`, the request as the
/// run's input: {body, headers, query}) or a schedule (`schedule: NAME` with `cron`). Exactly one of the two names.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// A webhook's name: lowercase letters, digits and `-`; its URL is `/hooks/NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// A schedule's name: lowercase letters, digits and `-`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// When a schedule fires: five fields (minute, hour, day of month, month, day of week), in UTC; `0 3 * * *` is
    /// every day at 03:00.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// The NAME of the environment variable that holds a webhook's signing secret (never the secret): a delivery is
    /// accepted only with a matching HMAC-SHA256 signature of its body, as GitHub and Stripe sign theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_env: Option<String>,
    /// The input a schedule's runs start with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<specta_typescript::Any>))]
    pub input: Option<Value>,
    /// The queue this trigger's runs wait in, instead of the workflow's `queue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
}

impl Trigger {
    /// Its name, whichever kind it is.
    pub fn name(&self) -> &str {
        self.webhook.as_deref().or(self.schedule.as_deref()).unwrap_or_default()
    }
}

/// Run defaults a workflow carries; a run may override them.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// `provider/model` used by agents that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Most node executions one run may make (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_budget: Option<u32>,
    /// Most nodes executing at once (default: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateField {
    pub merge: Merge,
}

/// How a value written to a `state` key combines with what is there (OpenExpertise's merge strategies).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Merge {
    #[default]
    LastWins,
    /// The first value written stays.
    SetOnce,
    /// Values (or the items of list values) are appended to a list.
    ArrayAppend,
}

impl Defaults {
    pub fn is_empty(&self) -> bool {
        self == &Defaults::default()
    }
}

/// The default step budget of SEMANTICS §3.
pub const DEFAULT_STEP_BUDGET: u32 = 1000;

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeType {
    Start,
    Agent,
    If,
    Approval,
    Script,
    /// Runs another workflow file as a child run (docs/subworkflows.md).
    Workflow,
}

impl NodeType {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeType::Start => "start",
            NodeType::Agent => "agent",
            NodeType::If => "if",
            NodeType::Approval => "approval",
            NodeType::Script => "script",
            NodeType::Workflow => "workflow",
        }
    }
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Position {
    #[serde(serialize_with = "whole_if_integral")]
    #[cfg_attr(feature = "specta", specta(type = f64))]
    pub x: f64,
    #[serde(serialize_with = "whole_if_integral")]
    #[cfg_attr(feature = "specta", specta(type = f64))]
    pub y: f64,
}

/// Canvas coordinates are usually whole numbers: write `120`, not `120.0`, so exports stay clean.
fn whole_if_integral<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

/// One node. Type-specific fields are optional here and checked against `type` by validation.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub id: String,
    #[serde(rename = "type")]
    pub node_type: NodeType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the node does; also the tool description when the node is a subagent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,

    // --- start
    /// Output of a start node when the run is given no input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<specta_typescript::Any>))]
    pub initial_input: Option<Value>,

    // --- agent
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// A Jinja template; empty means the previous output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_prompt: Option<String>,
    /// `provider/model`; the workflow default applies when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<AgentTools>,
    /// JSON Schema the agent's answer must satisfy; its data is then the parsed object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<specta_typescript::Any>))]
    pub output_schema: Option<Value>,

    // --- if
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// When set, an `if` node whose conditions all fail fails with this message instead of taking `false`
    /// (TEA: a conditional `goto` with no matching rule and no fallback is an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_match_error: Option<String>,

    // --- approval
    /// What the person deciding is asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Seconds after which the `timeout` edges are followed (or the approval rejects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<u32>))]
    pub timeout_seconds: Option<u64>,

    // --- script
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The body of the step: a function body in `language` whose returned object is the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Instead of `code`: a JavaScript module, relative to the workflow file, whose default export is called
    /// (OpenExpertise tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,

    // --- workflow
    /// The child workflow a `workflow` node runs: a file, relative to this workflow's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// The child run's input, field by field: each value a template over the context (one that is a single
    /// `{{ expression }}` gives that expression's value, a list or an object as it is); other JSON values as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<std::collections::BTreeMap<String, specta_typescript::Any>>))]
    pub input: Option<indexmap::IndexMap<String, Value>>,

    // --- any executing node
    /// Output data that replaces execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<specta_typescript::Any>))]
    pub pinned: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_each: Option<ForEach>,
}

impl Node {
    /// A node of the given type with nothing else set.
    pub fn new(id: impl Into<String>, node_type: NodeType) -> Node {
        Node {
            id: id.into(),
            node_type,
            name: None,
            description: None,
            position: None,
            initial_input: None,
            system_prompt: None,
            user_prompt: None,
            model: None,
            reasoning_effort: None,
            tools: None,
            output_schema: None,
            conditions: None,
            no_match_error: None,
            message: None,
            timeout_seconds: None,
            language: None,
            code: None,
            module: None,
            workflow: None,
            input: None,
            pinned: None,
            on_error: None,
            retry: None,
            for_each: None,
        }
    }

    /// Whether it runs child runs: a `workflow` node, or an agent whose `tools.workflows` lists any.
    pub fn runs_children(&self) -> bool {
        self.node_type == NodeType::Workflow || self.tools.as_ref().is_some_and(|t| !t.workflows.is_empty())
    }

    pub fn subagents_enabled(&self) -> bool {
        self.tools.as_ref().is_some_and(|t| t.subagents)
    }

    /// The document fields that are set, by their YAML names, apart from `id`, `type` and `position`. Validation
    /// checks them against the type's definition (`node_types`), so a half-edited node still loads.
    pub fn fields_set(&self) -> impl Iterator<Item = &'static str> {
        let fields: [(bool, &'static str); 22] = [
            (self.name.is_some(), "name"),
            (self.description.is_some(), "description"),
            (self.initial_input.is_some(), "initial_input"),
            (self.system_prompt.is_some(), "system_prompt"),
            (self.user_prompt.is_some(), "user_prompt"),
            (self.model.is_some(), "model"),
            (self.reasoning_effort.is_some(), "reasoning_effort"),
            (self.tools.is_some(), "tools"),
            (self.output_schema.is_some(), "output_schema"),
            (self.conditions.is_some(), "conditions"),
            (self.no_match_error.is_some(), "no_match_error"),
            (self.message.is_some(), "message"),
            (self.timeout_seconds.is_some(), "timeout_seconds"),
            (self.language.is_some(), "language"),
            (self.code.is_some(), "code"),
            (self.module.is_some(), "module"),
            (self.workflow.is_some(), "workflow"),
            (self.input.is_some(), "input"),
            (self.pinned.is_some(), "pinned"),
            (self.on_error.is_some(), "on_error"),
            (self.retry.is_some(), "retry"),
            (self.for_each.is_some(), "for_each"),
        ];
        fields.into_iter().filter(|(set, _)| *set).map(|(_, name)| name)
    }
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    Minimal,
    Low,
    Medium,
    High,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTools {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub web_search: bool,
    /// Offer the agents linked by `subagent` edges as tools.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subagents: bool,
    /// MCP tools: a server's name (every tool it has) or `server/tool` (docs/tools.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<String>,
    /// Workflows the model may call as tools: files relative to this one, each offered under its workflow's tool
    /// name with its `input_schema`, each call a child run of its own (docs/subworkflows.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workflows: Vec<String>,
    /// A tool the model must call in its first turn (`server/tool`, a subagent's id, or a workflow tool's name); later
    /// turns choose freely.
    /// For models that do not call tools on their own (small local ones) and steps that always begin with a lookup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_first: Option<String>,
    /// Which MCP tool calls wait for a person's approval before they run; none when unset (docs/tools.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ToolApproval>,
    /// Tools this agent never has, whatever else offers them: each `server/tool`, `server__tool`, `server_tool` (a
    /// SWEny skill's spelling) or a bare tool name (from any server; also `web_search` or a subagent's id). They are
    /// not offered to the model, and a call of one is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl AgentTools {
    /// Whether `tool` (of MCP server `server`, or none for web search and subagents) is denied by `deny`.
    pub fn denies(&self, server: Option<&str>, tool: &str) -> bool {
        self.deny.iter().any(|d| {
            d == tool
                || server.is_some_and(|s| {
                    d.strip_prefix(s).is_some_and(|rest| {
                        [rest.strip_prefix('/'), rest.strip_prefix("__"), rest.strip_prefix('_')].contains(&Some(tool))
                    })
                })
        })
    }
}

/// Which of an agent's MCP tool calls need approval (unset: none). A call that waits pauses its branch with an approval showing
/// the tool and its arguments; a rejection is the tool's result ("rejected by the user").
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolApproval {
    /// Calls of tools that may change things: those their server does not mark read-only, unless it marks them
    /// not destructive (MCP's `readOnlyHint` / `destructiveHint`).
    Destructive,
    /// Every call.
    All,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    pub operator: ConditionOperator,
    #[serde(default)]
    pub value: String,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConditionOperator {
    /// The previous output, lowercased, equals the trimmed, lowercased value.
    Equal,
    /// The previous output, lowercased, contains the trimmed, lowercased value.
    Contains,
    /// A Jinja expression over the context is true.
    Expression,
}

impl ConditionOperator {
    /// The operator as the document writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionOperator::Equal => "equal",
            ConditionOperator::Contains => "contains",
            ConditionOperator::Expression => "expression",
        }
    }
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// A failure stops the run (unless the node has `error` edges).
    #[default]
    Stop,
    /// A failure routes on as if the node had succeeded.
    Continue,
}

/// Retries of transient model failures.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// How many times a failed execution is tried again.
    pub max: u32,
    /// Delay before the first retry; doubled for each further one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<u32>))]
    pub backoff_ms: Option<u64>,
}

/// Run the node once per item of a list.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForEach {
    /// A Jinja expression yielding the list, e.g. `state.dimensions`.
    pub items: String,
    /// Most items in flight at once (default 1: in order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
}

/// Handles a node type may route out of (SEMANTICS §1 table).
pub mod handle {
    pub const OUTPUT: &str = "output";
    pub const ERROR: &str = "error";
    pub const SUBAGENT: &str = "subagent";
    pub const FALSE: &str = "false";
    pub const TRUE_LEGACY: &str = "true";
    /// The `false` handle's other name, its label.
    pub const ELSE: &str = "else";
    pub const APPROVE: &str = "approve";
    pub const REJECT: &str = "reject";
    pub const TIMEOUT: &str = "timeout";
    pub const INPUT: &str = "input";
    pub const CONDITION_PREFIX: &str = "condition-";
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    /// Optional stable id (the editor sets one); findings fall back to `from->to`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub from: String,
    pub to: String,
    /// Source handle; `output` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Target handle; only `input` exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_handle: Option<String>,
    /// Natural-language condition decided by the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Expression condition (`if` in YAML, as here): the edge is followed when it is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#if: Option<String>,
    /// Most times this edge may be followed in one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(type = Option<u32>))]
    pub max_iterations: Option<i64>,
}

impl Edge {
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Edge {
        Edge {
            id: None,
            from: from.into(),
            to: to.into(),
            handle: None,
            target_handle: None,
            when: None,
            r#if: None,
            max_iterations: None,
        }
    }

    pub fn handle(&self) -> &str {
        self.handle.as_deref().unwrap_or(handle::OUTPUT)
    }

    pub fn is_subagent(&self) -> bool {
        self.handle() == handle::SUBAGENT
    }

    /// How findings and events name this edge.
    pub fn label(&self) -> String {
        match &self.id {
            Some(id) => id.clone(),
            None => format!("{}->{}", self.from, self.to),
        }
    }
}

/// The queue a run waits in when neither its workflow nor its trigger names one.
pub const DEFAULT_QUEUE: &str = "default";

impl Workflow {
    /// What a run of it declares it returns: the object `output_schema` of its end node (the one node no edge
    /// leaves, the start aside), when it has exactly one and it declares one. A `workflow` node's output, and the
    /// structured result of the workflow served as a tool.
    pub fn output_schema(&self) -> Option<&serde_json::Map<String, Value>> {
        let mut ends =
            self.nodes.iter().filter(|n| n.node_type != NodeType::Start && !self.edges.iter().any(|e| e.from == n.id));
        let (end, None) = (ends.next()?, ends.next()) else { return None };
        match end.output_schema.as_ref()? {
            Value::Object(schema) if schema.get("type").and_then(Value::as_str) == Some("object") => Some(schema),
            _ => None,
        }
    }

    /// The queue runs started by the trigger named `trigger` (none: started otherwise) wait in: the trigger's, else
    /// the workflow's, else [`DEFAULT_QUEUE`].
    pub fn queue_for(&self, trigger: Option<&str>) -> &str {
        let own =
            trigger.and_then(|name| self.triggers.iter().find(|t| t.name() == name)).and_then(|t| t.queue.as_deref());
        own.or(self.queue.as_deref()).unwrap_or(DEFAULT_QUEUE)
    }

    pub fn new(name: impl Into<String>) -> Workflow {
        Workflow {
            switchyard: FORMAT_VERSION,
            name: name.into(),
            description: None,
            input_schema: None,
            defaults: Defaults::default(),
            state: indexmap::IndexMap::new(),
            env: Vec::new(),
            queue: None,
            max_concurrent_runs: None,
            triggers: Vec::new(),
            nodes: Vec::new(),
            edges: Vec::new(),
        }
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Whether a run of it may start child runs: a `workflow` node, or an agent offered workflows as tools.
    pub fn has_children(&self) -> bool {
        self.nodes.iter().any(Node::runs_children)
    }

    /// Its name as a tool's: what an agent's model calls it by (`tools.workflows`) and what `switchyard mcp serve`
    /// lists it as ([`tool_name`] of its `name`).
    pub fn tool_name(&self) -> String {
        tool_name(&self.name)
    }
}

/// A workflow's name as a tool name: lower-cased letters, digits, `_` and `-`, at most 64 characters — what every
/// model provider accepts as a function's name and MCP as a tool's (`Publish with approval` → `publish_with_approval`).
pub fn tool_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' { c.to_ascii_lowercase() } else { '_' };
        if c == '_' && (out.is_empty() || out.ends_with('_')) {
            continue;
        }
        out.push(c);
    }
    let out = out.trim_end_matches('_').chars().take(64).collect::<String>();
    if out.is_empty() {
        "workflow".to_string()
    } else {
        out
    }
}
