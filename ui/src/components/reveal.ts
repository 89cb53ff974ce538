// Keeping a node whole in view after the window's panes move: a node added from the palette or a dropped connection
// is selected, the inspector opens for it and narrows the canvas, and the node must not end up under it.
import type { ReactFlowInstance } from "@xyflow/react";

/** Margin kept between a revealed node and the canvas's edge, in screen pixels. */
const MARGIN = 24;

/** Pans (never zooms) so that node `id` lies wholly inside the canvas as it is laid out now. */
export function revealNow(flow: Pick<ReactFlowInstance, "getViewport" | "setViewport">, id: string): void {
  const pane = document.querySelector(".react-flow")?.getBoundingClientRect();
  const card = document.querySelector(`.react-flow__node[data-id="${CSS.escape(id)}"]`)?.getBoundingClientRect();
  if (!pane || !card || card.width > pane.width - 2 * MARGIN) return;
  const dx = card.left < pane.left + MARGIN ? pane.left + MARGIN - card.left : card.right > pane.right - MARGIN ? pane.right - MARGIN - card.right : 0;
  const dy = card.top < pane.top + MARGIN ? pane.top + MARGIN - card.top : card.bottom > pane.bottom - MARGIN ? pane.bottom - MARGIN - card.bottom : 0;
  if (!dx && !dy) return;
  const v = flow.getViewport();
  void flow.setViewport({ x: v.x + dx, y: v.y + dy, zoom: v.zoom }, { duration: 150 });
}

/** `revealNow` once the panes have settled after a node was added (two frames: the selection opens the inspector). */
export function revealWhenLaidOut(flow: Pick<ReactFlowInstance, "getViewport" | "setViewport">, id: string): void {
  requestAnimationFrame(() => requestAnimationFrame(() => revealNow(flow, id)));
}
