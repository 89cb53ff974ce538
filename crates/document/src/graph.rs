//! The indexed shape of a workflow that validation and execution both read: which execution edges leave and enter each
//! node, which edges are back edges (SEMANTICS §3 "Joins"), and which nodes sit on a cycle. Nodes and edges are named
//! by typed indices, `NodeIx` into `Workflow::nodes` and `EdgeIx` into `Workflow::edges`, so one is never taken for
//! the other; a `Vec` or slice kept per node (or per edge) is indexed by them directly.

use std::ops::{Index, IndexMut};

use petgraph::graph::{DiGraph, NodeIndex};

use crate::document::{NodeType, Workflow};
use crate::node_types::{self, ResolvedHandle};

macro_rules! typed_index {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u32);

        impl $name {
            pub fn new(index: usize) -> $name {
                $name(u32::try_from(index).expect("fewer than 2^32 nodes and edges"))
            }

            /// The plain index, for what is not kept per node or edge.
            pub fn ix(self) -> usize {
                self.0 as usize
            }

            /// Every index below `count`, in order.
            pub fn all(count: usize) -> impl Iterator<Item = $name> + Clone {
                (0..count).map($name::new)
            }
        }

        impl<T> Index<$name> for [T] {
            type Output = T;
            fn index(&self, i: $name) -> &T {
                &self[i.ix()]
            }
        }

        impl<T> IndexMut<$name> for [T] {
            fn index_mut(&mut self, i: $name) -> &mut T {
                &mut self[i.ix()]
            }
        }

        impl<T> Index<$name> for Vec<T> {
            type Output = T;
            fn index(&self, i: $name) -> &T {
                &self[i.ix()]
            }
        }

        impl<T> IndexMut<$name> for Vec<T> {
            fn index_mut(&mut self, i: $name) -> &mut T {
                &mut self[i.ix()]
            }
        }
    };
}

typed_index!(
    /// A node: its index in `Workflow::nodes`.
    NodeIx
);
typed_index!(
    /// An edge: its index in `Workflow::edges`.
    EdgeIx
);

/// Per-node lists of edges (or nodes) in one flat array: `adjacency[node]` is a slice. One allocation for the whole
/// graph instead of one per node keeps large workflows cheap to index.
#[derive(Debug, Clone, Default)]
pub struct Adjacency<T> {
    offsets: Vec<u32>,
    items: Vec<T>,
}

impl<T: Copy + Default> Adjacency<T> {
    /// Groups `(owner, item)` pairs by owner, keeping their order within an owner.
    fn build(owners: usize, pairs: impl Iterator<Item = (usize, T)> + Clone) -> Adjacency<T> {
        let mut offsets = vec![0u32; owners + 1];
        for (owner, _) in pairs.clone() {
            offsets[owner + 1] += 1;
        }
        for i in 0..owners {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut items = vec![T::default(); offsets[owners] as usize];
        for (owner, item) in pairs {
            items[fill[owner] as usize] = item;
            fill[owner] += 1;
        }
        Adjacency { offsets, items }
    }

    fn slice(&self, owner: usize) -> &[T] {
        &self.items[self.offsets[owner] as usize..self.offsets[owner + 1] as usize]
    }
}

impl<T: Copy + Default> Index<NodeIx> for Adjacency<T> {
    type Output = [T];

    fn index(&self, node: NodeIx) -> &[T] {
        self.slice(node.ix())
    }
}

/// Indices into `Workflow::nodes` and `Workflow::edges`.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Node id to its first occurrence.
    pub index: rustc_hash::FxHashMap<String, NodeIx>,
    /// Per document edge: `(from, to)`, or `None` when an end does not exist.
    pub ends: Vec<Option<(NodeIx, NodeIx)>>,
    /// Per document edge: the source handle it leaves by, resolved against its source's type (`node_types`);
    /// `None` when an end is missing or the source has no such handle.
    pub handles: Vec<Option<ResolvedHandle>>,
    /// Per document edge: it is a `subagent` link, not an execution edge.
    pub subagent: Vec<bool>,
    /// Per document edge: it closes a cycle in a depth-first search from the start node, in edge order.
    pub back: Vec<bool>,
    /// Per node: outgoing execution edges, in document order.
    pub out: Adjacency<EdgeIx>,
    /// Per node: incoming execution edges, in document order.
    pub incoming: Adjacency<EdgeIx>,
    /// Per node: incoming execution edges that are not back edges (what a join waits for).
    pub forward_in: Adjacency<EdgeIx>,
    /// Per node: children linked by `subagent` edges, in document order.
    pub subagents: Adjacency<NodeIx>,
    /// Per node: the strongly connected component it belongs to.
    pub component: Vec<usize>,
    /// Per component: it contains a cycle (two or more nodes, or a self-loop).
    pub component_cyclic: Vec<bool>,
    /// The first start node, if any.
    pub start: Option<NodeIx>,
    /// Per document edge: an execution edge out of a node the start node cannot reach. It can never be followed,
    /// so joins do not wait for it.
    pub never_followed: Vec<bool>,
    /// Per node: the start node reaches it through execution edges.
    pub reachable: Vec<bool>,
}

impl Topology {
    pub fn new(workflow: &Workflow) -> Topology {
        let n = workflow.nodes.len();
        let mut index = rustc_hash::FxHashMap::with_capacity_and_hasher(n, Default::default());
        for (i, node) in workflow.nodes.iter().enumerate() {
            index.entry(node.id.clone()).or_insert(NodeIx::new(i));
        }
        let mut ends = Vec::with_capacity(workflow.edges.len());
        let mut subagent = Vec::with_capacity(workflow.edges.len());
        let mut handles = Vec::with_capacity(workflow.edges.len());
        for edge in &workflow.edges {
            let pair = match (index.get(&edge.from), index.get(&edge.to)) {
                (Some(&f), Some(&t)) => Some((f, t)),
                _ => None,
            };
            ends.push(pair);
            subagent.push(edge.is_subagent());
            handles.push(pair.and_then(|(f, _)| node_types::resolve_handle(&workflow.nodes[f], edge.handle())));
        }
        let linked = || {
            ends.iter()
                .enumerate()
                .filter_map(|(e, p): (usize, &Option<(NodeIx, NodeIx)>)| p.map(|(f, t)| (EdgeIx::new(e), f, t)))
        };
        let execution = || linked().filter(|&(e, _, _)| !subagent[e]);
        let out = Adjacency::build(n, execution().map(|(e, f, _)| (f.ix(), e)));
        let incoming = Adjacency::build(n, execution().map(|(e, _, t)| (t.ix(), e)));
        let subagents = Adjacency::build(n, linked().filter(|&(e, _, _)| subagent[e]).map(|(_, f, t)| (f.ix(), t)));
        let start = workflow.nodes.iter().position(|node| node.node_type == NodeType::Start).map(NodeIx::new);
        let back = back_edges(n, &ends, &out, start);
        let forward_in = Adjacency::build(n, execution().filter(|&(e, _, _)| !back[e]).map(|(e, _, t)| (t.ix(), e)));
        // Without a back edge the graph is acyclic: every node is its own component, none cyclic.
        let reachable = reachable_from(n, &ends, &out, start);
        let never_followed =
            ends.iter().enumerate().map(|(e, p)| !subagent[e] && p.is_some_and(|(f, _)| !reachable[f])).collect();
        let (component, component_cyclic) =
            if back.contains(&true) { components(n, &ends, &subagent) } else { ((0..n).collect(), vec![false; n]) };
        Topology {
            index,
            ends,
            handles,
            subagent,
            back,
            out,
            incoming,
            forward_in,
            subagents,
            component,
            component_cyclic,
            never_followed,
            reachable,
            start,
        }
    }

    /// Every node, in document order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeIx> + Clone {
        NodeIx::all(self.component.len())
    }

    /// Every edge, in document order.
    pub fn edges(&self) -> impl Iterator<Item = EdgeIx> + Clone {
        EdgeIx::all(self.ends.len())
    }

    pub fn target(&self, edge: EdgeIx) -> NodeIx {
        self.ends[edge].expect("execution edges have both ends").1
    }

    pub fn source(&self, edge: EdgeIx) -> NodeIx {
        self.ends[edge].expect("execution edges have both ends").0
    }

    pub fn on_cycle(&self, node: NodeIx) -> bool {
        self.component_cyclic[self.component[node]]
    }

    /// The position of the handle `edge` leaves by among its source's handles (`node_types::source_handles`).
    pub fn handle_position(&self, edge: EdgeIx) -> Option<u32> {
        self.handles[edge].map(|h| h.position)
    }

    /// The kind of the handle `edge` leaves by; `None` when its source has no such handle.
    pub fn handle_kind(&self, edge: EdgeIx) -> Option<node_types::HandleKind> {
        self.handles[edge].map(|h| h.kind)
    }
}

type Ends = [Option<(NodeIx, NodeIx)>];

fn reachable_from(n: usize, ends: &Ends, out: &Adjacency<EdgeIx>, start: Option<NodeIx>) -> Vec<bool> {
    let mut reachable = vec![false; n];
    if let Some(s) = start {
        let mut stack = vec![s];
        reachable[s] = true;
        while let Some(v) = stack.pop() {
            for &e in &out[v] {
                let t = ends[e].expect("execution edges have both ends").1;
                if !reachable[t] {
                    reachable[t] = true;
                    stack.push(t);
                }
            }
        }
    }
    reachable
}

/// Iterative DFS from the start node, then from any node not yet visited, in document order.
fn back_edges(n: usize, ends: &Ends, out: &Adjacency<EdgeIx>, start: Option<NodeIx>) -> Vec<bool> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnStack,
        Done,
    }
    let mut back = vec![false; ends.len()];
    let mut mark = vec![Mark::New; n];
    let roots = start.into_iter().chain(NodeIx::all(n));
    for root in roots {
        if mark[root] != Mark::New {
            continue;
        }
        let mut stack: Vec<(NodeIx, usize)> = vec![(root, 0)];
        mark[root] = Mark::OnStack;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&edge) = out[node].get(*next) {
                *next += 1;
                let target = ends[edge].unwrap().1;
                match mark[target] {
                    Mark::OnStack => back[edge] = true,
                    Mark::New => {
                        mark[target] = Mark::OnStack;
                        stack.push((target, 0));
                    }
                    Mark::Done => {}
                }
            } else {
                mark[node] = Mark::Done;
                stack.pop();
            }
        }
    }
    back
}

fn components(n: usize, ends: &Ends, subagent: &[bool]) -> (Vec<usize>, Vec<bool>) {
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n, ends.len());
    for _ in 0..n {
        graph.add_node(());
    }
    let mut self_loop = vec![false; n];
    for (e, pair) in ends.iter().enumerate() {
        if let (Some((f, t)), false) = (pair, subagent[e]) {
            graph.add_edge(NodeIndex::new(f.ix()), NodeIndex::new(t.ix()), ());
            if f == t {
                self_loop[*f] = true;
            }
        }
    }
    let sccs = petgraph::algo::kosaraju_scc(&graph);
    let mut component = vec![0; n];
    let mut cyclic = Vec::with_capacity(sccs.len());
    for (c, members) in sccs.iter().enumerate() {
        for m in members {
            component[m.index()] = c;
        }
        cyclic.push(members.len() > 1 || self_loop[members[0].index()]);
    }
    (component, cyclic)
}

/// Answers "can node `u` have completed before node `v` starts?" in batches: `u` reaches `v` through execution edges
/// (back edges included, subagent links not), or `u` is `v` on a cycle. Built in O(nodes + edges) from the
/// topology; each batch costs one forward search per distinct `u`, bounded by the topological rank of the furthest
/// `v` asked about, so a chain of nodes each reading its predecessor costs O(1) per query.
pub struct Ancestry<'a> {
    topo: &'a Topology,
    /// Per node: the topological rank of its strongly connected component (edges between components go up).
    rank: Vec<u32>,
    /// Per node: the search that last visited it (0: none yet).
    seen: Vec<u32>,
    search: u32,
}

impl<'a> Ancestry<'a> {
    pub fn new(topo: &'a Topology) -> Ancestry<'a> {
        let n = topo.component.len();
        let components = topo.component_cyclic.len();
        let mut indegree = vec![0u32; components];
        let between = |e: EdgeIx| {
            topo.ends[e]
                .filter(|_| !topo.subagent[e])
                .map(|(f, t)| (topo.component[f], topo.component[t]))
                .filter(|(a, b)| a != b)
        };
        for e in topo.edges() {
            if let Some((_, b)) = between(e) {
                indegree[b] += 1;
            }
        }
        let members = Adjacency::build(components, topo.nodes().map(|v| (topo.component[v], v)));
        let mut comp_rank = vec![0u32; components];
        let mut queue: Vec<usize> = (0..components).filter(|&c| indegree[c] == 0).collect();
        let mut next = 0u32;
        while let Some(c) = queue.pop() {
            comp_rank[c] = next;
            next += 1;
            for &v in members.slice(c) {
                for &e in &topo.out[v] {
                    if let Some((_, b)) = between(e) {
                        indegree[b] -= 1;
                        if indegree[b] == 0 {
                            queue.push(b);
                        }
                    }
                }
            }
        }
        let rank = topo.nodes().map(|v| comp_rank[topo.component[v]]).collect();
        Ancestry { topo, rank, seen: vec![0; n], search: 0 }
    }

    /// For each `(u, v)`: whether `u` can have completed before `v` starts.
    pub fn precedes(&mut self, queries: &[(NodeIx, NodeIx)]) -> Vec<bool> {
        let topo = self.topo;
        let mut answers = vec![false; queries.len()];
        // Queries settled by the components alone; the rest grouped by `u` for one search each.
        let mut open: Vec<(NodeIx, NodeIx, usize)> = Vec::new();
        for (q, &(u, v)) in queries.iter().enumerate() {
            if topo.component[u] == topo.component[v] {
                answers[q] = u != v || topo.on_cycle(v);
            } else if self.rank[u] < self.rank[v] {
                open.push((u, v, q));
            }
        }
        open.sort_unstable();
        let mut stack = Vec::new();
        for group in open.chunk_by(|a, b| a.0 == b.0) {
            let u = group[0].0;
            let limit = group.iter().map(|&(_, v, _)| self.rank[v]).max().unwrap_or(0);
            self.search += 1;
            stack.push(u);
            self.seen[u] = self.search;
            while let Some(x) = stack.pop() {
                for &e in &topo.out[x] {
                    let t = topo.target(e);
                    if self.seen[t] != self.search && self.rank[t] <= limit {
                        self.seen[t] = self.search;
                        stack.push(t);
                    }
                }
            }
            for &(_, v, q) in group {
                answers[q] = self.seen[v] == self.search;
            }
        }
        answers
    }
}
