// What React Flow is given of a large workflow: the nodes and edges near the view, not all of them. React Flow
// indexes every node and edge it is given whenever its arrays change (an edit, a drag frame, a selection), which at
// 5,000 nodes took hundreds of milliseconds per change even though only the few dozen on screen are drawn.
import type { Edge } from "../types";
import type { Boxes } from "./Overview";

/** From this many nodes on, React Flow is given only what is near the view; below it, everything (as always). */
export const CULL_FROM = 1000;

/** A rectangle in flow coordinates. */
export type Region = { x0: number; y0: number; x1: number; y1: number };

/**
 * The region React Flow is given nodes for, as a key that changes only when the view moves to other cells: the
 * flow is cut into cells the size of the view (at the zoom rounded to a half octave), and the region is the cells
 * under the view and one cell around them. A pan re-renders the canvas once per cell crossed, not once per frame.
 */
export function regionKey(transform: [number, number, number], width: number, height: number): string {
  const [tx, ty, zoom] = transform;
  if (!width || !height || !(zoom > 0)) return "";
  const level = 2 ** (Math.round(Math.log2(zoom) * 2) / 2);
  const cw = width / level;
  const ch = height / level;
  const x0 = -tx / zoom;
  const y0 = -ty / zoom;
  const cx0 = Math.floor(x0 / cw) - 1;
  const cy0 = Math.floor(y0 / ch) - 1;
  const cx1 = Math.floor((x0 + width / zoom) / cw) + 2;
  const cy1 = Math.floor((y0 + height / zoom) / ch) + 2;
  return `${cx0 * cw} ${cy0 * ch} ${cx1 * cw} ${cy1 * ch}`;
}

export function parseRegion(key: string): Region | null {
  if (!key) return null;
  const [x0, y0, x1, y1] = key.split(" ").map(Number);
  return { x0, y0, x1, y1 };
}

const overlaps = (r: Region, x0: number, y0: number, x1: number, y1: number) => x0 < r.x1 && x1 > r.x0 && y0 < r.y1 && y1 > r.y0;

/**
 * The nodes and edges to give React Flow for `region`: every node whose card overlaps it; every edge whose two cards'
 * bounds overlap it (an edge crossing the view between two nodes outside it is still drawn), with both its ends;
 * and every selected node and edge (with its ends), so that React Flow's own handling of the selection — a drag moves
 * every selected node, a click replaces the selection — sees all of it.
 */
export function nearRegion(b: Boxes, edges: Edge[], region: Region, selectedNodes: string[], selectedEdges: Set<string>, keyOf: (e: Edge) => string): { nodes: Set<string>; edges: Set<Edge> } {
  const nodes = new Set<string>(selectedNodes);
  const kept = new Set<Edge>();
  for (let i = 0; i < b.x.length; i++) if (overlaps(region, b.x[i], b.y[i], b.x[i] + b.w[i], b.y[i] + b.h[i])) nodes.add(b.nodes[i].id);
  for (const e of edges) {
    const s = b.index.get(e.from);
    const t = b.index.get(e.to);
    if (s === undefined || t === undefined) continue;
    const x0 = Math.min(b.x[s], b.x[t]);
    const y0 = Math.min(b.y[s], b.y[t]);
    const x1 = Math.max(b.x[s] + b.w[s], b.x[t] + b.w[t]);
    const y1 = Math.max(b.y[s] + b.h[s], b.y[t] + b.h[t]);
    if (overlaps(region, x0, y0, x1, y1) || (selectedEdges.size && selectedEdges.has(keyOf(e)))) {
      kept.add(e);
      nodes.add(e.from);
      nodes.add(e.to);
    }
  }
  return { nodes, edges: kept };
}
