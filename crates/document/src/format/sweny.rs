//! SWEny workflow YAML/JSON (docs/formats.md): `entry`, a map of `nodes` (`name`, `instruction`, `skills`, `output`) and
//! `edges` with `when` and `max_iterations`. Every node becomes an agent that routes on when it fails, as SWEny does;
//! a start node is added in front of `entry`.

use std::path::Path;

use serde_json::Value;

use super::LoadError;
use crate::document::{Edge, Node, NodeType, OnError, Retry, Workflow};

const KNOWN_TOP: &[&str] = &["id", "name", "description", "entry", "nodes", "edges", "$schema"];
const KNOWN_NODE: &[&str] = &["name", "instruction", "skills", "output", "retry", "tools", "disallowed_tools"];

/// SWEny's published JSON Schema for its format (MIT), as its loader enforces it.
const SWENY_SCHEMA: &str = include_str!("../../../../schema/sweny-workflow.schema.json");

/// Refuses what SWEny's own schema refuses, naming the place (`/nodes/gather/instruction`) and what is wrong.
fn check_schema(value: &Value) -> Result<(), LoadError> {
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    super::check_published_schema(&VALIDATOR, SWENY_SCHEMA, value, "SWEny workflow", "SWENY_SCHEMA")
}

pub(super) fn import(value: &Value, base_dir: Option<&Path>) -> Result<(Workflow, Vec<String>), LoadError> {
    let mut notes = Vec::new();
    let top = value.as_object().expect("detect() checked the top level is a map");
    let name = top.get("name").or_else(|| top.get("id")).and_then(Value::as_str).unwrap_or("Imported SWEny workflow");
    let mut workflow = Workflow::new(name);
    workflow.description = top.get("description").and_then(Value::as_str).map(str::to_string);
    for key in top.keys().filter(|k| !KNOWN_TOP.contains(&k.as_str())) {
        notes.push(format!("top-level field `{key}` has no Switchyard equivalent and was left out"));
    }

    let nodes = top.get("nodes").and_then(Value::as_object).ok_or_else(|| {
        LoadError::new("`nodes` must be a map of node id to {name, instruction}").with_code("INVALID_NODE")
    })?;
    let node_list = || nodes.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
    // SWEny renamed `verify:` to `eval:` (with another shape) and refuses the old field with a migration message.
    let legacy_verify = |whose: String| {
        Err(LoadError::new(format!(
            "{whose} uses SWEny's legacy `verify:` field, renamed `eval:` in @sweny-ai/core 0.2.0 with named evaluators (kind: value | function | judge); see https://spec.sweny.ai/nodes/#eval"
        ))
        .with_code("SWENY_LEGACY_VERIFY"))
    };
    if top.contains_key("verify") {
        return legacy_verify("the workflow".into());
    }
    if let Some((id, _)) = nodes.iter().find(|(_, n)| n.get("verify").is_some()) {
        return legacy_verify(format!("node `{id}`"));
    }
    let entry = top.get("entry").and_then(Value::as_str).filter(|e| !e.is_empty()).ok_or_else(|| {
        LoadError::new(format!("`entry` must name the node the workflow starts at (one of: {})", node_list()))
            .with_code("MISSING_ENTRY")
    })?;
    if !nodes.contains_key(entry) {
        return Err(LoadError::new(format!("`entry: {entry}` names no node; the nodes are: {}", node_list()))
            .with_code("MISSING_ENTRY"));
    }

    let mut start_id = "start".to_string();
    while nodes.contains_key(&start_id) {
        start_id.insert(0, '_');
    }
    workflow.nodes.push(Node::new(start_id.clone(), NodeType::Start));

    let mut skills_seen: Vec<String> = Vec::new();
    for (id, raw) in nodes {
        let raw = raw.as_object().ok_or_else(|| {
            LoadError::new(format!("node `{id}`: must be a mapping with `name` and `instruction`"))
                .with_code("INVALID_NODE")
        })?;
        let mut node = Node::new(id.clone(), NodeType::Agent);
        node.name = raw.get("name").and_then(Value::as_str).map(str::to_string);
        node.on_error = Some(OnError::Continue);
        match raw.get("name") {
            Some(Value::String(n)) if !n.trim().is_empty() => {}
            _ => {
                return Err(LoadError::new(format!("node `{id}`: `name` is required (a non-empty string)"))
                    .with_code("INVALID_NODE"))
            }
        }
        let instruction = raw.get("instruction").ok_or_else(|| {
            LoadError::new(format!("node `{id}`: `instruction` is required")).with_code("MISSING_INSTRUCTION")
        })?;
        node.user_prompt = Some(instruction_text(id, instruction, base_dir, &mut notes)?);
        check_eval(id, raw)?;
        node.output_schema = raw.get("output").cloned();
        if let Some(max) = raw.get("retry").and_then(|r| r.get("max")).and_then(Value::as_u64) {
            node.retry = Some(Retry { max: max as u32, backoff_ms: None });
            notes.push(format!(
                "node `{id}`: `retry` maps to retries of failed model calls; SWEny's eval-driven retry instruction was left out"
            ));
        }
        let skills: Vec<String> = raw
            .get("skills")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        for skill in &skills {
            if !skills_seen.contains(skill) {
                skills_seen.push(skill.clone());
            }
        }
        // The author's guard: tools the node must never have (`tools.deny`, SWEny's MCP tools as `skill_tool`, and
        // `disallowed_tools`, the agent SDK's built-in tools) are kept as the agent's `tools.deny`.
        let deny = denied_tools(id, raw, &mut notes)?;
        // `tools.allow` keeps only the listed skill tools: each becomes `skill/tool`, so no other tool is offered.
        let mcp = match raw.get("tools").and_then(|t| t.get("allow")).and_then(Value::as_array) {
            None => skills,
            Some(allowed) => allowed_tools(id, &skills, allowed, &mut notes),
        };
        if !mcp.is_empty() || !deny.is_empty() {
            // A SWEny skill is a tool set: the MCP server of the same name, when one is configured.
            node.tools = Some(crate::document::AgentTools { mcp, deny, ..Default::default() });
        }
        for key in raw.keys().filter(|k| !KNOWN_NODE.contains(&k.as_str())) {
            notes.push(format!("node `{id}`: field `{key}` has no Switchyard equivalent and was left out"));
        }
        workflow.nodes.push(node);
    }
    if !skills_seen.is_empty() {
        notes.push(format!(
            "skills ({}) use the MCP servers of the same names (tools.mcp); configure them under mcp_servers in the settings — an agent runs without a skill whose server is missing, and validation says which",
            skills_seen.join(", ")
        ));
    }

    workflow.edges.push(Edge::new(start_id, entry));
    let edges = match top.get("edges") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => {
            return Err(LoadError::new("`edges` must be a list of {from, to, when?, max_iterations?}")
                .with_code("INVALID_EDGE"))
        }
    };
    let mut unconditional: std::collections::HashMap<&str, Vec<&str>> = std::collections::HashMap::new();
    for (i, raw) in edges.iter().enumerate() {
        let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(from), Some(to)) = (text("from"), text("to")) else {
            return Err(
                LoadError::new(format!("edges[{i}]: `from` and `to` must be node ids")).with_code("INVALID_EDGE")
            );
        };
        for (end, id, code) in [("from", &from, "UNKNOWN_EDGE_SOURCE"), ("to", &to, "UNKNOWN_EDGE_TARGET")] {
            if !nodes.contains_key(id.as_str()) {
                return Err(LoadError::new(format!(
                    "edges[{i}]: `{end}: {id}` names no node; the nodes are: {}",
                    node_list()
                ))
                .with_code(code));
            }
        }
        if let Some(when) = raw.get("when") {
            if when.as_str().is_none_or(|w| w.trim().is_empty()) {
                return Err(LoadError::new(format!(
                    "edges[{i}] ({from} -> {to}): `when` must be a non-empty condition"
                ))
                .with_code("INVALID_EDGE"));
            }
        } else if from != to || raw.get("max_iterations").is_some_and(|m| !m.is_null()) {
            // An unbounded self-loop is not a way on: validation refuses it on its edge (`SELF_LOOP_UNBOUNDED`), as
            // SWEny's loader does before it looks for ambiguity.
            unconditional
                .entry(raw["from"].as_str().unwrap_or_default())
                .or_default()
                .push(raw["to"].as_str().unwrap_or_default());
        }
        // A self-loop without `max_iterations` (SWEny refuses it) opens: validation reports it on the edge
        // (`SELF_LOOP_UNBOUNDED`, an error), so the file can be fixed where it is shown.
        let mut edge = Edge::new(from, to);
        edge.when = text("when");
        edge.max_iterations = match raw.get("max_iterations") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_i64().filter(|&n| n >= 1).ok_or_else(|| {
                LoadError::new(format!("edges[{i}]: `max_iterations` must be a whole number of at least 1, not {v}"))
                    .with_code("INVALID_MAX_ITERATIONS")
            })?),
        };
        if let Some(obj) = raw.as_object() {
            for key in obj.keys().filter(|k| !["from", "to", "when", "max_iterations"].contains(&k.as_str())) {
                notes.push(format!("edges[{i}]: field `{key}` has no Switchyard equivalent and was left out"));
            }
        }
        workflow.edges.push(edge);
    }
    // SWEny routes to exactly one next node: two unconditional ways out leave it nothing to decide between.
    let mut ambiguous: Vec<(&&str, &Vec<&str>)> = unconditional.iter().filter(|(_, to)| to.len() > 1).collect();
    ambiguous.sort();
    if let Some((from, to)) = ambiguous.first() {
        return Err(LoadError::new(format!(
            "node `{from}` has {} unconditional edges (to {}); SWEny follows exactly one: give all but one a `when`",
            to.len(),
            to.join(", ")
        ))
        .with_code("AMBIGUOUS_EDGES"));
    }
    // Then everything else SWEny's schema constrains, including fields approximated or left out here.
    check_schema(value)?;
    // SWEny refuses a node its entry cannot reach. Here the file opens, so it can be fixed: validation reports the
    // node (`UNREACHABLE_NODE`, on it), and the note says SWEny would refuse the file.
    let topo = crate::graph::Topology::new(&workflow);
    for (island, _) in workflow.nodes.iter().zip(&topo.reachable).filter(|(_, reached)| !**reached) {
        notes.push(format!(
            "node `{}` cannot be reached from the entry `{entry}`, so SWEny refuses this file: add an edge to it or remove it",
            island.id
        ));
    }
    super::layered_positions(&mut workflow);
    Ok((workflow, notes))
}

/// What SWEny's loader checks of a node's evaluators beyond its published schema: `pass_when` is one token without
/// whitespace, and `eval_policy` is `all_pass`, the only policy it implements (`any_pass` and `weighted` are reserved).
fn check_eval(id: &str, raw: &serde_json::Map<String, Value>) -> Result<(), LoadError> {
    for (i, evaluator) in raw.get("eval").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if let Some(pass_when) = evaluator.get("pass_when").and_then(Value::as_str) {
            if pass_when.is_empty() || pass_when.chars().any(char::is_whitespace) {
                return Err(LoadError::new(format!(
                    "node `{id}`: eval[{i}].pass_when `{}` must be a single token without spaces or line breaks",
                    pass_when.trim()
                ))
                .with_code("SWENY_SCHEMA"));
            }
        }
    }
    match raw.get("eval_policy").and_then(Value::as_str) {
        None | Some("all_pass") => Ok(()),
        Some(policy) => Err(LoadError::new(format!(
            "node `{id}`: eval_policy `{policy}` is reserved in SWEny but not implemented; use `all_pass`"
        ))
        .with_code("UNSUPPORTED_EVAL_POLICY")),
    }
}

/// A node's instruction: inline text, `{inline}`, or a `./file.md` / `{file}` path read relative to the workflow.
/// SWEny instructions are not Jinja templates, so text that looks like one is kept verbatim.
fn instruction_text(
    id: &str,
    value: &Value,
    base_dir: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<String, LoadError> {
    let text = match value {
        Value::String(s) if is_file_reference(s) => read_instruction(id, s, base_dir, notes),
        Value::String(s) => s.clone(),
        Value::Object(o) if o.get("inline").is_some_and(Value::is_string) => o["inline"].as_str().unwrap().to_string(),
        Value::Object(o) if o.get("file").is_some_and(Value::is_string) => {
            read_instruction(id, o["file"].as_str().unwrap(), base_dir, notes)
        }
        Value::Object(o) if o.get("url").is_some_and(Value::is_string) => {
            let url = o["url"].as_str().unwrap();
            notes.push(format!(
                "node `{id}`: instruction is fetched from {url} in SWEny; Switchyard does not fetch it, the URL is the prompt"
            ));
            url.to_string()
        }
        _ => {
            return Err(LoadError::new(format!(
                "node `{id}`: `instruction` must be text, a ./file.md path, or {{inline|file|url}}"
            )))
        }
    };
    if text.contains("{{") || text.contains("{%") || text.contains("{#") {
        notes
            .push(format!("node `{id}`: the instruction contains Jinja-like braces; kept verbatim inside {{% raw %}}"));
        return Ok(format!("{{% raw %}}{text}{{% endraw %}}"));
    }
    Ok(text)
}

fn is_file_reference(s: &str) -> bool {
    (s.starts_with("./") || s.starts_with("../")) && !s.contains('\n')
}

/// SWEny reads an instruction file only when the node runs, so a file that is not there does not refuse the
/// workflow: the node's prompt says which file was missing, and a note says it when the file is opened. A document
/// that is not a file (pasted text, a request to a server) has no folder: its references are never read, only kept.
fn read_instruction(id: &str, path: &str, base_dir: Option<&Path>, notes: &mut Vec<String>) -> String {
    let Some(base_dir) = base_dir else {
        notes.push(format!(
            "node `{id}`: its instruction is the file {path}, which is not read: this document was not opened from a \
             file; open the workflow file itself, or write the instruction in the node"
        ));
        return format!("(the instruction file {path}, not read: the workflow was not opened from a file)");
    };
    let full = base_dir.join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| {
        notes.push(format!(
            "node `{id}`: its instruction file {} cannot be read ({e}); put the file next to the workflow, or write the instruction in the node",
            full.display()
        ));
        format!("(the instruction file {path} was missing when this workflow was opened)")
    })
}

/// A node's denied tools: `tools.deny` and `disallowed_tools`, each a list of tool names. Anything else under `tools`
/// is noted; a deny list that is not a list of names is refused rather than dropped, as it guards what the node may do.
fn denied_tools(
    id: &str,
    raw: &serde_json::Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<Vec<String>, LoadError> {
    let mut deny = Vec::new();
    let mut names =
        |what: &str, value: Option<&Value>| -> Result<(), LoadError> {
            match value {
                None | Some(Value::Null) => Ok(()),
                Some(Value::Array(items)) => {
                    for item in items {
                        let name = item.as_str().ok_or_else(|| {
                            LoadError::new(format!("node `{id}`: `{what}` must list tool names (strings)"))
                                .with_code("INVALID_NODE")
                        })?;
                        if !deny.iter().any(|d| d == name) {
                            deny.push(name.to_string());
                        }
                    }
                    Ok(())
                }
                Some(_) => Err(LoadError::new(format!("node `{id}`: `{what}` must be a list of tool names"))
                    .with_code("INVALID_NODE")),
            }
        };
    match raw.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Object(tools)) => {
            names("tools.deny", tools.get("deny"))?;
            for key in tools.keys().filter(|k| !["deny", "allow"].contains(&k.as_str())) {
                notes.push(format!("node `{id}`: field `tools.{key}` has no Switchyard equivalent and was left out"));
            }
        }
        Some(_) => {
            return Err(LoadError::new(format!("node `{id}`: `tools` must be a map (`deny: [tool, ...]`)"))
                .with_code("INVALID_NODE"))
        }
    }
    names("disallowed_tools", raw.get("disallowed_tools"))?;
    Ok(deny)
}

/// `tools.allow`: each name is a skill's tool, spelt `skill_tool` (or `skill/tool`), kept as the MCP entry
/// `skill/tool`. A name that belongs to none of the node's skills is not offered (noted): allowing less is safe.
fn allowed_tools(id: &str, skills: &[String], allowed: &[Value], notes: &mut Vec<String>) -> Vec<String> {
    let mut mcp = Vec::new();
    for name in allowed.iter().filter_map(Value::as_str) {
        let found = skills.iter().find_map(|skill| {
            let rest = name.strip_prefix(skill.as_str())?;
            rest.strip_prefix('_').or_else(|| rest.strip_prefix('/')).map(|tool| format!("{skill}/{tool}"))
        });
        match found {
            Some(entry) if !mcp.contains(&entry) => mcp.push(entry),
            Some(_) => {}
            None => notes.push(format!(
                "node `{id}`: `tools.allow` names `{name}`, which is no tool of its skills ({}), so it is not offered",
                skills.join(", ")
            )),
        }
    }
    mcp
}
