//! The one definition of each node type (SEMANTICS §1): its label and icon, whether it has an input, the handles it
//! routes out of and the document fields it takes, in the order a person edits them. Validation, the scheduler and
//! the editor (through the app's `node_types` command) all read it; nothing else lists a type's handles or fields.
//!
//! Invariants the rest of the engine relies on:
//! - a node's source handles, expanded for its conditions ([`source_handles`]), are the spec's handles in order,
//!   each per-condition handle replaced by one handle per condition, in condition order;
//! - a handle's *position* ([`ResolvedHandle::position`]) is its index in that expanded list;
//! - every field key names a document field of `Node` (nested keys with dots), and a top-level field a node sets is
//!   valid for its type exactly when some field key of the type's spec is that field or starts with `field.`.

use std::sync::OnceLock;

use serde::Serialize;

use crate::document::{handle, ConditionOperator, Node, NodeType};

/// What leaving a node by a handle means.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HandleKind {
    /// The run continues along the edge.
    Execution,
    /// Taken when the node fails.
    Error,
    /// Not an execution edge: links an agent to an agent it may call as a tool.
    Subagent,
}

/// How the editor edits a field.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldKind {
    /// One line of text.
    Text,
    /// Several lines of text, used as is.
    Multiline,
    /// A Jinja template over the run's context.
    Template,
    /// Any JSON value.
    Json,
    Number,
    /// One of `options`.
    Select,
    Checkbox,
    /// A `provider/model` reference.
    Model,
    /// An `if` node's ordered conditions.
    Conditions,
}

/// One handle a node type routes out of.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandleSpec {
    /// The handle as edges name it; with `perCondition`, `{i}` stands for the condition's index.
    pub id: String,
    pub label: String,
    pub kind: HandleKind,
    /// One handle per condition of the node (an `if` node's `condition-{i}`).
    pub per_condition: bool,
    /// A decision the node makes (a condition, `else`, approve, reject): validation warns when nothing leaves by it,
    /// and a run may end there.
    #[serde(skip)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub branch: bool,
}

/// One document field of a node type, as the editor shows it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldSpec {
    /// The field's name in the document; nested fields with dots (`retry.max`).
    pub key: String,
    pub label: String,
    pub kind: FieldKind,
    /// The choices of a `select` field, as written in the document.
    pub options: Vec<String>,
    pub placeholder: Option<String>,
    pub help: Option<String>,
    /// A nested field its object cannot be without (`retry.max`, `for_each.items`): the value it gets when another
    /// field of the object creates the object. Clearing it removes the object.
    #[cfg_attr(feature = "specta", specta(type = Option<specta_typescript::Any>))]
    pub required: Option<serde_json::Value>,
}

/// Everything the engine and the editor know about one node type.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeTypeSpec {
    #[serde(rename = "type")]
    pub node_type: NodeType,
    /// The palette's name for it, e.g. `Agent`.
    pub label: String,
    pub icon: String,
    /// One sentence for the palette's tooltip.
    pub description: String,
    /// Whether execution edges may lead into it (every type but `start`).
    pub has_input: bool,
    /// Whether a run begins here (`start`). The editor never deletes a workflow's last one and opens a workflow
    /// looking at it.
    pub entry: bool,
    /// Whether it asks a model (`agent`): it uses the default model when it names none, its Last run tab lists its
    /// conversation, and a run can be forked at it.
    pub asks_model: bool,
    /// Whether a node of this type can be a subagent (`agent`): another agent's `subagent` handle may link to it, and
    /// it then runs only as that agent's tool.
    pub subagent: bool,
    /// The id a node of this type added in the editor is given (`check` for an `if`; `check_2` when taken).
    pub new_id: String,
    /// The fields a node of this type added in the editor starts with (an `if` has one condition, an approval asks
    /// the default question).
    #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
    pub new_fields: serde_json::Value,
    pub handles: Vec<HandleSpec>,
    /// Other names edges may give a handle, and the handle each stands for (an `if` node's `true` is `condition-0`,
    /// `else` is `false`). Files keep the name they were written with; the editor shows the handle's label.
    pub handle_aliases: Vec<HandleAlias>,
    /// Every document field valid for the type except `id`, `type` and `position`, in editing order.
    pub fields: Vec<FieldSpec>,
}

impl NodeTypeSpec {
    /// Whether the node chooses which of its handles to leave by (`if`, `approval`) rather than following all.
    pub fn chooses_branch(&self) -> bool {
        self.handles.iter().any(|h| h.branch)
    }

    /// Whether `field`, a top-level document field, belongs to this type.
    pub fn has_field(&self, field: &str) -> bool {
        self.fields
            .iter()
            .any(|f| f.key == field || f.key.strip_prefix(field).is_some_and(|rest| rest.starts_with('.')))
    }
}

/// Another name for a handle, accepted on edges.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandleAlias {
    pub alias: String,
    pub handle: String,
}

/// What an approval asks when its `message` says nothing.
pub const APPROVAL_MESSAGE: &str = "Approve this step?";

/// Every node type, in palette order.
pub const ALL: [NodeType; 6] =
    [NodeType::Start, NodeType::Agent, NodeType::If, NodeType::Approval, NodeType::Script, NodeType::Workflow];

/// Other handle names accepted on edges, and the handle each stands for: AgentFlow's `true` is condition 0, and the
/// `false` handle is also called by its label, `else`.
const HANDLE_ALIASES: [(NodeType, &str, &str); 2] =
    [(NodeType::If, handle::TRUE_LEGACY, "condition-0"), (NodeType::If, handle::ELSE, handle::FALSE)];

/// The definitions of all node types, in palette order.
pub fn specs() -> &'static [NodeTypeSpec] {
    static SPECS: OnceLock<Vec<NodeTypeSpec>> = OnceLock::new();
    SPECS.get_or_init(|| ALL.into_iter().map(define).collect())
}

/// The definition of one node type.
pub fn spec(node_type: NodeType) -> &'static NodeTypeSpec {
    let i = ALL.iter().position(|&t| t == node_type).expect("ALL lists every node type");
    &specs()[i]
}

/// A handle an edge names, resolved against its source node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedHandle {
    /// Index into [`source_handles`] of the node.
    pub position: u32,
    pub kind: HandleKind,
}

/// The handles `node` routes out of, per-condition handles expanded for its conditions: `(id, kind)`.
pub fn source_handles(node: &Node) -> Vec<(String, HandleKind)> {
    let conditions = condition_count(node);
    let mut out = Vec::new();
    for h in &spec(node.node_type).handles {
        if h.per_condition {
            out.extend((0..conditions).map(|i| (h.id.replace("{i}", &i.to_string()), h.kind)));
        } else {
            out.push((h.id.clone(), h.kind));
        }
    }
    out
}

/// What a person calls the handle at `position` of [`source_handles`]: a per-condition handle by its condition (an
/// `if` condition's value, e.g. `cat`, or its expression), else `condition {i}` when the condition is empty; other
/// handles by their label here (`else`, `approve`, …). An `if` node's output names the branch it took with it too
/// (`{"branch": "condition-0", "label": "cat"}`), so a handle and the branch taken are always called the same.
pub fn source_handle_label(node: &Node, position: usize) -> Option<String> {
    let conditions = node.conditions.as_deref().unwrap_or_default();
    let mut at = 0;
    for h in &spec(node.node_type).handles {
        if h.per_condition {
            if let Some(i) = position.checked_sub(at).filter(|&i| i < conditions.len()) {
                let value = conditions[i].value.trim();
                return Some(if value.is_empty() { h.label.replace("{i}", &i.to_string()) } else { value.to_string() });
            }
            at += conditions.len();
        } else {
            if at == position {
                return Some(h.label.clone());
            }
            at += 1;
        }
    }
    None
}

/// The positions and ids of the handles `node` chooses between (see [`HandleSpec::branch`]).
pub fn branches(node: &Node) -> Vec<(u32, String)> {
    let conditions = condition_count(node);
    let mut out = Vec::new();
    let mut position = 0;
    for h in &spec(node.node_type).handles {
        let count = if h.per_condition { conditions } else { 1 };
        if h.branch {
            for i in 0..count {
                let id = if h.per_condition { h.id.replace("{i}", &i.to_string()) } else { h.id.clone() };
                out.push((position + i as u32, id));
            }
        }
        position += count as u32;
    }
    out
}

/// Which of `node`'s handles an edge leaving by `name` uses, or `None` when the node has no such handle. Accepts
/// aliases; allocates nothing, so validation and the scheduler can call it per edge.
pub fn resolve_handle(node: &Node, name: &str) -> Option<ResolvedHandle> {
    let name = HANDLE_ALIASES
        .iter()
        .find(|(t, alias, _)| *t == node.node_type && *alias == name)
        .map_or(name, |(_, _, canonical)| canonical);
    let conditions = condition_count(node);
    let mut position = 0u32;
    for h in &spec(node.node_type).handles {
        if h.per_condition {
            let (prefix, suffix) = h.id.split_once("{i}").expect("a per-condition handle id contains `{i}`");
            let index = name.strip_prefix(prefix).and_then(|rest| rest.strip_suffix(suffix)).and_then(parse_index);
            if let Some(i) = index.filter(|&i| i < conditions) {
                return Some(ResolvedHandle { position: position + i as u32, kind: h.kind });
            }
            position += conditions as u32;
        } else {
            if h.id == name {
                return Some(ResolvedHandle { position, kind: h.kind });
            }
            position += 1;
        }
    }
    None
}

fn condition_count(node: &Node) -> usize {
    node.conditions.as_ref().map_or(0, Vec::len)
}

/// A condition index as handles write it: decimal digits, no sign, no leading zero.
fn parse_index(text: &str) -> Option<usize> {
    let canonical =
        !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

// ---- the definitions

fn define(node_type: NodeType) -> NodeTypeSpec {
    use HandleKind::*;
    let (label, icon, description, handles, fields): (&str, &str, &str, Vec<HandleSpec>, Vec<FieldSpec>) =
        match node_type {
            NodeType::Start => (
                "Start",
                "▶",
                "Where a run begins; its output is the run's input, or its initial input when the run is given none.",
                vec![out(handle::OUTPUT, "", Execution)],
                vec![
                    field("initial_input", "initial input (JSON or text)", FieldKind::Json)
                        .help("Used when the run is started without an input."),
                    pinned(),
                ],
            ),
            NodeType::Agent => (
                "Agent",
                "✦",
                "Asks an AI model, with a system and a user prompt; may call web search and subagents as tools.",
                vec![
                    out(handle::OUTPUT, "", Execution),
                    out(handle::ERROR, "error", Error),
                    out(handle::SUBAGENT, "subagent", Subagent),
                ],
                vec![
                    field("system_prompt", "system prompt", FieldKind::Template),
                    field("user_prompt", "user prompt", FieldKind::Template)
                        .placeholder("{{ PREVIOUS_OUTPUT }}")
                        .help("Jinja over the context (node ids, input, state, PREVIOUS_OUTPUT); empty = the previous output."),
                    field("model", "model", FieldKind::Model)
                        .placeholder("workflow default")
                        .help("provider/model, e.g. openai/gpt-4.1-mini"),
                    select("reasoning_effort", "reasoning effort", &["minimal", "low", "medium", "high"]),
                    field("tools.web_search", "web search", FieldKind::Checkbox),
                    field("tools.subagents", "subagents", FieldKind::Checkbox)
                        .help("Offer the agents linked by subagent edges as tools."),
                    field("tools.mcp", "MCP tools", FieldKind::Json)
                        .placeholder("[\"github\", \"files/read_file\"]")
                        .help("MCP servers from the settings (every tool) or server/tool; the model sees server__tool."),
                    field("tools.workflows", "workflow tools", FieldKind::Json)
                        .placeholder("[\"children/lookup.yaml\"]")
                        .help("Workflow files, relative to this one, the model may call as tools: each call is a child run; the model sees the workflow's name and its input_schema."),
                    field("tools.call_first", "call first", FieldKind::Text)
                        .placeholder("server/tool")
                        .help("A tool the model must call in its first turn (server/tool, a subagent's id or a workflow tool's name)."),
                    field("tools.deny", "denied tools", FieldKind::Json)
                        .placeholder("[\"github/create_pr\"]")
                        .help("Tools the agent never has, even when a server offers them: server/tool or a tool name; a call of one is refused."),
                    select("tools.approval", "MCP calls need approval", &["destructive", "all"]).help(
                        "default: calls run without asking. destructive: calls of tools their server does not mark read-only. all: every call. The branch pauses on the call until you decide.",
                    ),
                ]
                .into_iter()
                .chain(step_fields())
                .collect(),
            ),
            NodeType::If => (
                "If",
                "◇",
                "Takes the first of its conditions that holds, or else when none does.",
                vec![
                    HandleSpec {
                        id: format!("{}{{i}}", handle::CONDITION_PREFIX),
                        label: "condition {i}".into(),
                        kind: Execution,
                        per_condition: true,
                        branch: true,
                    },
                    HandleSpec { branch: true, ..out(handle::FALSE, "else", Execution) },
                ],
                vec![
                    FieldSpec {
                        options: [ConditionOperator::Contains, ConditionOperator::Equal, ConditionOperator::Expression]
                            .iter()
                            .map(|o| o.as_str().to_string())
                            .collect(),
                        ..field("conditions", "conditions (first true wins; none → else)", FieldKind::Conditions)
                    },
                    field("no_match_error", "fail when nothing matches (message)", FieldKind::Text)
                        .help("When set, the node fails with this message instead of taking else."),
                    on_error(),
                    pinned(),
                ],
            ),
            NodeType::Approval => (
                "Approval",
                "‖",
                "Pauses its branch until a person approves or rejects, or until it times out.",
                vec![
                    HandleSpec { branch: true, ..out(handle::APPROVE, "approve", Execution) },
                    HandleSpec { branch: true, ..out(handle::REJECT, "reject", Execution) },
                    out(handle::TIMEOUT, "timeout", Execution),
                ],
                vec![
                    field("message", "message", FieldKind::Template)
                        .placeholder(APPROVAL_MESSAGE)
                        .help("What the person deciding is asked; Jinja over the context."),
                    field("timeout_seconds", "timeout (seconds)", FieldKind::Number)
                        .help("After this long the timeout edges are followed, or the approval rejects."),
                    pinned(),
                ],
            ),
            NodeType::Script => (
                "Script",
                "{}",
                "A code step: Python, JavaScript, bash or Lua, run with your consent; its returned object is the output.",
                vec![out(handle::OUTPUT, "", Execution), out(handle::ERROR, "error", Error)],
                vec![
                    field("language", "language", FieldKind::Text)
                        .placeholder("python")
                        .help("python, javascript, bash or lua."),
                    field("code", "code", FieldKind::Multiline).help(
                        "A function body: it sees state, input, context (and item, index) and returns an object. \
                         Bash reads them as JSON on stdin and prints an object. Runs only with your consent.",
                    ),
                    field("module", "module", FieldKind::Text)
                        .placeholder("./tools/step.mjs")
                        .help("Instead of code: a JavaScript module next to the workflow; its default export is called with state."),
                    field("timeout_seconds", "timeout (seconds)", FieldKind::Number)
                        .help("The step is stopped after this long (default 300)."),
                ]
                .into_iter()
                .chain(step_fields())
                .collect(),
            ),
            NodeType::Workflow => (
                "Workflow",
                "⧉",
                "Runs another workflow file as a child run; its output is what the child returns.",
                vec![out(handle::OUTPUT, "", Execution), out(handle::ERROR, "error", Error)],
                vec![
                    field("workflow", "workflow file", FieldKind::Text)
                        .placeholder("children/summarize.yaml")
                        .help("The child workflow, relative to this workflow's file."),
                    field("input", "input (field: template)", FieldKind::Json)
                        .placeholder("{\"text\": \"{{ PREVIOUS_OUTPUT }}\"}")
                        .help("The child run's input, field by field, checked against the child's input_schema; each value is a template."),
                    for_each_items(),
                    for_each_concurrency(),
                    on_error(),
                    pinned(),
                ],
            ),
        };
    let mut all = vec![field("name", "name", FieldKind::Text), field("description", "description", FieldKind::Text)];
    all.extend(fields);
    NodeTypeSpec {
        node_type,
        label: label.into(),
        icon: icon.into(),
        description: description.into(),
        has_input: node_type != NodeType::Start,
        entry: node_type == NodeType::Start,
        asks_model: node_type == NodeType::Agent,
        subagent: node_type == NodeType::Agent,
        new_id: match node_type {
            NodeType::If => "check".into(),
            other => other.as_str().into(),
        },
        new_fields: match node_type {
            NodeType::If => {
                serde_json::json!({"conditions": [{"operator": ConditionOperator::Contains.as_str(), "value": ""}]})
            }
            NodeType::Approval => serde_json::json!({ "message": APPROVAL_MESSAGE }),
            _ => serde_json::json!({}),
        },
        handles,
        handle_aliases: HANDLE_ALIASES
            .iter()
            .filter(|(t, _, _)| *t == node_type)
            .map(|(_, alias, handle)| HandleAlias { alias: alias.to_string(), handle: handle.to_string() })
            .collect(),
        fields: all,
    }
}

fn out(id: &str, label: &str, kind: HandleKind) -> HandleSpec {
    HandleSpec { id: id.into(), label: label.into(), kind, per_condition: false, branch: false }
}

fn field(key: &str, label: &str, kind: FieldKind) -> FieldSpec {
    FieldSpec {
        key: key.into(),
        label: label.into(),
        kind,
        options: Vec::new(),
        placeholder: None,
        help: None,
        required: None,
    }
}

fn select(key: &str, label: &str, options: &[&str]) -> FieldSpec {
    FieldSpec { options: options.iter().map(|o| o.to_string()).collect(), ..field(key, label, FieldKind::Select) }
}

impl FieldSpec {
    fn placeholder(mut self, text: &str) -> FieldSpec {
        self.placeholder = Some(text.into());
        self
    }

    fn help(mut self, text: &str) -> FieldSpec {
        self.help = Some(text.into());
        self
    }

    fn required(mut self, initial: serde_json::Value) -> FieldSpec {
        self.required = Some(initial);
        self
    }
}

/// The fields every step that does work has (agents and script nodes): its output schema, repetition over a list,
/// retries, error handling and a pinned output, in that order.
fn step_fields() -> [FieldSpec; 7] {
    [output_schema(), for_each_items(), for_each_concurrency(), retry_max(), retry_backoff(), on_error(), pinned()]
}

fn output_schema() -> FieldSpec {
    field("output_schema", "output schema (JSON Schema)", FieldKind::Json)
        .help("The answer must match it; the node's data is then the parsed object.")
}

fn for_each_items() -> FieldSpec {
    field("for_each.items", "for each (expression yielding a list)", FieldKind::Text)
        .placeholder("state.items")
        .help("Runs the node once per item, with `item` and `index` in its context.")
        .required(serde_json::json!(""))
}

fn for_each_concurrency() -> FieldSpec {
    field("for_each.concurrency", "for each: concurrency", FieldKind::Number)
        .help("Items in flight at once (default 1).")
}

fn retry_max() -> FieldSpec {
    field("retry.max", "retries of transient failures", FieldKind::Number).required(serde_json::json!(1))
}

fn retry_backoff() -> FieldSpec {
    field("retry.backoff_ms", "retry backoff (ms)", FieldKind::Number).help("Doubled for each further retry.")
}

fn on_error() -> FieldSpec {
    select("on_error", "on error", &["stop", "continue"])
        .help("continue: a failure routes on as if the node had succeeded (error edges still win).")
}

fn pinned() -> FieldSpec {
    field("pinned", "pinned output (replaces execution)", FieldKind::Json)
        .help("The node does not run; it completes at once with this data.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Workflow;
    use crate::validate::{validate, Options};
    use serde_json::{json, Map, Value};

    /// A node added in the editor is one the document reads and the validator finds nothing wrong with in itself.
    #[test]
    fn a_new_node_of_each_type_is_a_valid_node_with_the_catalogues_first_operator() {
        for spec in specs() {
            let mut node = spec.new_fields.as_object().cloned().unwrap_or_default();
            node.insert("id".into(), json!(spec.new_id));
            node.insert("type".into(), json!(spec.node_type.as_str()));
            let parsed: Result<crate::document::Node, _> = serde_json::from_value(Value::Object(node));
            assert!(parsed.is_ok(), "a new {} node reads: {:?}", spec.node_type.as_str(), parsed.err());
            if let Some(first) = spec.new_fields.pointer("/conditions/0/operator") {
                let options = &spec.fields.iter().find(|f| f.key == "conditions").unwrap().options;
                assert_eq!(first, &json!(options[0]), "a new condition takes the first operator offered");
            }
        }
        assert_eq!(specs().iter().filter(|s| s.entry).count(), 1, "one type is where a run begins");
        assert_eq!(spec(NodeType::Approval).new_fields["message"], json!(APPROVAL_MESSAGE));
    }

    /// The catalogue's `subagent` is the validator's rule: a subagent link from an agent is refused exactly when the
    /// node it links to is of a type that cannot be a subagent.
    #[test]
    fn a_subagent_link_is_refused_exactly_when_the_catalogue_says_its_target_cannot_be_a_subagent() {
        for spec in specs() {
            let wf: Workflow = serde_json::from_value(json!({
                "switchyard": 1,
                "name": "t",
                "nodes": [
                    {"id": "start", "type": "start"},
                    {"id": "parent", "type": "agent", "tools": {"subagents": true}},
                    {"id": "child", "type": spec.node_type.as_str()},
                ],
                "edges": [{"from": "start", "to": "parent"}, {"from": "parent", "to": "child", "handle": handle::SUBAGENT}],
            }))
            .unwrap();
            let report = validate(&wf, &Options::default());
            let refused = report.errors.iter().any(|f| f.code == "SUBAGENT_NOT_AGENT");
            assert_eq!(refused, !spec.subagent, "{}: {:?}", spec.label, report.errors);
        }
        assert!(spec(NodeType::Agent).subagent);
    }

    /// A value of the field's kind that the document accepts.
    fn sample(field: &FieldSpec) -> Value {
        match field.kind {
            FieldKind::Text | FieldKind::Multiline | FieldKind::Template => json!("x"),
            FieldKind::Json if field.key == "tools.mcp" => json!(["server"]),
            FieldKind::Json if field.key == "tools.deny" => json!(["server/tool"]),
            FieldKind::Json if field.key == "tools.workflows" => json!(["child.yaml"]),
            FieldKind::Json => json!({"type": "object"}),
            FieldKind::Number => json!(2),
            FieldKind::Select => json!(field.options[0]),
            FieldKind::Checkbox => json!(true),
            FieldKind::Model => json!("local/m"),
            FieldKind::Conditions => json!([{"operator": "contains", "value": "x"}]),
        }
    }

    fn set_path(object: &mut Map<String, Value>, key: &str, value: Value) {
        match key.split_once('.') {
            None => {
                object.insert(key.into(), value);
            }
            Some((head, rest)) => {
                let inner = object.entry(head).or_insert_with(|| json!({}));
                set_path(inner.as_object_mut().unwrap(), rest, value);
            }
        }
    }

    fn get_path<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
        key.split('.').try_fold(value, |v, k| v.get(k))
    }

    /// A node of `node_type` with `fields` set to their samples, parsed as the document parses it.
    fn node_with(node_type: NodeType, fields: &[&FieldSpec]) -> Result<Node, serde_json::Error> {
        let mut object = Map::new();
        object.insert("id".into(), json!("n"));
        object.insert("type".into(), json!(node_type.as_str()));
        for f in fields {
            set_path(&mut object, &f.key, sample(f));
        }
        serde_json::from_value(Value::Object(object))
    }

    /// The findings of the given code for a workflow holding `node` (after a start node, unless it is one).
    fn codes_for(node: Node, code: &str) -> Vec<String> {
        let mut wf = Workflow::new("t");
        if node.node_type != NodeType::Start {
            wf.nodes.push(Node::new("start", NodeType::Start));
        }
        wf.nodes.push(node);
        let report = validate(&wf, &Options::default());
        report.errors.iter().chain(&report.warnings).filter(|f| f.code == code).map(|f| f.message.clone()).collect()
    }

    /// `Node`'s properties in the published JSON Schema, with the properties of nested objects: `(field, [sub])`.
    fn document_fields() -> Vec<(String, Vec<String>)> {
        let schema = serde_json::to_value(schemars::schema_for!(Node)).unwrap();
        let defs = &schema["$defs"];
        let mut fields = Vec::new();
        for (name, property) in schema["properties"].as_object().unwrap() {
            if ["id", "type", "position"].contains(&name.as_str()) {
                continue;
            }
            let target = property["anyOf"].as_array().into_iter().flatten().find_map(|s| s["$ref"].as_str());
            let subfields = target
                .and_then(|r| defs[r.trim_start_matches("#/$defs/")]["properties"].as_object())
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            fields.push((name.clone(), subfields));
        }
        fields
    }

    #[test]
    fn every_field_of_every_spec_is_a_document_field_valid_for_its_type() {
        for spec in specs() {
            let fields: Vec<&FieldSpec> = spec.fields.iter().collect();
            let node = node_with(spec.node_type, &fields)
                .unwrap_or_else(|e| panic!("{}: a field is not a document field: {e}", spec.label));
            let written = serde_json::to_value(&node).unwrap();
            for f in &fields {
                assert_eq!(
                    get_path(&written, &f.key),
                    Some(&sample(f)),
                    "{}: `{}` does not round-trip",
                    spec.label,
                    f.key
                );
            }
            let wrong = codes_for(node, "FIELD_NOT_FOR_TYPE");
            assert!(wrong.is_empty(), "{}: {wrong:?}", spec.label);
        }
    }

    #[test]
    fn every_document_field_valid_for_a_type_is_in_its_spec() {
        // One spec field per top-level document field, from whichever type has it.
        let any_spec_field = |name: &str| {
            specs().iter().flat_map(|s| &s.fields).find(|f| f.key == name || f.key.starts_with(&format!("{name}.")))
        };
        let fields = document_fields();
        assert!(
            fields.iter().any(|(name, subs)| name == "retry" && subs.len() == 2),
            "schema read wrongly: {fields:?}"
        );
        for (name, subfields) in fields {
            let field = any_spec_field(&name).unwrap_or_else(|| panic!("`{name}` is in no node type's fields"));
            for spec in specs() {
                let node = node_with(spec.node_type, &[field]).unwrap();
                let rejected = !codes_for(node, "FIELD_NOT_FOR_TYPE").is_empty();
                assert_eq!(rejected, !spec.has_field(&name), "{}: `{name}`", spec.label);
                if spec.has_field(&name) {
                    for sub in &subfields {
                        let key = format!("{name}.{sub}");
                        assert!(spec.fields.iter().any(|f| f.key == key), "{}: `{key}` is missing", spec.label);
                    }
                }
            }
        }
    }

    #[test]
    fn select_options_are_exactly_the_values_the_document_accepts() {
        for spec in specs() {
            for f in spec.fields.iter().filter(|f| f.kind == FieldKind::Select) {
                for option in &f.options {
                    let mut node = node_with(spec.node_type, &[]).unwrap();
                    let mut value = serde_json::to_value(&node).unwrap();
                    set_path(value.as_object_mut().unwrap(), &f.key, json!(option));
                    node = serde_json::from_value(value).unwrap_or_else(|e| panic!("`{}: {option}`: {e}", f.key));
                    let top = f.key.split('.').next().unwrap();
                    assert!(node.fields_set().any(|k| k == top));
                    let written = serde_json::to_value(&node).unwrap();
                    assert_eq!(get_path(&written, &f.key), Some(&json!(option)), "`{}: {option}`", f.key);
                }
                let schema = serde_json::to_value(schemars::schema_for!(Node)).unwrap();
                // `tools.approval`: the `approval` property of the `tools` object's definition.
                let (properties, key) = match f.key.split_once('.') {
                    None => (&schema["properties"], f.key.as_str()),
                    Some((outer, inner)) => {
                        let outer = schema["properties"][outer]["anyOf"][0]["$ref"].as_str().unwrap();
                        (&schema["$defs"][outer.trim_start_matches("#/$defs/")]["properties"], inner)
                    }
                };
                let target = properties[key]["anyOf"][0]["$ref"].as_str().unwrap().to_string();
                let choices: Vec<&str> = schema["$defs"][target.trim_start_matches("#/$defs/")]["oneOf"]
                    .as_array()
                    .or(schema["$defs"][target.trim_start_matches("#/$defs/")]["enum"].as_array())
                    .unwrap()
                    .iter()
                    .filter_map(|v| v["const"].as_str().or(v.as_str()))
                    .collect();
                assert_eq!(f.options, choices, "{}: `{}`", spec.label, f.key);
            }
        }
    }

    #[test]
    fn validation_accepts_exactly_the_handles_of_the_spec() {
        let mut candidates: Vec<String> = ["true", "condition-2", "condition-01", "condition-", "bogus", "input"]
            .into_iter()
            .map(String::from)
            .collect();
        let node_of = |t: NodeType| {
            let mut node = Node::new("n", t);
            if t == NodeType::If {
                node.conditions = serde_json::from_value(json!([
                    {"operator": "contains", "value": "a"},
                    {"operator": "contains", "value": "b"}
                ]))
                .unwrap();
            }
            node
        };
        for t in ALL {
            candidates.extend(source_handles(&node_of(t)).into_iter().map(|(id, _)| id));
        }
        candidates.push("else".to_string());
        for t in ALL {
            let source = node_of(t);
            let handles = source_handles(&source);
            for name in &candidates {
                let mut wf = Workflow::new("t");
                let from = if t == NodeType::Start { "n" } else { "start" };
                if t != NodeType::Start {
                    wf.nodes.push(Node::new("start", NodeType::Start));
                    wf.edges.push(crate::document::Edge::new("start", "n"));
                }
                wf.nodes.push(source.clone());
                wf.nodes.push(Node::new("sink", NodeType::Agent));
                let mut edge = crate::document::Edge::new("n", "sink");
                edge.handle = Some(name.clone());
                wf.edges.push(edge);
                let report = validate(&wf, &Options::default());
                let refused = report.errors.iter().any(|f| f.code == "UNKNOWN_HANDLE");
                let legacy = t == NodeType::If && (name == "true" || name == "else");
                let in_spec = handles.iter().any(|(id, _)| id == name);
                assert_eq!(refused, !(in_spec || legacy), "{} node, handle `{name}` (from {from})", t.as_str());
                let resolved = resolve_handle(&source, name);
                assert_eq!(resolved.is_some(), in_spec || legacy, "{} `{name}`", t.as_str());
                if let (Some(r), Some(i)) = (resolved, handles.iter().position(|(id, _)| id == name)) {
                    assert_eq!((r.position as usize, r.kind), (i, handles[i].1), "{} `{name}`", t.as_str());
                }
            }
        }
    }

    #[test]
    fn an_if_nodes_handles_expand_per_condition_with_else_last_and_true_as_the_first_condition() {
        let mut node = Node::new("c", NodeType::If);
        node.conditions = serde_json::from_value(json!([
            {"operator": "contains", "value": "a"},
            {"operator": "equal", "value": "b"}
        ]))
        .unwrap();
        let ids: Vec<String> = source_handles(&node).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["condition-0", "condition-1", "false"]);
        assert_eq!(resolve_handle(&node, "true").map(|h| h.position), Some(0));
        assert_eq!(resolve_handle(&node, "else").map(|h| h.position), Some(2), "`else` is the `false` handle's label");
        assert_eq!(branches(&node).into_iter().map(|(p, _)| p).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(resolve_handle(&Node::new("c", NodeType::If), "true"), None, "no conditions, no condition 0");
        // Each handle is called by its condition, an empty one by its index, the last `else`.
        node.conditions.as_mut().unwrap()[1].value = " ".into();
        let labels: Vec<Option<String>> = (0..4).map(|at| source_handle_label(&node, at)).collect();
        assert_eq!(labels, [Some("a".into()), Some("condition 1".into()), Some("else".into()), None]);
    }

    #[test]
    fn the_spec_serializes_in_the_shape_the_editor_reads() {
        let value = serde_json::to_value(spec(NodeType::If)).unwrap();
        assert_eq!(value["type"], "if");
        assert_eq!(value["hasInput"], true);
        assert_eq!(
            value["handles"][0],
            json!({"id": "condition-{i}", "label": "condition {i}", "kind": "execution", "perCondition": true})
        );
        assert_eq!(
            value["handles"][1],
            json!({"id": "false", "label": "else", "kind": "execution", "perCondition": false})
        );
        let name = &value["fields"][0];
        assert_eq!(
            name,
            &json!({"key": "name", "label": "name", "kind": "text", "options": [], "placeholder": null, "help": null, "required": null})
        );
        assert_eq!(
            value["handleAliases"],
            json!([{"alias": "true", "handle": "condition-0"}, {"alias": "else", "handle": "false"}])
        );
        let conditions = value["fields"].as_array().unwrap().iter().find(|f| f["key"] == "conditions").unwrap();
        assert_eq!(conditions["options"], json!(["contains", "equal", "expression"]));
        let agent = serde_json::to_value(spec(NodeType::Agent)).unwrap();
        let required: Vec<(&str, &Value)> = agent["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| !f["required"].is_null())
            .map(|f| (f["key"].as_str().unwrap(), &f["required"]))
            .collect();
        assert_eq!(required, [("for_each.items", &json!("")), ("retry.max", &json!(1))]);
        let icons: Vec<&str> = specs().iter().map(|s| s.icon.as_str()).collect();
        assert_eq!(icons, ["▶", "✦", "◇", "‖", "{}", "⧉"]);
        assert!(!spec(NodeType::Start).has_input);
    }
}
