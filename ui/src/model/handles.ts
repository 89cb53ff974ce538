// Connection rules of SEMANTICS.md §1 and §5 as the canvas needs them: which handles a node shows, and why a
// connection is refused. The engine's validator stays the authority; this only gives immediate feedback while
// dragging.
import type { Edge, Node, NodeType } from "../types";

export type HandleSpec = { id: string; label: string; kind: "execution" | "error" | "subagent" };

export function sourceHandles(node: Node): HandleSpec[] {
  switch (node.type) {
    case "start":
      return [{ id: "output", label: "", kind: "execution" }];
    case "agent":
      return [
        { id: "output", label: "", kind: "execution" },
        { id: "error", label: "error", kind: "error" },
        { id: "subagent", label: "subagent", kind: "subagent" },
      ];
    case "script":
      return [
        { id: "output", label: "", kind: "execution" },
        { id: "error", label: "error", kind: "error" },
      ];
    case "approval":
      return [
        { id: "approve", label: "approve", kind: "execution" },
        { id: "reject", label: "reject", kind: "execution" },
        { id: "timeout", label: "timeout", kind: "execution" },
      ];
    case "if": {
      const conditions = node.conditions ?? [];
      return [
        ...conditions.map((c, i) => ({ id: `condition-${i}`, label: c.value || `condition ${i}`, kind: "execution" as const })),
        { id: "false", label: "else", kind: "execution" },
      ];
    }
  }
}

/** Every node is this wide on the canvas (styles.css `.wf-node`), so handle positions are known before measuring. */
export const NODE_WIDTH = 200;
/** Source handles of one kind stack down the right edge from this offset, this far apart (see WorkflowNode). */
export const HANDLE_TOP = 26;
export const HANDLE_STEP = 18;

/** Where each handle sits on a node of the given height: React Flow uses this until it has measured the node. */
export function handleLayout(node: Node, height: number) {
  const size = 6;
  const handles: { id: string; type: "source" | "target"; position: "left" | "right" | "bottom"; x: number; y: number; width: number; height: number }[] = [];
  if (hasInput(node.type)) handles.push({ id: "input", type: "target", position: "left", x: -size / 2, y: height / 2 - size / 2, width: size, height: size });
  sourceHandles(node)
    .filter((h) => h.kind !== "subagent")
    .forEach((h, i) => handles.push({ id: h.id, type: "source", position: "right", x: NODE_WIDTH - size / 2, y: HANDLE_TOP + i * HANDLE_STEP - size / 2, width: size, height: size }));
  if (node.type === "agent") handles.push({ id: "subagent", type: "source", position: "bottom", x: NODE_WIDTH / 2 - size / 2, y: height - size / 2, width: size, height: size });
  return handles;
}

export function hasInput(type: NodeType): boolean {
  return type !== "start";
}

export const edgeHandle = (edge: Edge): string => edge.handle ?? "output";

/** Why connecting `source`'s `handle` to `target` would break a rule, or null when it is allowed. */
export function connectionProblem(nodes: Node[], edges: Edge[], sourceId: string, handle: string, targetId: string): string | null {
  const source = nodes.find((n) => n.id === sourceId);
  const target = nodes.find((n) => n.id === targetId);
  if (!source || !target) return "both ends must be nodes";
  if (!sourceHandles(source).some((h) => h.id === handle)) return `a ${source.type} node has no "${handle}" handle`;
  if (target.type === "start") return "nothing can lead into the start node";
  if (edges.some((e) => e.from === sourceId && e.to === targetId && edgeHandle(e) === handle)) return "these nodes are already connected this way";
  const isChild = (id: string) => edges.some((e) => e.to === id && edgeHandle(e) === "subagent");
  if (handle === "subagent") {
    if (target.type !== "agent") return "a subagent must be an agent";
    if (sourceId === targetId) return "an agent cannot be its own subagent";
    if (!source.tools?.subagents) return `turn on "subagents" in ${sourceId}'s tools first`;
    if (isChild(targetId)) return `${targetId} already has a parent agent`;
    if (edges.some((e) => (e.from === targetId || e.to === targetId) && edgeHandle(e) !== "subagent"))
      return `${targetId} is in the flow; a subagent runs only as a tool`;
    // A link that closes a cycle of subagents.
    const reaches = (from: string, goal: string, seen = new Set<string>()): boolean =>
      from === goal || (!seen.has(from) && (seen.add(from), edges.some((e) => e.from === from && edgeHandle(e) === "subagent" && reaches(e.to, goal, seen))));
    if (reaches(targetId, sourceId)) return "subagent links cannot form a cycle";
    return null;
  }
  if (isChild(targetId) || isChild(sourceId)) return "subagents run only as tools: they take no execution edges";
  if (sourceId === targetId) return null; // allowed, but validation asks for max_iterations
  return null;
}
