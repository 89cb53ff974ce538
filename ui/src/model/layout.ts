// Auto-layout with dagre: left to right, execution edges only (subagent links hang below their parent).
import dagre from "@dagrejs/dagre";
import type { Workflow } from "../types";
import { edgeHandle } from "./handles";

export function layout(workflow: Workflow): Workflow {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 40, ranksep: 90 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of workflow.nodes) g.setNode(n.id, { width: 200, height: 70 });
  for (const e of workflow.edges) if (edgeHandle(e) !== "subagent" && e.from !== e.to) g.setEdge(e.from, e.to);
  dagre.layout(g);
  const placed = new Map(workflow.nodes.map((n) => [n.id, g.node(n.id)]));
  // Subagents go under their parent.
  for (const e of workflow.edges) {
    if (edgeHandle(e) !== "subagent") continue;
    const parent = placed.get(e.from);
    if (parent) placed.set(e.to, { ...parent, y: parent.y + 130 } as never);
  }
  return {
    ...workflow,
    nodes: workflow.nodes.map((n) => {
      const p = placed.get(n.id);
      return p ? { ...n, position: { x: Math.round(p.x - 100), y: Math.round(p.y - 35) } } : n;
    }),
  };
}
