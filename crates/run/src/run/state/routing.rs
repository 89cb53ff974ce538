//! Which out-edges a node leaves by (SEMANTICS §3): an `if` node's first condition that holds, an approval's verdict,
//! an error edge, the model's choice among `when` edges (with the route view it is shown), or every execution edge
//! whose `if` holds. Knows nothing of how followed edges join (`joins`) or how an approval is decided (`approvals`).

use std::sync::Arc;

use serde_json::{json, Value};

use super::{node, Effect, Outstanding, RunState, END};
use crate::document::{handle, Condition, ConditionOperator, Node, NodeType, OnError};
use crate::events::{EventKind, Usage};
use crate::graph::{EdgeIx, NodeIx};
use crate::model::{Choice, RouteAnswer, DEFAULT_CHOICE};
use crate::node_types::{self, HandleKind};
use crate::result::NodeStatus;
use crate::result::TraceEdge;
use crate::run::RouteAsk;
use crate::template;

impl RunState {
    pub(super) fn run_if(&mut self, node: NodeIx, iteration: u32, previous_output: Arc<str>) {
        let workflow = self.workflow.clone();
        let n = &workflow.nodes[node];
        let subject = previous_output.to_lowercase();
        let mut chosen: Result<Option<(usize, String)>, String> = Ok(None);
        for (i, c) in n.conditions.iter().flatten().enumerate() {
            let value = c.value.trim().to_lowercase();
            let hit = match c.operator {
                ConditionOperator::Equal => Ok(!value.is_empty() && subject == value),
                ConditionOperator::Contains => Ok(!value.is_empty() && subject.contains(&value)),
                ConditionOperator::Expression => template::is_true(&c.value, &self.scope)
                    .map_err(|e| format!("condition {i} ({}) could not be evaluated: {e}", c.value)),
            };
            match hit {
                Ok(true) => {
                    chosen = Ok(Some((i, condition_label(c))));
                    break;
                }
                Ok(false) => {}
                Err(e) => {
                    chosen = Err(e);
                    break;
                }
            }
        }
        // The handle taken: condition `i`'s, or the one after the conditions (`false`) when none matched.
        let handles = node_types::source_handles(n);
        let conditions = n.conditions.as_ref().map_or(0, Vec::len);
        let taken = |at: usize| json!({ "branch": handles[at].0, "label": node_types::source_handle_label(n, at) });
        let (data, branch) = match &chosen {
            Ok(Some((i, label))) => (taken(*i), Some((*i, label.clone()))),
            Ok(None) => (taken(conditions), None),
            Err(_) => (Value::Null, None),
        };
        let outcome = match chosen {
            Err(e) => node::NodeOutcome { data: Err(e), tool_calls: Vec::new(), usage: None, code: None },
            Ok(None) if n.no_match_error.is_some() => node::NodeOutcome {
                data: Err(n.no_match_error.clone().unwrap_or_default()),
                tool_calls: Vec::new(),
                usage: None,
                code: None,
            },
            Ok(_) => {
                let msg = match &branch {
                    Some((i, label)) => format!("condition {i} ({label}) matched"),
                    None => "no condition matched: taking `false`".into(),
                };
                self.emit(EventKind::log(Some(&n.id), "logic_check", msg));
                node::NodeOutcome { data: Ok(data), tool_calls: Vec::new(), usage: None, code: None }
            }
        };
        self.node_done(node, iteration, 0, previous_output, outcome);
    }

    /// Routes on from a node that ended (the run is live): by an error edge when it failed and has one; else by
    /// the handle it chose (`if`, approval), by the model's choice among `when` edges, or along every execution
    /// edge whose `if` holds.
    pub(super) fn route_on(&mut self, node: NodeIx, error: Option<String>, output: Arc<str>) {
        let workflow = self.workflow.clone();
        let n = &workflow.nodes[node];
        let topo = self.topo.clone();
        let workflow = self.workflow.clone();
        let edges = &workflow.edges;
        if let Some(error) = error {
            let error_edges: Vec<EdgeIx> =
                topo.out[node].iter().copied().filter(|&e| topo.handle_kind(e) == Some(HandleKind::Error)).collect();
            if !error_edges.is_empty() {
                self.emit(EventKind::log(Some(&n.id), "error", error.clone()));
                let chosen: Vec<(EdgeIx, String)> = error_edges.iter().map(|&e| (e, "error".to_string())).collect();
                self.follow_and_kill(node, chosen, output);
                return;
            }
            if n.on_error != Some(OnError::Continue) {
                self.fail_run(format!("node `{}` failed: {error}", n.id));
                return;
            }
            self.emit(EventKind::log(Some(&n.id), "error", format!("{error} (on_error: continue, routing on)")));
        }

        // Which out-edges are still live (SEMANTICS §3).
        let live: Vec<EdgeIx> = topo.out[node]
            .iter()
            .copied()
            .filter(|&e| edges[e].max_iterations.is_none_or(|m| (self.edge_follows[e] as i64) < m))
            .collect();
        // A node that chooses a branch follows the edges leaving by the chosen handle; others follow their
        // execution handles (guards and `when` permitting).
        let chosen_handle = |key: &str, default: &str| {
            let name = self.results[node].as_ref().and_then(|r| r.data.get(key)).and_then(Value::as_str);
            let name = name.unwrap_or(default).to_string();
            (node_types::resolve_handle(n, &name), name)
        };
        match n.node_type {
            NodeType::If | NodeType::Approval => {
                // It leaves by the handle it chose, and says why: the condition that held, or the verdict.
                let (taken, reason) = if n.node_type == NodeType::If {
                    let (taken, branch) = chosen_handle("branch", handle::FALSE);
                    (taken, self.if_reason(n, &branch))
                } else {
                    chosen_handle("decision", handle::APPROVE)
                };
                let chosen = live
                    .iter()
                    .copied()
                    .filter(|&e| taken.is_some() && topo.handles[e] == taken)
                    .map(|e| (e, reason.clone()))
                    .collect();
                self.follow_and_kill(node, chosen, output);
            }
            _ => {
                let live: Vec<EdgeIx> =
                    live.into_iter().filter(|&e| topo.handle_kind(e) == Some(HandleKind::Execution)).collect();
                if live.iter().any(|&e| edges[e].when.is_some()) {
                    if self.dry_run {
                        self.route_event(node, END, "dry run");
                        return;
                    }
                    self.ask_route(node, live, output);
                    return;
                }
                let mut chosen = Vec::new();
                for &e in &live {
                    match &edges[e].r#if {
                        None => chosen.push((e, String::new())),
                        Some(guard) => match template::is_true(guard, &self.scope) {
                            Ok(true) => chosen.push((e, guard.clone())),
                            Ok(false) => {}
                            Err(err) => {
                                self.fail_run(format!(
                                    "edge {}: `if` {guard:?} could not be evaluated: {err}",
                                    edges[e].label()
                                ));
                                return;
                            }
                        },
                    }
                }
                let plural = chosen.len() > 1;
                for (_, reason) in chosen.iter_mut() {
                    if reason.is_empty() {
                        *reason = if plural { "parallel" } else { "only path" }.to_string();
                    }
                }
                self.follow_and_kill(node, chosen, output);
            }
        }
    }

    fn if_reason(&self, n: &Node, branch: &str) -> String {
        // Positions below the condition count are the conditions' own handles (node_types' expansion order).
        let position = node_types::resolve_handle(n, branch).map(|h| h.position as usize);
        match position.and_then(|i| n.conditions.as_ref()?.get(i)) {
            Some(c) => condition_label(c),
            None if position.is_some() => "no condition matched".into(),
            None => branch.to_string(),
        }
    }

    /// The route view of SEMANTICS §3: nodes whose output schema declares properties show only those keys.
    fn route_view(&mut self, routing_node: NodeIx) -> Value {
        let mut warnings = Vec::new();
        let mut map = serde_json::Map::new();
        map.insert("input".into(), self.input.clone());
        for (i, n) in self.workflow.nodes.iter().enumerate() {
            let Some(r) = &self.results[i] else { continue };
            if r.status == NodeStatus::Skipped {
                continue;
            }
            let declared = n
                .output_schema
                .as_ref()
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .filter(|p| !p.is_empty());
            let view = match declared {
                None => r.data.clone(),
                Some(props) => {
                    let mut scoped = serde_json::Map::new();
                    for key in props.keys() {
                        match r.data.get(key) {
                            Some(v) => {
                                scoped.insert(key.clone(), v.clone());
                            }
                            None => {
                                scoped.insert(key.clone(), Value::Null);
                                warnings.push(EventKind::NodeWarning {
                                    node: self.id(routing_node).to_string(),
                                    message: format!("`{}` declares `{key}` in its output schema but did not return it; the router sees null", n.id),
                                });
                            }
                        }
                    }
                    if let Some(evals) = r.data.get("evals") {
                        scoped.insert("evals".into(), evals.clone());
                    }
                    Value::Object(scoped)
                }
            };
            map.insert(n.id.clone(), view);
        }
        for warning in warnings {
            self.emit(warning);
        }
        Value::Object(map)
    }

    fn ask_route(&mut self, node: NodeIx, live: Vec<EdgeIx>, output: Arc<str>) {
        let edges = &self.workflow.edges;
        let mut choices: Vec<Choice> = live
            .iter()
            .filter_map(|&e| edges[e].when.as_ref().map(|w| Choice { id: edges[e].to.clone(), description: w.clone() }))
            .collect();
        if live.iter().any(|&e| edges[e].when.is_none()) {
            choices.push(Choice { id: DEFAULT_CHOICE.into(), description: "none of the above / default path".into() });
        }
        let context = self.route_view(node);
        let visit = self.route_visits[node];
        self.route_visits[node] += 1;
        if let Some(answer) = self.reuse.as_ref().and_then(|r| r.route(self.id(node), visit)).cloned() {
            self.apply_route(node, live, answer, output);
            return;
        }
        let mut targets: Vec<String> = Vec::new();
        for &e in &live {
            let to = &self.workflow.edges[e].to;
            if !targets.contains(to) {
                targets.push(to.clone());
            }
        }
        self.emit(EventKind::RouteChoosing { node: self.id(node).to_string(), choices: targets });
        let model = self.workflow.nodes[node].model.clone().or_else(|| self.default_model.clone());
        let ask = RouteAsk { context, choices, visit, model };
        self.outstanding.push(Outstanding::Route { node, live, output });
        self.effects.push(Effect::AskRoute { node, ask });
    }

    pub(super) fn apply_route(
        &mut self,
        node: NodeIx,
        live: Vec<EdgeIx>,
        answer: Result<RouteAnswer, String>,
        output: Arc<str>,
    ) {
        if !self.is_live() {
            return;
        }
        let edges = &self.workflow.edges;
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                self.fail_run(format!("routing after `{}` failed: {e}", self.id(node)));
                return;
            }
        };
        let note = answer.note.map(|n| format!(" ({n})")).unwrap_or_default();
        self.route_usage = answer.usage.filter(|u| *u != Usage::default());
        let defaults: Vec<EdgeIx> = live.iter().copied().filter(|&e| edges[e].when.is_none()).collect();
        let picked = live.iter().copied().find(|&e| edges[e].when.is_some() && edges[e].to == answer.choice);
        let default_named = answer.choice == DEFAULT_CHOICE || defaults.iter().any(|&e| edges[e].to == answer.choice);
        let chosen: Vec<(EdgeIx, String)> = if let Some(e) = picked {
            vec![(e, format!("{}{note}", edges[e].when.as_deref().unwrap_or_default()))]
        } else if default_named {
            defaults.iter().map(|&e| (e, format!("none of the above{note}"))).collect()
        } else if !defaults.is_empty() {
            defaults
                .iter()
                .map(|&e| (e, format!("invalid route target {:?}: none of the above{note}", answer.choice)))
                .collect()
        } else {
            self.route_event(node, END, &format!("invalid route target {:?}{note}", answer.choice));
            Vec::new()
        };
        self.follow_and_kill(node, chosen, output);
        self.route_usage = None;
    }

    pub(super) fn route_event(&mut self, node: NodeIx, to: &str, reason: &str) {
        let from = self.id(node).to_string();
        self.trace.edges.push(TraceEdge { from: from.clone(), to: to.to_string(), reason: reason.to_string() });
        let usage = self.route_usage.take();
        self.emit(EventKind::Route { from, to: to.to_string(), reason: reason.to_string(), usage });
    }
}

/// How a matched `if` condition is named in logs and trace reasons.
fn condition_label(c: &Condition) -> String {
    match c.operator {
        ConditionOperator::Expression => c.value.clone(),
        ConditionOperator::Equal => format!("equal {:?}", c.value.trim()),
        ConditionOperator::Contains => format!("contains {:?}", c.value.trim()),
    }
}
