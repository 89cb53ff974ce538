// Auto-layout with elkjs (layered, left to right): a port per handle in the node's own order, edge labels given to
// ELK with their size so it leaves room for them between layers, crossings minimised. Subagents are not steps of
// the flow: they hang below the agent that calls them.
import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk.bundled.js";
import type { Workflow } from "../types";
import { edgeHandle, hasInput, minNodeHeight, NODE_WIDTH, sourceHandles } from "./handles";
import { chipSize, edgeLabel } from "./labels";

type Elk = { layout: (graph: ElkNode) => Promise<ElkNode> };
let elk: Promise<Elk> | null = null;
/** ELK is large (~1.5 MB): it is loaded the first time a layout is asked for, not with the window. */
const engine = () => (elk ??= import("elkjs/lib/elk.bundled.js").then(({ default: ELK }) => new ELK()));

const OPTIONS = {
  "elk.algorithm": "layered",
  "elk.direction": "RIGHT",
  "elk.edgeRouting": "SPLINES",
  "elk.layered.crossingMinimization.strategy": "LAYER_SWEEP",
  "elk.layered.nodePlacement.strategy": "BRANDES_KOEPF",
  "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
  "elk.layered.cycleBreaking.strategy": "DEPTH_FIRST",
  "elk.spacing.nodeNode": "48",
  "elk.layered.spacing.nodeNodeBetweenLayers": "110",
  "elk.spacing.edgeLabel": "6",
  "elk.spacing.edgeNode": "24",
  "elk.edgeLabels.inline": "false",
  "elk.layered.edgeLabels.sideSelection": "SMART_DOWN",
  "elk.spacing.componentComponent": "80",
};

/** True for a workflow whose file carried no positions: none at all, or every node on the same point. */
export function needsLayout(workflow: Workflow): boolean {
  if (workflow.nodes.length < 2) return false;
  const at = workflow.nodes.map((n) => (n.position ? `${n.position.x ?? 0},${n.position.y ?? 0}` : null));
  return at.every((p) => p === null) || new Set(at).size === 1;
}

/** The workflow with every node placed (integer top-left corners); everything else is unchanged. */
export async function layout(workflow: Workflow): Promise<Workflow> {
  const children = new Set(workflow.edges.filter((e) => edgeHandle(e) === "subagent").map((e) => e.to));
  const inFlow = workflow.nodes.filter((n) => !children.has(n.id));
  const ids = new Set(inFlow.map((n) => n.id));
  const graph: ElkNode = {
    id: "root",
    layoutOptions: OPTIONS,
    children: inFlow.map((n) => ({
      id: n.id,
      width: NODE_WIDTH,
      height: minNodeHeight(n),
      layoutOptions: { "elk.portConstraints": "FIXED_ORDER" },
      ports: [
        ...(hasInput(n.type) ? [{ id: `${n.id}::input`, width: 1, height: 1, layoutOptions: { "elk.port.side": "WEST" } }] : []),
        ...sourceHandles(n)
          .filter((h) => h.kind !== "subagent")
          .map((h, i) => ({ id: `${n.id}::${h.id}`, width: 1, height: 1, layoutOptions: { "elk.port.side": "EAST", "elk.port.index": String(i) } })),
      ],
    })),
    edges: workflow.edges
      .filter((e) => edgeHandle(e) !== "subagent" && e.from !== e.to && ids.has(e.from) && ids.has(e.to))
      .map((e, i): ElkExtendedEdge => {
        const text = edgeLabel(e);
        const handle = edgeHandle(e) === "true" ? "condition-0" : edgeHandle(e);
        const from = inFlow.find((n) => n.id === e.from)!;
        const port = sourceHandles(from).some((h) => h.id === handle) ? `${e.from}::${handle}` : e.from;
        const to = inFlow.find((n) => n.id === e.to)!;
        return {
          id: `e${i}`,
          sources: [port],
          targets: [hasInput(to.type) ? `${e.to}::input` : e.to],
          labels: text ? [{ text, ...chipSize(text) }] : [],
        };
      }),
  };
  const laid = await (await engine()).layout(graph);
  const placed = new Map<string, { x: number; y: number }>();
  for (const c of laid.children ?? []) placed.set(c.id, { x: Math.round(c.x ?? 0), y: Math.round(c.y ?? 0) });
  // Subagents go under their parent, side by side.
  const byParent = new Map<string, string[]>();
  for (const e of workflow.edges) if (edgeHandle(e) === "subagent") byParent.set(e.from, [...(byParent.get(e.from) ?? []), e.to]);
  const bottom = Math.max(0, ...inFlow.map((n) => (placed.get(n.id)?.y ?? 0) + minNodeHeight(n)));
  let spare = 0;
  const placeChildren = (parent: string, depth: number) => {
    const p = placed.get(parent);
    (byParent.get(parent) ?? []).forEach((child, i) => {
      if (placed.has(child)) return;
      placed.set(child, p ? { x: p.x + i * (NODE_WIDTH + 30), y: p.y + 150 } : { x: (spare++) * (NODE_WIDTH + 30), y: bottom + 150 * depth });
      placeChildren(child, depth + 1);
    });
  };
  for (const parent of byParent.keys()) if (!children.has(parent)) placeChildren(parent, 1);
  for (const n of workflow.nodes) if (!placed.has(n.id)) placed.set(n.id, { x: (spare++) * (NODE_WIDTH + 30), y: bottom + 150 });
  return { ...workflow, nodes: workflow.nodes.map((n) => ({ ...n, position: placed.get(n.id)! })) };
}
