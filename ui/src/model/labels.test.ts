import { describe, expect, it } from "vitest";
import type { Edge, Node } from "../types";
import { chipSize, edgeLabel, edgeRoute, handleName, nearestOnPolyline, placeLabels, type Box, type LabelItem, type Placed } from "./labels";

const corner = (p: Placed): Box => ({ x: p.x - p.width / 2, y: p.y - p.height / 2, width: p.width, height: p.height });
const apart = (a: Box, b: Box) => a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
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
    expect(edgeLabel({ from: "a", to: "b", handle: "reject", when: "x".repeat(70), if: "a.score > 3", max_iterations: 3 } as Edge)).toBe(`reject · when: ${"x".repeat(60)}… · if a.score > 3 · ≤3×`);
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

  it("finds the point of an edge's course nearest a chip, for its leader line", () => {
    const course = [{ x: 0, y: 0 }, { x: 100, y: 0 }, { x: 100, y: 100 }];
    expect(nearestOnPolyline(course, { x: 50, y: 30 })).toEqual({ x: 50, y: 0 });
    expect(nearestOnPolyline(course, { x: 140, y: 60 })).toEqual({ x: 100, y: 60 });
  });

  it("sizes a chip by its text", () => {
    expect(chipSize("abcdefghij")).toEqual({ width: 96, height: 22 });
  });
});

describe("placeLabels", () => {
  it("keeps the chips of a fan of eight edges with long labels apart", () => {
    const items = Array.from({ length: 8 }, (_, i) => ({ id: `e${i}`, text: `when: the finding is of kind number ${i} and it matters`, points: [{ x: 220, y: 40 }, { x: 520, y: 40 + i * 30 }] }));
    const placed = placeLabels(items);
    expect(Object.keys(placed)).toHaveLength(8);
    assertApart(placed);
  });

  it("keeps the chips of a fan apart from the cards too", () => {
    const cards: Box[] = [{ x: 0, y: 0, width: 220, height: 84 }, ...Array.from({ length: 8 }, (_, i) => ({ x: 420, y: i * 60 - 200, width: 220, height: 50 }))];
    const items = cards.slice(1).map((c, i) => ({ id: `e${i}`, text: `when: branch ${i} of the triage is the one that applies`, points: [{ x: 220, y: 28 }, { x: c.x, y: c.y + 25 }] }));
    const placed = placeLabels(items, { obstacles: cards });
    expect(Object.keys(placed)).toHaveLength(8);
    assertApart(placed, cards);
  });

  it("keeps apart the chips of a SWEny-like chain where every edge has a long `when`, wider than the gap", () => {
    const whens = [
      "novel_count is greater than 0 AND highest_severity is medium or higher",
      "at least one novel finding has fix_complexity simple or moderate AND fix_approach is provided",
      'implement.test_status is "pass" or "no-framework"',
      "all novel findings have fix_complexity complex, OR no clear fix_approach",
      "a pull request was opened and its checks are green",
      "the merge went through without conflicts",
    ];
    // Cards 220 wide, 150 apart: each chip (~330 px) is wider than its gap and reaches over its neighbours'.
    const cards: Box[] = Array.from({ length: whens.length + 1 }, (_, i) => ({ x: i * 370, y: 0, width: 220, height: 84 }));
    const items: LabelItem[] = whens.map((w, i) => ({ id: `e${i}`, text: edgeLabel({ from: "a", to: "b", when: w } as Edge), points: [{ x: i * 370 + 220, y: 28 }, { x: (i + 1) * 370, y: 42 }] }));
    const placed = placeLabels(items);
    expect(Object.keys(placed)).toHaveLength(whens.length);
    assertApart(placed);
    // With the cards as obstacles too, the chips keep off them.
    assertApart(placeLabels(items, { obstacles: cards }), cards);
  });

  it("keeps identical edges' chips apart, stacked across the path", () => {
    const items = Array.from({ length: 5 }, (_, i) => ({ id: `e${i}`, text: "when: retry", points: [{ x: 0, y: 0 }, { x: 300, y: 0 }] }));
    const placed = placeLabels(items);
    assertApart(placed);
    expect(Object.keys(placed)).toHaveLength(5);
  });

  it("steps sideways across a vertical path", () => {
    const items = Array.from({ length: 9 }, (_, i) => ({ id: `e${i}`, text: "when: this is a long condition", points: [{ x: 100, y: 0 }, { x: 100, y: 60 }] }));
    const placed = placeLabels(items);
    assertApart(placed);
    // A vertical path is short for nine chips: the ones that do not fit along it go to its sides.
    expect(new Set(Object.values(placed).map((p) => p.x)).size).toBeGreaterThan(1);
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

  it("is deterministic and keeps thousands of chips apart", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const items = Array.from({ length: 3000 }, (_, i) => {
      const from = { x: Math.floor(rnd() * 40) * 300 + 220, y: Math.floor(rnd() * 60) * 130 + 28 };
      return { id: `e${i}`, text: `when: condition number ${i}${"!".repeat(Math.floor(rnd() * 20))}`, points: [from, { x: from.x + 80 + Math.floor(rnd() * 3) * 300, y: from.y + Math.floor(rnd() * 5 - 2) * 130 }] };
    });
    const started = performance.now();
    const placed = placeLabels(items);
    const took = performance.now() - started;
    expect(Object.keys(placed)).toHaveLength(items.length);
    expect(placeLabels(items)).toEqual(placed);
    // All pairs, through a sort by x: chips that could touch are near in that order.
    const boxes = Object.values(placed).map(corner).sort((a, b) => a.x - b.x);
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length && boxes[j].x < boxes[i].x + boxes[i].width; j++) expect(apart(boxes[i], boxes[j])).toBe(true);
    expect(took).toBeLessThan(2000);
  });
});

describe("edgeRoute", () => {
  const card = (x: number, y: number): Box => ({ x, y, width: 220, height: 84 });
  it("curves a forward edge between its ends", () => {
    expect(edgeRoute({ x: 220, y: 28 }, { x: 400, y: 42 }, card(0, 0), card(400, 0)).points).toEqual([{ x: 220, y: 28 }, { x: 400, y: 42 }]);
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
