// Auto-layout with elkjs (layered, left to right): a port per handle in the node's own order, edge labels given to
// ELK with their size so it leaves room for them between layers, crossings minimised. Subagents are not steps of
// the flow: they hang below the agent that calls them, in room ELK keeps free for them.
import type { ElkExtendedEdge, ElkNode, ElkPort, LayoutOptions } from "elkjs/lib/elk.bundled.js";
import type { Node, Workflow } from "../types";
import { canonicalHandle, edgeHandle, hasInput, minNodeHeight, NODE_WIDTH, sourceHandles } from "./handles";
import { chipSize, edgeLabel } from "./labels";

type Elk = { layout: (graph: ElkNode) => Promise<ElkNode> };
let elk: Promise<Elk> | null = null;
/** ELK is large (~1.5 MB): it is loaded the first time a layout is asked for, not with the window. */
const engine = () => (elk ??= import("elkjs/lib/elk.bundled.js").then(({ default: ELK }) => new ELK()));

/**
 * Space between layers. ELK gives a labelled edge's label a layer of its own, with this much on each side of it: the
 * gap between two cards is 70 px, or 140 px plus the widest label between them.
 */
const BETWEEN_LAYERS = 70;
/** A subagent hangs this far below its parent's card (or the sibling above it), indented past the parent's middle. */
const SUB_GAP = 40;
const SUB_INDENT = NODE_WIDTH / 2 + 40;

const options = (nodes: number): LayoutOptions => ({
  "elk.algorithm": "layered",
  "elk.direction": "RIGHT",
  // The canvas draws its own curves; ELK's routes are not used, so take the cheapest router.
  "elk.edgeRouting": "POLYLINE",
  "elk.layered.crossingMinimization.strategy": "LAYER_SWEEP",
  // Fewer sweeps on big graphs keep a 200-node layout well under a third of a second.
  "elk.layered.thoroughness": nodes > 120 ? "2" : "7",
  "elk.layered.nodePlacement.strategy": "BRANDES_KOEPF",
  // Ties go the way the file lists nodes and edges, so laying out twice gives the same picture.
  "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
  // Depth first from the start: a loop's edge back to an earlier step is the one reversed, not a forward step.
  "elk.layered.cycleBreaking.strategy": "DEPTH_FIRST",
  "elk.spacing.nodeNode": "50",
  "elk.layered.spacing.nodeNodeBetweenLayers": String(BETWEEN_LAYERS),
  "elk.layered.spacing.edgeNodeBetweenLayers": "30",
  "elk.spacing.edgeNode": "24",
  "elk.spacing.edgeEdge": "12",
  "elk.spacing.edgeLabel": "4",
  "elk.spacing.labelLabel": "6",
  "elk.layered.edgeLabels.sideSelection": "SMART_DOWN",
  "elk.layered.edgeLabels.centerLabelPlacementStrategy": "MEDIAN_LAYER",
  "elk.spacing.componentComponent": "80",
});

/** Labels sit on their edge's line, as the canvas draws them, halfway along. */
const LABEL: LayoutOptions = { "elk.edgeLabels.placement": "CENTER", "elk.edgeLabels.inline": "true" };

/** Above this many nodes in the flow, layout is `quickLayered`, not ELK. */
export const LARGE = 400;

/**
 * A layered layout, left to right, in linear time (plus a sort per layer), for graphs too large for ELK: cycles are
 * broken depth first from the sources (in file order), each node goes one layer right of its furthest predecessor,
 * layers are ordered by two barycentre sweeps (ties in file order), and each node sits as near the middle of its
 * predecessors as the cards above it in its layer allow. Gaps are ELK's: 70 px between layers (140 px plus the widest
 * label where labelled edges cross), 50 px between cards. Takes and returns ELK's graph shape; edges point from a
 * port (`node::handle`) or a node to a port or a node.
 */
export function quickLayered(children: ElkNode[], edges: ElkExtendedEdge[]): ElkNode {
  const n = children.length;
  const index = new Map(children.map((c, i) => [c.id, i]));
  const nodeOf = (end: string) => index.get(end.split("::")[0]) ?? -1;
  const out: number[][] = children.map(() => []);
  const label: number[][] = children.map(() => []);
  for (const e of edges) {
    const a = nodeOf(e.sources[0]);
    const b = nodeOf(e.targets[0]);
    if (a < 0 || b < 0 || a === b) continue;
    out[a].push(b);
    label[a].push(Math.max(0, ...(e.labels ?? []).map((l) => l.width ?? 0)));
  }
  // Depth first (iteratively) from the nodes nothing enters, then from the rest, in file order: an edge to a node on
  // the current path closes a cycle and is left out of the layering.
  const indegree = new Array<number>(n).fill(0);
  for (const targets of out) for (const b of targets) indegree[b]++;
  const state = new Uint8Array(n); // 0 unseen, 1 on the path, 2 done
  const forward: number[][] = children.map(() => []);
  const gap: number[][] = children.map(() => []);
  const roots = [...Array(n).keys()].sort((a, b) => Number(indegree[a] > 0) - Number(indegree[b] > 0) || a - b);
  for (const root of roots) {
    if (state[root]) continue;
    const stack: [number, number][] = [[root, 0]];
    state[root] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [v, k] = top;
      if (k < out[v].length) {
        top[1]++;
        const w = out[v][k];
        if (state[w] === 1) continue; // back to the path: a cycle
        forward[v].push(w);
        gap[v].push(label[v][k]);
        if (!state[w]) {
          state[w] = 1;
          stack.push([w, 0]);
        }
      } else {
        state[v] = 2;
        stack.pop();
      }
    }
  }
  // Longest path layering over the forward edges (Kahn's order).
  const into = new Array<number>(n).fill(0);
  for (const targets of forward) for (const b of targets) into[b]++;
  const layerOf = new Array<number>(n).fill(0);
  const queue: number[] = [];
  for (let i = 0; i < n; i++) if (!into[i]) queue.push(i);
  for (let q = 0; q < queue.length; q++) {
    const v = queue[q];
    for (const w of forward[v]) {
      layerOf[w] = Math.max(layerOf[w], layerOf[v] + 1);
      if (!--into[w]) queue.push(w);
    }
  }
  const layers: number[][] = [];
  for (let i = 0; i < n; i++) (layers[layerOf[i]] ??= []).push(i);
  const preds: number[][] = children.map(() => []);
  for (let v = 0; v < n; v++) for (const w of forward[v]) preds[w].push(v);
  // Order within layers: a sweep right by the predecessors' mean rank, then left by the successors'.
  const rank = new Float64Array(n);
  layers.forEach((layer) => layer.forEach((v, i) => (rank[v] = i)));
  const sweep = (order: number[][], neighbours: number[][]) => {
    for (const layer of order) {
      const key = new Map(layer.map((v) => [v, neighbours[v].length ? neighbours[v].reduce((s, u) => s + rank[u], 0) / neighbours[v].length : rank[v]]));
      layer.sort((a, b) => key.get(a)! - key.get(b)! || a - b);
      layer.forEach((v, i) => (rank[v] = i));
    }
  };
  sweep(layers, preds);
  sweep([...layers].reverse(), forward);
  // Coordinates: each layer as wide as its widest card, with room for the widest label leaving it.
  const width = (v: number) => children[v].width ?? 0;
  const height = (v: number) => children[v].height ?? 0;
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  let x = 12;
  for (const layer of layers) {
    const w = Math.max(0, ...layer.map(width));
    const widestLabel = Math.max(0, ...layer.flatMap((v) => gap[v]));
    for (const v of layer) xs[v] = x;
    x += w + (widestLabel ? 2 * BETWEEN_LAYERS + widestLabel : BETWEEN_LAYERS);
  }
  for (const layer of layers) {
    let floor = -Infinity;
    for (const v of layer) {
      const centres = preds[v].map((u) => ys[u] + height(u) / 2);
      const want = centres.length ? centres.reduce((a, b) => a + b, 0) / centres.length - height(v) / 2 : floor === -Infinity ? 12 : floor;
      ys[v] = Math.max(want, floor);
      floor = ys[v] + height(v) + 50;
    }
  }
  const top = Math.min(...ys);
  return { id: "root", children: children.map((c, v) => ({ ...c, x: xs[v], y: ys[v] - top + 12 })) };
}

/** True for a workflow whose file carried no positions: none at all, or every node on the same point. */
export function needsLayout(workflow: Workflow): boolean {
  const at = workflow.nodes.map((n) => (n.position ? `${n.position.x ?? 0},${n.position.y ?? 0}` : null));
  if (at.length === 0) return false;
  if (at.length === 1) return at[0] === null;
  return at.every((p) => p === null) || new Set(at).size === 1;
}

type Point = { x: number; y: number };
/** A card and the subagents hanging below it: its size, and where each hung card sits relative to its top left. */
type Block = { width: number; height: number; hung: Map<string, Point> };

/** The workflow with every node placed (integer top-left corners); everything else is unchanged. */
export async function layout(workflow: Workflow): Promise<Workflow> {
  const byId = new Map(workflow.nodes.map((n) => [n.id, n]));
  // Each node's subagents, in file order; a node claimed twice stays with its first parent.
  const subagents = new Map<string, string[]>();
  const claimed = new Set<string>();
  for (const e of workflow.edges) {
    if (edgeHandle(e) !== "subagent" || e.from === e.to || !byId.has(e.from) || !byId.has(e.to) || claimed.has(e.to)) continue;
    claimed.add(e.to);
    subagents.set(e.from, [...(subagents.get(e.from) ?? []), e.to]);
  }
  // Hung nodes are the ones reached from a flow node through subagent links; a ring of subagents with no way in
  // (an invalid file) stays in the flow rather than vanishing.
  const hungSet = new Set<string>();
  const reach = (id: string) => {
    for (const c of subagents.get(id) ?? [])
      if (!hungSet.has(c)) {
        hungSet.add(c);
        reach(c);
      }
  };
  for (const n of workflow.nodes) if (!claimed.has(n.id)) reach(n.id);
  const inFlow = workflow.nodes.filter((n) => !hungSet.has(n.id));

  // A card with its subagents below it: each child (with its own subagents) one under the other, indented.
  const placedInBlock = new Set<string>();
  const block = (n: Node): Block => {
    const hung = new Map<string, Point>();
    let width = NODE_WIDTH;
    let y = minNodeHeight(n) + SUB_GAP;
    for (const id of subagents.get(n.id) ?? []) {
      if (placedInBlock.has(id) || !hungSet.has(id)) continue;
      placedInBlock.add(id);
      const child = block(byId.get(id)!);
      hung.set(id, { x: SUB_INDENT, y });
      for (const [g, p] of child.hung) hung.set(g, { x: SUB_INDENT + p.x, y: y + p.y });
      width = Math.max(width, SUB_INDENT + child.width);
      y += child.height + SUB_GAP;
    }
    return { width, height: hung.size ? y - SUB_GAP : minNodeHeight(n), hung };
  };
  const blocks = new Map(inFlow.map((n) => [n.id, block(n)]));

  const portOf = new Map<string, Set<string>>();
  const children: ElkNode[] = inFlow.map((n) => {
    const { width, height } = blocks.get(n.id)!;
    const card = minNodeHeight(n);
    const east = sourceHandles(n).filter((h) => h.kind !== "subagent");
    portOf.set(n.id, new Set(east.map((h) => h.id)));
    const hangs = height !== card || width !== NODE_WIDTH;
    // Ports go clockwise: the source handles down the east side, then the input on the west. A card with
    // subagents below it is a taller box to ELK; its ports are pinned where the card's own would be.
    const ports: ElkPort[] = east.map((h, i) => ({
      id: `${n.id}::${h.id}`,
      width: 1,
      height: 1,
      ...(hangs ? { x: width, y: Math.round((card * (i + 1)) / (east.length + 1)) } : {}),
      layoutOptions: { "elk.port.side": "EAST", "elk.port.index": String(i) },
    }));
    if (hasInput(n.type))
      ports.push({
        id: `${n.id}::input`,
        width: 1,
        height: 1,
        ...(hangs ? { x: -1, y: Math.round(card / 2) } : {}),
        layoutOptions: { "elk.port.side": "WEST", "elk.port.index": String(east.length) },
      });
    return { id: n.id, width, height, ports, layoutOptions: { "elk.portConstraints": hangs ? "FIXED_POS" : "FIXED_ORDER" } };
  });

  const flow = new Set(inFlow.map((n) => n.id));
  const edges: ElkExtendedEdge[] = [];
  workflow.edges.forEach((e, i) => {
    // Self loops take no room between layers, and subagent links are drawn inside their parent's block.
    if (edgeHandle(e) === "subagent" || e.from === e.to || !flow.has(e.from) || !flow.has(e.to)) return;
    const text = edgeLabel(e, byId.get(e.from)); // the words the canvas shows on the chip
    const handle = canonicalHandle(byId.get(e.from), edgeHandle(e));
    edges.push({
      id: `e${i}`,
      sources: [portOf.get(e.from)!.has(handle) ? `${e.from}::${handle}` : e.from],
      targets: [hasInput(byId.get(e.to)!.type) ? `${e.to}::input` : e.to],
      labels: text ? [{ id: `e${i}::label`, text, ...chipSize(text), layoutOptions: LABEL }] : [],
    });
  });

  // ELK takes seconds on thousands of nodes (and its depth-first cycle breaking overflows the stack on a long chain):
  // above LARGE the same layered picture is made by the quick version below.
  const laid = inFlow.length > LARGE ? quickLayered(children, edges) : await (await engine()).layout({ id: "root", layoutOptions: options(inFlow.length), children, edges });
  const placed = new Map<string, Point>();
  for (const c of laid.children ?? []) {
    const at = { x: Math.round(c.x ?? 0), y: Math.round(c.y ?? 0) };
    placed.set(c.id, at);
    for (const [id, p] of blocks.get(c.id)?.hung ?? []) placed.set(id, { x: at.x + p.x, y: at.y + p.y });
  }
  // Anything ELK did not return (it should return every node) goes in a row below the rest.
  const bottom = Math.max(0, ...[...placed].map(([id, p]) => p.y + minNodeHeight(byId.get(id)!)));
  let spare = 0;
  for (const n of workflow.nodes) if (!placed.has(n.id)) placed.set(n.id, { x: spare++ * (NODE_WIDTH + 50), y: bottom + 80 });
  return { ...workflow, nodes: workflow.nodes.map((n) => ({ ...n, position: placed.get(n.id)! })) };
}
