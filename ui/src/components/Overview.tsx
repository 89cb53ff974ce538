// Zoomed far out over a large workflow the canvas shows an overview: every node and edge drawn on one <canvas>,
// and React Flow is given no nodes at all. Mounting thousands of node components (and their edges) at once is what
// froze the window for seconds on Fit at 5,000 nodes in WebKitGTK; at that zoom a card is a few pixels wide and
// nobody reads it. The overview follows the viewport, the selection, validation errors and run state of each node;
// a click selects the node under the pointer (the canvas handles it), a double-click zooms in.
import { useLayoutEffect, useRef } from "react";
import { useStore } from "@xyflow/react";
import type { Node, Workflow } from "../types";
import { minNodeHeight, NODE_WIDTH } from "../model/handles";
import type { Selection } from "../store/document";
import { useRun } from "../store/run";
import { useValidation } from "../store/validation";

/**
 * The overview takes over (in a workflow of at least `OVERVIEW_LEAVE` nodes) when this many nodes would be on screen,
 * or below `OVERVIEW_ZOOM`, where a card is a blob of a few pixels even drawn simply; it hands back below
 * `OVERVIEW_LEAVE` nodes and above `OVERVIEW_ZOOM_LEAVE`.
 */
export const OVERVIEW_ENTER = 300;
export const OVERVIEW_LEAVE = 200;
export const OVERVIEW_ZOOM = 0.15;
export const OVERVIEW_ZOOM_LEAVE = 0.18;

type Viewport = { x: number; y: number; zoom: number };
type Sizes = (id: string) => { width: number; height: number } | undefined;

/** Every node's card as flat arrays (flow coordinates), built once per document change. */
export type Boxes = { nodes: Node[]; x: Float64Array; y: Float64Array; w: Float64Array; h: Float64Array; index: Map<string, number> };

/** A node's least height, once per node object (documents are immutable: an edit makes new node objects). */
const leastHeights = new WeakMap<Node, number>();
function leastHeight(node: Node): number {
  let h = leastHeights.get(node);
  if (h === undefined) leastHeights.set(node, (h = minNodeHeight(node)));
  return h;
}

export function nodeBoxes(nodes: Node[], sizes?: Sizes): Boxes {
  const n = nodes.length;
  const b: Boxes = { nodes, x: new Float64Array(n), y: new Float64Array(n), w: new Float64Array(n), h: new Float64Array(n), index: new Map() };
  nodes.forEach((node, i) => {
    const s = sizes?.(node.id);
    b.x[i] = node.position?.x ?? 0;
    b.y[i] = node.position?.y ?? 0;
    b.w[i] = s?.width ?? NODE_WIDTH;
    b.h[i] = s?.height ?? leastHeight(node);
    b.index.set(node.id, i);
  });
  return b;
}

/** How many cards a viewport of `width` × `height` screen pixels shows (partly), counting no further than `limit`. */
export function countVisible(b: Boxes, vp: Viewport, width: number, height: number, limit = Infinity): number {
  const x0 = -vp.x / vp.zoom;
  const y0 = -vp.y / vp.zoom;
  const x1 = x0 + width / vp.zoom;
  const y1 = y0 + height / vp.zoom;
  let count = 0;
  for (let i = 0; i < b.x.length; i++) {
    if (b.x[i] < x1 && b.x[i] + b.w[i] > x0 && b.y[i] < y1 && b.y[i] + b.h[i] > y0 && ++count >= limit) break;
  }
  return count;
}

/** Whether a viewport is crowded enough for the overview; `now` is whether it is shown (hysteresis). */
export function wantsOverview(b: Boxes, vp: Viewport, width: number, height: number, now: boolean): boolean {
  if (!width || !height || b.x.length < OVERVIEW_LEAVE) return false;
  if (vp.zoom < (now ? OVERVIEW_ZOOM_LEAVE : OVERVIEW_ZOOM)) return true;
  const limit = now ? OVERVIEW_LEAVE : OVERVIEW_ENTER;
  return countVisible(b, vp, width, height, limit) >= limit;
}

/** The bounds of every card, or null for none. */
export function boxesBounds(b: Boxes): { x: number; y: number; width: number; height: number } | null {
  if (!b.x.length) return null;
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (let i = 0; i < b.x.length; i++) {
    x0 = Math.min(x0, b.x[i]);
    y0 = Math.min(y0, b.y[i]);
    x1 = Math.max(x1, b.x[i] + b.w[i]);
    y1 = Math.max(y1, b.y[i] + b.h[i]);
  }
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/** The id of the topmost card under a flow point (the last drawn wins, as on the canvas), or null. */
export function nodeAt(b: Boxes, p: { x: number; y: number }): string | null {
  for (let i = b.x.length - 1; i >= 0; i--) if (p.x >= b.x[i] && p.x <= b.x[i] + b.w[i] && p.y >= b.y[i] && p.y <= b.y[i] + b.h[i]) return b.nodes[i].id;
  return null;
}

const RUN_COLOURS: Record<string, string> = { running: "--run", succeeded: "--ok", failed: "--bad", waiting: "--wait", skipped: "--skip" };

export function Overview({ boxes, workflow, selection }: { boxes: Boxes; workflow: Workflow; selection: Selection }) {
  const ref = useRef<HTMLCanvasElement>(null);
  const transform = useStore((s) => s.transform);
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  const byNode = useValidation((s) => s.byNode);
  const runNodes = useRun((s) => s.nodes);

  // Drawn in the commit, before the browser paints: the frame that shows a change shows it drawn.
  useLayoutEffect(() => {
    const canvas = ref.current;
    const ctx = canvas?.getContext("2d");
    if (!canvas || !ctx || !width || !height) return;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(height * dpr);
    }
    const css = getComputedStyle(canvas);
    const colour = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
    const [tx, ty, k] = transform;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(k * dpr, 0, 0, k * dpr, tx * dpr, ty * dpr);
    const x0 = -tx / k;
    const y0 = -ty / k;
    const x1 = x0 + width / k;
    const y1 = y0 + height / k;
    const { x, y, w, h, index } = boxes;

    // Edges: one path, right side of the source card to the left side of the target's.
    ctx.beginPath();
    for (const e of workflow.edges) {
      const a = index.get(e.from);
      const b = index.get(e.to);
      if (a === undefined || b === undefined) continue;
      const sx = x[a] + w[a];
      const sy = y[a] + h[a] / 2;
      const ex = x[b];
      const ey = y[b] + h[b] / 2;
      if (Math.max(sx, ex) < x0 || Math.min(sx, ex) > x1 || Math.max(sy, ey) < y0 || Math.min(sy, ey) > y1) continue;
      ctx.moveTo(sx, sy);
      ctx.lineTo(ex, ey);
    }
    ctx.lineWidth = 1.5 / k;
    ctx.strokeStyle = colour("--muted", "#687083");
    ctx.stroke();

    // Cards, grouped by how they are drawn; only those on screen.
    const selected = new Set(selection.nodes);
    const plain = new Path2D();
    const chosen = new Path2D();
    const errors = new Path2D();
    const byRun = new Map<string, Path2D>();
    let visible = 0;
    for (let i = 0; i < x.length; i++) {
      if (x[i] > x1 || x[i] + w[i] < x0 || y[i] > y1 || y[i] + h[i] < y0) continue;
      visible++;
      const id = boxes.nodes[i].id;
      const path = selected.has(id) ? chosen : plain;
      path.rect(x[i], y[i], w[i], h[i]);
      if (byNode[id]?.some((f) => f.level === "error")) errors.rect(x[i], y[i], w[i], h[i]);
      const status = runNodes[id]?.status;
      const run = status && RUN_COLOURS[status];
      if (run) {
        if (!byRun.has(run)) byRun.set(run, new Path2D());
        byRun.get(run)!.rect(x[i], y[i], w[i], h[i]);
      }
    }
    const line = colour("--line", "#d9dde5");
    const accent = colour("--accent", "#2f6feb");
    ctx.lineWidth = Math.max(1.5, 1 / k);
    ctx.fillStyle = colour("--node", "#ffffff");
    ctx.strokeStyle = line;
    ctx.fill(plain);
    ctx.stroke(plain);
    for (const [name, path] of byRun) {
      ctx.strokeStyle = colour(name, accent);
      ctx.lineWidth = Math.max(3, 2.5 / k);
      ctx.stroke(path);
    }
    ctx.fill(chosen);
    ctx.fillStyle = accent;
    ctx.globalAlpha = 0.3;
    ctx.fill(chosen);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = accent;
    ctx.lineWidth = Math.max(3, 2.5 / k);
    ctx.stroke(chosen);
    ctx.strokeStyle = colour("--bad", "#cf222e");
    ctx.stroke(errors);

    // Names, once they are big enough to read and few enough to draw quickly.
    if (34 * k >= 9 && visible <= 1500) {
      ctx.fillStyle = colour("--fg", "#1d2330");
      ctx.font = "700 34px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      for (let i = 0; i < x.length; i++) {
        if (x[i] > x1 || x[i] + w[i] < x0 || y[i] > y1 || y[i] + h[i] < y0) continue;
        const node = boxes.nodes[i];
        ctx.save();
        ctx.beginPath();
        ctx.rect(x[i], y[i], w[i], h[i]);
        ctx.clip();
        ctx.fillText(node.name || node.id, x[i] + 14, y[i] + h[i] / 2, w[i] - 28);
        ctx.restore();
      }
    }

    // What is drawn, for tests and benchmarks (the DOM has no node elements while the overview is shown).
    let sig = 0;
    for (let i = 0; i < x.length; i++) sig = (sig * 31 + x[i] * 7 + y[i]) % 1_000_000_007;
    canvas.dataset.nodes = String(x.length);
    canvas.dataset.selected = String(boxes.nodes.reduce((n, node) => n + (selected.has(node.id) ? 1 : 0), 0));
    canvas.dataset.sig = String(sig);
  }, [boxes, workflow.edges, selection.nodes, byNode, runNodes, transform, width, height]);

  return <canvas ref={ref} data-testid="overview" className="overview" style={{ position: "absolute", inset: 0, width: "100%", height: "100%", pointerEvents: "none", zIndex: 4 }} aria-hidden />;
}
