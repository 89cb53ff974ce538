// Where new nodes go and how a workflow is first shown: pure geometry over document positions, so it works before
// React Flow has mounted (or measured) a single node.
import type { Node } from "../types";
import { NODE_HEIGHT, NODE_WIDTH } from "./handles";
import { isEntry } from "./nodeTypes";

type Point = { x: number; y: number };
type Box = { x: number; y: number; width: number; height: number };
type Sizes = (id: string) => { width: number; height: number } | undefined;

const GAP = 24;

const boxOf = (n: Node, sizes?: Sizes): Box => {
  const s = sizes?.(n.id) ?? { width: NODE_WIDTH, height: NODE_HEIGHT };
  return { x: n.position?.x ?? 0, y: n.position?.y ?? 0, width: s.width, height: s.height };
};

const overlaps = (a: Box, b: Box) => a.x < b.x + b.width + GAP && b.x < a.x + a.width + GAP && a.y < b.y + b.height + GAP && b.y < a.y + a.height + GAP;

/**
 * The position nearest `desired` (a node's top-left corner) where a new node overlaps no existing one, searched on
 * rings of growing size around it; within `bounds` when given (the visible part of the canvas), else anywhere.
 */
export function freeSpot(nodes: Node[], desired: Point, bounds?: Box, sizes?: Sizes): Point;
/** With `strict`, null when no spot within `bounds` is free. */
export function freeSpot(nodes: Node[], desired: Point, bounds: Box, sizes: Sizes | undefined, strict: true): Point | null;
export function freeSpot(nodes: Node[], desired: Point, bounds?: Box, sizes?: Sizes, strict = false): Point | null {
  const stepX = NODE_WIDTH / 4;
  const stepY = NODE_HEIGHT / 4;
  const rings = bounds ? Math.ceil(Math.max(bounds.width / stepX, bounds.height / stepY) / 2) + 1 : 120;
  // Only nodes near the search area can be in the way.
  const reach = { x: desired.x - rings * stepX - NODE_WIDTH, y: desired.y - rings * stepY - NODE_HEIGHT, width: 2 * rings * stepX + 3 * NODE_WIDTH, height: 2 * rings * stepY + 3 * NODE_HEIGHT };
  const boxes = nodes.map((n) => boxOf(n, sizes)).filter((b) => overlaps(b, reach));
  const fits = (p: Point) => {
    const box = { x: p.x, y: p.y, width: NODE_WIDTH, height: NODE_HEIGHT };
    if (bounds && (p.x < bounds.x || p.y < bounds.y || p.x + NODE_WIDTH > bounds.x + bounds.width || p.y + NODE_HEIGHT > bounds.y + bounds.height)) return false;
    return !boxes.some((b) => overlaps(box, b));
  };
  const round = (p: Point) => ({ x: Math.round(p.x), y: Math.round(p.y) });
  if (fits(desired)) return round(desired);
  for (let ring = 1; ring <= rings; ring++) {
    const candidates: Point[] = [];
    for (let i = -ring; i <= ring; i++)
      for (const j of [-ring, ring]) {
        candidates.push({ x: desired.x + i * stepX, y: desired.y + j * stepY });
        candidates.push({ x: desired.x + j * stepX, y: desired.y + i * stepY });
      }
    candidates.sort((a, b) => Math.hypot(a.x - desired.x, a.y - desired.y) - Math.hypot(b.x - desired.x, b.y - desired.y));
    const hit = candidates.find(fits);
    if (hit) return round(hit);
  }
  if (strict) return null;
  // Everything near is taken: below the lowest node.
  const bottom = Math.max(...nodes.map((n) => boxOf(n, sizes)).map((b) => b.y + b.height), desired.y);
  return round({ x: desired.x, y: bottom + GAP * 2 });
}

/** The smallest zoom at which node titles (font size `titlePx`) are still `minPx` on screen. */
export const readableZoom = (titlePx: number, minPx = 12) => minPx / titlePx;

/**
 * The viewport a workflow opens with: everything fitted when that keeps titles readable, otherwise readable zoom
 * around the start node (the left of the view, vertically centred on it).
 */
export function openingViewport(nodes: Node[], view: { width: number; height: number }, opts: { titlePx: number; maxZoom?: number; padding?: number }, sizes?: Sizes) {
  const minZoom = readableZoom(opts.titlePx);
  const maxZoom = opts.maxZoom ?? 1;
  const padding = opts.padding ?? 48;
  if (!nodes.length) return { x: view.width / 2, y: view.height / 2, zoom: 1 };
  const boxes = nodes.map((n) => boxOf(n, sizes));
  const minX = Math.min(...boxes.map((b) => b.x));
  const minY = Math.min(...boxes.map((b) => b.y));
  const maxX = Math.max(...boxes.map((b) => b.x + b.width));
  const maxY = Math.max(...boxes.map((b) => b.y + b.height));
  const fit = Math.min((view.width - 2 * padding) / (maxX - minX), (view.height - 2 * padding) / (maxY - minY), maxZoom);
  if (fit >= minZoom) {
    return { x: (view.width - (maxX - minX) * fit) / 2 - minX * fit, y: (view.height - (maxY - minY) * fit) / 2 - minY * fit, zoom: fit };
  }
  // As much of the workflow as fits at a comfortable size just above the readable minimum.
  const zoom = Math.min(maxZoom, minZoom * 1.07);
  const start = nodes.find((n) => isEntry(n.type)) ?? nodes[0];
  const s = boxOf(start, sizes);
  return { x: padding - s.x * zoom, y: view.height / 2 - (s.y + s.height / 2) * zoom, zoom };
}

export type Size = { width: number; height: number };
export type Viewport = { x: number; y: number; zoom: number };

/** The room Fit leaves around the workflow on each side, in screen pixels. */
export const FIT_PADDING = 40;
/** Titles are at least this big on screen when a small workflow is fitted (or laid out, then fitted). */
export const LEGIBLE_PX = 11;
/** Up to this many nodes a workflow is small: Fit never zooms it out past legible titles. */
export const SMALL_WORKFLOW = 30;
/** The farthest out any view goes: far enough to fit 5,000 nodes in one row. */
export const FARTHEST_ZOOM = 0.0005;

/** The zoom at which a picture of `size` (flow units) fits `view` (screen pixels) with `FIT_PADDING` around it. */
export function fitZoom(size: Size, view: Size, padding = FIT_PADDING): number {
  return Math.min((view.width - 2 * padding) / Math.max(1, size.width), (view.height - 2 * padding) / Math.max(1, size.height));
}

/**
 * What Fit shows: every card, centred, at the largest zoom up to `maxZoom`. A small workflow (up to
 * `SMALL_WORKFLOW` nodes) is never shown smaller than legible titles (`LEGIBLE_PX` on screen): when it does not fit
 * at that zoom, its beginning shows (its left, and its top when it is taller than the view), and the rest is a pan
 * away. A large one is fitted however small (down to `FARTHEST_ZOOM`), so that all of it is in view.
 */
export function fitViewport(bounds: Box | null, count: number, view: Size, opts: { titlePx: number; maxZoom?: number }): Viewport {
  if (!bounds) return { x: view.width / 2, y: view.height / 2, zoom: 1 };
  const fit = Math.min(fitZoom(bounds, view), opts.maxZoom ?? 1.25);
  const legible = readableZoom(opts.titlePx, LEGIBLE_PX);
  const zoom = Math.max(count <= SMALL_WORKFLOW ? Math.min(legible, opts.maxZoom ?? 1.25) : FARTHEST_ZOOM, fit);
  // Along each axis: centred when it fits, else from its beginning.
  const axis = (start: number, length: number, room: number) =>
    length * zoom <= room - 2 * FIT_PADDING ? (room - length * zoom) / 2 - start * zoom : FIT_PADDING - start * zoom;
  return { x: axis(bounds.x, bounds.width, view.width), y: axis(bounds.y, bounds.height, view.height), zoom };
}

/** How far out a person may zoom the canvas: as far as fitting all of `bounds` takes, and never less than to 5 %. */
export function farthestZoom(bounds: Box | null, view: Size): number {
  if (!bounds || view.width <= 0 || view.height <= 0) return 0.05;
  return Math.max(FARTHEST_ZOOM, Math.min(0.05, 0.8 * fitZoom(bounds, view)));
}
