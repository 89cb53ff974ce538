// What the canvas needs of a node's handles: which handles it shows (from the engine's node type definitions), where
// they sit before React Flow has measured the node, and why a connection is refused. The engine's validator stays
// the authority; the rules here only give immediate feedback while dragging.
import type { Condition, Edge, Node, NodeType } from "../types";
import { canBeSubagent, nodeTypeSpec, type HandleKind } from "./nodeTypes";

export type Handle = { id: string; label: string; kind: HandleKind };

/**
 * What a person reads for the handle a node leaves by when it fails (the catalogue's `error`): where the run goes
 * then, not a state of the node. The handle id stays `error`, as the file has it.
 */
export const ON_FAILURE = "on failure";

/**
 * The source handles of `node`, in order, with per-condition handles expanded for its conditions. Computed once per
 * node type definition, and per conditions list for a type with a handle per condition (documents are never changed
 * in place): the canvas, labels and layout ask for them for every node many times over.
 */
export function sourceHandles(node: Node): readonly Handle[] {
  const spec = nodeTypeSpec(node.type);
  if (!spec) return NONE;
  if (!spec.handles.some((h) => h.perCondition)) {
    let handles = bySpec.get(spec);
    if (!handles) bySpec.set(spec, (handles = Object.freeze(expand(spec.handles, []))));
    return handles;
  }
  const conditions = node.conditions ?? NO_CONDITIONS;
  const cached = byConditions.get(conditions);
  if (cached?.spec === spec) return cached.handles;
  const handles = Object.freeze(expand(spec.handles, conditions));
  byConditions.set(conditions, { spec, handles });
  return handles;
}

type Spec = NonNullable<ReturnType<typeof nodeTypeSpec>>;
const NONE: readonly Handle[] = Object.freeze([]);
const NO_CONDITIONS: Condition[] = [];
const bySpec = new WeakMap<Spec, readonly Handle[]>();
const byConditions = new WeakMap<Condition[], { spec: Spec; handles: readonly Handle[] }>();

function expand(handles: Spec["handles"], conditions: Condition[]): Handle[] {
  return handles.flatMap((h) =>
    h.perCondition
      ? conditions.map((c, i) => ({ id: h.id.replace("{i}", String(i)), label: c.value ? short(c.value) : h.label.replace("{i}", String(i)), kind: h.kind }))
      : [{ id: h.id, label: h.kind === "error" ? ON_FAILURE : h.label, kind: h.kind }],
  );
}

const short = (text: string) => (text.length > 18 ? `${text.slice(0, 17)}…` : text);

/** Every node is this wide on the canvas (styles.css `.wf-node`), so handle positions are known before measuring. */
export const NODE_WIDTH = 220;
/** An estimate of a node card's height before React Flow has measured it. */
export const NODE_HEIGHT = 84;
/**
 * Source handles of one kind stack down the right edge from this offset, this far apart (see WorkflowNode): below
 * the title line, so their labels sit beside the summary and never over the node's name; the first is level with
 * the input handle at the middle of a card of the usual height, so a chain of cards draws straight.
 */
export const HANDLE_TOP = 42;
export const HANDLE_STEP = 20;
/** Handles are drawn this big; their hit area (styles.css) is larger still. */
export const HANDLE_SIZE = 12;

/** Where each handle sits on a node of the given height: React Flow uses this until it has measured the node. */
export function handleLayout(node: Node, height: number) {
  const size = HANDLE_SIZE;
  const handles: { id: string; type: "source" | "target"; position: "left" | "right" | "bottom"; x: number; y: number; width: number; height: number }[] = [];
  if (hasInput(node.type)) handles.push({ id: "input", type: "target", position: "left", x: -size / 2, y: height / 2 - size / 2, width: size, height: size });
  sourceHandles(node)
    .filter((h) => h.kind !== "subagent")
    .forEach((h, i) => handles.push({ id: h.id, type: "source", position: "right", x: NODE_WIDTH - size / 2, y: HANDLE_TOP + i * HANDLE_STEP - size / 2, width: size, height: size }));
  if (sourceHandles(node).some((h) => h.kind === "subagent"))
    handles.push({ id: "subagent", type: "source", position: "bottom", x: NODE_WIDTH / 2 - size / 2, y: height - size / 2, width: size, height: size });
  return handles;
}

export function hasInput(type: NodeType): boolean {
  return nodeTypeSpec(type)?.hasInput ?? true;
}

/** The minimum height a node needs to show all its right-hand handles. */
export function minNodeHeight(node: Node): number {
  const handles = sourceHandles(node);
  let height = heights.get(handles);
  if (height === undefined) {
    const right = handles.filter((h) => h.kind !== "subagent").length;
    heights.set(handles, (height = Math.max(NODE_HEIGHT, HANDLE_TOP + (right - 1) * HANDLE_STEP + 16)));
  }
  return height;
}
const heights = new WeakMap<readonly Handle[], number>();

export const edgeHandle = (edge: Edge): string => edge.handle ?? "output";

/**
 * The handle of `node` an edge leaving it by `handle` uses: another name the node type's catalogue gives a handle
 * (an `if` node's `true` is `condition-0`, `else` is `false`) stands for that handle; any other name is the handle.
 */
export function canonicalHandle(node: Node | undefined, handle: string): string {
  const alias = node ? nodeTypeSpec(node.type)?.handleAliases.find((a) => a.alias === handle) : undefined;
  return alias ? alias.handle : handle;
}

/** Why connecting `source`'s `handle` to `target` would break a rule, or null when it is allowed. */
export function connectionProblem(nodes: Node[], edges: Edge[], sourceId: string, handle: string, targetId: string): string | null {
  const source = nodes.find((n) => n.id === sourceId);
  const target = nodes.find((n) => n.id === targetId);
  if (!source || !target) return "both ends must be nodes";
  if (!sourceHandles(source).some((h) => h.id === handle)) return `a ${source.type} node has no "${handle}" handle`;
  if (!hasInput(target.type)) return `nothing can lead into a ${target.type} node`;
  if (edges.some((e) => e.from === sourceId && e.to === targetId && canonicalHandle(source, edgeHandle(e)) === handle)) return "these nodes are already connected this way";
  const isChild = (id: string) => edges.some((e) => e.to === id && edgeHandle(e) === "subagent");
  const kind = sourceHandles(source).find((h) => h.id === handle)?.kind;
  if (kind === "subagent") {
    if (!canBeSubagent(target.type)) return "a subagent must be an agent";
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
  return null; // a self loop is allowed; validation asks for max_iterations
}
