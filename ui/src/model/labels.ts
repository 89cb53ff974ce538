// Edge labels as chips that never overlap: each label's text, and where its chip goes. Placement is pure geometry
// over the edges' paths, so the canvas computes it once for all edges and each edge only draws its chip.
import type { Edge } from "../types";
import { edgeHandle } from "./handles";

/** The words on an edge's chip: its handle (when not the plain output), `when`, `if` and `max_iterations`. */
export function edgeLabel(e: Edge): string {
  const parts: string[] = [];
  const handle = edgeHandle(e);
  if (handle !== "output" && handle !== "subagent") parts.push(handle);
  if (e.when) parts.push(`when: ${e.when.length > 40 ? `${e.when.slice(0, 40)}…` : e.when}`);
  if (e.if) parts.push(`if ${e.if}`);
  if (e.max_iterations != null) parts.push(`≤${e.max_iterations}×`);
  return parts.join(" · ");
}

type Point = { x: number; y: number };
export type LabelItem = { id: string; text: string; points: Point[] };
export type Placed = { x: number; y: number; width: number; height: number };
type Box = { x: number; y: number; width: number; height: number };

/** The size of a chip for `text` (11 px font, 8 px padding each side). */
export const chipSize = (text: string) => ({ width: Math.ceil(text.length * 6.4) + 18, height: 20 });

const MARGIN = 4;
const CELL = 64;

/** The point a fraction `t` of the way along a polyline. */
function along(points: Point[], t: number): Point {
  if (points.length === 1) return points[0];
  const lengths = points.slice(1).map((p, i) => Math.hypot(p.x - points[i].x, p.y - points[i].y));
  let goal = lengths.reduce((a, b) => a + b, 0) * t;
  for (let i = 0; i < lengths.length; i++) {
    if (goal <= lengths[i] || i === lengths.length - 1) {
      const f = lengths[i] ? Math.min(1, goal / lengths[i]) : 0;
      return { x: points[i].x + (points[i + 1].x - points[i].x) * f, y: points[i].y + (points[i + 1].y - points[i].y) * f };
    }
    goal -= lengths[i];
  }
  return points[points.length - 1];
}

/** A grid of placed boxes, so that each overlap test looks at a few neighbours, not every chip. */
class Grid {
  private cells = new Map<string, Box[]>();
  private keys(b: Box): string[] {
    const out: string[] = [];
    for (let x = Math.floor((b.x - MARGIN) / CELL); x <= Math.floor((b.x + b.width + MARGIN) / CELL); x++)
      for (let y = Math.floor((b.y - MARGIN) / CELL); y <= Math.floor((b.y + b.height + MARGIN) / CELL); y++) out.push(`${x},${y}`);
    return out;
  }
  add(b: Box) {
    for (const k of this.keys(b)) {
      const cell = this.cells.get(k);
      if (cell) cell.push(b);
      else this.cells.set(k, [b]);
    }
  }
  hits(b: Box): boolean {
    for (const k of this.keys(b))
      for (const o of this.cells.get(k) ?? [])
        if (b.x < o.x + o.width + MARGIN && o.x < b.x + b.width + MARGIN && b.y < o.y + o.height + MARGIN && o.y < b.y + b.height + MARGIN) return true;
    return false;
  }
}

const SLIDES = [0.5, 0.4, 0.6, 0.3, 0.7, 0.22, 0.78];

/**
 * Places each label's chip (centre x, y and its size) at its path's midpoint; a chip that would overlap one placed
 * before it (or an obstacle, such as a node) slides along its path, then steps sideways, until it overlaps nothing.
 * Deterministic: the same edges give the same places.
 */
export function placeLabels(items: LabelItem[], opts: { obstacles?: Box[] } = {}): Record<string, Placed> {
  const grid = new Grid();
  for (const o of opts.obstacles ?? []) grid.add(o);
  const placed: Record<string, Placed> = {};
  for (const item of items) {
    if (!item.text || !item.points.length) continue;
    const { width, height } = chipSize(item.text);
    const boxAt = (c: Point): Box => ({ x: c.x - width / 2, y: c.y - height / 2, width, height });
    let chosen: Box | null = null;
    for (const t of SLIDES) {
      const b = boxAt(along(item.points, t));
      if (!grid.hits(b)) {
        chosen = b;
        break;
      }
    }
    if (!chosen) {
      const mid = along(item.points, 0.5);
      for (let step = 1; step < 400 && !chosen; step++) {
        const dy = Math.ceil(step / 2) * (height + MARGIN) * (step % 2 ? 1 : -1);
        const b = boxAt({ x: mid.x, y: mid.y + dy });
        if (!grid.hits(b)) chosen = b;
      }
    }
    chosen ??= boxAt(along(item.points, 0.5));
    grid.add(chosen);
    placed[item.id] = { x: chosen.x + width / 2, y: chosen.y + height / 2, width, height };
  }
  return placed;
}
