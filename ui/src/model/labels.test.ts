import { describe, expect, it } from "vitest";
import type { Edge, Node } from "../types";
import { CHIP_MAX_WIDTH, chipSize, curvePoints, edgeLabel, edgeRoute, handleName, placeLabels, type Box, type LabelItem, type Placed, type Point } from "./labels";

const corner = (p: Placed): Box => ({ x: p.x - p.width / 2, y: p.y - p.height / 2, width: p.width, height: p.height });
const apart = (a: Box, b: Box) => a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
/** Whether the polyline runs through the box (a segment of it crosses or lies in the box). */
const crosses = (points: Point[], b: Box) =>
  points.some((p, i) => {
    if (!i) return false;
    const q = points[i - 1];
    // Sampled finely: the segments are short next to a chip.
    for (let k = 0; k <= 40; k++) {
      const [x, y] = [q.x + ((p.x - q.x) * k) / 40, q.y + ((p.y - q.y) * k) / 40];
      if (x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height) return true;
    }
    return false;
  });
const assertOnTheirEdges = (items: LabelItem[], placed: Record<string, Placed>) => {
  for (const it of items) expect(crosses(it.points, corner(placed[it.id])), `${it.id}'s chip is off its edge`).toBe(true);
};
const assertApart = (placed: Record<string, Placed>, obstacles: Box[] = []) => {
  const all = Object.values(placed).map(corner);
  for (let i = 0; i < all.length; i++) {
    for (const b of all.slice(i + 1)) expect(apart(all[i], b)).toBe(true);
    for (const o of obstacles) expect(apart(all[i], o)).toBe(true);
  }
};

describe("edge labels", () => {
  it("says the handle, the condition, the guard and the loop bound", () => {
    expect(edgeLabel({ from: "a", to: "b" } as Edge)).toBe("");
    expect(edgeLabel({ from: "a", to: "b", handle: "subagent" } as Edge)).toBe("");
    expect(edgeLabel({ from: "a", to: "b", handle: "reject", when: "x".repeat(70), if: "a.score > 3", max_iterations: 3 } as Edge)).toBe(`reject · when: ${"x".repeat(40)}… · if a.score > 3 · ≤3×`);
  });

  it("names an if node's branches by their conditions, and its other branch else", () => {
    const pick = { id: "pick", type: "if", conditions: [{ operator: "contains", value: "cat" }, { operator: "contains", value: "dog" }, { operator: "expression", value: "" }] } as Node;
    expect(edgeLabel({ from: "pick", to: "a", handle: "condition-0" } as Edge, pick)).toBe("cat");
    expect(edgeLabel({ from: "pick", to: "b", handle: "condition-1" } as Edge, pick)).toBe("dog");
    expect(edgeLabel({ from: "pick", to: "c", handle: "condition-2" } as Edge, pick)).toBe("condition 2");
    expect(edgeLabel({ from: "pick", to: "d", handle: "false" } as Edge, pick)).toBe("else");
    expect(handleName(pick, "condition-0")).toBe("cat");
    expect(handleName(undefined, "false"), "without the node, the else branch is still else").toBe("else");
  });

  it("names an edge that uses a handle's other name (true, else) as the handle it stands for", () => {
    const pick = { id: "pick", type: "if", conditions: [{ operator: "contains", value: "cat" }] } as Node;
    expect(edgeLabel({ from: "pick", to: "a", handle: "true" } as Edge, pick)).toBe("cat");
    expect(edgeLabel({ from: "pick", to: "b", handle: "else" } as Edge, pick)).toBe("else");
    expect(handleName({ ...pick, conditions: [] } as Node, "true"), "with no condition 0, true names nothing the node has").toBe("true");
  });

  it("keeps the whole label for the hover, however long", () => {
    const when = "the reviewer found problems that the author must fix before the change can be merged";
    expect(edgeLabel({ from: "a", to: "b", when } as Edge)).toMatch(/…$/);
    expect(edgeLabel({ from: "a", to: "b", when } as Edge, undefined, { whole: true })).toBe(`when: ${when}`);
  });

  it("sizes a chip by its text", () => {
    expect(chipSize("abcdefghij")).toEqual({ width: 96, height: 22 });
    // A long one wraps onto a second line rather than growing wider.
    expect(chipSize(edgeLabel({ from: "a", to: "b", when: "novel_count is greater than 0 AND highest_severity is medium or higher" } as Edge))).toEqual({ width: CHIP_MAX_WIDTH, height: 38 });
    expect(CHIP_MAX_WIDTH).toBeLessThan(220);
  });
});

describe("placeLabels", () => {
  it("keeps the chips of a fan of eight edges with long labels on their edges and apart", () => {
    const items = Array.from({ length: 8 }, (_, i) => ({ id: `e${i}`, text: `when: kind ${i} matters`, points: curvePoints({ x: 220, y: 40 }, { x: 620, y: 40 + i * 60 }) }));
    const placed = placeLabels(items);
    expect(Object.keys(placed)).toHaveLength(8);
    assertOnTheirEdges(items, placed);
    assertApart(placed);
  });

  it("keeps the chips of a fan on their edges and off the cards", () => {
    const cards: Box[] = [{ x: 0, y: 0, width: 220, height: 84 }, ...Array.from({ length: 4 }, (_, i) => ({ x: 560, y: i * 110 - 150, width: 220, height: 84 }))];
    const items = cards.slice(1).map((c, i) => ({ id: `e${i}`, text: `when: branch ${i} applies`, points: curvePoints({ x: 220, y: 28 }, { x: c.x, y: c.y + 42 }) }));
    const placed = placeLabels(items, { obstacles: cards });
    assertOnTheirEdges(items, placed);
    assertApart(placed, cards);
  });

  it("never moves a chip off its edge: two branches 70 px apart keep each chip on its own branch", () => {
    // The bundled example as it was: investigate's two `when` branches into cards only 70 px to its right.
    const cards: Box[] = [{ x: 580, y: 160, width: 220, height: 84 }, { x: 870, y: 40, width: 220, height: 84 }, { x: 870, y: 280, width: 220, height: 84 }];
    const up = curvePoints({ x: 800, y: 188 }, { x: 870, y: 82 });
    const down = curvePoints({ x: 800, y: 188 }, { x: 870, y: 322 });
    const items: LabelItem[] = [
      { id: "up", text: edgeLabel({ from: "a", to: "b", when: "novel_count is greater than 0 AND highest_severity is medium or higher" } as Edge), points: up },
      { id: "down", text: edgeLabel({ from: "a", to: "c", when: "novel_count is 0, OR highest_severity is low" } as Edge), points: down },
    ];
    const placed = placeLabels(items, { obstacles: cards });
    assertOnTheirEdges(items, placed);
    // Each chip is nearer its own branch's end than the other's.
    expect(placed.up.y).toBeLessThan(188);
    expect(placed.down.y).toBeGreaterThan(188);
  });

  it("keeps apart the chips of a chain whose gaps leave room for them", () => {
    const whens = [
      "novel_count is greater than 0 AND highest_severity is medium or higher",
      "at least one novel finding has fix_complexity simple or moderate AND fix_approach is provided",
      'implement.test_status is "pass" or "no-framework"',
      "all novel findings have fix_complexity complex, OR no clear fix_approach",
    ];
    const cards: Box[] = Array.from({ length: whens.length + 1 }, (_, i) => ({ x: i * 520, y: 0, width: 220, height: 84 }));
    const items: LabelItem[] = whens.map((w, i) => ({ id: `e${i}`, text: edgeLabel({ from: "a", to: "b", when: w } as Edge), points: curvePoints({ x: i * 520 + 220, y: 28 }, { x: (i + 1) * 520, y: 42 }) }));
    const placed = placeLabels(items, { obstacles: cards });
    assertOnTheirEdges(items, placed);
    assertApart(placed, cards);
  });

  it("keeps identical edges' chips on the edge, spread along it", () => {
    const items = Array.from({ length: 3 }, (_, i) => ({ id: `e${i}`, text: "when: retry", points: [{ x: 0, y: 0 }, { x: 300, y: 0 }] }));
    const placed = placeLabels(items);
    assertOnTheirEdges(items, placed);
    assertApart(placed);
  });

  it("leaves a chain's chips at their midpoints when nothing collides", () => {
    const items = Array.from({ length: 6 }, (_, i) => ({ id: `e${i}`, text: "when: the alert is novel", points: [{ x: i * 400 + 220, y: 50 }, { x: i * 400 + 400, y: 50 }] }));
    const placed = placeLabels(items);
    items.forEach((it, i) => expect(placed[it.id]).toMatchObject({ x: i * 400 + 310, y: 50 }));
  });

  it("places along a polyline's length, not at its middle point", () => {
    const placed = placeLabels([{ id: "a", text: "x", points: [{ x: 0, y: 0 }, { x: 0, y: 10 }, { x: 200, y: 10 }, { x: 200, y: 0 }] }]);
    expect(placed.a).toMatchObject({ x: 100, y: 10 });
  });

  it("places nothing for no labels", () => {
    expect(placeLabels([])).toEqual({});
    expect(placeLabels([{ id: "a", text: "", points: [{ x: 0, y: 0 }] }])).toEqual({});
    expect(placeLabels([{ id: "a", text: "x", points: [] }])).toEqual({});
  });

  it("is deterministic over thousands of chips, each on its edge", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const items = Array.from({ length: 3000 }, (_, i) => {
      const from = { x: Math.floor(rnd() * 40) * 300 + 220, y: Math.floor(rnd() * 60) * 130 + 28 };
      return { id: `e${i}`, text: `when: condition number ${i}${"!".repeat(Math.floor(rnd() * 20))}`, points: curvePoints(from, { x: from.x + 80 + Math.floor(rnd() * 3) * 300, y: from.y + Math.floor(rnd() * 5 - 2) * 130 }) };
    });
    const placed = placeLabels(items);
    expect(Object.keys(placed)).toHaveLength(items.length);
    expect(placeLabels(items)).toEqual(placed);
    assertOnTheirEdges(items, placed);
  });
});

describe("edgeRoute", () => {
  const card = (x: number, y: number): Box => ({ x, y, width: 220, height: 84 });
  it("curves a forward edge between its ends", () => {
    const { kind, points } = edgeRoute({ x: 220, y: 28 }, { x: 400, y: 42 }, card(0, 0), card(400, 0));
    expect(kind).toBe("curve");
    expect(points[0]).toEqual({ x: 220, y: 28 });
    expect(points[points.length - 1]).toEqual({ x: 400, y: 42 });
    // React Flow's bezier: level out of the handle, level into the input, through the middle point.
    expect(points[1].y - 28).toBeLessThan(1);
    expect(points[6]).toEqual({ x: 310, y: 35 });
  });

  it("takes an edge back along a row below both cards, and between cards in different rows through the gap", () => {
    const row = edgeRoute({ x: 720, y: 28 }, { x: 0, y: 42 }, card(500, 0), card(0, 0));
    expect(row.kind).toBe("back");
    expect(row.runY).toBeGreaterThan(84);
    const up = edgeRoute({ x: 720, y: 228 }, { x: 0, y: 42 }, card(500, 200), card(0, 0));
    expect(up.runY).toBe(142);
    // The chip of a back edge lands on its run.
    const placed = placeLabels([{ id: "b", text: "≤3×", points: row.points }]);
    expect(placed.b.y).toBe(row.runY);
  });

  it("loops an edge into its own node over the card", () => {
    const loop = edgeRoute({ x: 220, y: 128 }, { x: 0, y: 142 }, card(0, 100), card(0, 100), true);
    expect(loop.kind).toBe("loop");
    expect(loop.runY).toBeLessThan(100);
    const placed = placeLabels([{ id: "l", text: "≤2×", points: loop.points }]);
    expect(apart(corner(placed.l), card(0, 100))).toBe(true);
  });
});
