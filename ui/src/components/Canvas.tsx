// The React Flow canvas: the document's nodes and edges as a controlled graph. Every change React Flow reports is
// applied — positions and selection flow back into the document store — and deletion goes through the document,
// so one Delete is one undo step. Run state is read by each node and edge on its own.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import {
  Background,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  useReactFlow,
  useStore,
  useStoreApi,
  ControlButton,
  type Connection,
  type Edge as FlowEdge,
  type EdgeChange,
  type FinalConnectionState,
  type Node as FlowNode,
  type NodeChange,
  type OnConnectStartParams,
} from "@xyflow/react";
import { Maximize } from "lucide-react";
import type { Edge, Node as DocumentNode } from "../types";
import { canonicalHandle, connectionProblem, edgeHandle, handleLayout, HANDLE_STEP, HANDLE_TOP, minNodeHeight, NODE_WIDTH, sourceHandles } from "../model/handles";
import { edgeLabel, edgeRoute, placeLabels } from "../model/labels";
import { farthestZoom, fitViewport, openingViewport } from "../model/placement";
import { setLayoutView } from "../model/layout";
import { edgeKey, useDocument, type Selection } from "../store/document";
import { useRun } from "../store/run";
import { usePrefs } from "../store/prefs";
import { useView } from "../store/view";
import { useValidation } from "../store/validation";
import * as files from "../store/files";
import { onServer } from "../transport";
import { LOD_ZOOM, LodContext, WorkflowNode, TITLE_PX, type CanvasNodeData } from "./WorkflowNode";
import { edgeTypes } from "./WorkflowEdge";
import { CanvasContextMenu, CanvasMenu, type MenuRequest } from "./CanvasMenu";
import { revealNow } from "./reveal";
import { boxesBounds, nodeAt, nodeBoxes, Overview, wantsOverview } from "./Overview";
import { CULL_FROM, nearRegion, parseRegion, regionKey } from "./culling";

const nodeTypes = { workflow: WorkflowNode };

/**
 * Above this many nodes the minimap is left out: it repaints a rectangle per node on every frame of a pan, which
 * halves the frame rate of a 2,000-node workflow in WebKitGTK (measured by `npm run bench:app`). Fit and Find
 * serve for orientation there.
 */
export const MINIMAP_LIMIT = 400;

/** A node's card on the canvas, in flow coordinates. */
const box = (n: DocumentNode, height: number) => ({ x: n.position?.x ?? 0, y: n.position?.y ?? 0, width: NODE_WIDTH, height });

/** A reason shown next to the pointer (a refused connection), with where. */
type Hint = { text: string; x: number; y: number };

/** The selection after React Flow's `select` changes of one kind (nodes or edges). */
function applySelect(selection: Selection, kind: keyof Selection, changes: { id: string; selected: boolean }[]): Selection {
  if (!changes.length) return selection;
  const ids = new Set(selection[kind]);
  for (const c of changes) {
    if (c.selected) ids.add(c.id);
    else ids.delete(c.id);
  }
  const next = [...ids];
  return next.length === selection[kind].length && next.every((id, i) => id === selection[kind][i]) ? selection : { ...selection, [kind]: next };
}

/** What a canvas edge is made of besides its document edge. */
type EdgeInputs = { source: DocumentNode | undefined; place: { x: number; y: number } | undefined; lit: unknown; problem: unknown; selected: boolean; running: boolean };

const sameInputs = (a: EdgeInputs, b: EdgeInputs) =>
  a.source === b.source && a.place?.x === b.place?.x && a.place?.y === b.place?.y && a.lit === b.lit && a.problem === b.problem && a.selected === b.selected && a.running === b.running;

/** The canvas edge of a document edge. */
export function flowEdge(e: Edge, key: string, { source, place, lit, problem, selected, running }: EdgeInputs): FlowEdge {
  const handle = edgeHandle(e);
  return {
    id: key,
    type: "workflow",
    source: e.from,
    target: e.to,
    sourceHandle: canonicalHandle(source, handle),
    targetHandle: "input",
    label: edgeLabel(e, source) || undefined,
    data: { ...(place && { labelX: place.x, labelY: place.y }), fullLabel: edgeLabel(e, source, { whole: true }) },
    selected,
    animated: Boolean(lit) && running,
    className: [handle === "subagent" ? "edge-subagent" : "", handle === "error" ? "edge-error" : "", lit ? "edge-followed" : "", problem ? "edge-problem" : ""].join(" "),
    markerEnd: handle === "subagent" ? undefined : { type: MarkerType.ArrowClosed },
  };
}

/** Whether two canvas edges show the same thing (what `flowEdge` sets). */
export function sameFlowEdge(a: FlowEdge, b: FlowEdge): boolean {
  const [da, db] = [a.data ?? {}, b.data ?? {}];
  return (
    a.id === b.id &&
    a.source === b.source &&
    a.target === b.target &&
    a.sourceHandle === b.sourceHandle &&
    a.label === b.label &&
    a.selected === b.selected &&
    a.animated === b.animated &&
    a.className === b.className &&
    (a.markerEnd === undefined) === (b.markerEnd === undefined) &&
    da.labelX === db.labelX &&
    da.labelY === db.labelY &&
    da.fullLabel === db.fullLabel
  );
}

export function Canvas() {
  const flow = useReactFlow();
  // Level of detail: below LOD_ZOOM nodes draw as simple shapes. One subscription here, not one per node.
  const lod = useStore((st) => st.transform[2] < LOD_ZOOM);
  const workflow = useDocument((s) => s.workflow);
  const selection = useDocument((s) => s.selection);
  const followed = useRun((s) => s.followed);
  const byEdge = useValidation((s) => s.byEdge);
  const theme = usePrefs((s) => s.theme);
  const view = useView((s) => s.request);
  // The last view asked for that is drawn (an open, a Fit, the fit after Layout): what a test waits for.
  const viewShownNonce = useView((s) => s.shown);
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  const dragging = useRef(false);
  const connecting = useRef<OnConnectStartParams | null>(null);
  const wrapper = useRef<HTMLDivElement>(null);
  const [hint, setHint] = useState<Hint | null>(null);
  const [menu, setMenu] = useState<MenuRequest | null>(null);
  const rightClickAt = useRef(0);
  // Layouts aim to fit the canvas as it is now.
  useEffect(() => setLayoutView({ width, height }), [width, height]);
  // When the canvas narrows or shortens (the inspector opened for a selection, a pane was resized), a single selected
  // node stays whole in view: the view pans just enough, never zooms.
  useEffect(() => {
    const selected = useDocument.getState().selection.nodes;
    if (selected.length === 1 && width > 0 && height > 0) revealNow(flow, selected[0]);
  }, [width, height, flow]);

  // Canvas nodes keep their identity while their document node is unchanged, so an edit re-adopts one node, not
  // all; each carries its last measured size (an estimate before the first measurement), so nodes off screen are
  // never mounted just to be measured.
  const measured = useRef(new Map<string, { width: number; height: number }>());
  const cache = useRef(new WeakMap<DocumentNode, FlowNode<CanvasNodeData>>());
  // Zoomed far out over many nodes, the overview draws them all on one <canvas> and React Flow gets none
  // (components/Overview.tsx). It is decided before React Flow sees a crowded view: a requested view (open, Fit)
  // switches to it before moving there and leaves it after; a document change decides with the current viewport;
  // pans and zooms decide as they go. In the overview the canvas nodes, edges and label places are not
  // computed at all (the overview reads the document).
  const store = useStoreApi();
  const boxes = useMemo(() => nodeBoxes(workflow.nodes, (id) => measured.current.get(id)), [workflow.nodes]);
  // A person zooms out as far as seeing the whole workflow takes (5 % at least), however large it is.
  const minZoom = useMemo(() => farthestZoom(boxesBounds(boxes), { width, height }), [boxes, width, height]);
  const boxesRef = useRef(boxes);
  boxesRef.current = boxes;
  const [overview, setOverview] = useState(false);
  const crowdedNow = useMemo(() => {
    const [x, y, zoom] = store.getState().transform;
    return wantsOverview(boxes, { x, y, zoom }, width, height, overview);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [boxes, width, height]);
  // Left by a pan or zoom: the document's crowding no longer holds it (until the document changes).
  const [released, setReleased] = useState<{ boxes: unknown; nonce: number } | null>(null);
  // Where a view asked for goes: opened at readable zoom, or fitted (computed from the document, as fitView would
  // from React Flow's nodes, which the overview empties): a small workflow never past legible titles, a large one
  // whole however small (model/placement.ts `fitViewport`).
  const viewTarget = (kind: string, b: typeof boxes) => {
    const bounds = boxesBounds(b);
    return kind === "open" || !bounds
      ? openingViewport(b.nodes, { width, height }, { titlePx: TITLE_PX }, (id) => measured.current.get(id))
      : fitViewport(bounds, b.nodes.length, { width, height }, { titlePx: TITLE_PX, maxZoom: 1.25 });
  };
  // A view asked for together with an edit (Layout, then Fit) is decided in the same render, so that React Flow
  // never adopts the edited nodes only to drop them a frame later.
  const handledView = useRef(-1);
  const crowdedView = useMemo(
    () => handledView.current !== view.nonce && width > 0 && height > 0 && wantsOverview(boxes, viewTarget(view.kind, boxes), width, height, false),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [view.nonce, boxes, width, height],
  );
  const showOverview = overview || (crowdedNow && released?.boxes !== boxes) || (crowdedView && released?.nonce !== view.nonce);
  const shown = useRef(showOverview);
  shown.current = showOverview;
  useEffect(() => {
    if (showOverview && !overview) setOverview(true);
  }, [showOverview, overview]);
  const viewNonce = useRef(view.nonce);
  viewNonce.current = view.nonce;
  // The decision is kept in state (a crowded document or view only forces the overview until then).
  const kept = useRef(overview);
  kept.current = overview;
  const decideOverview = useCallback((next: boolean) => {
    // Called on every frame of a pan: sets nothing unless something changes.
    if (next !== kept.current) setOverview((kept.current = next));
    if (!next && shown.current) setReleased({ boxes: boxesRef.current, nonce: viewNonce.current });
  }, []);
  const onMove = useCallback(
    (_: unknown, vp: { x: number; y: number; zoom: number }) => {
      const { width, height } = store.getState();
      decideOverview(wantsOverview(boxesRef.current, vp, width, height, shown.current));
    },
    [store, decideOverview],
  );
  const pendingView = useRef<{ x: number; y: number; zoom: number } | null>(null);
  const NONE = useMemo(() => ({ nodes: [] as FlowNode<CanvasNodeData>[], edges: [] as FlowEdge[] }), []);

  // A large workflow: React Flow is given only the nodes and edges near the view (components/culling.ts), so that
  // an edit, a drag frame or a selection costs what is on screen, not the whole document. The region changes when
  // the view moves on by about its own size; in the overview React Flow is given nothing anyway.
  const large = workflow.nodes.length >= CULL_FROM;
  const regionNow = useStore((s) => (large && !shown.current ? regionKey(s.transform, s.width, s.height) : ""));
  const near = useMemo(() => {
    const region = parseRegion(regionNow);
    if (showOverview || !region) return null;
    return nearRegion(boxes, workflow.edges, region, selection.nodes, new Set(selection.edges), edgeKey);
  }, [boxes, workflow.edges, regionNow, selection.nodes, selection.edges, showOverview]);

  const nodes: FlowNode<CanvasNodeData>[] = useMemo(() => {
    if (showOverview) return NONE.nodes;
    const selected = new Set(selection.nodes);
    return (near ? workflow.nodes.filter((n) => near.nodes.has(n.id)) : workflow.nodes).map((n) => {
      const hit = cache.current.get(n);
      if (hit && hit.selected === selected.has(n.id)) return hit;
      const size = measured.current.get(n.id) ?? { width: NODE_WIDTH, height: minNodeHeight(n) };
      const node: FlowNode<CanvasNodeData> = {
        id: n.id,
        type: "workflow",
        position: { x: n.position?.x ?? 0, y: n.position?.y ?? 0 },
        data: { node: n },
        selected: selected.has(n.id),
        measured: size,
        handles: handleLayout(n, size.height) as FlowNode["handles"],
      };
      cache.current.set(n, node);
      return node;
    });
  }, [workflow.nodes, selection.nodes, showOverview, NONE, near]);

  // Label chips are placed once for all edges, so that no two overlap.
  const labels = useMemo(() => {
    if (showOverview) return {};
    const byId = new Map(workflow.nodes.map((n) => [n.id, n]));
    const items = [];
    for (const e of workflow.edges) {
      const from = byId.get(e.from);
      const text = edgeLabel(e, from);
      const to = byId.get(e.to);
      if (!text || !from || !to) continue;
      const handle = canonicalHandle(from, edgeHandle(e));
      const right = sourceHandles(from).filter((h) => h.kind !== "subagent");
      const index = Math.max(0, right.findIndex((h) => h.id === handle));
      const size = measured.current.get(e.to)?.height ?? minNodeHeight(to);
      const fromSize = measured.current.get(e.from)?.height ?? minNodeHeight(from);
      const source =
        handle === "subagent"
          ? { x: (from.position?.x ?? 0) + NODE_WIDTH / 2, y: (from.position?.y ?? 0) + fromSize }
          : { x: (from.position?.x ?? 0) + NODE_WIDTH, y: (from.position?.y ?? 0) + HANDLE_TOP + index * HANDLE_STEP };
      const target = { x: to.position?.x ?? 0, y: (to.position?.y ?? 0) + size / 2 };
      // Each chip sits on the course its edge is drawn along (a loop back goes around the cards, not through them).
      const points = handle === "subagent" ? [source, target] : edgeRoute(source, target, box(from, fromSize), box(to, size), e.from === e.to).points;
      items.push({ id: edgeKey(e), text, points });
    }
    // With the cards as obstacles, so that no chip covers a node; each chip stays on its own edge.
    if (!items.length) return {};
    return placeLabels(items, { obstacles: workflow.nodes.map((n) => box(n, measured.current.get(n.id)?.height ?? minNodeHeight(n))) });
  }, [workflow.nodes, workflow.edges, showOverview]);

  // Edge objects keep their identity while what they show is unchanged, and the array keeps its identity while every
  // edge does: React Flow rebuilds its connection index (all edges) whenever it is given another array, which took
  // most of every drag frame and every selection change at 5,000 edges.
  const edgeCache = useRef(new WeakMap<Edge, EdgeInputs & { edge: FlowEdge }>());
  const lastEdges = useRef<FlowEdge[]>([]);
  const edges: FlowEdge[] = useMemo(() => {
    if (showOverview) return NONE.edges;
    const byId = new Map(workflow.nodes.map((n) => [n.id, n]));
    const selectedEdges = new Set(selection.edges);
    const running = useRun.getState().status === "running";
    const previous = lastEdges.current;
    const given = near ? workflow.edges.filter((e) => near.edges.has(e)) : workflow.edges;
    let same = given.length === previous.length;
    const next = given.map((e, i) => {
      const key = edgeKey(e);
      const inputs: EdgeInputs = {
        source: byId.get(e.from),
        place: labels[key],
        lit: followed[`${e.from}->${e.to}`],
        problem: byEdge[key] ?? byEdge[`${e.from}->${e.to}`],
        selected: selectedEdges.has(key),
        running,
      };
      const hit = edgeCache.current.get(e);
      let edge: FlowEdge;
      if (hit && sameInputs(hit, inputs)) edge = hit.edge;
      else {
        const fresh = flowEdge(e, key, inputs);
        // A moved source node changes nothing an edge shows: the edge stays the same object.
        edge = hit && sameFlowEdge(hit.edge, fresh) ? hit.edge : fresh;
        edgeCache.current.set(e, { ...inputs, edge });
      }
      if (same && previous[i] !== edge) same = false;
      return edge;
    });
    if (same) return previous;
    lastEdges.current = next;
    return next;
  }, [workflow.edges, workflow.nodes, selection.edges, followed, byEdge, labels, showOverview, NONE, near]);

  const onNodesChange = useCallback((changes: NodeChange[]) => {
    for (const c of changes) if (c.type === "dimensions" && c.dimensions) measured.current.set(c.id, c.dimensions);
    const doc = useDocument.getState();
    const moves = changes.filter((c) => c.type === "position" && c.position) as Extract<NodeChange, { type: "position" }>[];
    if (moves.length) {
      const at = new Map(moves.map((m) => [m.id, m.position!]));
      const apply = (w: typeof doc.workflow) => ({ ...w, nodes: w.nodes.map((n) => (at.has(n.id) ? { ...n, position: { x: Math.round(at.get(n.id)!.x), y: Math.round(at.get(n.id)!.y) } } : n)) });
      // The first frame of a drag is one undo step; the frames after it fold into it.
      if (dragging.current) doc.editQuietly(apply);
      else {
        dragging.current = true;
        doc.edit(apply);
      }
    }
    if (changes.some((c) => c.type === "position" && c.dragging === false)) dragging.current = false;
    const selects = changes.filter((c) => c.type === "select") as { id: string; selected: boolean }[];
    const next = applySelect(doc.selection, "nodes", selects);
    if (next !== doc.selection) doc.select(next);
  }, []);

  const onEdgesChange = useCallback(
    (changes: EdgeChange[]) => {
      const doc = useDocument.getState();
      const next = applySelect(doc.selection, "edges", changes.filter((c) => c.type === "select") as { id: string; selected: boolean }[]);
      if (next !== doc.selection) doc.select(next);
    },
    [],
  );

  // A selection box keeps the edges it encloses, both ends inside it; React Flow also offers edges with one end
  // inside, which a Delete would then remove unseen.
  const onSelectionEnd = useCallback(() => {
    const doc = useDocument.getState();
    const inBox = new Set(doc.selection.nodes);
    const ends = new Map(doc.workflow.edges.map((e) => [edgeKey(e), e]));
    const edges = doc.selection.edges.filter((id) => inBox.has(ends.get(id)?.from ?? "") && inBox.has(ends.get(id)?.to ?? ""));
    if (edges.length !== doc.selection.edges.length) doc.select({ ...doc.selection, edges });
  }, []);

  /** Shows why a connection is refused, next to the pointer, for a few seconds. */
  const showHint = useCallback((text: string, clientX: number, clientY: number) => {
    const box = wrapper.current?.getBoundingClientRect();
    setHint({ text, x: clientX - (box?.left ?? 0), y: clientY - (box?.top ?? 0) });
  }, []);
  useEffect(() => {
    if (!hint) return;
    const t = setTimeout(() => setHint(null), 3500);
    return () => clearTimeout(t);
  }, [hint]);

  const connect = useCallback((source: string, handle: string, target: string): string | null => {
    const w = useDocument.getState().workflow;
    const problem = connectionProblem(w.nodes, w.edges, source, handle, target);
    if (problem) return problem;
    const edge: Edge = { from: source, to: target } as Edge;
    if (handle !== "output") edge.handle = handle;
    if (source === target) edge.max_iterations = 3;
    useDocument.getState().connect(edge);
    return null;
  }, []);

  const onConnect = useCallback((c: Connection) => void connect(c.source, c.sourceHandle ?? "output", c.target), [connect]);

  const isValidConnection = useCallback((c: Connection | FlowEdge) => {
    const w = useDocument.getState().workflow;
    return connectionProblem(w.nodes, w.edges, c.source, c.sourceHandle ?? "output", c.target) === null;
  }, []);

  // A connection released over a node's body connects to its input; released on empty canvas, it opens the node
  // picker there and the chosen node comes connected; released on a handle that refuses it, the reason is shown.
  const onConnectEnd = useCallback(
    (event: MouseEvent | TouchEvent, state: FinalConnectionState) => {
      const start = connecting.current;
      connecting.current = null;
      if (!start?.nodeId || start.handleType !== "source" || state.isValid) return;
      const point = "changedTouches" in event ? event.changedTouches[0] : event;
      const { clientX, clientY } = point;
      const handle = start.handleId ?? "output";
      const under = document.elementFromPoint(clientX, clientY);
      const over = under?.closest<HTMLElement>(".react-flow__node")?.dataset.id ?? state.toNode?.id;
      if (over === start.nodeId && !state.toHandle) return; // released back on its own node: changed their mind
      if (over) {
        const problem = connect(start.nodeId, handle, over);
        if (problem) showHint(`Not connected: ${problem}`, clientX, clientY);
        return;
      }
      if (under?.closest(".react-flow__pane")) setMenu({ kind: "pane", clientX, clientY, from: { node: start.nodeId, handle } });
    },
    [connect, showHint],
  );

  // A viewport asked for (store/view.ts): a newly opened workflow is shown so that titles are readable.
  useEffect(() => {
    if (!width || !height) return;
    const nodes = useDocument.getState().workflow.nodes;
    const sizes = (id: string) => measured.current.get(id);
    handledView.current = view.nonce;
    const b = boxesRef.current.nodes === nodes ? boxesRef.current : nodeBoxes(nodes, sizes);
    const target = viewTarget(view.kind, b);
    if (wantsOverview(b, target, width, height, false) && !shown.current) {
      // Into the overview first (React Flow drops its nodes), then there: see the effect below.
      pendingView.current = target;
      setOverview(true);
      return;
    }
    flow.setViewport(target);
    decideOverview(wantsOverview(b, target, width, height, shown.current));
    useView.getState().viewShown(view.nonce);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [view.nonce, width > 0 && height > 0]);
  useEffect(() => {
    if (!showOverview || !pendingView.current) return;
    flow.setViewport(pendingView.current);
    pendingView.current = null;
    useView.getState().viewShown(useView.getState().request.nonce);
  }, [showOverview, overview, flow]);

  return (
    <LodContext.Provider value={lod}>
    {/* Nodes and edges: Radix ContextMenu. The pane's menu opens anchored where it was asked for, as the picker after
        a dropped connection does (one menu for the pane, whichever way it was asked for). */}
    <CanvasContextMenu request={menu && menu.kind !== "pane" ? menu : null} onClose={() => setMenu(null)}>
    <div className={lod ? "canvas-inner lod" : "canvas-inner"} ref={wrapper} data-view-shown={viewShownNonce}>
      <ReactFlow
        nodes={showOverview ? NONE.nodes : nodes}
        edges={showOverview ? NONE.edges : edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        onConnectStart={(_, params) => (connecting.current = params)}
        onConnectEnd={onConnectEnd}
        isValidConnection={isValidConnection}
        connectionRadius={28}
        onSelectionEnd={onSelectionEnd}
        onPaneClick={(e) => {
          // The release of a right-click can arrive as a click (WebKitGTK under WebDriver does so): it does not close
          // the menu that right-click just opened.
          if (performance.now() - rightClickAt.current < 400) return;
          setMenu(null);
          // In the overview the nodes are drawn, not mounted: a click selects the one under the pointer.
          const hit = showOverview ? nodeAt(boxes, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY })) : null;
          const doc = useDocument.getState();
          if (hit) doc.select(e.shiftKey || e.ctrlKey || e.metaKey ? { ...doc.selection, nodes: [...new Set([...doc.selection.nodes, hit])] } : { nodes: [hit], edges: [] });
          else doc.select({ nodes: [], edges: [] });
        }}
        // A double-click on a `workflow` node opens the child it runs, as its inspector's Open child workflow does.
        onNodeDoubleClick={(_, n) => {
          const node = useDocument.getState().workflow.nodes.find((d) => d.id === n.id);
          if (node?.type === "workflow" && node.workflow && !onServer()) void files.openChild(node.workflow);
        }}
        // Right-clicks say what was clicked; the context menu around the canvas opens at the pointer.
        onNodeContextMenu={(e, n) => {
          const doc = useDocument.getState();
          if (!doc.selection.nodes.includes(n.id)) doc.select({ nodes: [n.id], edges: [] });
          setMenu({ kind: "node", clientX: e.clientX, clientY: e.clientY, id: n.id });
        }}
        onEdgeContextMenu={(e, edge) => {
          const doc = useDocument.getState();
          if (!doc.selection.edges.includes(edge.id)) doc.select({ nodes: [], edges: [edge.id] });
          setMenu({ kind: "edge", clientX: e.clientX, clientY: e.clientY, id: edge.id });
        }}
        onPaneContextMenu={(e) => {
          e.preventDefault();
          e.stopPropagation(); // not the node/edge context menu around the canvas: the pane's own, below
          rightClickAt.current = performance.now();
          setMenu({ kind: "pane", clientX: e.clientX, clientY: e.clientY });
        }}
        onMoveStart={() => setMenu(null)}
        onMove={onMove}
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        multiSelectionKeyCode={["Meta", "Control", "Shift"]}
        selectionMode={"partial" as never}
        colorMode={theme}
        onlyRenderVisibleElements
        minZoom={minZoom}
        maxZoom={2.5}
        proOptions={{ hideAttribution: true }}
      >
        {workflow.nodes.length <= MINIMAP_LIMIT && <Background gap={24} />}
        {workflow.nodes.length <= MINIMAP_LIMIT && <MiniMap pannable zoomable nodeStrokeWidth={3} nodeColor="var(--minimap-node)" nodeStrokeColor="var(--minimap-node-stroke)" maskColor="var(--minimap-mask)" style={{ width: 132, height: 86 }} />}
        {showOverview && <Overview boxes={boxes} workflow={workflow} selection={selection} />}
        {/* Its fit button fits as Shift+1 does (a small workflow never past legible titles). */}
        <Controls showFitView={false}>
          <ControlButton onClick={() => useView.getState().requestView("fit")} title="Fit the workflow in view (Shift+1)" aria-label="fit view" className="react-flow__controls-fitview" data-testid="fit-view">
            <Maximize aria-hidden />
          </ControlButton>
        </Controls>
      </ReactFlow>
      {hint && (
        <div className="hint error" style={{ left: hint.x + 14, top: hint.y + 14 }} data-testid="connect-problem" role="alert">
          {hint.text}
        </div>
      )}
      {menu?.kind === "pane" && <CanvasMenu request={menu} onClose={() => setMenu(null)} />}
    </div>
    </CanvasContextMenu>
    </LodContext.Provider>
  );
}
