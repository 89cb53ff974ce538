// The React Flow canvas: the document's nodes and edges as a controlled graph. Positions, selection and removals
// flow back into the document store; run state is read by each node and edge on its own.
import { useCallback, useMemo, useRef, useState } from "react";
import {
  Background,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  type Connection,
  type Edge as FlowEdge,
  type EdgeChange,
  type Node as FlowNode,
  type NodeChange,
  type OnSelectionChangeParams,
} from "@xyflow/react";
import type { Edge, Node as DocumentNode } from "../types";
import { connectionProblem, edgeHandle, handleLayout, NODE_WIDTH } from "../model/handles";
import { edgeKey, useDocument } from "../store/document";
import { useRun } from "../store/run";
import { useValidation } from "../store/validation";
import { WorkflowNode, type CanvasNodeData } from "./WorkflowNode";

const nodeTypes = { workflow: WorkflowNode };

export function edgeLabel(e: Edge): string {
  const parts: string[] = [];
  const handle = edgeHandle(e);
  if (handle !== "output") parts.push(handle);
  if (e.when) parts.push(`when: ${e.when.length > 40 ? `${e.when.slice(0, 40)}…` : e.when}`);
  if (e.if) parts.push(`if ${e.if}`);
  if (e.max_iterations != null) parts.push(`≤${e.max_iterations}×`);
  return parts.join(" · ");
}

/**
 * Large workflows open at readable zoom around their first nodes (only what is on screen is rendered, so they open
 * and pan fast); the Fit button still shows everything.
 */
export const OPEN_FIT_LIMIT = 300;
export function openFitOptions(nodeIds: string[]) {
  return nodeIds.length > OPEN_FIT_LIMIT ? { padding: 0.2, nodes: nodeIds.slice(0, 12).map((id) => ({ id })), minZoom: 0.8 } : { padding: 0.2 };
}

export function Canvas({ onProblem, colorMode }: { onProblem: (message: string | null) => void; colorMode: "light" | "dark" }) {
  const workflow = useDocument((s) => s.workflow);
  const selection = useDocument((s) => s.selection);
  const followed = useRun((s) => s.followed);
  const byEdge = useValidation((s) => s.byEdge);
  const [dragging, setDragging] = useState(false);

  // Canvas nodes keep their identity while their document node is unchanged, so an edit re-adopts one node, not
  // all; each carries its last measured size (an estimate before the first measurement), so nodes off screen are
  // never mounted just to be measured.
  const measured = useRef(new Map<string, { width: number; height: number }>());
  const cache = useRef(new WeakMap<DocumentNode, FlowNode<CanvasNodeData>>());
  const nodes: FlowNode<CanvasNodeData>[] = useMemo(() => {
    const selected = new Set(selection.nodes);
    return workflow.nodes.map((n) => {
      const hit = cache.current.get(n);
      if (hit && hit.selected === selected.has(n.id)) return hit;
      const size = measured.current.get(n.id) ?? { width: NODE_WIDTH, height: 64 };
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
  }, [workflow.nodes, selection.nodes]);

  const edges: FlowEdge[] = useMemo(
    () =>
      workflow.edges.map((e) => {
        const key = edgeKey(e);
        const handle = edgeHandle(e);
        const lit = followed[`${e.from}->${e.to}`];
        const problem = byEdge[key] ?? byEdge[`${e.from}->${e.to}`];
        return {
          id: key,
          source: e.from,
          target: e.to,
          sourceHandle: handle === "true" ? "condition-0" : handle,
          targetHandle: "input",
          label: edgeLabel(e) || undefined,
          selected: selection.edges.includes(key),
          animated: Boolean(lit) && useRun.getState().status === "running",
          className: [handle === "subagent" ? "edge-subagent" : "", handle === "error" ? "edge-error" : "", lit ? "edge-followed" : "", problem ? "edge-problem" : ""].join(" "),
          markerEnd: handle === "subagent" ? undefined : { type: MarkerType.ArrowClosed },
        };
      }),
    [workflow.edges, selection.edges, followed, byEdge],
  );

  const onNodesChange = useCallback(
    (changes: NodeChange[]) => {
      for (const c of changes) if (c.type === "dimensions" && c.dimensions) measured.current.set(c.id, c.dimensions);
      const doc = useDocument.getState();
      const moves = changes.filter((c) => c.type === "position" && c.position) as Extract<NodeChange, { type: "position" }>[];
      if (moves.length) {
        const at = new Map(moves.map((m) => [m.id, m.position!]));
        const apply = (w: typeof doc.workflow) => ({ ...w, nodes: w.nodes.map((n) => (at.has(n.id) ? { ...n, position: { x: Math.round(at.get(n.id)!.x), y: Math.round(at.get(n.id)!.y) } } : n)) });
        // The first frame of a drag is one undo step; the frames after it fold into it.
        if (dragging) doc.editQuietly(apply);
        else {
          setDragging(true);
          doc.edit(apply);
        }
      }
      if (changes.some((c) => c.type === "position" && c.dragging === false)) setDragging(false);
      const removed = changes.filter((c) => c.type === "remove").map((c) => (c as { id: string }).id);
      if (removed.length) {
        doc.select({ nodes: removed.filter((id) => id !== "start" || doc.workflow.nodes.filter((n) => n.type === "start").length > 1), edges: [] });
        doc.deleteSelection();
      }
    },
    [dragging],
  );

  const onEdgesChange = useCallback((changes: EdgeChange[]) => {
    const removed = changes.filter((c) => c.type === "remove").map((c) => c.id);
    if (removed.length) {
      const doc = useDocument.getState();
      doc.select({ nodes: [], edges: removed });
      doc.deleteSelection();
    }
  }, []);

  const isValidConnection = useCallback(
    (c: Connection | FlowEdge) => {
      const w = useDocument.getState().workflow;
      const problem = connectionProblem(w.nodes, w.edges, c.source, c.sourceHandle ?? "output", c.target);
      onProblem(problem);
      return problem === null;
    },
    [onProblem],
  );

  const onConnect = useCallback(
    (c: Connection) => {
      const w = useDocument.getState().workflow;
      const handle = c.sourceHandle ?? "output";
      const problem = connectionProblem(w.nodes, w.edges, c.source, handle, c.target);
      if (problem) {
        onProblem(problem);
        return;
      }
      onProblem(null);
      const edge: Edge = { from: c.source, to: c.target } as Edge;
      if (handle !== "output") edge.handle = handle;
      if (c.source === c.target) edge.max_iterations = 3;
      useDocument.getState().connect(edge);
    },
    [onProblem],
  );

  const onSelectionChange = useCallback(({ nodes, edges }: OnSelectionChangeParams) => {
    const doc = useDocument.getState();
    const next = { nodes: nodes.map((n) => n.id), edges: edges.map((e) => e.id) };
    const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
    if (!same(next.nodes, doc.selection.nodes) || !same(next.edges, doc.selection.edges)) doc.select(next);
  }, []);

  return (
    <ReactFlow
      nodes={nodes}
      edges={edges}
      nodeTypes={nodeTypes}
      onNodesChange={onNodesChange}
      onEdgesChange={onEdgesChange}
      onConnect={onConnect}
      onConnectEnd={() => setTimeout(() => onProblem(null), 2500)}
      isValidConnection={isValidConnection}
      onSelectionChange={onSelectionChange}
      deleteKeyCode={["Delete", "Backspace"]}
      selectionKeyCode="Shift"
      multiSelectionKeyCode={["Meta", "Control"]}
      colorMode={colorMode}
      onlyRenderVisibleElements
      minZoom={0.05}
      proOptions={{ hideAttribution: true }}
    >
      <Background gap={24} />
      <MiniMap pannable zoomable nodeStrokeWidth={3} />
      <Controls />
    </ReactFlow>
  );
}
