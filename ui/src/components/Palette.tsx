// The node palette. Drag a node type onto the canvas where it should go, or click it to add one in the visible part
// of the canvas; either way the new node covers no other, is selected, and its inspector opens. Dragging uses pointer
// events (not HTML drag and drop), so it behaves the same with a mouse, a pen or a test driver.
import { useState } from "react";
import { useReactFlow } from "@xyflow/react";
import type { NodeType } from "../types";
import { NODE_HEIGHT, NODE_WIDTH } from "../model/handles";
import { useNodeTypes } from "../model/nodeTypes";
import { freeSpot } from "../model/placement";
import { useDocument } from "../store/document";
import { NodeIcon } from "./NodeIcon";
import { revealWhenLaidOut } from "./reveal";

const DRAG_THRESHOLD = 5;

export function Palette() {
  const flow = useReactFlow();
  const types = useNodeTypes((s) => s.list);
  const [ghost, setGhost] = useState<{ type: NodeType; x: number; y: number } | null>(null);

  /** The visible canvas, in flow coordinates. */
  const visible = () => {
    const box = document.querySelector(".canvas-inner")?.getBoundingClientRect();
    if (!box) return null;
    const a = flow.screenToFlowPosition({ x: box.left, y: box.top });
    const b = flow.screenToFlowPosition({ x: box.right, y: box.bottom });
    return { x: a.x, y: a.y, width: b.x - a.x, height: b.y - a.y };
  };

  /** Adds a node in the visible canvas, clear of the others; when the view has no room left, the view follows it. */
  const addVisible = (type: NodeType) => {
    const view = visible();
    const nodes = useDocument.getState().workflow.nodes;
    const centre = view ? { x: view.x + view.width / 2 - NODE_WIDTH / 2, y: view.y + view.height / 2 - NODE_HEIGHT / 2 } : { x: 0, y: 0 };
    const inView = view ? freeSpot(nodes, centre, view, undefined, true) : null;
    const at = inView ?? freeSpot(nodes, centre);
    const id = useDocument.getState().addNode(type, at);
    if (!inView) flow.setCenter(at.x + NODE_WIDTH / 2, at.y + NODE_HEIGHT / 2, { zoom: flow.getZoom(), duration: 200 });
    // The inspector opens for the new node and narrows the canvas: the node stays whole in view.
    revealWhenLaidOut(flow, id);
  };

  const dropAt = (type: NodeType, clientX: number, clientY: number) => {
    const under = document.elementFromPoint(clientX, clientY);
    if (!under?.closest(".react-flow")) return;
    const at = flow.screenToFlowPosition({ x: clientX, y: clientY });
    const desired = { x: at.x - NODE_WIDTH / 2, y: at.y - NODE_HEIGHT / 2 };
    const id = useDocument.getState().addNode(type, freeSpot(useDocument.getState().workflow.nodes, desired));
    revealWhenLaidOut(flow, id);
  };

  // The press is followed on the window, so the drag goes on wherever the pointer is (over the canvas, or a panel).
  const onPointerDown = (type: NodeType) => (e: React.PointerEvent<HTMLButtonElement>) => {
    if (e.button !== 0) return;
    e.preventDefault(); // no text selection or native drag while the node is carried
    const press = { x: e.clientX, y: e.clientY, dragged: false };
    const move = (m: PointerEvent) => {
      if (!press.dragged && Math.hypot(m.clientX - press.x, m.clientY - press.y) < DRAG_THRESHOLD) return;
      press.dragged = true;
      setGhost({ type, x: m.clientX, y: m.clientY });
    };
    const stop = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      window.removeEventListener("pointercancel", cancel);
      setGhost(null);
    };
    const up = (u: PointerEvent) => {
      stop();
      if (press.dragged) dropAt(type, u.clientX, u.clientY);
      else addVisible(type);
    };
    const cancel = () => stop();
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
    window.addEventListener("pointercancel", cancel);
  };

  const spec = ghost ? types.find((t) => t.type === ghost.type) : undefined;
  return (
    <aside className="palette">
      <h2>Add</h2>
      {types.map((t) => (
        <button
          key={t.type}
          data-testid={`add-${t.type}`}
          title={`${t.description} Click to add, or drag onto the canvas.`}
          onPointerDown={onPointerDown(t.type)}
          onKeyDown={(e) => (e.key === "Enter" || e.key === " ") && (e.preventDefault(), addVisible(t.type))}
        >
          <NodeIcon type={t.type} size={18} />
          <span className="palette-label">{t.label}</span>
        </button>
      ))}
      {ghost && spec && (
        <div className="palette-ghost" style={{ left: ghost.x - NODE_WIDTH / 2, top: ghost.y - 20 }} aria-hidden>
          <NodeIcon type={spec.type} size={15} /> {spec.label}
        </div>
      )}
    </aside>
  );
}
