// Auto-layout with elkjs (layered, left to right): a port per handle in the node's own order, edge labels given to
// ELK with their size so it leaves room for them between layers, crossings minimised. A long flow wraps: its layers
// are cut into rows, one under the other, as many as make the picture fit the canvas at the largest zoom (ELK's
// graph wrapping; the same cut for graphs too large for ELK), so that a laid-out workflow stays readable when
// fitted. Subagents are not steps of the flow: they hang below the agent that calls them, in room ELK keeps free.
import type { ElkExtendedEdge, ElkNode, ElkPort, LayoutOptions } from "elkjs/lib/elk.bundled.js";
import type { Node, Workflow } from "../types";
import { canonicalHandle, edgeHandle, HANDLE_STEP, HANDLE_TOP, hasInput, minNodeHeight, NODE_WIDTH, sourceHandles } from "./handles";
import { chipSize, edgeLabel } from "./labels";
import { fitZoom, type Size } from "./placement";

type Elk = { layout: (graph: ElkNode) => Promise<ElkNode> };
let elk: Promise<Elk> | null = null;
/** ELK is large (~1.5 MB): it is loaded the first time a layout is asked for, not with the window. */
const engine = () => (elk ??= import("elkjs/lib/elk.bundled.js").then(({ default: ELK }) => new ELK()));

/**
 * Space between layers. ELK gives a labelled edge's label a layer of its own, with this much on each side of it: the
 * gap between two cards is 60 px, or 120 px plus the widest label between them (at most a chip's 206 px).
 */
const BETWEEN_LAYERS = 60;
/** Space between two cards of a layer. */
const BETWEEN_CARDS = 40;
/** A subagent hangs this far below its parent's card (or the sibling above it), indented past the parent's middle. */
const SUB_GAP = 40;
const SUB_INDENT = NODE_WIDTH / 2 + 40;

/**
 * The canvas a layout aims to fit (its size on screen, set by the canvas as it is resized): rows are cut so that the
 * picture fits it at the largest zoom. Before the canvas is measured: a 1400 × 900 window's.
 */
let view: Size = { width: 1300, height: 700 };
export const setLayoutView = (size: Size) => {
  if (size.width > 0 && size.height > 0) view = { width: size.width, height: size.height };
};
/** A wrapped layout is taken only where it lets the picture be fitted at least this much larger than one row. */
const WRAP_GAIN = 1.1;
/**
 * Rows are added only until the picture fits at this zoom (titles of 12 px): fewer rows read better, above all where
 * a flow branches (each cut turns the edges across it into steps back to the left).
 */
const ENOUGH_ZOOM = 0.8;
/** The gap between two rows of a wrapped layout (room for the edges that go from the end of a row to the next). */
const BETWEEN_ROWS = 70;

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
  "elk.spacing.nodeNode": String(BETWEEN_CARDS),
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

/** The card an edge's end is on: `node::handle` names a port of the card `node`. */
const cardOf = (end: string | undefined): string => {
  if (end === undefined) return "";
  const port = end.indexOf("::");
  return port < 0 ? end : end.slice(0, port);
};

/** Above this many nodes in the flow, layout is `quickLayered`, not ELK. */
export const LARGE = 400;

/**
 * A layered layout, left to right, in linear time (plus a sort per layer), for graphs too large for ELK: cycles are
 * broken depth first from the sources (in file order), each node goes one layer right of its furthest predecessor,
 * layers are ordered by two barycentre sweeps (ties in file order), and each node sits as near the middle of its
 * predecessors as the cards above it in its layer allow. Gaps are ELK's: `BETWEEN_LAYERS` between layers (twice that
 * plus the widest label where labelled edges cross), `BETWEEN_CARDS` between cards. Takes ELK's graph shape (edges point
 * from a port, `node::handle`, or a node to a port or a node) and places the cards it is given (sets their x and y).
 */
export function quickLayered(children: ElkNode[], edges: ElkExtendedEdge[]): ElkNode {
  const n = children.length;
  const index = new Map(children.map((c, i) => [c.id, i]));
  const nodeOf = (end: string) => index.get(cardOf(end)) ?? -1;
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
      if (layer.length < 2) continue; // one card: nothing to order (a long chain is all such layers)
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
      floor = ys[v] + height(v) + BETWEEN_CARDS;
    }
  }
  const top = Math.min(...ys);
  // Placed where they are (copies of 5,000 cards with their ports took a tenth of a large layout).
  children.forEach((c, v) => {
    c.x = xs[v];
    c.y = ys[v] - top + 12;
  });
  return { id: "root", children };
}

/**
 * A left-to-right layout cut into rows, one under the other, so that it fits `fitTo` (the canvas) at the largest
 * zoom: the picture's columns (cards whose spans across overlap, i.e. a layer) stay whole, and the rows are runs of
 * columns of about equal width, each moved back to the left. Edges from the end of one row to the next are drawn
 * as steps through the gap between the rows (model/labels.ts `edgeRoute`). One row when wrapping does not let the
 * picture be fitted `WRAP_GAIN` times larger. Of the cuts that fit it at `ENOUGH_ZOOM`, the one that cuts the fewest
 * edges (a branching flow is cut where it narrows), then the one with fewer rows; when none does, the one that fits
 * it largest. Tried: two rows cut at every column (up to 200 columns), and more rows cut at equal widths (up to 400 rows); linear in the
 * nodes for each. The cards are moved where they are, and returned.
 */
export function wrapRows(kids: ElkNode[], fitTo: Size, edges: ElkExtendedEdge[] = []): ElkNode[] {
  if (kids.length < 3) return kids;
  const order = kids.map((_, i) => i).sort((a, b) => (kids[a].x ?? 0) - (kids[b].x ?? 0));
  // Columns: runs of cards (in x order) whose spans across overlap.
  const columnOf = new Int32Array(kids.length);
  const left: number[] = [];
  const right: number[] = [];
  const top: number[] = [];
  const bottom: number[] = [];
  for (const i of order) {
    const { x = 0, y = 0, width = 0, height = 0 } = kids[i];
    const c = left.length - 1;
    if (c >= 0 && x < right[c]) {
      right[c] = Math.max(right[c], x + width);
      top[c] = Math.min(top[c], y);
      bottom[c] = Math.max(bottom[c], y + height);
      columnOf[i] = c;
    } else {
      left.push(x);
      right.push(x + width);
      top.push(y);
      bottom.push(y + height);
      columnOf[i] = c + 1;
    }
  }
  const C = left.length;
  if (C < 2) return kids;
  const span = (from: number, to: number) => {
    let t = Infinity;
    let b = -Infinity;
    for (let c = from; c < to; c++) {
      if (top[c] < t) t = top[c];
      if (bottom[c] > b) b = bottom[c];
    }
    return { t, b };
  };
  /** The first column of each row, cutting where a row would grow wider than a `k`-th of the whole. */
  const cut = (k: number): number[] => {
    const starts = [0];
    const share = (right[C - 1] - left[0]) / k;
    for (let c = 1; c < C; c++) if (right[c] - left[starts[starts.length - 1]] > share * 1.02) starts.push(c);
    return starts;
  };
  // How many edges cross the boundary before each column (an edge crosses every boundary between its two columns).
  const index = new Map(kids.map((k, i) => [k.id, i]));
  const crossing = new Int32Array(C + 1);
  for (const e of edges) {
    const [a, b] = [index.get(cardOf(e.sources[0])), index.get(cardOf(e.targets[0]))];
    if (a === undefined || b === undefined) continue;
    const [lo, hi] = [Math.min(columnOf[a], columnOf[b]), Math.max(columnOf[a], columnOf[b])];
    crossing[lo + 1]++;
    crossing[hi + 1]--;
  }
  for (let c = 1; c <= C; c++) crossing[c] += crossing[c - 1];
  const cutEdges = (starts: number[]) => starts.reduce((sum, c) => sum + (c ? crossing[c] : 0), 0);
  const score = (starts: number[]) => {
    let [w, h] = [0, 0];
    starts.forEach((from, r) => {
      const to = starts[r + 1] ?? C;
      const { t, b } = span(from, to);
      w = Math.max(w, right[to - 1] - left[from]);
      h += b - t + (r ? BETWEEN_ROWS : 0);
    });
    return Math.min(ENOUGH_ZOOM, fitZoom({ width: w, height: h }, fitTo));
  };
  const single = score([0]);
  if (single >= ENOUGH_ZOOM) return kids;
  // Two rows cut at each column of a small picture, then more rows cut at equal widths: the zoom they fit at rises
  // to a peak and falls, so the tries stop once it has fallen to half the best.
  function* candidates() {
    if (C <= 200) for (let c = 1; c < C; c++) yield [0, c];
    for (let k = 3; k <= Math.min(C, 400); k++) yield cut(k);
  }
  let rows = [0];
  let best = { zoom: single, cut: 0 };
  let peak = single;
  for (const starts of candidates()) {
    const zoom = score(starts);
    peak = Math.max(peak, zoom);
    if (starts.length > 2 && zoom < peak / 2) break;
    if (zoom <= single * WRAP_GAIN) continue;
    const cutN = cutEdges(starts);
    const better =
      best.zoom >= ENOUGH_ZOOM ? zoom >= ENOUGH_ZOOM && (cutN < best.cut || (cutN === best.cut && starts.length < rows.length)) : zoom > best.zoom || (zoom >= ENOUGH_ZOOM && zoom === best.zoom);
    if (better) [rows, best] = [starts, { zoom, cut: cutN }];
  }
  if (rows.length === 1) return kids;
  // Each row moved to the left edge and below the one before.
  const dx = new Float64Array(C);
  const dy = new Float64Array(C);
  let y = 12;
  rows.forEach((from, r) => {
    const to = rows[r + 1] ?? C;
    const { t, b } = span(from, to);
    for (let c = from; c < to; c++) [dx[c], dy[c]] = [12 - left[from], y - t];
    y += b - t + BETWEEN_ROWS;
  });
  kids.forEach((k, i) => {
    k.x = (k.x ?? 0) + dx[columnOf[i]];
    k.y = (k.y ?? 0) + dy[columnOf[i]];
  });
  return kids;
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

  // ELK is given ports; the quick layout of a large graph reads only which card an edge leaves and enters, so its
  // cards and edges are made without them (tens of thousands of objects fewer at 5,000 nodes).
  const withPorts = inFlow.length <= LARGE;
  const portOf = new Map<string, Set<string>>();
  const children: ElkNode[] = inFlow.map((n) => {
    const { width, height } = blocks.get(n.id)!;
    if (!withPorts) return { id: n.id, width, height };
    const card = minNodeHeight(n);
    const east = sourceHandles(n).filter((h) => h.kind !== "subagent");
    portOf.set(n.id, new Set(east.map((h) => h.id)));
    // Ports go clockwise: the source handles down the east side where the card has them, then the input on the
    // west, level with the first source handle (not at the card's middle, where the canvas draws it): so that a
    // straight run of cards keeps its tops in line instead of stepping down a little at every card. A card with
    // subagents below it is a taller box to ELK; its ports are where the card's own are.
    const ports: ElkPort[] = east.map((h, i) => ({
      id: `${n.id}::${h.id}`,
      width: 1,
      height: 1,
      x: width,
      y: HANDLE_TOP + i * HANDLE_STEP,
      layoutOptions: { "elk.port.side": "EAST", "elk.port.index": String(i) },
    }));
    if (hasInput(n.type))
      ports.push({ id: `${n.id}::input`, width: 1, height: 1, x: -1, y: Math.min(HANDLE_TOP, card / 2), layoutOptions: { "elk.port.side": "WEST", "elk.port.index": String(east.length) } });
    return { id: n.id, width, height, ports, layoutOptions: { "elk.portConstraints": "FIXED_POS" } };
  });

  const flow = new Set(inFlow.map((n) => n.id));
  const edges: ElkExtendedEdge[] = [];
  workflow.edges.forEach((e, i) => {
    // Self loops take no room between layers, and subagent links are drawn inside their parent's block.
    if (edgeHandle(e) === "subagent" || e.from === e.to || !flow.has(e.from) || !flow.has(e.to)) return;
    const text = edgeLabel(e, byId.get(e.from)); // the words the canvas shows on the chip
    const handle = withPorts ? canonicalHandle(byId.get(e.from), edgeHandle(e)) : "";
    edges.push({
      id: `e${i}`,
      sources: [withPorts && portOf.get(e.from)!.has(handle) ? `${e.from}::${handle}` : e.from],
      targets: [withPorts && hasInput(byId.get(e.to)!.type) ? `${e.to}::input` : e.to],
      labels: text ? [{ id: `e${i}::label`, text, ...chipSize(text), layoutOptions: LABEL }] : [],
    });
  });

  // ELK takes seconds on thousands of nodes (and its depth-first cycle breaking overflows the stack on a long chain):
  // above LARGE the same layered picture is made by the quick version, which wraps its rows itself.
  const laid = !withPorts ? quickLayered(children, edges) : await (await engine()).layout({ id: "root", layoutOptions: options(inFlow.length), children, edges });
  // A long flow wraps into rows that fit the canvas.
  laid.children = wrapRows(laid.children ?? [], view, edges);
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
