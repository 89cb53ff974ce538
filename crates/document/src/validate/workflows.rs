//! Validation across files (docs/subworkflows.md): each `workflow` node's child workflow is read and checked where
//! this workflow's file is, as it would be run — that it exists and reads (`CHILD_MISSING`, `CHILD_UNREADABLE`), its
//! own findings (`CHILD_INVALID`, naming the child's file and node), the input mapping against its `input_schema`
//! (`CHILD_INPUT_MISSING`, `CHILD_INPUT_UNKNOWN`), what is read of its output against what its end node's
//! `output_schema` declares (`CHILD_OUTPUT_UNDECLARED`, a warning), and that no workflow runs itself through its children
//! (`CHILD_RECURSION`) nor nests deeper than [`MAX_DEPTH`] (`CHILD_TOO_DEEP`). An agent's `tools.workflows` are
//! children too, read and checked alike; each is offered under its workflow's tool name, which no other tool of the
//! agent may have (`TOOL_NAME_TAKEN`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::document::{NodeType, Workflow};

use super::{Options, Report};

/// How many workflows deep children may nest (the workflow run is 1, its children 2, …).
pub const MAX_DEPTH: usize = 8;

/// Where a `workflow` node's child file is: `written` relative to the folder of `parent` (the parent's own file).
pub fn child_path(parent: &Path, written: &str) -> PathBuf {
    let dir = parent.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    dir.join(written)
}

/// The fields a child's `input_schema` declares (its `properties`, when it lists them) and requires.
pub fn schema_fields(schema: Option<&Value>) -> Option<(Option<Vec<String>>, Vec<String>)> {
    let schema = schema?.as_object()?;
    let declared = schema.get("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect());
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    Some((declared, required))
}

pub(super) fn check(workflow: &Workflow, options: &Options, report: &mut Report) {
    for node in workflow.nodes.iter().filter(|n| n.node_type == NodeType::Workflow) {
        let id = node.id.as_str();
        let Some(written) = node.workflow.as_deref().filter(|w| !w.trim().is_empty()) else {
            report.node_error(
                "NO_CHILD_WORKFLOW",
                id,
                "this workflow node names no child workflow: set `workflow` to the file it runs, relative to this one"
                    .into(),
            );
            continue;
        };
        // A pinned node does not run: its child is not read.
        if node.pinned.is_some() {
            continue;
        }
        let Some(child) = read_child(id, written, options, report) else { continue };
        check_input(id, written, node.input.as_ref(), &child, report);
        // What is read of its output, when the child declares what it returns.
        let declared = child.output_schema().and_then(|s| s.get("properties")).and_then(Value::as_object);
        if let Some(properties) = declared {
            let fields: Vec<String> = properties.keys().cloned().collect();
            super::templates::check_child_output(workflow, id, written, &fields, report);
        }
    }
    // An agent's workflows offered as tools: each read and checked as a `workflow` node's child is, and each under a
    // tool name none of the agent's other tools has.
    for node in workflow.nodes.iter().filter(|n| n.node_type == NodeType::Agent && n.pinned.is_none()) {
        let Some(tools) = &node.tools else { continue };
        let id = node.id.as_str();
        let subagents: Vec<&str> = if tools.subagents {
            workflow.edges.iter().filter(|e| e.from == node.id && e.is_subagent()).map(|e| e.to.as_str()).collect()
        } else {
            Vec::new()
        };
        let mut named: Vec<(String, &str)> = Vec::new();
        for written in &tools.workflows {
            if written.trim().is_empty() {
                report.node_error(
                    "NO_CHILD_WORKFLOW",
                    id,
                    "`tools.workflows` lists an empty path: name the workflow file the agent may call, relative to this one"
                        .into(),
                );
                continue;
            }
            let Some(child) = read_child(id, written, options, report) else { continue };
            let name = child.tool_name();
            let taken = match named.iter().find(|(n, _)| *n == name) {
                Some((_, other)) => Some(format!("the workflow tool `{other}`")),
                None if subagents.contains(&name.as_str()) => Some(format!("the subagent `{name}`")),
                None if name == "web_search" && tools.web_search => Some("web search".to_string()),
                None => None,
            };
            if let Some(taken) = taken {
                report.node_error(
                    "TOOL_NAME_TAKEN",
                    id,
                    format!(
                        "`{written}` is offered to the model as the tool `{name}`, and so is {taken}: rename one workflow (its `name`) or drop one"
                    ),
                );
            }
            named.push((name, written));
        }
        // `call_first` naming neither a subagent nor an MCP tool names one of these (when all of them were read).
        let read_all = named.len() == tools.workflows.len();
        if let Some(entry) = tools.call_first.as_deref().filter(|e| !e.contains('/') && !subagents.contains(e)) {
            if read_all && !tools.workflows.is_empty() && !named.iter().any(|(n, _)| n == entry) {
                let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
                report.node_error(
                    "CALL_FIRST_NOT_OFFERED",
                    id,
                    format!(
                        "`call_first: {entry}` is not one of this agent's tools; its workflow tools are {}",
                        names.join(", ")
                    ),
                );
            }
        }
    }
}

/// A child workflow, named as `written` by node `id`, read where it would be run and checked as it would be: its
/// document, or none with the finding that says why (missing, recursive, too deep, unreadable; its own errors are
/// reported and it is returned still, for the checks of how it is called).
fn read_child(id: &str, written: &str, options: &Options, report: &mut Report) -> Option<Workflow> {
    let Some(file) = options.file.as_deref() else {
        report.node_warning(
            "CHILD_NOT_CHECKED",
            id,
            format!(
                "`{written}` is found relative to this workflow's file, and this workflow has none yet: save it to check the child"
            ),
        );
        return None;
    };
    let path = child_path(file, written);
    let Ok(canonical) = std::fs::canonicalize(&path) else {
        report.node_error(
            "CHILD_MISSING",
            id,
            format!("the child workflow `{written}` does not exist ({}): create it, or fix the path", path.display()),
        );
        return None;
    };
    let own = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let mut chain: Vec<&Path> = options.within.iter().map(PathBuf::as_path).collect();
    chain.push(&own);
    if let Some(at) = chain.iter().position(|p| *p == canonical) {
        let names: Vec<String> = chain[at..].iter().chain([&canonical.as_path()]).map(|p| file_name(p)).collect();
        report.node_error(
            "CHILD_RECURSION",
            id,
            format!(
                "`{written}` runs a workflow that is already running: {} — a workflow may not run itself through its children",
                names.join(" › ")
            ),
        );
        return None;
    }
    if chain.len() >= MAX_DEPTH {
        report.node_error(
            "CHILD_TOO_DEEP",
            id,
            format!("`{written}` would be {} workflows deep; children nest at most {MAX_DEPTH} deep", chain.len() + 1),
        );
        return None;
    }
    let loaded = match crate::format::load_file(&canonical, None) {
        Ok(loaded) => loaded,
        Err(e) => {
            report.node_error("CHILD_UNREADABLE", id, format!("the child workflow `{written}` does not read: {e}"));
            return None;
        }
    };
    let child_options = Options {
        file: Some(canonical.clone()),
        within: chain.iter().map(|p| p.to_path_buf()).collect(),
        format: Some(loaded.format),
        // An answers file's entries are the parent's nodes'; the child's are its own section.
        answered: Vec::new(),
        ..options.clone()
    };
    let found = super::validate(&loaded.workflow, &child_options);
    for f in &found.errors {
        let place = match (&f.node, &f.edge) {
            (Some(n), _) => format!(" › `{n}`"),
            (None, Some(e)) => format!(" › edge `{e}`"),
            _ => String::new(),
        };
        report.node_error("CHILD_INVALID", id, format!("{written}{place}: {} [{}]", f.message, f.code));
    }
    Some(loaded.workflow)
}

/// The input mapping against the child's `input_schema`: every required field mapped, no field it does not declare.
fn check_input(
    id: &str,
    written: &str,
    input: Option<&indexmap::IndexMap<String, Value>>,
    child: &Workflow,
    report: &mut Report,
) {
    let Some((declared, required)) = schema_fields(child.input_schema.as_ref()) else { return };
    let mapped: Vec<&str> = input.into_iter().flat_map(|m| m.keys().map(String::as_str)).collect();
    for field in required.iter().filter(|r| !mapped.contains(&r.as_str())) {
        report.node_error(
            "CHILD_INPUT_MISSING",
            id,
            format!(
                "the input_schema of `{written}` requires `{field}`: map it under `input` (`{field}: \"{{{{ … }}}}\"`)"
            ),
        );
    }
    let Some(declared) = declared else { return };
    for field in mapped.iter().filter(|m| !declared.iter().any(|d| d == *m)) {
        let known = if declared.is_empty() { "(none)".to_string() } else { declared.join(", ") };
        report.node_error(
            "CHILD_INPUT_UNKNOWN",
            id,
            format!("`input.{field}`: the input_schema of `{written}` has no field `{field}` (its fields: {known})"),
        );
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().to_string())
}
