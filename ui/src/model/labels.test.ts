import { describe, expect, it } from "vitest";
import type { Edge } from "../types";
import { edgeLabel, placeLabels, type Placed } from "./labels";

const overlapping = (a: Placed, b: Placed) => Math.abs(a.x - b.x) < (a.width + b.width) / 2 && Math.abs(a.y - b.y) < (a.height + b.height) / 2;
const assertApart = (placed: Record<string, Placed>) => {
  const all = Object.values(placed);
  for (let i = 0; i < all.length; i++) for (const b of all.slice(i + 1)) expect(overlapping(all[i], b)).toBe(false);
};

describe("edge labels", () => {
  it("says the handle, the condition, the guard and the loop bound", () => {
    expect(edgeLabel({ from: "a", to: "b" } as Edge)).toBe("");
    expect(edgeLabel({ from: "a", to: "b", handle: "reject", when: "x".repeat(50), if: "a.score > 3", max_iterations: 3 } as Edge)).toBe(`reject · when: ${"x".repeat(40)}… · if a.score > 3 · ≤3×`);
  });

  it("keeps the chips of a fan of eight edges with long labels apart", () => {
    const items = Array.from({ length: 8 }, (_, i) => ({ id: `e${i}`, text: `when: the finding is of kind number ${i} and it matters`, points: [{ x: 220, y: 40 }, { x: 520, y: 40 + i * 30 }] }));
    const placed = placeLabels(items);
    expect(Object.keys(placed)).toHaveLength(8);
    assertApart(placed);
  });

  it("keeps identical edges' chips apart", () => {
    const items = Array.from({ length: 5 }, (_, i) => ({ id: `e${i}`, text: "when: retry", points: [{ x: 0, y: 0 }, { x: 300, y: 0 }] }));
    assertApart(placeLabels(items));
  });

  it("leaves a chain's chips at their midpoints when nothing collides", () => {
    const items = Array.from({ length: 6 }, (_, i) => ({ id: `e${i}`, text: "when: the alert is novel", points: [{ x: i * 400 + 220, y: 50 }, { x: i * 400 + 400, y: 50 }] }));
    const placed = placeLabels(items);
    items.forEach((it, i) => expect(placed[it.id].x).toBe(i * 400 + 310));
  });

  it("places nothing for no labels", () => {
    expect(placeLabels([])).toEqual({});
    expect(placeLabels([{ id: "a", text: "", points: [{ x: 0, y: 0 }] }])).toEqual({});
  });
});
