import { describe, expect, it } from "vitest";
import type { Node } from "../types";
import { NODE_HEIGHT, NODE_WIDTH } from "./handles";
import { farthestZoom, FIT_PADDING, fitViewport, freeSpot, LEGIBLE_PX, openingViewport, SMALL_WORKFLOW } from "./placement";

const at = (id: string, x: number, y: number, type: Node["type"] = "agent") => ({ id, type, position: { x, y } }) as Node;
const overlap = (a: { x: number; y: number }, b: { x: number; y: number }) => Math.abs(a.x - b.x) < NODE_WIDTH && Math.abs(a.y - b.y) < NODE_HEIGHT;

describe("placement", () => {
  it("puts a new node where asked when that spot is free", () => {
    expect(freeSpot([at("a", 0, 0)], { x: 600, y: 0 })).toEqual({ x: 600, y: 0 });
  });

  it("never puts a new node on top of another, even when asked to, and stays inside the visible bounds", () => {
    const nodes = [at("a", 0, 0), at("b", 0, 120), at("c", 260, 0)];
    const bounds = { x: -400, y: -300, width: 1200, height: 800 };
    let placed = [...nodes];
    for (let i = 0; i < 8; i++) {
      const p = freeSpot(placed, { x: 0, y: 0 }, bounds);
      expect(placed.some((n) => overlap(n.position as { x: number; y: number }, p))).toBe(false);
      expect(p.x >= bounds.x && p.y >= bounds.y && p.x + NODE_WIDTH <= bounds.x + bounds.width && p.y + NODE_HEIGHT <= bounds.y + bounds.height).toBe(true);
      placed = [...placed, at(`n${i}`, p.x, p.y)];
    }
  });

  it("opens a small workflow fitted, and a long one at readable zoom around its start node", () => {
    const view = { width: 1000, height: 600 };
    const small = [at("start", 0, 0, "start"), at("a", 300, 0), at("b", 600, 0)];
    const fitted = openingViewport(small, view, { titlePx: 15 });
    expect(fitted.zoom * 15).toBeGreaterThanOrEqual(12);
    expect(fitted.zoom).toBeLessThanOrEqual(1.25);
    const long = [at("start", 0, 0, "start"), ...Array.from({ length: 40 }, (_, i) => at(`n${i}`, 300 * (i + 1), 0))];
    const opened = openingViewport(long, view, { titlePx: 15 });
    expect(opened.zoom * 15).toBeGreaterThanOrEqual(12); // titles stay ≥ 12 px on screen
    // The start node is on screen, near the left edge.
    const sx = 0 * opened.zoom + opened.x;
    expect(sx).toBeGreaterThanOrEqual(0);
    expect(sx).toBeLessThan(view.width / 3);
  });
});

describe("fitViewport", () => {
  const view = { width: 1330, height: 760 };
  const titlePx = 15;

  it("fits a small workflow that fits, centred, up to the largest zoom", () => {
    const vp = fitViewport({ x: 0, y: 0, width: 800, height: 300 }, 5, view, { titlePx, maxZoom: 1.25 });
    expect(vp.zoom).toBe(1.25);
    expect(vp.x).toBeCloseTo((1330 - 1000) / 2);
    expect(vp.y).toBeCloseTo((760 - 375) / 2);
  });

  it("never shows a small workflow's titles below legible size: too wide, it shows its beginning", () => {
    // One flat row of 30 cards: fitted whole, its titles would be 2 px.
    const vp = fitViewport({ x: 100, y: 50, width: 30 * 280, height: 84 }, SMALL_WORKFLOW, view, { titlePx, maxZoom: 1.25 });
    expect(vp.zoom * titlePx).toBeCloseTo(LEGIBLE_PX);
    expect(vp.x).toBeCloseTo(FIT_PADDING - 100 * vp.zoom); // its left edge at the padding
    expect(vp.y).toBeCloseTo((760 - 84 * vp.zoom) / 2 - 50 * vp.zoom); // centred down, where it fits
  });

  it("fits a large workflow whole, however small that makes it", () => {
    const bounds = { x: 0, y: 0, width: 5000 * 280, height: 84 };
    const vp = fitViewport(bounds, 5000, view, { titlePx, maxZoom: 1.25 });
    expect(vp.zoom).toBeLessThan(0.05);
    // Every card in view: its right end within the canvas.
    expect(vp.x + bounds.width * vp.zoom).toBeLessThanOrEqual(view.width);
    expect(vp.x).toBeGreaterThanOrEqual(0);
    // And a person can zoom out that far (React Flow's minZoom).
    expect(farthestZoom(bounds, view)).toBeLessThanOrEqual(vp.zoom);
    expect(farthestZoom({ x: 0, y: 0, width: 800, height: 300 }, view)).toBe(0.05);
  });

  it("centres nothing for an empty workflow", () => {
    expect(fitViewport(null, 0, view, { titlePx })).toEqual({ x: 665, y: 380, zoom: 1 });
  });
});
