// The document being edited: the canonical workflow (the same type the engine saves), the selection, and an
// undo/redo history of whole documents (cheap: edits share unchanged nodes). Text typed in a field goes into the
// document as it is typed, one undo step per field typed in; a field whose text cannot go in until it is finished (a
// node's new id) holds it as a draft that every other change of the document or the selection commits first.
import { create } from "zustand";
import type { Edge, Node, NodeType, Workflow } from "../types";
import { entryType, isEntry, newNodeOf } from "../model/nodeTypes";
import { renameNode } from "../model/rename";

const HISTORY = 200;

export type Selection = { nodes: string[]; edges: string[] };

type DocumentState = {
  workflow: Workflow;
  path: string | null;
  format: string;
  notes: string[];
  dirty: boolean;
  selection: Selection;
  /** Counts the documents loaded: each load is another document (another workflow, or a stored run's). */
  loaded: number;
  /** The field being typed in, when the last edit was typed there: the next keystroke there joins that undo step. */
  typing: string | null;
  past: Workflow[];
  future: Workflow[];
  clipboard: { nodes: Node[]; edges: Edge[] } | null;
  load: (workflow: Workflow, path: string | null, format?: string, notes?: string[]) => void;
  /**
   * One undoable edit. `typing` names the field it was typed in: edits typed in the same field one after another,
   * with no other edit between, are one undo step.
   */
  edit: (change: (w: Workflow) => Workflow, typing?: string) => void;
  /** The person left the field they typed in (or entered one): what they type next is a new undo step. */
  endTyping: () => void;
  /** A change merged into the last history entry (drag frames after the first). */
  editQuietly: (change: (w: Workflow) => Workflow) => void;
  undo: () => void;
  redo: () => void;
  select: (selection: Selection) => void;
  /** Selects an edge (its label chip was clicked); `additive` adds it to the selection. */
  selectEdge: (id: string, additive: boolean) => void;
  markSaved: (path: string) => void;
  /** Adds a node (connected from `from`'s handle when given), selects it, and returns its id: one undo step. */
  addNode: (type: NodeType, position: { x: number; y: number }, from?: { node: string; handle: string }) => string;
  updateNode: (id: string, patch: Partial<Node>, typing?: string) => void;
  updateEdge: (key: string, patch: Partial<Edge>, typing?: string) => void;
  connect: (edge: Edge) => void;
  /** Removes the selected nodes with their edges and the selected edges, as one undo step; says what it refused. */
  deleteSelection: () => string | null;
  copySelection: () => void;
  paste: (offset?: number) => void;
  duplicateSelection: () => void;
};

/** A new workflow: one node where its runs begin (the catalogue's entry type, `start`), and nothing else. */
export function emptyWorkflow(): Workflow {
  const type = entryType();
  const { id, fields } = newNodeOf(type);
  return { switchyard: 1, name: "Untitled workflow", nodes: [{ id, type, ...fields, position: { x: 0, y: 0 } } as Node], edges: [] };
}

/** The key an edge is known by on the canvas: its id, or from->to plus handle. */
export const edgeKey = (e: Edge): string => e.id ?? `${e.from}->${e.to}${e.handle && e.handle !== "output" ? `:${e.handle}` : ""}`;

/**
 * `w` without the nodes `nodeIds` (and every edge to or from them) and without the edges `edgeKeys`, in one pass over
 * each list (a selection of hundreds in a 5,000-node document stays instant).
 */
export function withoutItems(w: Workflow, nodeIds: Iterable<string>, edgeKeys: Iterable<string>): Workflow {
  const nodes = new Set(nodeIds);
  const edges = new Set(edgeKeys);
  return {
    ...w,
    nodes: nodes.size ? w.nodes.filter((n) => !nodes.has(n.id)) : w.nodes,
    edges: w.edges.filter((e) => !nodes.has(e.from) && !nodes.has(e.to) && !edges.has(edgeKey(e))),
  };
}

const idSets = new WeakMap<Node[], Set<string>>();
const keySets = new WeakMap<Edge[], Set<string>>();
/** The ids of `nodes`, worked out once per list (documents are never changed in place). */
export function nodeIds(nodes: Node[]): Set<string> {
  let ids = idSets.get(nodes);
  if (!ids) idSets.set(nodes, (ids = new Set(nodes.map((n) => n.id))));
  return ids;
}
/** The keys of `edges` (`edgeKey`), worked out once per list. */
export function edgeKeys(edges: Edge[]): Set<string> {
  let keys = keySets.get(edges);
  if (!keys) keySets.set(edges, (keys = new Set(edges.map(edgeKey))));
  return keys;
}

export function uniqueId(workflow: Workflow, base: string): string {
  const taken = new Set(workflow.nodes.map((n) => n.id));
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

/** The draft of a field that commits only when finished (a node's id), and how to commit it. */
let held: (() => void) | null = null;

/**
 * A field holds a draft it cannot put into the document as it is typed (`commit`), or holds none any more (null).
 * Every change of the document or the selection commits the draft first, so nothing a gesture elsewhere does (a
 * click in the palette, a selection) can leave it behind.
 */
export function holdDraft(commit: (() => void) | null): void {
  held = commit;
}

/** Commits the held draft, if any: before another change, and before a command reads the document. */
export function commitHeld(): void {
  const commit = held;
  held = null;
  commit?.();
}

/** Whether a patch changes nothing in `target`. */
const changesNothing = <T extends object>(target: T, patch: Partial<T>) => Object.entries(patch).every(([k, v]) => (target as Record<string, unknown>)[k] === v);

export const useDocument = create<DocumentState>((set, get) => ({
  workflow: emptyWorkflow(),
  path: null,
  format: "switchyard",
  notes: [],
  dirty: false,
  selection: { nodes: [], edges: [] },
  loaded: 0,
  typing: null,
  past: [],
  future: [],
  clipboard: null,
  load: (workflow, path, format = "switchyard", notes = []) => {
    held = null; // the document it belonged to is gone
    set((s) => ({ workflow, path, format, notes, dirty: false, past: [], future: [], typing: null, loaded: s.loaded + 1, selection: { nodes: [], edges: [] } }));
  },
  edit: (change, typing) => {
    commitHeld();
    set((s) => {
      const next = change(s.workflow);
      if (next === s.workflow) return s;
      // Typed on in the same field: the keystroke joins the undo step the field's first keystroke made.
      if (typing && s.typing === typing) return { workflow: next, future: [], dirty: true };
      return { workflow: next, past: [...s.past.slice(-HISTORY + 1), s.workflow], future: [], dirty: true, typing: typing ?? null };
    });
  },
  endTyping: () => {
    if (get().typing !== null) set({ typing: null });
  },
  editQuietly: (change) => {
    commitHeld();
    set((s) => ({ workflow: change(s.workflow), dirty: true, typing: null }));
  },
  undo: () => {
    commitHeld();
    set((s) => {
      const previous = s.past[s.past.length - 1];
      if (!previous) return s;
      return { workflow: previous, past: s.past.slice(0, -1), future: [s.workflow, ...s.future], dirty: true, typing: null };
    });
  },
  redo: () => {
    commitHeld();
    set((s) => {
      const [next, ...rest] = s.future;
      if (!next) return s;
      return { workflow: next, past: [...s.past, s.workflow], future: rest, dirty: true, typing: null };
    });
  },
  select: (selection) => {
    commitHeld();
    set({ selection });
  },
  selectEdge: (id, additive) => {
    commitHeld();
    set((s) => ({ selection: additive ? { ...s.selection, edges: [...new Set([...s.selection.edges, id])] } : { nodes: [], edges: [id] } }));
  },
  markSaved: (path) => set({ path, dirty: false }),
  addNode: (type, position, from) => {
    commitHeld();
    // The catalogue says what a new node of the type is called and starts with (an if node: one condition).
    const fresh = newNodeOf(type);
    const id = uniqueId(get().workflow, fresh.id);
    const node = { ...fresh.fields, id, type, position } as Node;
    const edge = from ? ({ from: from.node, to: id, ...(from.handle !== "output" ? { handle: from.handle } : {}) } as Edge) : null;
    get().edit((w) => ({ ...w, nodes: [...w.nodes, node], edges: edge ? [...w.edges, edge] : w.edges }));
    set({ selection: { nodes: [id], edges: [] } });
    return id;
  },
  updateNode: (id, patch, typing) => {
    commitHeld();
    const current = get().workflow.nodes.find((n) => n.id === id);
    if (!current || changesNothing(current, patch)) return;
    const renamed = patch.id !== undefined && patch.id !== id ? patch.id : null;
    // A renamed node stays selected under its new id.
    if (renamed) set((s) => ({ selection: { ...s.selection, nodes: s.selection.nodes.map((n) => (n === id ? renamed : n)) } }));
    get().edit((w) => {
      const patched = { ...w, nodes: w.nodes.map((n) => (n.id === id ? { ...n, ...patch, id } : n)) };
      // A new id carries the node's edges and every template or expression that read the old one.
      return renamed ? renameNode(patched, id, renamed) : patched;
    }, typing);
  },
  updateEdge: (key, patch, typing) => {
    commitHeld();
    const current = get().workflow.edges.find((e) => edgeKey(e) === key);
    if (!current || changesNothing(current, patch)) return;
    get().edit((w) => ({ ...w, edges: w.edges.map((e) => (edgeKey(e) === key ? { ...e, ...patch } : e)) }), typing);
  },
  connect: (edge) => get().edit((w) => ({ ...w, edges: [...w.edges, edge] })),
  deleteSelection: () => {
    commitHeld();
    const { selection, workflow } = get();
    const starts = workflow.nodes.filter((n) => isEntry(n.type)).map((n) => n.id);
    // The last start node stays: a workflow without one cannot run, and a person rarely means to remove it.
    const keep = starts.every((id) => selection.nodes.includes(id)) ? new Set(starts) : new Set<string>();
    const nodes = selection.nodes.filter((id) => !keep.has(id));
    const edges = selection.edges;
    const refused = keep.size && selection.nodes.some((id) => keep.has(id)) ? "the start node stays: a workflow needs one" : null;
    if (!nodes.length && !edges.length) return refused;
    get().edit((w) => withoutItems(w, nodes, edges));
    set({ selection: { nodes: [...keep].filter((id) => selection.nodes.includes(id)), edges: [] } });
    return refused;
  },
  copySelection: () => {
    const { workflow, selection } = get();
    const nodes = workflow.nodes.filter((n) => selection.nodes.includes(n.id) && !isEntry(n.type));
    const ids = new Set(nodes.map((n) => n.id));
    set({ clipboard: { nodes, edges: workflow.edges.filter((e) => ids.has(e.from) && ids.has(e.to)) } });
  },
  paste: (offset = 40) => {
    commitHeld();
    const clip = get().clipboard;
    if (!clip || !clip.nodes.length) return;
    const renames = new Map<string, string>();
    let draft = get().workflow;
    // The copies go down and right of the originals, far enough to cover no node.
    const taken = draft.nodes.map((n) => ({ x: n.position?.x ?? 0, y: n.position?.y ?? 0 }));
    const clear = (d: number) => clip.nodes.every((n) => taken.every((t) => Math.abs(t.x - (n.position?.x ?? 0) - d) >= 200 || Math.abs(t.y - (n.position?.y ?? 0) - d) >= 70));
    let shift = offset;
    for (let i = 0; i < 40 && !clear(shift); i++) shift += offset;
    const nodes = clip.nodes.map((n) => {
      const id = uniqueId({ ...draft, nodes: [...draft.nodes, ...[...renames.values()].map((v) => ({ id: v }) as Node)] }, n.id);
      renames.set(n.id, id);
      return { ...n, id, position: { x: (n.position?.x ?? 0) + shift, y: (n.position?.y ?? 0) + shift } };
    });
    const edges = clip.edges.map((e) => ({ ...e, id: undefined, from: renames.get(e.from)!, to: renames.get(e.to)! }));
    draft = { ...draft, nodes: [...draft.nodes, ...nodes], edges: [...draft.edges, ...edges] };
    get().edit(() => draft);
    set({ selection: { nodes: nodes.map((n) => n.id), edges: [] } });
  },
  duplicateSelection: () => {
    get().copySelection();
    get().paste(30);
  },
}));

/** A node's name for people: its name, else its id. */
export const nodeName = (id: string): string => useDocument.getState().workflow.nodes.find((n) => n.id === id)?.name || id;
