import { describe, expect, it } from "vitest";
import type { Edge, Node } from "../types";
import { edgeKey } from "../store/document";
import { nodeBoxes } from "./Overview";
import { nearRegion, parseRegion, regionKey } from "./culling";

/** `n` agents on a grid of 300 × 200 px cells, 40 to a row, chained a0 → a1 → … */
const grid = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `a${i}`, type: "agent", position: { x: (i % 40) * 300, y: Math.floor(i / 40) * 200 } }) as Node);
const chain = (n: number) => Array.from({ length: n - 1 }, (_, i) => ({ from: `a${i}`, to: `a${i + 1}` }) as Edge);

describe("what React Flow is given of a large workflow", () => {
  it("the region covers the view and a view's size around it, and stays put while the view moves within a cell", () => {
    const key = regionKey([0, 0, 1], 1200, 800);
    const r = parseRegion(key)!;
    expect(r.x0).toBeLessThanOrEqual(-1200);
    expect(r.y0).toBeLessThanOrEqual(-800);
    expect(r.x1).toBeGreaterThanOrEqual(2400);
    expect(r.y1).toBeGreaterThanOrEqual(1600);
    expect(regionKey([-100, -50, 1], 1200, 800)).toBe(key);
    expect(regionKey([-1300, 0, 1], 1200, 800)).not.toBe(key);
    // Zoomed out, the view covers more of the flow, and so does the region.
    const far = parseRegion(regionKey([0, 0, 0.25], 1200, 800))!;
    expect(far.x1).toBeGreaterThanOrEqual(4 * 1200);
    expect(regionKey([0, 0, 1], 0, 800)).toBe("");
  });

  it("gives the nodes near the view, the edges crossing it with both ends, and the whole selection", () => {
    const nodes = grid(2000);
    const edges = [...chain(2000), { from: "a0", to: "a1999" } as Edge];
    const b = nodeBoxes(nodes);
    const near = nearRegion(b, edges, { x0: 0, y0: 0, x1: 1200, y1: 800 }, ["a1500"], new Set(["a1200->a1201"]), edgeKey);
    // Columns 0..3 and rows 0..3 lie in the region.
    for (const id of ["a0", "a3", "a120", "a123"]) expect(near.nodes.has(id)).toBe(true);
    expect(near.nodes.has("a4")).toBe(true); // the end of a3 → a4, which crosses the region's edge
    expect(near.nodes.has("a1999")).toBe(true); // the far end of an edge from a node in view
    expect(near.nodes.has("a1500")).toBe(true); // selected
    expect(near.nodes.has("a1200") && near.nodes.has("a1201")).toBe(true); // the ends of a selected edge
    expect(near.nodes.has("a1000")).toBe(false);
    expect(near.nodes.size).toBeLessThan(60);
    expect([...near.edges].map(edgeKey)).toContain("a1200->a1201");
    expect([...near.edges].map(edgeKey)).not.toContain("a1000->a1001");
  });

  it("an edge crossing the view between two nodes outside it is given, with both ends", () => {
    const nodes = [{ id: "left", type: "agent", position: { x: -5000, y: 100 } }, { id: "right", type: "agent", position: { x: 5000, y: 100 } }] as Node[];
    const near = nearRegion(nodeBoxes(nodes), [{ from: "left", to: "right" } as Edge], { x0: 0, y0: 0, x1: 1200, y1: 800 }, [], new Set(), edgeKey);
    expect([...near.nodes].sort()).toEqual(["left", "right"]);
    expect(near.edges.size).toBe(1);
  });
});
