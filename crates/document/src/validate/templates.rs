//! Every template and expression the engine evaluates (SEMANTICS §2, §7): that it parses (`INVALID_TEMPLATE`,
//! `INVALID_EXPRESSION`), and that each name it reads can hold a value when it is evaluated. A name that is neither a
//! node id nor a context name is `UNKNOWN_REFERENCE`; a node that cannot have completed by then (it is not upstream
//! through execution edges) is `REFERENCE_NOT_UPSTREAM`. Both are warnings: the template still renders, with the
//! name empty (undefined is lenient).
//!
//! Cost: plain text (no `{{`, `{%`, `{#`) is never parsed; the upstream check runs once, in a batch, only when some
//! template reads a node, with one bounded search per node read (`graph::Ancestry`).

use std::borrow::Cow;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use crate::document::{ConditionOperator, Workflow};
use crate::graph::{Ancestry, EdgeIx, NodeIx, Topology};
use crate::template::{self, CONTEXT_NAMES, ITEM_NAMES, PREVIOUS_OUTPUT};

use super::Report;

/// Above this many nodes, a misspelt name is compared with the reading node's predecessors only, not every node.
const FULL_SUGGESTION_LIMIT: usize = 5_000;

/// Where a template or expression sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Node(NodeIx),
    Edge(EdgeIx),
}

/// One template or expression of the document.
struct Source<'a> {
    place: Place,
    /// How messages name the field: `user_prompt`, `condition 0`, `for_each.items`, `if`.
    field: Cow<'static, str>,
    expression: bool,
    text: &'a str,
}

/// Every template and expression the engine evaluates, in document order: agent prompts, approval messages,
/// expression conditions of `if` nodes, `for_each` lists, a `workflow` node's input, and edge guards.
fn sources(workflow: &Workflow) -> Vec<Source<'_>> {
    let mut out = Vec::new();
    for (i, node) in workflow.nodes.iter().enumerate() {
        let place = Place::Node(NodeIx::new(i));
        for (field, text) in
            [("system_prompt", &node.system_prompt), ("user_prompt", &node.user_prompt), ("message", &node.message)]
        {
            if let Some(text) = text {
                out.push(Source { place, field: Cow::Borrowed(field), expression: false, text });
            }
        }
        for (c, condition) in node.conditions.iter().flatten().enumerate() {
            if condition.operator == ConditionOperator::Expression {
                out.push(Source {
                    place,
                    field: Cow::Owned(format!("condition {c}")),
                    expression: true,
                    text: &condition.value,
                });
            }
        }
        if let Some(for_each) = &node.for_each {
            out.push(Source { place, field: Cow::Borrowed("for_each.items"), expression: true, text: &for_each.items });
        }
        // A `workflow` node's input: each string value is a template over the context.
        for (key, value) in node.input.iter().flatten() {
            if let serde_json::Value::String(text) = value {
                out.push(Source { place, field: Cow::Owned(format!("input.{key}")), expression: false, text });
            }
        }
    }
    for (e, edge) in workflow.edges.iter().enumerate() {
        if let Some(guard) = &edge.r#if {
            out.push(Source {
                place: Place::Edge(EdgeIx::new(e)),
                field: Cow::Borrowed("if"),
                expression: true,
                text: guard,
            });
        }
    }
    out
}

/// A node a source reads, to be checked against the graph once all are known.
struct NodeRead {
    source: usize,
    /// The dotted path as written (`review.text`).
    path: Rc<str>,
    /// The node read.
    node: NodeIx,
    /// The node that must come after it: the reading node, an edge's source, or a subagent's parent in the flow.
    after: NodeIx,
}

/// What a source reads, or why it does not parse; shared between sources with the same text.
type Parsed = Result<Rc<[Rc<str>]>, String>;

pub(super) fn check(workflow: &Workflow, topo: &Topology, report: &mut Report) {
    let sources = sources(workflow);
    let context = Context::new(workflow, topo);
    let mut reads: Vec<NodeRead> = Vec::new();
    // Generated and edited workflows repeat templates (`{{ PREVIOUS_OUTPUT }}`): each text is parsed once.
    let mut parsed: FxHashMap<(bool, &str), Parsed> = FxHashMap::default();
    for (s, source) in sources.iter().enumerate() {
        if !source.expression && !template::is_template(source.text) {
            continue; // plain text reads nothing
        }
        let result = parsed.entry((source.expression, source.text)).or_insert_with(|| {
            let reads = if source.expression {
                template::expression_reads(source.text)
            } else {
                template::template_reads(source.text)
            };
            reads.map(|paths| paths.into_iter().map(Rc::from).collect()).map_err(String::from)
        });
        let paths = match result {
            Ok(paths) if paths.is_empty() => continue,
            Ok(paths) => paths.clone(),
            Err(e) => {
                invalid(workflow, source, e, report);
                continue;
            }
        };
        let Some(at) = context.reader(source.place) else { continue };
        let mut roots: Vec<&str> = Vec::new();
        for path in paths.iter() {
            let root = path.split('.').next().unwrap_or(path);
            if roots.contains(&root) || CONTEXT_NAMES.contains(&root) {
                continue;
            }
            roots.push(root);
            if ITEM_NAMES.contains(&root) {
                if !context.has_item(source, at) {
                    let message = format!(
                        "{} {}: `{root}` is set only in a node with for_each, so here it is empty; add for_each to the node or read a node id",
                        shown(path, source.expression),
                        context.where_(source)
                    );
                    warn(workflow, source.place, "UNKNOWN_REFERENCE", message, report);
                }
                continue;
            }
            match topo.index.get(root) {
                Some(&node) => match source.place {
                    // An edge is decided when its source has finished, so the source's own result is there.
                    Place::Edge(e) if topo.ends[e].is_some_and(|(from, _)| from == node) => {}
                    _ => reads.push(NodeRead { source: s, path: path.clone(), node, after: at }),
                },
                None => {
                    let message = format!(
                        "{} {} names no node or context variable; {}",
                        shown(path, source.expression),
                        context.where_(source),
                        context.suggestion(root, at)
                    );
                    warn(workflow, source.place, "UNKNOWN_REFERENCE", message, report);
                }
            }
        }
    }
    if reads.is_empty() {
        return;
    }
    let queries: Vec<(NodeIx, NodeIx)> = reads.iter().map(|r| (r.node, r.after)).collect();
    let upstream = Ancestry::new(topo).precedes(&queries);
    for (read, ok) in reads.iter().zip(upstream) {
        if !ok {
            let source = &sources[read.source];
            let message = not_upstream(workflow, topo, source, read, &context);
            warn(workflow, source.place, "REFERENCE_NOT_UPSTREAM", message, report);
        }
    }
}

/// `CHILD_OUTPUT_UNDECLARED`: a template or expression reads a field of the `workflow` node `node` (`{{ node.FIELD
/// }}`) that its child's output does not declare (`declared`: the properties of the child's end node's
/// `output_schema`; `written`: the child's file as the node names it). A warning: the read renders empty.
pub(super) fn check_child_output(
    workflow: &Workflow,
    node: &str,
    written: &str,
    declared: &[String],
    report: &mut Report,
) {
    for source in sources(workflow) {
        if !source.expression && !template::is_template(source.text) {
            continue;
        }
        let reads = if source.expression {
            template::expression_reads(source.text)
        } else {
            template::template_reads(source.text)
        };
        let Ok(paths) = reads else { continue };
        let mut said: Vec<&str> = Vec::new();
        for path in &paths {
            let mut parts = path.split('.');
            let (Some(root), Some(field)) = (parts.next(), parts.next()) else { continue };
            if root != node || declared.iter().any(|d| d == field) || said.contains(&field) {
                continue;
            }
            said.push(field);
            let at = match source.place {
                Place::Node(i) => format!("in `{}` ({})", workflow.nodes[i].id, source.field),
                Place::Edge(e) => format!("on edge {}", workflow.edges[e].label()),
            };
            let fields = if declared.is_empty() { "none".to_string() } else { declared.join(", ") };
            let message = format!(
                "{} {at}: `{written}` returns no field `{field}` (its end node's output_schema declares: {fields}), so it is empty",
                shown(path, source.expression)
            );
            warn(workflow, source.place, "CHILD_OUTPUT_UNDECLARED", message, report);
        }
    }
}

fn invalid(workflow: &Workflow, source: &Source<'_>, error: &str, report: &mut Report) {
    match source.place {
        Place::Node(i) => {
            let id = &workflow.nodes[i].id;
            if source.expression {
                let field = if source.field.starts_with("condition") {
                    source.field.to_string()
                } else {
                    format!("`{}`", source.field)
                };
                report.node_error("INVALID_EXPRESSION", id, format!("{field} is not a valid expression: {error}"));
            } else {
                report.node_error(
                    "INVALID_TEMPLATE",
                    id,
                    format!("`{}` is not a valid template: {error}", source.field),
                );
            }
        }
        Place::Edge(e) => {
            let label = workflow.edges[e].label();
            report.edge_error(
                "INVALID_EXPRESSION",
                label.clone(),
                format!("edge {label}: `if` is not a valid expression: {error}"),
            );
        }
    }
}

fn warn(workflow: &Workflow, place: Place, code: &'static str, message: String, report: &mut Report) {
    match place {
        Place::Node(i) => report.node_warning(code, &workflow.nodes[i].id, message),
        Place::Edge(e) => report.edge_warning(code, workflow.edges[e].label(), message),
    }
}

/// How a message quotes a read: `{{ draft.text }}` in a template, `draft.text` in an expression.
fn shown(path: &str, expression: bool) -> String {
    if expression {
        format!("`{path}`")
    } else {
        format!("`{{{{ {path} }}}}`")
    }
}

fn not_upstream(
    workflow: &Workflow,
    topo: &Topology,
    source: &Source<'_>,
    read: &NodeRead,
    context: &Context<'_>,
) -> String {
    let read_id = &workflow.nodes[read.node].id;
    let after_id = &workflow.nodes[read.after].id;
    let what = format!("{} {}", shown(&read.path, source.expression), context.where_(source));
    let when = match source.place {
        Place::Edge(_) => format!("before `{after_id}` finishes and this edge is decided"),
        Place::Node(i) if i != read.after => {
            format!("before `{}` runs as a subagent of `{after_id}`", workflow.nodes[i].id)
        }
        Place::Node(_) => format!("before `{after_id}` runs"),
    };
    if read.node == read.after && !topo.on_cycle(read.node) {
        return format!(
            "{what} reads `{read_id}` itself, which has no result {when} (it is on no loop), so it is empty; read a node upstream or PREVIOUS_OUTPUT"
        );
    }
    format!(
        "{what} reads `{read_id}`, which cannot have run {when}: no path of execution edges leads from it there, so it is empty; connect `{read_id}` upstream or read a node that runs before"
    )
}

/// What the checks need to know about the graph besides the topology.
struct Context<'a> {
    workflow: &'a Workflow,
    topo: &'a Topology,
    /// Per node: its parent when it is a subagent (computed when the workflow has subagent links).
    parent: Option<Vec<Option<NodeIx>>>,
}

impl<'a> Context<'a> {
    fn new(workflow: &'a Workflow, topo: &'a Topology) -> Context<'a> {
        let parent = topo.subagent.contains(&true).then(|| {
            let mut parent = vec![None; workflow.nodes.len()];
            for p in topo.nodes() {
                for &c in &topo.subagents[p] {
                    parent[c].get_or_insert(p);
                }
            }
            parent
        });
        Context { workflow, topo, parent }
    }

    /// The node whose completed predecessors a source can read: the node itself, an edge's source, or for a
    /// subagent the ancestor in the flow whose scope it is called with. `None` for duplicate ids and dangling edges,
    /// which validation reports already.
    fn reader(&self, place: Place) -> Option<NodeIx> {
        let node = match place {
            Place::Node(i) => (self.topo.index.get(&self.workflow.nodes[i].id) == Some(&i)).then_some(i)?,
            Place::Edge(e) => return self.topo.ends[e].map(|(from, _)| from),
        };
        let Some(parent) = &self.parent else { return Some(node) };
        let mut at = node;
        for _ in 0..parent.len() {
            match parent[at] {
                Some(p) => at = p,
                None => return Some(at),
            }
        }
        Some(at) // a subagent cycle, reported elsewhere
    }

    /// Whether `item` and `index` are set where the source is evaluated: a `for_each` node's prompts (a subagent's
    /// too, since it runs in its caller's scope), not its `for_each.items` list.
    fn has_item(&self, source: &Source<'_>, reader: NodeIx) -> bool {
        let Place::Node(i) = source.place else { return false };
        let own = self.workflow.nodes[i].for_each.is_some() && source.field != "for_each.items";
        own || (reader != i && self.workflow.nodes[reader].for_each.is_some())
    }

    /// Where a source is, for messages: `in user_prompt`, `in the \`if\` of edge a->b`.
    fn where_(&self, source: &Source<'_>) -> String {
        match source.place {
            Place::Node(_) => format!("in {}", source.field),
            Place::Edge(e) => format!("in the `if` of edge {}", self.workflow.edges[e].label()),
        }
    }

    /// What to write instead of an unknown name: a similar node id or context name, else a predecessor's id.
    fn suggestion(&self, name: &str, reader: NodeIx) -> String {
        let predecessors: Vec<&str> =
            self.topo.incoming[reader].iter().map(|&e| self.workflow.nodes[self.topo.source(e)].id.as_str()).collect();
        let ids: Box<dyn Iterator<Item = &str>> = if self.workflow.nodes.len() <= FULL_SUGGESTION_LIMIT {
            Box::new(self.workflow.nodes.iter().map(|n| n.id.as_str()))
        } else {
            Box::new(predecessors.iter().copied())
        };
        let similar = ids
            .chain(CONTEXT_NAMES)
            .map(|candidate| (strsim::jaro_winkler(name, candidate), candidate))
            .filter(|(score, _)| *score > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match (similar, predecessors.first()) {
            (Some((_, id)), _) => format!("did you mean `{id}`?"),
            (None, Some(id)) => format!("use a node id such as `{id}`, or {PREVIOUS_OUTPUT}"),
            (None, None) => format!("use a node id, or {PREVIOUS_OUTPUT}, input or state"),
        }
    }
}
