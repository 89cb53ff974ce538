//! Edges followed and dead, joins and skips (SEMANTICS §3 "Joins"): a node with several forward in-edges starts once
//! each is followed or dead, with the outputs that came; a node all of whose in-edges are dead is skipped, and its
//! out-edges die in turn. Knows nothing of why an edge was followed (routing decides that).

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use super::{Activation, RunState};
use crate::events::EventKind;
use crate::graph::{EdgeIx, NodeIx, Topology};
use crate::result::{NodeResult, NodeStatus, TraceStep};

/// The state of a forward edge in its target's join.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum EdgeMark {
    #[default]
    Open,
    Followed,
    Dead,
}

pub(super) struct Joins {
    /// Per edge.
    marks: Vec<EdgeMark>,
    /// Per node: how many forward in-edges are resolved (followed or dead) since it last fired.
    resolved: Vec<usize>,
    /// Per node: the outputs its followed in-edges carried, in follow order.
    outputs: Vec<Vec<(EdgeIx, Arc<str>)>>,
    /// Dead edges out of nodes on a cycle, not final yet: their source may run again and follow them.
    deferred: BTreeSet<EdgeIx>,
    /// Nodes found skipped, waiting to cascade; a worklist so long dead chains do not recurse.
    to_skip: VecDeque<NodeIx>,
}

impl Joins {
    pub(super) fn new(topo: &Topology) -> Joins {
        let n = topo.component.len();
        Joins {
            // Edges out of nodes nothing can reach are resolved from the start: no join waits for them.
            marks: topo
                .never_followed
                .iter()
                .map(|&never| if never { EdgeMark::Dead } else { EdgeMark::Open })
                .collect(),
            resolved: topo
                .nodes()
                .map(|v| topo.forward_in[v].iter().filter(|&&i| topo.never_followed[i]).count())
                .collect(),
            outputs: vec![Vec::new(); n],
            deferred: BTreeSet::new(),
            to_skip: VecDeque::new(),
        }
    }
}

impl RunState {
    /// Follows the chosen out-edges of `node` (each already announced by a `route` event) and marks every other
    /// out-edge dead.
    pub(super) fn follow_and_kill(&mut self, node: NodeIx, chosen: Vec<(EdgeIx, String)>, output: Arc<str>) {
        let topo = self.topo.clone();
        for (e, reason) in &chosen {
            let to = self.workflow.edges[*e].to.clone();
            self.route_event(node, &to, reason);
        }
        for (e, _) in &chosen {
            self.follow(*e, output.clone());
        }
        let mut chosen: Vec<EdgeIx> = chosen.into_iter().map(|(e, _)| e).collect();
        chosen.sort_unstable();
        for &e in &topo.out[node] {
            if chosen.binary_search(&e).is_err() {
                self.kill(e, false);
            }
        }
        self.cascade_skips();
    }

    fn follow(&mut self, e: EdgeIx, output: Arc<str>) {
        self.edge_follows[e] += 1;
        let j = &mut self.joins;
        j.deferred.remove(&e);
        let topo = &self.topo;
        let target = topo.target(e);
        if topo.back[e] {
            self.ready.push_back(Activation { node: target, previous_output: output });
            return;
        }
        match j.marks[e] {
            EdgeMark::Open => j.resolved[target] += 1,
            // Followed again before its target fired (a loop upstream): the newer output replaces the older.
            EdgeMark::Followed => j.outputs[target].retain(|(f, _)| *f != e),
            EdgeMark::Dead => {}
        }
        j.marks[e] = EdgeMark::Followed;
        j.outputs[target].push((e, output));
        self.check_join(target);
    }

    /// Marks an edge dead. Edges leaving a node on a cycle are deferred: that node may run again and follow them.
    fn kill(&mut self, e: EdgeIx, finalize: bool) {
        let topo = self.topo.clone();
        if topo.back[e] {
            return;
        }
        let source = topo.source(e);
        if !finalize && topo.on_cycle(source) {
            self.joins.deferred.insert(e);
            return;
        }
        if self.joins.marks[e] != EdgeMark::Open {
            return;
        }
        let target = topo.target(e);
        self.joins.marks[e] = EdgeMark::Dead;
        self.joins.resolved[target] += 1;
        self.check_join(target);
    }

    /// A node with several forward in-edges waits until each was followed or is dead.
    fn check_join(&mut self, target: NodeIx) {
        let topo = self.topo.clone();
        let j = &mut self.joins;
        if j.resolved[target] < topo.forward_in[target].len() {
            return;
        }
        // Bookkeeping resets when the node fires, so joins inside loops work per iteration; edges that can never be
        // followed stay resolved.
        j.resolved[target] = 0;
        for &e in &topo.forward_in[target] {
            j.marks[e] = if topo.never_followed[e] { EdgeMark::Dead } else { EdgeMark::Open };
            j.resolved[target] += usize::from(topo.never_followed[e]);
        }
        let outputs = std::mem::take(&mut j.outputs[target]);
        let previous_output = match outputs.as_slice() {
            [] => {
                j.to_skip.push_back(target);
                return;
            }
            [(_, only)] => only.clone(),
            many => Arc::from(many.iter().map(|(_, t)| &**t).collect::<Vec<&str>>().join("\n\n").as_str()),
        };
        self.ready.push_back(Activation { node: target, previous_output });
    }

    /// Skips the nodes found dead, and what that kills in turn.
    fn cascade_skips(&mut self) {
        while let Some(node) = self.joins.to_skip.pop_front() {
            self.skip(node);
        }
    }

    fn skip(&mut self, node: NodeIx) {
        if self.results[node].is_none() {
            let id = self.id(node).to_string();
            self.results[node] = Some(NodeResult::skipped());
            self.trace.steps.push(TraceStep {
                node: id.clone(),
                status: NodeStatus::Skipped,
                iteration: self.iterations[node] + 1,
            });
            self.emit(EventKind::NodeSkipped { node: id });
        }
        let topo = self.topo.clone();
        for &e in &topo.out[node] {
            self.kill(e, false);
        }
    }

    /// When nothing runs, deferred dead edges are final unless an approval on the same cycle may still revive them.
    /// Says whether any was.
    pub(super) fn settle_deferred(&mut self) -> bool {
        let topo = self.topo.clone();
        let waiting = self.approvals.nodes_in(&topo);
        let flush: Vec<EdgeIx> = self
            .joins
            .deferred
            .iter()
            .copied()
            .filter(|&e| !waiting.contains(&topo.component[topo.source(e)]))
            .collect();
        if flush.is_empty() {
            return false;
        }
        for e in &flush {
            self.joins.deferred.remove(e);
        }
        for e in flush {
            self.kill(e, true);
        }
        self.cascade_skips();
        true
    }
}
