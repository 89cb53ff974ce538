import { describe, expect, it } from "vitest";
import type { Edge, Node, Workflow } from "../types";
import { NODE_WIDTH } from "./handles";
import { layout, needsLayout } from "./layout";

const wf = (nodes: Partial<Node>[], edges: Partial<Edge>[]): Workflow => ({ switchyard: 1, name: "t", nodes: nodes as Node[], edges: edges as Edge[] });
const overlap = (a: Node, b: Node) => Math.abs(a.position!.x! - b.position!.x!) < NODE_WIDTH && Math.abs(a.position!.y! - b.position!.y!) < 84;

describe("layout", () => {
  it("lays a SWEny-like triage file out left to right with no two nodes overlapping", async () => {
    const ids = ["start", "gather", "investigate", "novel", "known", "create_issue", "link", "notify", "skip", "done", "report", "close"];
    const nodes = ids.map((id) => ({ id, type: id === "start" ? "start" : "agent" }) as Partial<Node>);
    const edges = [
      ["start", "gather"], ["gather", "investigate"], ["investigate", "novel", "the alert is new and needs an issue"], ["investigate", "known", "the alert matches a known issue"],
      ["investigate", "skip", "the alert is noise and can be ignored"], ["novel", "create_issue"], ["known", "link"], ["create_issue", "notify"], ["link", "notify"],
      ["notify", "done"], ["skip", "report"], ["report", "close"],
    ].map(([from, to, when]) => ({ from, to, ...(when ? { when } : {}) }));
    const laid = await layout(wf(nodes, edges));
    const at = new Map(laid.nodes.map((n) => [n.id, n]));
    for (const e of edges) expect(at.get(e.from)!.position!.x!).toBeLessThan(at.get(e.to)!.position!.x!);
    for (let i = 0; i < laid.nodes.length; i++) for (const b of laid.nodes.slice(i + 1)) expect(overlap(laid.nodes[i], b)).toBe(false);
    expect(laid.edges).toBe(edges as unknown as Edge[]);
  });

  it("survives loops and self loops, and hangs subagents below their agent", async () => {
    const laid = await layout(
      wf(
        [{ id: "start", type: "start" }, { id: "a", type: "agent", tools: { subagents: true } }, { id: "b", type: "agent" }, { id: "helper", type: "agent" }],
        [{ from: "start", to: "a" }, { from: "a", to: "b" }, { from: "b", to: "a", max_iterations: 3 }, { from: "b", to: "b", max_iterations: 2 }, { from: "a", to: "helper", handle: "subagent" }],
      ),
    );
    const at = new Map(laid.nodes.map((n) => [n.id, n.position!]));
    expect(at.get("a")!.x!).toBeLessThan(at.get("b")!.x!);
    expect(at.get("helper")!.y!).toBeGreaterThan(at.get("a")!.y!);
    expect(at.get("helper")!.x).toBe(at.get("a")!.x);
  });

  it("knows a file without positions", () => {
    expect(needsLayout(wf([{ id: "a", type: "start" }, { id: "b", type: "agent" }], []))).toBe(true);
    expect(needsLayout(wf([{ id: "a", type: "start", position: { x: 0, y: 0 } }, { id: "b", type: "agent", position: { x: 0, y: 0 } }], []))).toBe(true);
    expect(needsLayout(wf([{ id: "a", type: "start", position: { x: 0, y: 0 } }, { id: "b", type: "agent", position: { x: 300, y: 0 } }], []))).toBe(false);
  });
});
