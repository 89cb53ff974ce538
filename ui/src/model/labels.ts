// Edge labels as chips that never overlap: each label's text, and where its chip goes. Placement is pure geometry
// over the edges' paths, so the canvas computes it once for all edges and each edge only draws its chip.
import type { Edge, Node } from "../types";
import { canonicalHandle, edgeHandle, sourceHandles } from "./handles";
import { useNodeTypes } from "./nodeTypes";

/** How much of a `when` condition a chip shows: about two lines of a chip (`chipSize`); the hover shows it all. */
const WHEN_CHARS = 40;

/**
 * The words on an edge's chip: its handle (when not the plain output) named as a person calls it, `when`, `if` and
 * `max_iterations`. On the chip a long `when` is shortened; `whole` gives everything, for the chip's hover.
 */
export function edgeLabel(e: Edge, source?: Node, { whole = false } = {}): string {
  const parts: string[] = [];
  const handle = edgeHandle(e);
  if (handle !== "output" && handle !== "subagent") parts.push(handleName(source, handle) ?? handle);
  if (e.when) parts.push(`when: ${!whole && e.when.length > WHEN_CHARS ? `${e.when.slice(0, WHEN_CHARS).trimEnd()}…` : e.when}`);
  if (e.if) parts.push(`if ${e.if}`);
  if (e.max_iterations != null) parts.push(whole ? `at most ${e.max_iterations} times` : `≤${e.max_iterations}×`);
  return parts.join(" · ");
}

/**
 * What a person calls the branch leaving by `handle`: an `if` node's condition-i handle is named by its condition
 * ("cat"), other handles by their label in the node-type catalogue (else, approve, reject, error…); a handle's other
 * name (`true`, `else`) by the handle it stands for. The handle ids stay as the file has them; only what is shown
 * changes. Null for the plain output.
 */
export function handleName(source: Node | undefined, handle: string): string | null {
  if (handle === "output") return null;
  if (source) {
    const id = canonicalHandle(source, handle);
    const h = sourceHandles(source).find((x) => x.id === id);
    if (h) {
      const m = /^condition-(\d+)$/.exec(id);
      const c = m ? source.conditions?.[Number(m[1])] : undefined;
      if (c) return c.value ? c.value : `condition ${m![1]}`; // as the engine names it (node_types::source_handle_label)
      if (h.label) return h.label;
    }
  }
  // Without its node (an edge from a node that is gone), the label a node type gives a handle of that id.
  const anyType = useNodeTypes.getState().list.flatMap((t) => t.handles).find((x) => !x.perCondition && x.id === handle && x.label);
  return anyType?.label ?? handle;
}

export type Point = { x: number; y: number };
export type LabelItem = { id: string; text: string; points: Point[] };
/** A chip: its centre and size. */
export type Placed = { x: number; y: number; width: number; height: number };
/** Something a chip must not cover, by its top-left corner and size (a node card). */
export type Box = { x: number; y: number; width: number; height: number };

/**
 * A chip's text wraps onto a second line past this many characters (styles.css `.edge-chip`: 13 px text, ~7.8 px a
 * character, 8 px padding and a 1 px border each side, at most `CHIP_MAX_WIDTH` wide, two lines at most).
 */
const CHIP_LINE_CHARS = 24;
export const CHIP_MAX_WIDTH = Math.ceil(CHIP_LINE_CHARS * 7.8) + 18;

/** The size of a chip for `text`: one line as wide as its text, or two lines `CHIP_MAX_WIDTH` wide. */
export const chipSize = (text: string) =>
  text.length <= CHIP_LINE_CHARS ? { width: Math.ceil(text.length * 7.8) + 18, height: 22 } : { width: CHIP_MAX_WIDTH, height: 38 };

/** How far a stepped route runs straight out of a handle before it turns, and how far it clears the cards it goes round. */
export const ROUTE_OFFSET = 28;
export const ROUTE_CLEARANCE = 36;

/** How an edge is drawn between a right-hand source handle and a left-hand input: a curve, or steps round. */
export type Route = { kind: "curve" | "back" | "loop"; points: Point[]; /** Where a stepped route's long run lies. */ runY: number };

/**
 * The course of an edge from its source handle to its target's input, as a polyline: what WorkflowEdge draws, and
 * what `placeLabels` should be given as the edge's points so that the chip lands on the line. A forward edge is a
 * curve (drawn as a bezier whose midpoint is its ends' midpoint). An edge that runs right to left, back to an earlier
 * step, goes round in steps: through the gap between the two cards, or below both when they share a row. An edge
 * into its own node steps round over the top of the card (below it hang the agent's subagents). `sourceBox` and
 * `targetBox` are the two cards.
 */
export function edgeRoute(source: Point, target: Point, sourceBox: Box, targetBox: Box, selfLoop = false): Route {
  if (!selfLoop && source.x <= target.x) return { kind: "curve", runY: (source.y + target.y) / 2, points: curvePoints(source, target) };
  const [s, t] = [sourceBox, targetBox];
  const runY = selfLoop
    ? Math.min(s.y, t.y) - ROUTE_CLEARANCE
    : t.y >= s.y + s.height
      ? (s.y + s.height + t.y) / 2
      : s.y >= t.y + t.height
        ? (t.y + t.height + s.y) / 2
        : Math.max(s.y + s.height, t.y + t.height) + ROUTE_CLEARANCE;
  const out = source.x + ROUTE_OFFSET;
  const into = target.x - ROUTE_OFFSET;
  const points = [source, { x: out, y: source.y }, { x: out, y: runY }, { x: into, y: runY }, { x: into, y: target.y }, target];
  return { kind: selfLoop ? "loop" : "back", runY, points };
}

/**
 * The curve React Flow draws from a right-hand handle to a left-hand one (`getBezierPath`: control points half the
 * horizontal distance out of each end), as a polyline of `segments` pieces, so that a chip placed along it sits on
 * the line drawn.
 */
export function curvePoints(source: Point, target: Point, segments = 12): Point[] {
  const dx = target.x - source.x;
  const out = dx >= 0 ? dx / 2 : 0.25 * 25 * Math.sqrt(-dx);
  const [c1, c2] = [{ x: source.x + out, y: source.y }, { x: target.x - out, y: target.y }];
  return Array.from({ length: segments + 1 }, (_, i) => {
    const t = i / segments;
    const [a, b, c, d] = [(1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3];
    return { x: a * source.x + b * c1.x + c * c2.x + d * target.x, y: a * source.y + b * c1.y + c * c2.y + d * target.y };
  });
}

/** The least gap kept between two chips, or a chip and an obstacle. */
const MARGIN = 4;
const CELL = 96;
/** Where along its path a chip is tried, in turn: the middle first, then towards either end (near a handle). */
const SLIDES = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.12, 0.88];
/** How far across its path a chip may shift, as a share of the half of it that lies across the path: still on the line. */
const SHIFTS = [0, 0.6, -0.6];

/** The point a fraction `t` of the way along a polyline, and the polyline's unit direction there. */
function along(points: Point[], t: number): { at: Point; dir: Point } {
  if (points.length === 1) return { at: points[0], dir: { x: 1, y: 0 } };
  const lengths = points.slice(1).map((p, i) => Math.hypot(p.x - points[i].x, p.y - points[i].y));
  let goal = lengths.reduce((a, b) => a + b, 0) * t;
  for (let i = 0; i < lengths.length; i++) {
    if (goal <= lengths[i] || i === lengths.length - 1) {
      const [a, b] = [points[i], points[i + 1]];
      const f = lengths[i] ? Math.min(1, goal / lengths[i]) : 0;
      const dir = lengths[i] ? { x: (b.x - a.x) / lengths[i], y: (b.y - a.y) / lengths[i] } : { x: 1, y: 0 };
      return { at: { x: a.x + (b.x - a.x) * f, y: a.y + (b.y - a.y) * f }, dir };
    }
    goal -= lengths[i];
  }
  return { at: points[points.length - 1], dir: { x: 1, y: 0 } };
}

/** A grid of placed boxes, so that each overlap test looks at a few neighbours, not every chip. */
class Grid {
  private cells = new Map<number, Box[]>();
  // Cells are keyed by one number (x and y folded together), which is much cheaper than a string per lookup.
  private each(b: Box, visit: (key: number) => boolean | void): boolean {
    const x0 = Math.floor((b.x - MARGIN) / CELL);
    const x1 = Math.floor((b.x + b.width + MARGIN) / CELL);
    const y0 = Math.floor((b.y - MARGIN) / CELL);
    const y1 = Math.floor((b.y + b.height + MARGIN) / CELL);
    for (let x = x0; x <= x1; x++) for (let y = y0; y <= y1; y++) if (visit(x * 1_048_576 + y)) return true;
    return false;
  }
  add(b: Box) {
    this.each(b, (k) => {
      const cell = this.cells.get(k);
      if (cell) cell.push(b);
      else this.cells.set(k, [b]);
    });
  }
  /** How much of `b`'s area the boxes in the grid cover, added up. */
  covered(b: Box): number {
    const near = new Set<Box>();
    this.each(b, (k) => void this.cells.get(k)?.forEach((o) => near.add(o)));
    let area = 0;
    for (const o of near) area += Math.max(0, Math.min(b.x + b.width, o.x + o.width) - Math.max(b.x, o.x)) * Math.max(0, Math.min(b.y + b.height, o.y + o.height) - Math.max(b.y, o.y));
    return area;
  }
  hits(b: Box): boolean {
    return this.each(b, (k) =>
      (this.cells.get(k) ?? []).some((o) => b.x < o.x + o.width + MARGIN && o.x < b.x + b.width + MARGIN && b.y < o.y + o.height + MARGIN && o.y < b.y + b.height + MARGIN),
    );
  }
}

/**
 * Places each label's chip (centre x, y and its size) on its own edge: at its path's midpoint, or, when a chip placed
 * before it or an obstacle (a node card) is in the way there, slid along the path towards either end, or shifted a
 * little across it (the line still runs through the chip). A chip never leaves its edge: where every place on it is
 * taken, it goes where it covers least (cards counting double), and shows whole on hover. `points` is the edge's
 * path as a polyline, or at least its two ends. Deterministic: the same items in the same order give the same places.
 */
export function placeLabels(items: LabelItem[], opts: { obstacles?: Box[] } = {}): Record<string, Placed> {
  const cards = new Grid();
  for (const o of opts.obstacles ?? []) cards.add(o);
  const chips = new Grid();
  const placed: Record<string, Placed> = {};
  for (const item of items) {
    if (!item.text || !item.points.length) continue;
    const { width, height } = chipSize(item.text);
    const boxAt = (c: Point): Box => ({ x: c.x - width / 2, y: c.y - height / 2, width, height });
    const candidates: Box[] = [];
    for (const shift of SHIFTS)
      for (const t of SLIDES) {
        const { at, dir } = along(item.points, t);
        // Across the path by a share of the chip's half-extent across it, so that the line still crosses the chip.
        const normal = { x: -dir.y, y: dir.x };
        const half = Math.min(Math.abs(normal.y) > 1e-6 ? height / 2 / Math.abs(normal.y) : Infinity, Math.abs(normal.x) > 1e-6 ? width / 2 / Math.abs(normal.x) : Infinity);
        candidates.push(boxAt({ x: at.x + normal.x * half * shift, y: at.y + normal.y * half * shift }));
      }
    let chosen = candidates.find((b) => !cards.hits(b) && !chips.hits(b));
    if (!chosen) {
      let best = Infinity;
      for (const b of candidates) {
        const cost = 2 * cards.covered(b) + chips.covered(b);
        if (cost < best) [chosen, best] = [b, cost];
      }
    }
    chips.add(chosen!);
    placed[item.id] = { x: chosen!.x + width / 2, y: chosen!.y + height / 2, width, height };
  }
  return placed;
}
