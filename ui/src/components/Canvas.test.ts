import { describe, expect, it } from "vitest";
import type { Edge, Node } from "../types";
import { flowEdge, sameFlowEdge } from "./Canvas";

const node = (x: number) => ({ id: "check", type: "if", position: { x, y: 0 }, conditions: [{ operator: "equals", value: "yes" }] }) as unknown as Node;
const edge = { from: "check", to: "next", handle: "true" } as unknown as Edge;
const inputs = (source: Node, more = {}) => ({ source, place: undefined, lit: undefined, problem: undefined, selected: false, running: false, ...more });

describe("canvas edges", () => {
  it("an edge whose source node only moved shows the same thing, so the canvas keeps the edge object", () => {
    const before = flowEdge(edge, "check->next:true", inputs(node(0)));
    const after = flowEdge(edge, "check->next:true", inputs(node(500)));
    expect(after).not.toBe(before);
    expect(sameFlowEdge(before, after)).toBe(true);
  });

  it("an edge selected, marked with a problem, followed by a run or with its label moved is another edge", () => {
    const before = flowEdge(edge, "check->next:true", inputs(node(0)));
    for (const more of [{ selected: true }, { problem: [{ code: "X" }] }, { lit: true, running: true }, { place: { x: 10, y: 20 } }])
      expect(sameFlowEdge(before, flowEdge(edge, "check->next:true", inputs(node(0), more)))).toBe(false);
  });
});
