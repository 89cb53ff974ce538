import { describe, expect, it } from "vitest";
import type { Node } from "../types";
import { NODE_HEIGHT, NODE_WIDTH } from "./handles";
import { freeSpot, openingViewport } from "./placement";

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
