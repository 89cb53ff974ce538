// Where new nodes go and how a workflow is first shown: pure geometry over document positions, so it works before
// React Flow has mounted (or measured) a single node.
import type { Node } from "../types";
import { NODE_HEIGHT, NODE_WIDTH } from "./handles";

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
  const start = nodes.find((n) => n.type === "start") ?? nodes[0];
  const s = boxOf(start, sizes);
  return { x: padding - s.x * zoom, y: view.height / 2 - (s.y + s.height / 2) * zoom, zoom };
}
