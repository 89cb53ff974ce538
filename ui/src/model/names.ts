// One concept, one name: what the engine reports by id (a node's id, a branch's handle id such as `condition-0` or
// `false`, an edge as `from->to`, an `if` node's output `{"branch": "condition-0"}`) is shown by the name the card
// shows (the node's name, the branch's label: "high", "else"). The engine's words stay as they are; only the ids in
// them are named. Pure functions of the message and the workflow.
import type { Workflow } from "../types";
import { canonicalHandle, sourceHandles } from "./handles";
import { handleName } from "./labels";
import { routesByConditions } from "./nodeTypes";

type Doc = Pick<Workflow, "nodes" | "edges">;
type Node = Workflow["nodes"][number];
type Edge = Workflow["edges"][number];

/**
 * The nodes by id (the first of a duplicated id, as a search in order finds it), and how many nodes are shown by
 * each name: built once per node list (documents are immutable), so that naming the thousands of problems of a large
 * workflow costs one pass, not one pass per problem.
 */
type NodeIndex = { length: number; byId: Map<string, Node>; shown: Map<string, number>; idShown: Map<string, number> };
const nodeIndexes = new WeakMap<Node[], NodeIndex>();
function nodeIndex(nodes: Node[]): NodeIndex {
  let ix = nodeIndexes.get(nodes);
  if (ix && ix.length === nodes.length) return ix;
  ix = { length: nodes.length, byId: new Map(), shown: new Map(), idShown: new Map() };
  for (const n of nodes) {
    if (!ix.byId.has(n.id)) ix.byId.set(n.id, n);
    const shown = n.name || n.id;
    ix.shown.set(shown, (ix.shown.get(shown) ?? 0) + 1);
    const pair = `${n.id}\u0000${shown}`;
    ix.idShown.set(pair, (ix.idShown.get(pair) ?? 0) + 1);
  }
  nodeIndexes.set(nodes, ix);
  return ix;
}

/** The edges by id and by `from->to` (and `from->to:handle`), the first in order for each. */
const edgeIndexes = new WeakMap<Edge[], { length: number; byId: Map<string, Edge>; byRef: Map<string, Edge> }>();
function edgeIndex(edges: Edge[]) {
  let ix = edgeIndexes.get(edges);
  if (ix && ix.length === edges.length) return ix;
  ix = { length: edges.length, byId: new Map(), byRef: new Map() };
  for (const e of edges) {
    if (e.id != null && !ix.byId.has(e.id)) ix.byId.set(e.id, e);
    for (const ref of [`${e.from}->${e.to}`, `${e.from}->${e.to}:${e.handle}`]) if (!ix.byRef.has(ref)) ix.byRef.set(ref, e);
  }
  edgeIndexes.set(edges, ix);
  return ix;
}

/**
 * The name a node is shown by: its name, else its id; with its id after it where another node is shown by the same
 * words (two nodes named "Review"), so that the name alone never leaves a doubt. An id no node has stays as it is.
 */
export function displayName(workflow: Doc, id: string): string {
  const ix = nodeIndex(workflow.nodes);
  const node = ix.byId.get(id);
  if (!node) return id;
  const shown = node.name || node.id;
  // Another node (not one with this id) shown by the same words, or whose id is those words.
  const twins = (ix.shown.get(shown) ?? 0) - (ix.idShown.get(`${id}\u0000${shown}`) ?? 0) > 0 || (shown !== id && ix.byId.has(shown));
  return twins && shown !== id ? `${shown} (${id})` : shown;
}

/** The label the card shows for the branch `handle` of node `nodeId` (an `if`'s condition, else, approve…), or null. */
export function branchName(workflow: Doc, nodeId: string | null | undefined, handle: string): string | null {
  const node = nodeId ? nodeIndex(workflow.nodes).byId.get(nodeId) : undefined;
  if (node) {
    const id = canonicalHandle(node, handle);
    if (!sourceHandles(node).some((h) => h.id === id)) return null;
  }
  if (handle === "output") return null;
  const name = handleName(node, handle);
  // Without its node, only a handle the catalogue names (else, approve, reject…) is a branch: not any word.
  return name && (node || name !== handle) ? name : null;
}

const quoted = (name: string) => `“${name}”`;

/**
 * A problem's sentence with the ids in it named: a branch of `nodeId` in backticks (`condition-0`, `false`) by the
 * label its card shows, a node in backticks by its name, and an edge `from->to` as "From → To".
 */
export function namedMessage(message: string, workflow: Doc, nodeId?: string | null): string {
  const ids = nodeIndex(workflow.nodes).byId;
  return message
    .replace(/`([^`\s]+)`/g, (whole, token: string) => {
      const branch = nodeId ? branchName(workflow, nodeId, token) : null;
      if (branch) return quoted(branch);
      if (ids.has(token)) return quoted(displayName(workflow, token));
      return whole;
    })
    .replace(/(\S+)->(\S+?)(?=[\s,;:.)]|$)/g, (whole, from: string, to: string) => (ids.has(from) && ids.has(to) ? `${displayName(workflow, from)} → ${displayName(workflow, to)}` : whole));
}

/**
 * How an edge the engine names (its id, or `from->to`) is shown: "From → To", with its branch where it leaves by one
 * ("Triage → Page (high)"). An edge the workflow does not have is shown as the engine named it.
 */
export function edgeTitle(workflow: Doc, ref: string): string {
  const ix = edgeIndex(workflow.edges);
  const edge = ix.byId.get(ref) ?? ix.byRef.get(ref);
  if (!edge) return ref;
  const branch = edge.handle ? branchName(workflow, edge.from, edge.handle) : null;
  return `${displayName(workflow, edge.from)} → ${displayName(workflow, edge.to)}${branch ? ` (${branch})` : ""}`;
}

/**
 * An evaluation's expected or actual value as the Evals tab shows it: an `if` node's output `{"branch": "condition-0"}`
 * (with or without the engine's `label`) as the branch its card names (branch “high”), and the nodes a route names (`routes to agent_3`, `went to a, b`,
 * `` `agent_3` did not run ``) by their names. `nodeId` is the node the expectation is about.
 */
export function namedValue(text: string, workflow: Doc, nodeId?: string | null): string {
  const ids = nodeIndex(workflow.nodes).byId;
  const ofIf = nodeId ?? workflow.nodes.find((n) => routesByConditions(n.type))?.id;
  return namedMessage(text, workflow, nodeId)
    .replace(/\{[^{}]*\}/g, (whole) => {
      // An if node's output: its branch, and the label the engine gave it; nothing else.
      let value: unknown;
      try {
        value = JSON.parse(whole);
      } catch {
        return whole;
      }
      if (!value || typeof value !== "object" || Array.isArray(value)) return whole;
      const { branch, label, ...rest } = value as Record<string, unknown>;
      if (typeof branch !== "string" || Object.keys(rest).length || (label != null && typeof label !== "string")) return whole;
      return `branch ${quoted(branchName(workflow, ofIf, branch) ?? (label as string | undefined) ?? branch)}`;
    })
    .replace(/^(routes to|went to) (.+)$/, (whole, verb: string, list: string) => {
      const names = list.split(/,\s*/);
      return names.every((n) => ids.has(n)) ? `${verb} ${names.map((n) => displayName(workflow, n)).join(", ")}` : whole;
    });
}
