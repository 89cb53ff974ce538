//! AgentFlow JSON (docs/formats.md): `nodes` with `type`, `x`, `y`, `data`, and `connections` with handles. This is also the
//! shape the canvas speaks. Legacy data is normalized as AgentFlow's own engine does.

use serde_json::{Map, Value};

use super::LoadError;
use crate::document::{
    handle, AgentTools, Condition, ConditionOperator, Edge, Node, NodeType, Position, ReasoningEffort, Workflow,
};

pub(super) fn import(value: &Value) -> Result<(Workflow, Vec<String>), LoadError> {
    let mut notes = Vec::new();
    let mut workflow =
        Workflow::new(value.get("name").and_then(Value::as_str).unwrap_or("Imported AgentFlow workflow").to_string());
    let nodes = value
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or_else(|| LoadError::new("an AgentFlow file needs a `nodes` array"))?;
    let mut dropped = Vec::new();
    for (i, raw) in nodes.iter().enumerate() {
        let id = raw
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| LoadError::new(format!("nodes[{i}]: every AgentFlow node needs a string `id`")))?
            .to_string();
        let type_name = raw.get("type").and_then(Value::as_str).unwrap_or("");
        let node_type = match type_name {
            "start" => NodeType::Start,
            "agent" => NodeType::Agent,
            "if" => NodeType::If,
            "approval" => NodeType::Approval,
            "input" => {
                notes.push(format!("node `{id}`: legacy type `input` became `approval`"));
                NodeType::Approval
            }
            "end" => {
                notes.push(format!(
                    "node `{id}`: `end` nodes are not needed (a node with no out-edge ends its branch); dropped it and its connections"
                ));
                dropped.push(id);
                continue;
            }
            other => {
                return Err(LoadError::new(format!(
                    "node `{id}`: unknown AgentFlow node type `{other}`; expected start, agent, if, approval (or legacy input)"
                )))
            }
        };
        let mut node = Node::new(id.clone(), node_type);
        let x = raw.get("x").and_then(Value::as_f64);
        let y = raw.get("y").and_then(Value::as_f64);
        if let (Some(x), Some(y)) = (x, y) {
            node.position = Some(Position { x, y });
        }
        let empty = Map::new();
        let data = raw.get("data").and_then(Value::as_object).unwrap_or(&empty);
        import_data(&mut node, data, &mut notes)?;
        workflow.nodes.push(node);
    }

    let connections = value.get("connections").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, c) in connections.iter().enumerate() {
        let field = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(from), Some(to)) = (field("source"), field("target")) else {
            return Err(LoadError::new(format!("connections[{i}]: needs string `source` and `target`")));
        };
        if dropped.contains(&from) || dropped.contains(&to) {
            continue;
        }
        let mut edge = Edge::new(from, to);
        edge.id = field("id");
        edge.handle = field("sourceHandle").filter(|h| h != handle::OUTPUT);
        edge.target_handle = field("targetHandle").filter(|h| h != handle::INPUT);
        if edge.handle.as_deref() == Some(handle::TRUE_LEGACY)
            && workflow.node(&edge.from).is_some_and(|n| n.node_type == NodeType::If)
        {
            notes.push(format!("connection {} -> {}: legacy handle `true` became `condition-0`", edge.from, edge.to));
            edge.handle = Some(format!("{}0", handle::CONDITION_PREFIX));
        }
        workflow.edges.push(edge);
    }
    Ok((workflow, notes))
}

fn import_data(node: &mut Node, data: &Map<String, Value>, notes: &mut Vec<String>) -> Result<(), LoadError> {
    let id = node.id.clone();
    let text = |k: &str| data.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let mut used = vec!["collapsed"];
    match node.node_type {
        NodeType::Start => {
            used.push("initialInput");
            node.initial_input = data.get("initialInput").filter(|v| !v.is_null()).cloned();
        }
        NodeType::Agent => {
            used.extend(["agentName", "name", "systemPrompt", "userPrompt", "model", "reasoningEffort", "tools"]);
            node.name = text("agentName").or_else(|| text("name"));
            node.system_prompt = text("systemPrompt");
            node.user_prompt = text("userPrompt");
            node.model = text("model").map(|m| {
                if m.contains('/') {
                    m
                } else {
                    notes.push(format!("node `{id}`: model `{m}` names no provider; mapped to `openai/{m}`"));
                    format!("openai/{m}")
                }
            });
            node.reasoning_effort = match text("reasoningEffort").as_deref() {
                None => None,
                Some("minimal") => Some(ReasoningEffort::Minimal),
                Some("low") => Some(ReasoningEffort::Low),
                Some("medium") => Some(ReasoningEffort::Medium),
                Some("high") => Some(ReasoningEffort::High),
                Some(other) => {
                    notes.push(format!("node `{id}`: unknown reasoning effort `{other}` dropped"));
                    None
                }
            };
            if let Some(tools) = data.get("tools").and_then(Value::as_object) {
                let flag = |k: &str| tools.get(k).and_then(Value::as_bool).unwrap_or(false);
                let t = AgentTools {
                    web_search: flag("web_search"),
                    subagents: flag("subagents"),
                    ..AgentTools::default()
                };
                if t != AgentTools::default() {
                    node.tools = Some(t);
                }
            }
        }
        NodeType::If => {
            used.extend(["conditions", "condition"]);
            let mut conditions = Vec::new();
            for (i, c) in data.get("conditions").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let op = c.get("operator").and_then(Value::as_str).unwrap_or("contains");
                let operator = match op {
                    "equal" | "equals" => ConditionOperator::Equal,
                    "contains" => ConditionOperator::Contains,
                    "expression" => ConditionOperator::Expression,
                    other => {
                        return Err(LoadError::new(format!(
                            "node `{id}`: condition {i} has unknown operator `{other}`; expected equal, contains or expression"
                        )))
                    }
                };
                let value = c.get("value").map(value_text).unwrap_or_default();
                conditions.push(Condition { operator, value });
            }
            if conditions.is_empty() {
                if let Some(legacy) = text("condition") {
                    notes.push(format!("node `{id}`: legacy `condition: {legacy:?}` became one `contains` condition"));
                    conditions.push(Condition { operator: ConditionOperator::Contains, value: legacy });
                }
            }
            node.conditions = Some(conditions);
        }
        NodeType::Approval => {
            used.extend(["message", "prompt", "label"]);
            node.message = text("message").or_else(|| text("prompt")).or_else(|| text("label"));
        }
        NodeType::Script | NodeType::Workflow => {}
    }
    for key in data.keys().filter(|k| !used.contains(&k.as_str())) {
        notes.push(format!("node `{id}`: field `{key}` has no Switchyard equivalent and was left out"));
    }
    Ok(())
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
