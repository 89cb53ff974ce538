//! The Edge Agent (TEA) YAML (seed 004): a list of named nodes with implicit chaining, `goto` (a target, `__end__`,
//! or if/to rules), legacy `edges` with `__start__` / `__end__` and conditions, and parallel edges joined at a
//! `fan_in` node. Navigation precedence is goto > edges > implicit. `run:` bodies and built-in actions become
//! script nodes (they run from a pinned output or a script file). A conditional `goto` becomes an `if` node whose
//! conditions are the rules, evaluated after the node's output is merged into `state`, first match winning.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::LoadError;
use crate::document::{handle, Condition, ConditionOperator, Edge, ForEach, Node, NodeType, Workflow};
use crate::graph::Topology;

const START: &str = "__start__";
const END: &str = "__end__";
/// TEA's own bound on loops: each loop's back edge is bounded by it on import.
pub const TEA_LOOP_LIMIT: i64 = 1000;
const NODE_KEYS: &[&str] = &[
    "name",
    "run",
    "language",
    "goto",
    "fan_in",
    "type",
    "items",
    "item_var",
    "action",
    "steps",
    "uses",
    "with",
    "output",
    "max_concurrency",
];

pub(super) fn import(value: &Value) -> Result<(Workflow, Vec<String>), LoadError> {
    let mut notes = Vec::new();
    let top = value.as_object().expect("detect() checked the top level is a map");
    let mut workflow = Workflow::new(top.get("name").and_then(Value::as_str).unwrap_or("Imported TEA workflow"));
    workflow.description = top.get("description").and_then(Value::as_str).map(str::to_string);
    for key in top.keys().filter(|k| !["name", "description", "nodes", "edges"].contains(&k.as_str())) {
        notes.push(format!("top-level `{key}` has no Switchyard equivalent and was left out"));
    }
    let raw_nodes = top.get("nodes").and_then(Value::as_array).filter(|n| !n.is_empty()).ok_or_else(|| {
        LoadError::new("`nodes` is missing or empty: a TEA workflow lists its nodes").with_code("NO_NODES")
    })?;

    // Nodes, by name.
    let mut names: Vec<String> = Vec::new();
    for (i, raw) in raw_nodes.iter().enumerate() {
        let name = match raw.get("name").and_then(Value::as_str) {
            Some(n) => n.to_string(),
            None => {
                let generated = format!("node_{}", i + 1);
                notes.push(format!("nodes[{i}] has no name; it is called `{generated}`"));
                generated
            }
        };
        if names.contains(&name) {
            return Err(LoadError::new(format!("nodes[{i}]: node `{name}` is defined twice; names must be unique"))
                .with_code("DUPLICATE_NODE_ID"));
        }
        names.push(name);
    }
    let known: HashSet<&str> = names.iter().map(String::as_str).collect();
    let mut start_id = "start".to_string();
    while known.contains(start_id.as_str()) {
        start_id.insert(0, '_');
    }
    workflow.nodes.push(Node::new(start_id.clone(), NodeType::Start));
    for (i, raw) in raw_nodes.iter().enumerate() {
        workflow.nodes.push(node(&names[i], raw, &known, &mut notes)?);
    }

    // Legacy edges, grouped by source.
    let raw_edges = top.get("edges").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut by_source: HashMap<String, Vec<(usize, &Value)>> = HashMap::new();
    for (i, e) in raw_edges.iter().enumerate() {
        let (Some(from), Some(to)) = (e.get("from").and_then(Value::as_str), e.get("to").and_then(Value::as_str))
        else {
            return Err(LoadError::new(format!("edges[{i}]: needs `from` and `to`")).with_code("INVALID_EDGE"));
        };
        if from != START && !known.contains(from) {
            return Err(
                LoadError::new(format!("edges[{i}]: `from: {from}` names no node")).with_code("EDGE_SOURCE_MISSING")
            );
        }
        if to != END && !known.contains(to) {
            return Err(
                LoadError::new(format!("edges[{i}]: `to: {to}` names no node")).with_code("EDGE_TARGET_MISSING")
            );
        }
        if let Some(fan_in) = e.get("fan_in").and_then(Value::as_str) {
            if !known.contains(fan_in) {
                return Err(LoadError::new(format!("edges[{i}]: `fan_in: {fan_in}` names no node"))
                    .with_code("TEA_FAN_IN_UNDEFINED"));
            }
        }
        by_source.entry(from.to_string()).or_default().push((i, e));
    }

    // Entry: the `__start__` edges, else the first node.
    match by_source.get(START) {
        Some(starts) => {
            for (_, e) in starts {
                let to = e["to"].as_str().unwrap();
                if to != END {
                    workflow.edges.push(Edge::new(&start_id, to));
                }
            }
        }
        None => workflow.edges.push(Edge::new(&start_id, &names[0])),
    }

    // Navigation out of each node: goto > edges > implicit.
    let mut used_ids: HashSet<String> = workflow.nodes.iter().map(|n| n.id.clone()).collect();
    for (i, raw) in raw_nodes.iter().enumerate() {
        let name = &names[i];
        if let Some(goto) = raw.get("goto") {
            if by_source.contains_key(name) {
                notes.push(format!("node `{name}`: its `goto` takes precedence; its legacy edges were ignored"));
            }
            goto_edges(&mut workflow, name, goto, &known, &mut used_ids, &mut notes)?;
        } else if let Some(edges) = by_source.get(name) {
            // Edges to `__end__` last: a guarded end constrains the node's other edges.
            let (ends, others): (Vec<_>, Vec<_>) = edges.iter().partition(|(_, e)| e["to"] == END);
            for &(j, e) in others.into_iter().chain(ends) {
                legacy_edge(&mut workflow, name, j, e, &mut notes);
            }
        } else if let Some(next) = names.get(i + 1) {
            workflow.edges.push(Edge::new(name, next));
        }
    }

    bound_loops(&mut workflow, &mut notes);
    super::layered_positions(&mut workflow);
    Ok((workflow, notes))
}

fn node(name: &str, raw: &Value, known: &HashSet<&str>, notes: &mut Vec<String>) -> Result<Node, LoadError> {
    let mut node = Node::new(name, NodeType::Script);
    let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
    if raw.get("type").and_then(Value::as_str) == Some("dynamic_parallel") {
        let items = raw.get("items").ok_or_else(|| {
            LoadError::new(format!("node `{name}`: a dynamic_parallel node needs `items`"))
                .with_code("TEA_ITEMS_MISSING")
        })?;
        let fan_in = text("fan_in").ok_or_else(|| {
            LoadError::new(format!(
                "node `{name}`: a dynamic_parallel node needs `fan_in` naming the node that collects its results"
            ))
            .with_code("TEA_FAN_IN_MISSING")
        })?;
        if !known.contains(fan_in.as_str()) {
            return Err(LoadError::new(format!("node `{name}`: `fan_in: {fan_in}` names no node"))
                .with_code("TEA_FAN_IN_UNDEFINED"));
        }
        let modes: Vec<&str> = ["action", "steps", "subgraph"].into_iter().filter(|k| raw.get(k).is_some()).collect();
        if modes.len() != 1 {
            return Err(LoadError::new(format!(
                "node `{name}`: a dynamic_parallel node runs exactly one of action, steps or subgraph (it has {})",
                if modes.is_empty() { "none".to_string() } else { modes.join(" and ") }
            ))
            .with_code("TEA_PARALLEL_TWO_MODES"));
        }
        let items = match items {
            Value::String(s) => condition(s),
            other => other.to_string(),
        };
        let concurrency = raw.get("max_concurrency").and_then(Value::as_u64).map(|c| c as u32);
        node.for_each = Some(ForEach { items, concurrency: Some(concurrency.unwrap_or(4)) });
        node.language = Some("tea-action".into());
        node.code = Some(serde_yaml::to_string(&raw[modes[0]]).unwrap_or_default());
        if let Some(var) = text("item_var").filter(|v| v != "item") {
            notes.push(format!("node `{name}`: its item is called `item` here, not `{var}`"));
        }
    } else if let Some(code) = text("run") {
        node.language = Some(text("language").unwrap_or_else(|| "python".into()));
        node.code = Some(code);
    } else if raw.get("uses").is_some() || raw.get("action").is_some() {
        let action = raw
            .get("action")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({ "uses": raw.get("uses"), "with": raw.get("with") }));
        node.language = Some("tea-action".into());
        node.code = Some(serde_yaml::to_string(&action).unwrap_or_default());
        notes.push(format!("node `{name}`: the built-in action runs from a pinned output or the script file"));
    }
    if let Some(map) = raw.as_object() {
        for key in map.keys().filter(|k| !NODE_KEYS.contains(&k.as_str())) {
            notes.push(format!("node `{name}`: field `{key}` has no Switchyard equivalent and was left out"));
        }
    }
    Ok(node)
}

/// A TEA condition as an expression: `{{ … }}` unwrapped, `!flag` and bare `flag` read from `state`.
pub(crate) fn condition(source: &str) -> String {
    let mut s = source.trim();
    if s.starts_with("{{") && s.ends_with("}}") {
        s = s[2..s.len() - 2].trim();
    }
    let is_ident = |t: &str| {
        !t.is_empty()
            && t.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !t.starts_with(|c: char| c.is_ascii_digit())
    };
    let reserved = ["true", "false", "True", "False", "none", "None", "state"];
    if let Some(rest) = s.strip_prefix('!') {
        let rest = rest.trim();
        if is_ident(rest) && !reserved.contains(&rest) {
            return format!("not state.{rest}");
        }
        return format!("not ({})", condition(rest));
    }
    if is_ident(s) && !reserved.contains(&s) {
        return format!("state.{s}");
    }
    s.to_string()
}

fn goto_edges(
    workflow: &mut Workflow,
    name: &str,
    goto: &Value,
    known: &HashSet<&str>,
    used_ids: &mut HashSet<String>,
    notes: &mut Vec<String>,
) -> Result<(), LoadError> {
    let target = |to: &str| -> Result<Option<String>, LoadError> {
        match to {
            END => Ok(None),
            t if known.contains(t) => Ok(Some(t.to_string())),
            t => Err(LoadError::new(format!("node `{name}`: goto `{t}` names no node (use a node name or `__end__`)"))
                .with_code("TEA_GOTO_UNKNOWN_TARGET")),
        }
    };
    match goto {
        Value::String(to) => {
            if let Some(t) = target(to)? {
                workflow.edges.push(Edge::new(name, t));
            }
            Ok(())
        }
        Value::Array(rules) => {
            let mut id = format!("{name}__goto");
            while used_ids.contains(&id) {
                id.push('_');
            }
            used_ids.insert(id.clone());
            let mut check = Node::new(&id, NodeType::If);
            check.name = Some(format!("goto of {name}"));
            let mut conditions = Vec::new();
            let mut branches: Vec<(String, Option<String>)> = Vec::new();
            let mut fallback: Option<Option<String>> = None;
            for (i, rule) in rules.iter().enumerate() {
                let to = rule.get("to").and_then(Value::as_str).ok_or_else(|| {
                    LoadError::new(format!("node `{name}`: goto rule {i} has no `to`"))
                        .with_code("TEA_GOTO_RULE_WITHOUT_TO")
                })?;
                let to = target(to)?;
                if fallback.is_some() {
                    notes.push(format!("node `{name}`: goto rule {i} comes after the fallback and can never match"));
                    continue;
                }
                match rule.get("if") {
                    None => fallback = Some(to),
                    Some(cond) => {
                        let expr = match cond {
                            Value::String(s) => condition(s),
                            Value::Bool(b) => b.to_string(),
                            other => other.to_string(),
                        };
                        branches.push((format!("{}{}", handle::CONDITION_PREFIX, conditions.len()), to));
                        conditions.push(Condition { operator: ConditionOperator::Expression, value: expr });
                    }
                }
            }
            check.conditions = Some(conditions);
            match &fallback {
                Some(Some(to)) => branches.push((handle::FALSE.into(), Some(to.clone()))),
                Some(None) => {}
                None => check.no_match_error = Some(format!("no goto rule of `{name}` matched and it has no fallback")),
            }
            workflow.nodes.push(check);
            workflow.edges.push(Edge::new(name, &id));
            for (handle_name, to) in branches {
                if let Some(to) = to {
                    let mut edge = Edge::new(&id, to);
                    edge.handle = Some(handle_name);
                    workflow.edges.push(edge);
                }
            }
            Ok(())
        }
        other => Err(LoadError::new(format!(
            "node `{name}`: `goto` must be a node name or a list of if/to rules, not {other}"
        ))
        .with_code("TEA_INVALID_GOTO")),
    }
}

fn legacy_edge(workflow: &mut Workflow, from: &str, index: usize, raw: &Value, notes: &mut Vec<String>) {
    let to = raw["to"].as_str().unwrap();
    let guard = match (raw.get("condition"), raw.get("when")) {
        (Some(Value::Object(c)), when) => {
            let expr = condition(c.get("value").and_then(Value::as_str).unwrap_or("true"));
            match when {
                Some(Value::Bool(false)) => Some(format!("not ({expr})")),
                _ => Some(expr),
            }
        }
        (Some(Value::String(c)), _) => Some(condition(c)),
        (_, Some(Value::String(w))) => Some(condition(w)),
        (_, Some(Value::Bool(true))) | (None, None) => None,
        (_, Some(Value::Bool(false))) => {
            notes.push(format!("edges[{index}]: `when: false` is never followed; it was left out"));
            return;
        }
        (_, Some(other)) => Some(other.to_string()),
        (Some(other), _) => Some(other.to_string()),
    };
    if to == END {
        // Ending is what a node with no followed edge does; a guarded end still has its condition checked, and
        // when it holds, no other edge should be followed — so the other edges get the negated guard.
        if let Some(g) = guard {
            for e in workflow.edges.iter_mut().filter(|e| e.from == from) {
                e.guard = Some(match &e.guard {
                    Some(existing) => format!("({existing}) and not ({g})"),
                    None => format!("not ({g})"),
                });
            }
        }
        return;
    }
    let mut edge = Edge::new(from, to);
    edge.guard = guard;
    workflow.edges.push(edge);
}

/// TEA lets loops run up to its global limit; our validation rejects unbounded cycles, so each loop's back edge is
/// bounded by that same limit.
fn bound_loops(workflow: &mut Workflow, notes: &mut Vec<String>) {
    let topo = Topology::new(workflow);
    let mut bounded = Vec::new();
    for (e, edge) in workflow.edges.iter_mut().enumerate() {
        if topo.back[e] && edge.max_iterations.is_none() {
            edge.max_iterations = Some(TEA_LOOP_LIMIT);
            bounded.push(format!("{}->{}", edge.from, edge.to));
        }
    }
    if !bounded.is_empty() {
        notes.push(format!(
            "loop edges {} are bounded at {TEA_LOOP_LIMIT} iterations, TEA's own limit; the step budget is raised to match",
            bounded.join(", ")
        ));
        workflow.defaults.step_budget = Some((TEA_LOOP_LIMIT as u32) * 10);
    }
}
