import { describe, expect, it } from "vitest";
import type { Node } from "../types";
import { boxesBounds, countVisible, nodeAt, nodeBoxes, OVERVIEW_ENTER, OVERVIEW_LEAVE, wantsOverview } from "./Overview";

/** `n` agents on a grid of 300 × 200 px cells, 40 to a row. */
const grid = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `a${i}`, type: "agent", position: { x: (i % 40) * 300, y: Math.floor(i / 40) * 200 } }) as Node);

describe("overview geometry", () => {
  it("counts the cards a viewport shows, and stops at the limit", () => {
    const b = nodeBoxes(grid(2000));
    // 1200 × 800 px at 100 %: columns 0..3 (x < 1200) and rows 0..3 (y < 800).
    expect(countVisible(b, { x: 0, y: 0, zoom: 1 }, 1200, 800)).toBe(16);
    expect(countVisible(b, { x: 0, y: 0, zoom: 0.05 }, 1200, 800)).toBe(2000);
    expect(countVisible(b, { x: 0, y: 0, zoom: 0.05 }, 1200, 800, 10)).toBe(10);
  });

  it("takes over when crowded and hands back with hysteresis", () => {
    const b = nodeBoxes(grid(2000));
    expect(wantsOverview(b, { x: 0, y: 0, zoom: 1 }, 1200, 800, false)).toBe(false);
    expect(wantsOverview(b, { x: 0, y: 0, zoom: 0.05 }, 1200, 800, false)).toBe(true);
    // Between the two thresholds, it stays as it is.
    let zoom = 1;
    while (countVisible(b, { x: 0, y: 0, zoom }, 1200, 800) < (OVERVIEW_ENTER + OVERVIEW_LEAVE) / 2) zoom *= 0.97;
    expect(wantsOverview(b, { x: 0, y: 0, zoom }, 1200, 800, false)).toBe(false);
    expect(wantsOverview(b, { x: 0, y: 0, zoom }, 1200, 800, true)).toBe(true);
    // Far out, however few cards are on screen (a card is a few pixels wide).
    expect(wantsOverview(b, { x: 1e6, y: 1e6, zoom: 0.1 }, 1200, 800, false)).toBe(true);
    expect(wantsOverview(b, { x: 1e6, y: 1e6, zoom: 0.16 }, 1200, 800, false)).toBe(false);
    expect(wantsOverview(b, { x: 1e6, y: 1e6, zoom: 0.16 }, 1200, 800, true)).toBe(true);
    // A small workflow never needs it.
    expect(wantsOverview(nodeBoxes(grid(100)), { x: 0, y: 0, zoom: 0.05 }, 1200, 800, false)).toBe(false);
  });

  it("finds the card under a point and the bounds of all", () => {
    const b = nodeBoxes(grid(80), (id) => (id === "a1" ? { width: 250, height: 120 } : undefined));
    expect(nodeAt(b, { x: 310, y: 20 })).toBe("a1");
    expect(nodeAt(b, { x: 540, y: 20 })).toBe("a1"); // its measured width, not the default
    expect(nodeAt(b, { x: 290, y: 20 })).toBe(null);
    expect(boxesBounds(b)).toMatchObject({ x: 0, y: 0 });
    expect(boxesBounds(nodeBoxes([]))).toBe(null);
  });
});
