//! The Edge Agent (TEA) YAML (docs/formats.md): a list of named nodes with implicit chaining, `goto` (a target, `__end__`,
//! or if/to rules), legacy `edges` with `__start__` / `__end__` and conditions, and parallel edges joined at a
//! `fan_in` node. Navigation precedence is goto > edges > implicit. `run:` bodies and built-in actions become
//! script nodes (they run from a pinned output or an answers file). A conditional `goto` becomes an `if` node whose
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
    "index_var",
    "condition",
    "body",
    "max_iterations",
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
    "params",
    "output",
    "outputs",
    "max_concurrency",
    "subgraph",
    "input",
];

pub(super) fn import(value: &Value) -> Result<(Workflow, Vec<String>), LoadError> {
    let mut notes = Vec::new();
    let top = value.as_object().expect("detect() checked the top level is a map");
    let mut workflow = Workflow::new(top.get("name").and_then(Value::as_str).unwrap_or("Imported TEA workflow"));
    workflow.description = top.get("description").and_then(Value::as_str).map(str::to_string);
    for key in top.keys().filter(|k| !["name", "description", "nodes", "edges", "initial_state"].contains(&k.as_str()))
    {
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
    let mut start = Node::new(start_id.clone(), NodeType::Start);
    // TEA's state starts as `initial_state`, with the run's input merged over it; here it is the start node's input
    // when the run is given none (an input given replaces it whole).
    match top.get("initial_state") {
        None | Some(Value::Null) => {}
        Some(Value::Object(initial)) if initial.is_empty() => {}
        Some(initial @ Value::Object(_)) => {
            start.initial_input = Some(initial.clone());
            notes.push(format!(
                "`initial_state` is the input of `{start_id}` when a run is given none; an input given replaces it whole (TEA merges the two)"
            ));
        }
        Some(_) => notes.push("`initial_state` is not a map of state keys to values, so it was left out".into()),
    }
    workflow.nodes.push(start);
    for (i, raw) in raw_nodes.iter().enumerate() {
        workflow.nodes.push(node(&names[i], raw, &known, &mut notes)?);
    }

    // Legacy edges, grouped by source; an edge whose `to` is a list is one edge per target (parallel branches).
    let mut raw_edges = Vec::new();
    for e in top.get("edges").and_then(Value::as_array).into_iter().flatten() {
        match e.get("to") {
            Some(Value::Array(targets)) => raw_edges.extend(targets.iter().map(|t| {
                let mut one = e.clone();
                one["to"] = t.clone();
                one
            })),
            _ => raw_edges.push(e.clone()),
        }
    }
    let mut by_source: HashMap<String, Vec<(usize, &Value)>> = HashMap::new();
    for (i, e) in raw_edges.iter().enumerate() {
        let (Some(from), Some(to)) = (e.get("from").and_then(Value::as_str), e.get("to").and_then(Value::as_str))
        else {
            return Err(LoadError::new(format!(
                "edges[{i}]: needs `from` (a node name or __start__) and `to` (a node name, __end__, or a list of node names)"
            ))
            .with_code("INVALID_EDGE"));
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

    // While loops: expanded now that their navigation is known; it leaves by the loop's `false` handle.
    let mut loops = 0;
    for (i, raw) in raw_nodes.iter().enumerate() {
        if raw.get("type").and_then(Value::as_str) == Some("while_loop") {
            let name = &names[i];
            for e in workflow.edges.iter_mut().filter(|e| &e.from == name && e.handle.is_none()) {
                e.handle = Some(handle::FALSE.into());
            }
            expand_while(&mut workflow, name, raw, &mut used_ids, &mut notes)?;
            loops += 1;
        }
    }
    bound_loops(&mut workflow, &mut notes);
    if loops > 0 {
        let budget = workflow.defaults.step_budget.unwrap_or(crate::document::DEFAULT_STEP_BUDGET);
        workflow.defaults.step_budget = Some(budget.max((TEA_LOOP_LIMIT as u32) * 10));
    }
    super::layered_positions(&mut workflow);
    Ok((workflow, notes))
}

fn node(name: &str, raw: &Value, known: &HashSet<&str>, notes: &mut Vec<String>) -> Result<Node, LoadError> {
    let mut node = Node::new(name, NodeType::Script);
    let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
    if raw.get("type").and_then(Value::as_str) == Some("while_loop") {
        // Expanded into an `if` node and its body once the navigation is known (`expand_while`).
        check_while(name, raw)?;
        return Ok(node);
    }
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
        // As TEA reads it: the node's, else `parallel_config`'s; 0 counts as unset, and a template is resolved only
        // when TEA runs (here: the default, noted).
        let given = [raw.get("max_concurrency"), raw.get("parallel_config").and_then(|p| p.get("max_concurrency"))]
            .into_iter()
            .flatten()
            .find(|v| !v.is_null() && v.as_u64() != Some(0) && v.as_bool() != Some(false));
        let concurrency = match given {
            None => 4,
            Some(Value::String(template)) => {
                notes.push(format!(
                    "node `{name}`: `max_concurrency: {template}` is resolved only when TEA runs; here the branches run 4 at a time"
                ));
                4
            }
            Some(v) => match v.as_u64().filter(|&c| c >= 1) {
                Some(c) => c as u32,
                None => {
                    return Err(LoadError::new(format!(
                        "dynamic_parallel node '{name}': max_concurrency must be positive integer, got {v}"
                    ))
                    .with_code("TEA_INVALID_MAX_CONCURRENCY"))
                }
            },
        };
        node.for_each = Some(ForEach { items, concurrency: Some(concurrency) });
        if let Some(key) = text("output") {
            notes.push(format!(
                "node `{name}`: `output: {key}` (where TEA keeps the branches' results in state) is not mapped; the \
                 results are the node's `items` ({{{{ {name}.items }}}})"
            ));
        }
        let item_var = text("item_var").unwrap_or_else(|| "item".into());
        let index_var = text("index_var").unwrap_or_else(|| "index".into());
        match modes[0] {
            "action" => {
                let action = &raw["action"];
                let uses = action.get("uses").and_then(Value::as_str).ok_or_else(|| {
                    LoadError::new(format!("dynamic_parallel node '{name}' action requires 'uses' field"))
                        .with_code("TEA_ACTION_WITHOUT_USES")
                })?;
                // Each branch sees its item in `state` in TEA; here a `for_each` item is `item` / `index`.
                let with = action.get("with").map(|w| {
                    let text = serde_json::to_string(w).unwrap_or_default();
                    let text = text
                        .replace(&format!("state.{item_var}"), "item")
                        .replace(&format!("state.{index_var}"), "index")
                        .replace(&format!("state['{item_var}']"), "item")
                        .replace(&format!("state[\\\"{item_var}\\\"]"), "item");
                    serde_json::from_str::<Value>(&text).unwrap_or_else(|_| w.clone())
                });
                action_node(&mut node, uses, with.as_ref(), notes);
            }
            "subgraph" if local_file(&raw["subgraph"]).is_some() => {
                // Each item's branch is a child run of the subgraph's file (docs/subworkflows.md), given `input`
                // with the item as `item` (TEA puts it in the branch's state, and its templates read it so).
                let path = local_file(&raw["subgraph"]).unwrap_or_default();
                node.node_type = NodeType::Workflow;
                node.workflow = Some(path.trim_start_matches("./").to_string());
                node.input = raw.get("input").and_then(Value::as_object).map(|mapping| {
                    mapping
                        .iter()
                        .map(|(k, v)| {
                            let v = match v {
                                Value::String(t) => Value::String(item_template(t, &item_var, &index_var)),
                                other => other.clone(),
                            };
                            (k.clone(), v)
                        })
                        .collect()
                });
                notes.push(format!(
                    "node `{name}`: each item runs `{path}` as a child run; its result is the child's output (its \
                     last node's data) where TEA gives the subgraph's final state"
                ));
            }
            mode => {
                node.language = Some("tea-action".into());
                node.code = Some(format!("{mode}: {}", serde_yaml::to_string(&raw[mode]).unwrap_or_default()));
                notes.push(format!(
                    "node `{name}`: dynamic_parallel `{mode}` branches are not supported yet; pin its output or answer it from an answers file"
                ));
            }
        }
    } else if raw.get("run").is_some() {
        run_body(&mut node, raw, notes)?;
    } else if let Some(uses) = raw.get("uses").or_else(|| raw.get("action")).and_then(Value::as_str) {
        // `action: llm.call` is TEA's other spelling of `uses:`, and `params:` of `with:`.
        action_node(&mut node, uses, raw.get("with").or_else(|| raw.get("params")), notes);
        for key in ["output", "outputs"].into_iter().filter(|k| raw.get(*k).is_some()) {
            notes.push(format!(
                "node `{name}`: `{key}` (where TEA stores the action's result in state) is not mapped; the result merges into state as it is"
            ));
        }
    } else if let Some(action) = raw.get("action").filter(|a| a.is_object()) {
        // The `{uses, with}` form TEA documents for dynamic_parallel, written on a plain node.
        if let Some(uses) = action.get("uses").and_then(Value::as_str) {
            action_node(&mut node, uses, action.get("with"), notes);
        } else {
            notes.push(format!("node `{name}`: its `action` names no `uses`, so it does nothing (as in TEA)"));
        }
    } else if raw.get("action").is_some() || raw.get("uses").is_some() {
        return Err(LoadError::new(format!(
            "node `{name}`: `uses` / `action` must name an action, such as `llm.call`"
        ))
        .with_code("TEA_INVALID_ACTION"));
    }
    if let Some(map) = raw.as_object() {
        for key in map.keys().filter(|k| !NODE_KEYS.contains(&k.as_str())) {
            notes.push(format!("node `{name}`: field `{key}` has no Switchyard equivalent and was left out"));
        }
    }
    Ok(node)
}

/// A dynamic_parallel `subgraph:` that names a file here (not an `s3://`, `gs://`, `az://` or web address, which
/// TEA reads through fsspec): relative to the parent's folder, as TEA resolves it.
fn local_file(subgraph: &Value) -> Option<&str> {
    let path = subgraph.as_str()?.trim();
    let remote = path.contains("://") || path.starts_with('/');
    (!path.is_empty() && !remote).then_some(path)
}

/// A template of a branch, reading its item and index as a `for_each` item does (`item`, `index`): TEA's branch
/// state has them under `item_var` and `index_var`, read as `state.NAME` or `NAME`.
fn item_template(text: &str, item_var: &str, index_var: &str) -> String {
    let mut out = text.replace(&format!("state.{index_var}"), "index").replace(&format!("state.{item_var}"), "item");
    for (var, ours) in [(index_var, "index"), (item_var, "item")] {
        out = whole_word(&out, var, ours);
    }
    out
}

/// `text` with every whole-word `word` (not part of a longer name, nor a field after a `.`) as `with`.
fn whole_word(text: &str, word: &str, with: &str) -> String {
    if word == with {
        return text.to_string();
    }
    let part = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = if at > 0 { rest[..at].chars().last() } else { out.chars().last() };
        let after = rest[at + word.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(|c| part(c) || c == '.') || after.is_some_and(part) {
            out.push_str(word);
        } else {
            out.push_str(with);
        }
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// A `run:` body: Python unless `language` (or `run: {type, code}`) says otherwise. Lua runs; Prolog is kept and
/// fails at run time with what to do.
fn run_body(node: &mut Node, raw: &Value, notes: &mut Vec<String>) -> Result<(), LoadError> {
    let name = node.id.clone();
    let (language, code) = match &raw["run"] {
        Value::String(code) => (raw.get("language").and_then(Value::as_str).unwrap_or("python"), code.clone()),
        Value::Object(run) => (
            run.get("type").and_then(Value::as_str).or(raw.get("language").and_then(Value::as_str)).unwrap_or("python"),
            run.get("code").and_then(Value::as_str).unwrap_or_default().to_string(),
        ),
        other => {
            return Err(
                LoadError::new(format!("node `{name}`: `run` must be code, not {other}")).with_code("TEA_INVALID_RUN")
            )
        }
    };
    if let Err(e) = crate::language::Language::parse(Some(language)) {
        notes.push(format!("node `{name}`: {e}"));
    }
    node.language = Some(language.to_string());
    node.code = Some(code);
    Ok(())
}

/// A built-in action: `llm.call` and `llm.chat` become agents; the rest are kept as steps that say at run time that
/// the action is not supported yet.
fn action_node(node: &mut Node, uses: &str, with: Option<&Value>, notes: &mut Vec<String>) {
    let name = node.id.clone();
    let text = |k: &str| with.and_then(|w| w.get(k)).and_then(Value::as_str).map(str::to_string);
    if !matches!(uses, "llm.call" | "llm.chat") {
        node.language = Some("tea-action".into());
        node.code = Some(serde_yaml::to_string(&serde_json::json!({ "uses": uses, "with": with })).unwrap_or_default());
        notes.push(format!(
            "node `{name}`: action `{uses}` is not supported yet; pin its output or answer it from an answers file"
        ));
        return;
    }
    node.node_type = NodeType::Agent;
    let mut system = text("system");
    let mut prompt = text("prompt");
    if let Some(messages) = with.and_then(|w| w.get("messages")).and_then(Value::as_array) {
        let mut turns = Vec::new();
        for m in messages {
            let content = m.get("content").and_then(Value::as_str).unwrap_or_default();
            match m.get("role").and_then(Value::as_str).unwrap_or("user") {
                "system" => system = Some(content.to_string()),
                "user" => turns.push(content.to_string()),
                role => turns.push(format!("{role}: {content}")),
            }
        }
        prompt = Some(turns.join("\n\n"));
    }
    node.system_prompt = system;
    node.user_prompt = prompt;
    match (text("provider").filter(|p| p != "auto"), text("model")) {
        (_, Some(model)) if model.contains('/') => node.model = Some(model),
        (Some(provider), Some(model)) => node.model = Some(format!("{provider}/{model}")),
        (_, Some(model)) => notes.push(format!(
            "node `{name}`: TEA model `{model}` names no provider; the agent uses the run's default model (the workflow's `defaults.model`, the run's or the settings')"
        )),
        _ => {}
    }
    notes.push(format!("node `{name}`: `{uses}` is an agent; its answer is `text` here (TEA names it `content`)"));
    // What the agent node has no field for is said, never dropped silently.
    for key in with.and_then(Value::as_object).into_iter().flat_map(|w| w.keys()) {
        let why = match key.as_str() {
            "system" | "prompt" | "messages" | "provider" | "model" => continue,
            "temperature" => "the model is called with its provider's default temperature",
            "max_tokens" => "the answer's length is not capped here",
            "backend" => "the agent calls the model its `model` names (provider/model), or the run's default",
            _ => "an agent has no such setting",
        };
        notes.push(format!("node `{name}`: `{uses}` parameter `{key}` is not used: {why}"));
    }
}

/// A `while_loop` node, checked as TEA checks it: a condition, an integer `max_iterations` from 1 to 1000, a body of
/// at least one node, no loop inside.
fn check_while(name: &str, raw: &Value) -> Result<(), LoadError> {
    let refuse = |message: String, code: &'static str| Err(LoadError::new(message).with_code(code));
    match raw.get("condition") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {
            return refuse(format!("while_loop node '{name}' requires 'condition'"), "TEA_WHILE_WITHOUT_CONDITION")
        }
        Some(Value::String(s)) if s.trim().is_empty() => {
            return refuse(format!("while_loop node '{name}' requires 'condition'"), "TEA_WHILE_WITHOUT_CONDITION")
        }
        _ => {}
    }
    match raw.get("max_iterations") {
        None | Some(Value::Null) => {
            return refuse(
                format!("while_loop node '{name}' requires 'max_iterations'"),
                "TEA_WHILE_WITHOUT_MAX_ITERATIONS",
            )
        }
        Some(v) if !v.as_i64().is_some_and(|n| (1..=1000).contains(&n)) => {
            return refuse(
                format!("while_loop node '{name}': max_iterations must be integer between 1-1000, got {v}"),
                "TEA_WHILE_INVALID_MAX_ITERATIONS",
            )
        }
        _ => {}
    }
    let body = raw.get("body").and_then(Value::as_array).filter(|b| !b.is_empty());
    let Some(body) = body else {
        return refuse(
            format!("while_loop node '{name}' requires 'body' with at least one node"),
            "TEA_WHILE_EMPTY_BODY",
        );
    };
    if let Some(nested) = body.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("while_loop")) {
        return refuse(
            format!(
                "Nested while-loops not supported: '{name}' contains nested while_loop '{}'",
                nested.get("name").and_then(Value::as_str).unwrap_or("unnamed")
            ),
            "TEA_NESTED_WHILE",
        );
    }
    Ok(())
}

/// Expands a `while_loop` node into an `if` node named like it (the condition, checked before every pass, and the
/// pass count) and its body nodes in a chain back to it. The loop's own navigation leaves by the `if`'s `false`
/// handle, after the condition fails or `max_iterations` passes ran (TEA exits normally then).
fn expand_while(
    workflow: &mut Workflow,
    name: &str,
    raw: &Value,
    used_ids: &mut HashSet<String>,
    notes: &mut Vec<String>,
) -> Result<(), LoadError> {
    let max = raw["max_iterations"].as_i64().expect("checked");
    let condition = match &raw["condition"] {
        Value::String(s) => self::condition(s),
        other => other.to_string(),
    };
    let check = workflow.nodes.iter_mut().find(|n| n.id == name).expect("the loop node exists");
    check.node_type = NodeType::If;
    check.name = Some(format!("while {}", raw["condition"].as_str().unwrap_or("")));
    check.conditions = Some(vec![Condition {
        operator: ConditionOperator::Expression,
        value: format!("({condition}) and iteration <= {max}"),
    }]);
    let mut previous = name.to_string();
    let mut first = true;
    for (i, body) in raw["body"].as_array().expect("checked").iter().enumerate() {
        let base =
            body.get("name").and_then(Value::as_str).map_or_else(|| format!("{name}_body_{}", i + 1), str::to_string);
        let mut id = base.clone();
        while used_ids.contains(&id) {
            id = format!("{name}.{base}");
            if used_ids.contains(&id) {
                id.push('_');
            }
        }
        used_ids.insert(id.clone());
        let known = HashSet::new();
        let mut n = self::node(&id, body, &known, notes)?;
        n.name = Some(base);
        workflow.nodes.push(n);
        let mut edge = Edge::new(&previous, &id);
        if first {
            edge.handle = Some(format!("{}0", handle::CONDITION_PREFIX));
            first = false;
        }
        workflow.edges.push(edge);
        previous = id;
    }
    let mut back = Edge::new(&previous, name);
    back.max_iterations = Some(max);
    workflow.edges.push(back);
    Ok(())
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
                e.r#if = Some(match &e.r#if {
                    Some(existing) => format!("({existing}) and not ({g})"),
                    None => format!("not ({g})"),
                });
            }
        }
        return;
    }
    let mut edge = Edge::new(from, to);
    edge.r#if = guard;
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
