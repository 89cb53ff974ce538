//! Validation (SEMANTICS §7): one function, used before every run, save, import and export and on every edit. Each
//! finding carries a stable code, a message that says what to do, and the node or edge it concerns, so the editor
//! can mark it and tools can match on it.

use std::collections::{HashMap, HashSet, VecDeque};

use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

use crate::document::{handle, ConditionOperator, Edge, NodeType, Workflow};
use crate::graph::{NodeIx, Topology};
use crate::node_types;

pub mod queues;
mod templates;
pub mod triggers;
pub mod workflows;

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    #[serde(skip)]
    pub severity: Severity,
    /// Stable SCREAMING_SNAKE code, e.g. `UNBOUNDED_CYCLE`.
    pub code: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<String>,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

impl Report {
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn codes(&self) -> Vec<&'static str> {
        self.errors.iter().chain(&self.warnings).map(|f| f.code).collect()
    }

    fn push(
        &mut self,
        severity: Severity,
        code: &'static str,
        message: String,
        node: Option<&str>,
        edge: Option<String>,
    ) {
        let finding = Finding { severity, code, message, node: node.map(str::to_string), edge };
        match severity {
            Severity::Error => self.errors.push(finding),
            Severity::Warning => self.warnings.push(finding),
        }
    }

    fn node_error(&mut self, code: &'static str, node: &str, message: String) {
        self.push(Severity::Error, code, message, Some(node), None);
    }

    fn node_warning(&mut self, code: &'static str, node: &str, message: String) {
        self.push(Severity::Warning, code, message, Some(node), None);
    }

    fn edge_error(&mut self, code: &'static str, edge: String, message: String) {
        self.push(Severity::Error, code, message, None, Some(edge));
    }

    fn edge_warning(&mut self, code: &'static str, edge: String, message: String) {
        self.push(Severity::Warning, code, message, None, Some(edge));
    }
}

/// Why a workflow is checked: what the machine lacks (a provider that is not configured) is a warning while editing
/// or validating a file, which is valid elsewhere, and an error when it is about to run here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Purpose {
    #[default]
    Check,
    Run,
}

/// What validation needs to know beyond the document.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub purpose: Purpose,
    /// Configured provider ids; `None` skips the check (an answers file supplies every answer).
    pub providers: Option<Vec<String>>,
    /// Configured MCP server names; `None` skips the check.
    pub mcp_servers: Option<Vec<String>>,
    /// The tools of MCP servers that were listed, by server (`mcp::list_named`); single tools (`server/tool`) of a
    /// server here are checked against its list, those of other servers are not.
    pub mcp_tools: std::collections::BTreeMap<String, Vec<String>>,
    /// No default model could be found (none in the settings, no local model server answers): nodes that need a
    /// model and name none get `NO_MODEL`. False when that is not known; ignored when a script answers (`providers`
    /// is `None`).
    pub no_default_model: bool,
    /// The nodes an answers file answers (code steps included): a step that cannot run by itself (an unsupported TEA
    /// action) runs when it is among them.
    pub answered: Vec<String>,
    /// The system the document was read from (`Loaded::format`), when known: what its own loader refuses of a graph
    /// is an error here too, on its node (SWEny: a node its entry cannot reach).
    pub format: Option<crate::format::Format>,
    /// The workflow's own file, when it has one: a `workflow` node's child is found relative to it, and checked.
    pub file: Option<std::path::PathBuf>,
    /// The files of the workflows that run this one, outermost first (a child checked for its parent): a child that
    /// is one of them is `CHILD_RECURSION`.
    pub within: Vec<std::path::PathBuf>,
}

/// The nodes that call a model but name none, so they use the run's default: agents that are not pinned, and nodes
/// that choose their route with natural-language `when` edges. None when the workflow has a default model.
pub fn nodes_needing_a_model(workflow: &Workflow) -> Vec<&str> {
    if workflow.defaults.model.is_some() {
        return Vec::new();
    }
    nodes_calling_a_model(workflow).filter(|n| n.model.is_none()).map(|n| n.id.as_str()).collect()
}

/// The nodes that call a model when they run: agents that are not pinned, and nodes that choose their route with
/// natural-language `when` edges.
pub fn nodes_calling_a_model(workflow: &Workflow) -> impl Iterator<Item = &crate::Node> {
    let routes_by_model: HashSet<&str> =
        workflow.edges.iter().filter(|e| e.when.is_some()).map(|e| e.from.as_str()).collect();
    workflow.nodes.iter().filter(move |n| {
        (n.node_type == NodeType::Agent && n.pinned.is_none()) || routes_by_model.contains(n.id.as_str())
    })
}

/// `NO_MODEL`: a node calls a model, names none, and no default can be found.
fn check_default_model(workflow: &Workflow, options: &Options, report: &mut Report) {
    if !options.no_default_model || options.providers.is_none() {
        return;
    }
    for id in nodes_needing_a_model(workflow) {
        report.node_warning(
            "NO_MODEL",
            id,
            format!("`{id}` has no model, and no model server answers on this machine, so it fails when it runs; name a model on the node or the workflow, set a default model in the settings, or start a local model server"),
        );
    }
}

/// "1 error", "2 errors": how many errors a report has, for messages.
pub fn errors_counted(n: usize) -> String {
    match n {
        1 => "1 error".to_string(),
        n => format!("{n} errors"),
    }
}

pub fn validate(workflow: &Workflow, options: &Options) -> Report {
    let mut report = Report::default();
    let topo = Topology::new(workflow);
    check_nodes(workflow, &topo, options, &mut report);
    check_default_model(workflow, options, &mut report);
    check_edges(workflow, &topo, &mut report);
    check_cycles(workflow, &topo, &mut report);
    check_subagents(workflow, &topo, &mut report);
    check_reachability(workflow, &topo, options, &mut report);
    check_sweny_routes(workflow, &topo, options, &mut report);
    templates::check(workflow, &topo, &mut report);
    triggers::check(workflow, &mut report);
    queues::check(workflow, &mut report);
    workflows::check(workflow, options, &mut report);
    report
}

/// A code step runs only with consent, in a language Switchyard runs, from code or a module (docs/formats.md).
fn check_code_step(node: &crate::Node, options: &Options, report: &mut Report) {
    let id = node.id.as_str();
    if node.code.is_some() && node.module.is_some() {
        report.node_error(
            "CODE_AND_MODULE",
            id,
            "a script node runs `code` or a `module`, not both; remove one".into(),
        );
    }
    if node.language.as_deref() == Some("tea-action") {
        // A run that would reach it and fail is not started: nothing (no consent, no model call) happens first.
        let severity = match options.purpose {
            Purpose::Run if !options.answered.iter().any(|n| n == id) => Severity::Error,
            _ => Severity::Warning,
        };
        let code: Option<serde_json::Value> = node.code.as_deref().and_then(|c| serde_yaml::from_str(c).ok());
        let action = code.as_ref().and_then(|c| c.get("uses")).and_then(serde_json::Value::as_str).unwrap_or("?");
        report.push(
            severity,
            "UNSUPPORTED_ACTION",
            format!(
                "TEA action `{action}` is not supported yet, so `{id}` cannot run by itself: answer it in an answers file (under `nodes:`) or pin its output"
            ),
            Some(id),
            None,
        );
        return;
    }
    match crate::language::Language::parse(node.language.as_deref()) {
        Err(e) => report.node_warning("UNSUPPORTED_LANGUAGE", id, format!("{e}; otherwise the node fails when it runs")),
        Ok(language) if node.code.is_some() || node.module.is_some() => report.node_warning(
            "CODE_NEEDS_CONSENT",
            id,
            format!(
                "runs {language} code from this file, which needs your consent: given for one run, or recorded for this version of the workflow's code"
            ),
        ),
        Ok(_) => report.node_warning(
            "NO_CODE",
            id,
            "this script node has no code or module, so it fails when it runs; write its code or pin its output".into(),
        ),
    }
}

/// Single tools an agent names (`server/tool` in `tools.mcp` or `call_first`) must be among those their server
/// listed, when it was listed.
fn check_single_tools(
    node: &crate::document::Node,
    tools: &crate::document::AgentTools,
    listed: &std::collections::BTreeMap<String, Vec<String>>,
    report: &mut Report,
) {
    let named = tools.mcp.iter().chain(tools.call_first.iter()).filter_map(|e| e.split_once('/'));
    let mut seen = std::collections::BTreeSet::new();
    for (server, tool) in named {
        let Some(has) = listed.get(server) else { continue };
        if has.iter().any(|t| t == tool) || !seen.insert((server, tool)) {
            continue;
        }
        report.node_warning(
            "UNKNOWN_MCP_TOOL",
            &node.id,
            format!(
                "MCP server `{server}` has no tool `{tool}`, so the agent runs without it; pick one it lists: {}",
                if has.is_empty() { "(none)".to_string() } else { has.join(", ") }
            ),
        );
    }
}

/// `tools.call_first` must name one of the agent's tools: an MCP tool of a server (or that tool) its `tools.mcp`
/// lists, a subagent it offers, or (checked with its children, `validate::workflows`) a workflow tool's name.
fn check_call_first(
    workflow: &Workflow,
    topo: &Topology,
    node: &crate::document::Node,
    tools: &crate::document::AgentTools,
    report: &mut Report,
) {
    let Some(entry) = tools.call_first.as_deref() else { return };
    let offered = match entry.split_once('/') {
        Some((server, _)) => tools.mcp.iter().any(|m| m == server || m == entry),
        None => {
            let index = topo.index.get(&node.id).copied();
            // A workflow tool's name is its child's: the check across files says whether one is called so.
            !tools.workflows.is_empty()
                || tools.subagents
                    && index.is_some_and(|i| topo.subagents[i].iter().any(|&c| workflow.nodes[c].id == entry))
        }
    };
    if !offered {
        report.node_error(
            "CALL_FIRST_NOT_OFFERED",
            &node.id,
            format!("`call_first: {entry}` is not one of this agent's tools: list its server (or `{entry}`) under `tools.mcp`, or name a subagent the agent offers"),
        );
    }
}

fn check_nodes(workflow: &Workflow, topo: &Topology, options: &Options, report: &mut Report) {
    let starts: Vec<&str> =
        workflow.nodes.iter().filter(|n| n.node_type == NodeType::Start).map(|n| n.id.as_str()).collect();
    match starts.as_slice() {
        [] => report.push(
            Severity::Error,
            "NO_START",
            "the workflow has no start node; add one node with `type: start`".into(),
            None,
            None,
        ),
        [_] => {}
        [_, rest @ ..] => {
            for id in rest {
                report.node_error(
                    "MULTIPLE_START",
                    id,
                    format!("`{id}` is a second start node; a workflow has exactly one: delete it or change its type"),
                );
            }
        }
    }
    for (i, node) in workflow.nodes.iter().enumerate() {
        let id = node.id.as_str();
        if id.trim().is_empty() {
            report.node_error("EMPTY_NODE_ID", id, "a node has an empty id; give every node a unique id".into());
        } else if topo.index.get(id) != Some(&NodeIx::new(i)) {
            report.node_error(
                "DUPLICATE_NODE_ID",
                id,
                format!("node id `{id}` is used more than once; rename one of them"),
            );
        }
        let spec = node_types::spec(node.node_type);
        for field in node.fields_set().filter(|f| !spec.has_field(f)) {
            let owners: Vec<&str> =
                node_types::specs().iter().filter(|s| s.has_field(field)).map(|s| s.node_type.as_str()).collect();
            report.node_error(
                "FIELD_NOT_FOR_TYPE",
                id,
                format!(
                    "`{field}` does nothing on a {} node (it belongs to {} nodes); remove it",
                    node.node_type.as_str(),
                    owners.join(" and ")
                ),
            );
        }
        for (i, c) in node.conditions.iter().flatten().enumerate() {
            if c.operator != ConditionOperator::Expression && c.value.trim().is_empty() {
                report.node_warning(
                    "EMPTY_CONDITION",
                    id,
                    format!("condition {i} has an empty value and never matches; give it a value or remove it"),
                );
            }
        }
        if node.node_type == NodeType::If && node.conditions.as_ref().is_none_or(Vec::is_empty) {
            report.node_warning(
                "NO_CONDITIONS",
                id,
                "this if node has no conditions, so it always takes `false`; add a condition".into(),
            );
        }
        if let Some(for_each) = &node.for_each {
            if for_each.concurrency == Some(0) {
                report.node_error("INVALID_CONCURRENCY", id, "`for_each.concurrency` must be at least 1".into());
            }
        }
        if let Some(schema) = &node.output_schema {
            if let Err(e) = jsonschema::validator_for(schema) {
                report.node_error(
                    "INVALID_OUTPUT_SCHEMA",
                    id,
                    format!("`output_schema` is not a valid JSON Schema: {e}"),
                );
            }
        }
        if node.node_type == NodeType::Agent {
            if let Some(model) = node.model.as_ref().or(workflow.defaults.model.as_ref()) {
                check_model_ref(model, id, options, report);
            }
        }
        if node.node_type == NodeType::Script && node.pinned.is_none() {
            check_code_step(node, options, report);
        }
        if let Some(tools) = &node.tools {
            check_call_first(workflow, topo, node, tools, report);
            check_single_tools(node, tools, &options.mcp_tools, report);
        }
        if let Some(servers) = &options.mcp_servers {
            for entry in node.tools.iter().flat_map(|t| t.mcp.iter()) {
                let server = entry.split_once('/').map_or(entry.as_str(), |(s, _)| s);
                if !servers.iter().any(|s| s == server) {
                    report.node_warning(
                        "UNKNOWN_MCP_SERVER",
                        id,
                        format!("MCP server `{server}` is not configured, so the agent runs without it; add it under mcp_servers in the settings (configured: {})", if servers.is_empty() { "none".to_string() } else { servers.join(", ") }),
                    );
                }
            }
        }
    }
    if let Some(schema) = &workflow.input_schema {
        if let Err(e) = jsonschema::validator_for(schema) {
            report.push(
                Severity::Error,
                "INVALID_INPUT_SCHEMA",
                format!("`input_schema` is not a valid JSON Schema: {e}"),
                None,
                None,
            );
        }
    }
    if workflow.defaults.concurrency == Some(0) {
        report.push(
            Severity::Error,
            "INVALID_CONCURRENCY",
            "`defaults.concurrency` must be at least 1".into(),
            None,
            None,
        );
    }
    if workflow.defaults.step_budget == Some(0) {
        report.push(
            Severity::Error,
            "INVALID_STEP_BUDGET",
            "`defaults.step_budget` must be at least 1".into(),
            None,
            None,
        );
    }
}

fn check_model_ref(model: &str, node: &str, options: &Options, report: &mut Report) {
    // A templated name (`{{ state.model }}`) is known only when the node runs; it is checked then.
    if crate::template::is_template(model) {
        return;
    }
    let Some((provider, name)) = model.split_once('/') else {
        report.node_error(
            "INVALID_MODEL_REF",
            node,
            format!("model `{model}` must be written `provider/model`, e.g. `local/smollm2-135m`"),
        );
        return;
    };
    if provider.is_empty() || name.is_empty() {
        report.node_error("INVALID_MODEL_REF", node, format!("model `{model}` must be written `provider/model`"));
        return;
    }
    if let Some(providers) = &options.providers {
        if !providers.iter().any(|p| p == provider) {
            let configured = if providers.is_empty() { "none".to_string() } else { providers.join(", ") };
            let severity = match options.purpose {
                Purpose::Check => Severity::Warning,
                Purpose::Run => Severity::Error,
            };
            report.push(
                severity,
                "UNKNOWN_PROVIDER",
                format!("model `{model}` uses provider `{provider}`, which is not configured on this machine (configured: {configured}), so the node cannot run here"),
                Some(node),
                None,
            );
        }
    }
}

/// An edge's label for messages, formatted only when a finding needs it: validation runs on every edit, and most
/// edges have nothing to report.
struct Label<'a>(&'a Edge);

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.label())
    }
}

fn check_edges(workflow: &Workflow, topo: &Topology, report: &mut Report) {
    let mut ids = HashSet::new();
    for (e, edge) in workflow.edges.iter().enumerate() {
        let label = Label(edge);
        if let Some(id) = &edge.id {
            if !ids.insert(id.as_str()) {
                report.edge_error(
                    "DUPLICATE_EDGE_ID",
                    label.to_string(),
                    format!("edge id `{id}` is used more than once"),
                );
            }
        }
        let (from_missing, to_missing) = match topo.ends[e] {
            Some(_) => (false, false),
            None => (!topo.index.contains_key(&edge.from), !topo.index.contains_key(&edge.to)),
        };
        if from_missing {
            report.edge_error(
                "EDGE_SOURCE_MISSING",
                label.to_string(),
                format!("edge {label} starts at `{}`, which is not a node; fix `from` or add the node", edge.from),
            );
        }
        if to_missing {
            report.edge_error(
                "EDGE_TARGET_MISSING",
                label.to_string(),
                format!("edge {label} ends at `{}`, which is not a node; fix `to` or add the node", edge.to),
            );
        }
        if let Some(m) = edge.max_iterations {
            if m < 1 {
                report.edge_error(
                    "MAX_ITERATIONS_BELOW_ONE",
                    label.to_string(),
                    format!("edge {label} has max_iterations {m}; it must be at least 1 (1 means one retry)"),
                );
            }
        }
        if let Some(th) = &edge.target_handle {
            if th != handle::INPUT {
                report.edge_error(
                    "UNKNOWN_TARGET_HANDLE",
                    label.to_string(),
                    format!("edge {label} enters handle `{th}`; the only target handle is `input`"),
                );
            }
        }
        let Some((from, _)) = topo.ends[e] else {
            continue;
        };
        let source = &workflow.nodes[from];
        if topo.handles[e].is_none() {
            report.edge_error(
                "UNKNOWN_HANDLE",
                label.to_string(),
                format!(
                    "edge {label} leaves `{}` by handle `{}`, which a {} node does not have (it has: {})",
                    source.id,
                    edge.handle(),
                    source.node_type.as_str(),
                    handles_of(source)
                ),
            );
        }
        let branching = node_types::spec(source.node_type).chooses_branch();
        if edge.is_subagent() && (edge.when.is_some() || edge.r#if.is_some() || edge.max_iterations.is_some()) {
            report.edge_error(
                "CONDITION_ON_SUBAGENT_EDGE",
                label.to_string(),
                format!("subagent link {label} is not an execution edge; remove its when / if / max_iterations"),
            );
        } else if branching && edge.when.is_some() {
            report.edge_error(
                "WHEN_ON_BRANCHING_NODE",
                label.to_string(),
                format!(
                    "edge {label} has a `when`, but a {} node chooses its branch by handle; remove `when`",
                    source.node_type.as_str()
                ),
            );
        } else if branching && edge.r#if.is_some() {
            report.edge_error(
                "GUARD_ON_BRANCHING_NODE",
                label.to_string(),
                format!(
                    "edge {label} has an `if` guard, but a {} node chooses its branch by handle; remove it",
                    source.node_type.as_str()
                ),
            );
        }
    }
    for (i, node) in topo.nodes().zip(&workflow.nodes) {
        if topo.index.get(&node.id) != Some(&i) {
            continue;
        }
        let mut outs = topo.out[i].iter().map(|&e| &workflow.edges[e]);
        if outs.clone().any(|e| e.when.is_some()) && outs.any(|e| e.r#if.is_some()) {
            report.node_error(
                "MIXED_WHEN_AND_IF",
                &node.id,
                "this node has out-edges with `when` (the model decides) and with `if` (an expression decides); use one kind".into(),
            );
        }
        if !node_types::spec(node.node_type).chooses_branch() {
            continue;
        }
        for (_, h) in unconnected_branches(workflow, topo, i) {
            let consequence = match node.node_type {
                NodeType::If if h == handle::FALSE => "when nothing matches, the branch ends here",
                NodeType::If => "when it matches, the branch ends here",
                _ => "that decision ends the branch here",
            };
            report.node_warning(
                "UNCONNECTED_BRANCH",
                &node.id,
                format!("branch `{h}` is not connected; {consequence}"),
            );
        }
    }
}

/// The branches of node `v` (`node_types::branches`) that no execution edge leaves by.
fn unconnected_branches(workflow: &Workflow, topo: &Topology, v: NodeIx) -> Vec<(u32, String)> {
    let mut branches = node_types::branches(&workflow.nodes[v]);
    branches.retain(|(position, _)| !topo.out[v].iter().any(|&e| topo.handle_position(e) == Some(*position)));
    branches
}

/// The handles a node has, for messages: `output, error, subagent`.
fn handles_of(node: &crate::document::Node) -> String {
    let ids: Vec<String> = node_types::source_handles(node).into_iter().map(|(id, _)| id).collect();
    ids.join(", ")
}

/// Seed 000's algorithm: drop edges with `max_iterations` and self-loops; any cycle left is unbounded.
fn check_cycles(workflow: &Workflow, topo: &Topology, report: &mut Report) {
    if !topo.back.contains(&true) {
        return; // no back edge in a full depth-first search: no cycle, no self-loop
    }
    let n = workflow.nodes.len();
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n, workflow.edges.len());
    for _ in 0..n {
        graph.add_node(());
    }
    for (e, edge) in workflow.edges.iter().enumerate() {
        let Some((f, t)) = topo.ends[e] else { continue };
        if topo.subagent[e] {
            continue;
        }
        if f == t {
            if edge.max_iterations.is_none() {
                report.edge_error(
                    "SELF_LOOP_UNBOUNDED",
                    edge.label(),
                    format!("self-loop on `{}` has no max_iterations; set max_iterations to bound it", edge.from),
                );
            }
            continue;
        }
        if edge.max_iterations.is_none() {
            graph.add_edge(NodeIndex::new(f.ix()), NodeIndex::new(t.ix()), ());
        }
    }
    for scc in petgraph::algo::kosaraju_scc(&graph) {
        if scc.len() < 2 {
            continue;
        }
        let mut members: Vec<usize> = scc.iter().map(|i| i.index()).collect();
        members.sort_unstable();
        let names: Vec<&str> = members.iter().map(|&i| workflow.nodes[i].id.as_str()).collect();
        report.node_error(
            "UNBOUNDED_CYCLE",
            names[0],
            format!(
                "nodes {} form a cycle with no max_iterations on any of its edges; set max_iterations on the edge that loops back",
                names.join(", ")
            ),
        );
    }
}

fn check_subagents(workflow: &Workflow, topo: &Topology, report: &mut Report) {
    if !topo.subagent.contains(&true) {
        return;
    }
    let mut parents: HashMap<NodeIx, NodeIx> = HashMap::new();
    let mut links: DiGraph<(), ()> = DiGraph::new();
    for _ in 0..workflow.nodes.len() {
        links.add_node(());
    }
    for (e, edge) in workflow.edges.iter().enumerate() {
        if !topo.subagent[e] {
            continue;
        }
        let Some((p, c)) = topo.ends[e] else { continue };
        let (parent, child) = (&workflow.nodes[p], &workflow.nodes[c]);
        let label = edge.label();
        if parent.node_type != NodeType::Agent || child.node_type != NodeType::Agent {
            report.edge_error(
                "SUBAGENT_NOT_AGENT",
                label.clone(),
                format!("subagent link {label}: both ends must be agent nodes"),
            );
        }
        if parent.node_type == NodeType::Agent && !parent.subagents_enabled() {
            report.edge_error(
                "SUBAGENT_DISABLED",
                label.clone(),
                format!(
                    "subagent link {label}: `{}` does not have tools.subagents on; turn it on or remove the link",
                    parent.id
                ),
            );
        }
        if edge.target_handle.as_deref().is_some_and(|h| h != handle::INPUT) {
            report.edge_error(
                "SUBAGENT_TARGET_HANDLE",
                label.clone(),
                format!("subagent link {label} must enter the child's `input` handle"),
            );
        }
        if p == c {
            report.edge_error("SUBAGENT_SELF", label.clone(), format!("`{}` cannot be its own subagent", parent.id));
            continue;
        }
        if let Some(&first) = parents.get(&c) {
            report.edge_error(
                "SUBAGENT_MULTIPLE_PARENTS",
                label.clone(),
                format!(
                    "`{}` is already a subagent of `{}`; a subagent has one parent",
                    child.id, workflow.nodes[first].id
                ),
            );
        } else {
            parents.insert(c, p);
        }
        if !topo.incoming[c].is_empty() || !topo.out[c].is_empty() {
            report.node_error(
                "SUBAGENT_HAS_EXECUTION_EDGES",
                &child.id,
                format!("`{}` is a subagent, so it runs only as a tool; remove its execution edges", child.id),
            );
        }
        links.add_edge(NodeIndex::new(p.ix()), NodeIndex::new(c.ix()), ());
    }
    for scc in petgraph::algo::kosaraju_scc(&links) {
        if scc.len() > 1 {
            let mut names: Vec<&str> = scc.iter().map(|i| workflow.nodes[i.index()].id.as_str()).collect();
            names.sort_unstable();
            report.node_error(
                "SUBAGENT_CYCLE",
                names[0],
                format!("subagent links form a cycle through {}; remove one link", names.join(", ")),
            );
        }
    }
}

/// `AMBIGUOUS_EDGES`, for a file checked as SWEny's: SWEny follows exactly one edge out of a node, so two without a
/// `when` leave it nothing to decide between. Its loader refuses the others; a file whose ambiguity includes an
/// unbounded self-loop opens (so the self-loop is shown on its edge), and both problems are reported at once, as
/// SWEny lists them, so bounding the self-loop does not reveal the second one.
fn check_sweny_routes(workflow: &Workflow, topo: &Topology, options: &Options, report: &mut Report) {
    if options.format != Some(crate::format::Format::Sweny) {
        return;
    }
    for (v, node) in topo.nodes().zip(&workflow.nodes) {
        if topo.index.get(&node.id) != Some(&v) {
            continue;
        }
        let to: Vec<&str> = topo.out[v]
            .iter()
            .map(|&e| &workflow.edges[e])
            .filter(|e| e.when.is_none() && e.r#if.is_none())
            .map(|e| e.to.as_str())
            .collect();
        if to.len() > 1 {
            report.node_error(
                "AMBIGUOUS_EDGES",
                &node.id,
                format!(
                    "`{}` has {} unconditional edges (to {}); SWEny follows exactly one: give all but one a `when`",
                    node.id,
                    to.len(),
                    to.join(", ")
                ),
            );
        }
    }
}

/// Unreachable nodes (warning) and nodes from which the run can never end (error).
fn check_reachability(workflow: &Workflow, topo: &Topology, options: &Options, report: &mut Report) {
    if topo.start.is_none() {
        return;
    }
    let n = workflow.nodes.len();
    let reachable = &topo.reachable;
    let mut is_subagent_child = vec![false; n];
    for (e, pair) in topo.ends.iter().enumerate() {
        if let (true, Some((_, child))) = (topo.subagent[e], pair) {
            is_subagent_child[*child] = true;
        }
    }
    // A node can end the run when nothing leaves it, when all it has are bounded loops, or when it can choose a
    // branch nothing leaves by. An unbounded self-loop counts as bounded here: it is its own error on its edge
    // (`SELF_LOOP_UNBOUNDED`), and a run that cannot end because of it is that error, not another one.
    let can_end = |v: NodeIx| {
        let outs = &topo.out[v];
        outs.is_empty()
            || outs.iter().all(|&e| workflow.edges[e].max_iterations.is_some() || topo.ends[e] == Some((v, v)))
            || (node_types::spec(workflow.nodes[v].node_type).chooses_branch()
                && !unconnected_branches(workflow, topo, v).is_empty())
    };
    let mut ends = vec![false; n];
    let mut queue: VecDeque<NodeIx> = topo.nodes().filter(|&v| can_end(v)).collect();
    for &v in &queue {
        ends[v] = true;
    }
    while let Some(v) = queue.pop_front() {
        for &e in &topo.incoming[v] {
            let s = topo.source(e);
            if !ends[s] {
                ends[s] = true;
                queue.push_back(s);
            }
        }
    }
    for (v, node) in topo.nodes().zip(&workflow.nodes) {
        if topo.index.get(&node.id) != Some(&v) {
            continue;
        }
        if !reachable[v] {
            if !is_subagent_child[v] {
                // SWEny's loader refuses the file; elsewhere the node simply never runs.
                let (severity, refuses) = match options.format {
                    Some(crate::format::Format::Sweny) => (Severity::Error, " (SWEny refuses the file)"),
                    _ => (Severity::Warning, ""),
                };
                report.push(
                    severity,
                    "UNREACHABLE_NODE",
                    format!(
                        "`{}` cannot be reached from the start node, so it never runs{refuses}; connect it or delete it",
                        node.id
                    ),
                    Some(&node.id),
                    None,
                );
            }
        } else if !ends[v] {
            report.node_error(
                "NO_TERMINAL_REACHABLE",
                &node.id,
                format!(
                    "from `{}` the run can never end: every path loops forever; add an exit edge or max_iterations",
                    node.id
                ),
            );
        }
    }
}
