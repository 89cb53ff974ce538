// Keeping a node whole in view after the window's panes move: a node added from the palette or a dropped connection
// is selected, the inspector opens for it and narrows the canvas, and the node must not end up under it.
import type { ReactFlowInstance } from "@xyflow/react";
import { NODE_HEIGHT, NODE_WIDTH } from "../model/handles";

/** Margin kept between a revealed node and the canvas's edge, in screen pixels. */
const MARGIN = 24;

type Box = { left: number; top: number; right: number; bottom: number; width: number };
type Flow = Pick<ReactFlowInstance, "getViewport" | "setViewport"> & Partial<Pick<ReactFlowInstance, "getNode">>;

/**
 * Where node `id` is on screen. From React Flow's own record of it, so a node that the canvas does not draw (it lies
 * wholly outside the canvas, under the inspector that just opened, and only what is visible is mounted) is found too;
 * else from its card.
 */
function cardBox(flow: Flow, id: string, pane: DOMRect): Box | null {
  const node = flow.getNode?.(id);
  if (node) {
    const { x, y, zoom } = flow.getViewport();
    const left = pane.left + x + node.position.x * zoom;
    const top = pane.top + y + node.position.y * zoom;
    const width = (node.measured?.width ?? node.width ?? NODE_WIDTH) * zoom;
    const height = (node.measured?.height ?? node.height ?? NODE_HEIGHT) * zoom;
    return { left, top, right: left + width, bottom: top + height, width };
  }
  return document.querySelector(`.react-flow__node[data-id="${CSS.escape(id)}"]`)?.getBoundingClientRect() ?? null;
}

/** Pans (never zooms) so that node `id` lies wholly inside the canvas as it is laid out now. */
export function revealNow(flow: Flow, id: string): void {
  const pane = document.querySelector(".react-flow")?.getBoundingClientRect();
  const card = pane && cardBox(flow, id, pane);
  if (!pane || !card || card.width > pane.width - 2 * MARGIN) return;
  const dx = card.left < pane.left + MARGIN ? pane.left + MARGIN - card.left : card.right > pane.right - MARGIN ? pane.right - MARGIN - card.right : 0;
  const dy = card.top < pane.top + MARGIN ? pane.top + MARGIN - card.top : card.bottom > pane.bottom - MARGIN ? pane.bottom - MARGIN - card.bottom : 0;
  if (!dx && !dy) return;
  const v = flow.getViewport();
  void flow.setViewport({ x: v.x + dx, y: v.y + dy, zoom: v.zoom }, { duration: 150 });
}

/** `revealNow` once the panes have settled after a node was added (two frames: the selection opens the inspector). */
export function revealWhenLaidOut(flow: Flow, id: string): void {
  requestAnimationFrame(() => requestAnimationFrame(() => revealNow(flow, id)));
}
