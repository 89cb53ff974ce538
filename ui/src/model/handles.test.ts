import { afterEach, describe, expect, it } from "vitest";
import type { Edge, Node } from "../types";
import generated from "../generated/node-types.json";
import { canonicalHandle, connectionProblem, sourceHandles } from "./handles";
import { useNodeTypes, type NodeTypeSpec } from "./nodeTypes";

const node = (id: string, type: Node["type"], extra: Partial<Node> = {}) => ({ id, type, ...extra }) as Node;
const edge = (from: string, to: string, handle?: string) => ({ from, to, handle }) as Edge;

afterEach(() => useNodeTypes.getState().set(generated as NodeTypeSpec[]));

describe("handles", () => {
  it("follows the handle table of SEMANTICS §1", () => {
    const ids = (n: Node) => sourceHandles(n).map((h) => h.id);
    expect(ids(node("s", "start"))).toEqual(["output"]);
    expect(ids(node("a", "agent"))).toEqual(["output", "error", "subagent"]);
    expect(ids(node("x", "script"))).toEqual(["output", "error"]);
    expect(ids(node("r", "approval"))).toEqual(["approve", "reject", "timeout"]);
    const conditions = [{ operator: "contains", value: "a" }, { operator: "expression", value: "b" }] as Node["conditions"];
    expect(ids(node("c", "if", { conditions }))).toEqual(["condition-0", "condition-1", "false"]);
  });

  it("refuses connections that break a rule, saying why", () => {
    const nodes = [
      node("start", "start"),
      node("p", "agent", { tools: { subagents: true, web_search: false } }),
      node("q", "agent"),
      node("kid", "agent"),
      node("r", "approval"),
    ];
    const edges = [edge("start", "p"), edge("p", "kid", "subagent")];
    const cases: [string, string, string, string | null][] = [
      ["p", "output", "q", null],
      ["p", "output", "start", "nothing can lead into a start node"],
      ["start", "output", "p", "these nodes are already connected this way"],
      ["r", "output", "q", 'a approval node has no "output" handle'],
      ["p", "subagent", "r", "a subagent must be an agent"],
      ["q", "subagent", "start", "nothing can lead into a start node"],
      ["p", "subagent", "p", "an agent cannot be its own subagent"],
      ["q", "subagent", "p", `turn on "subagents" in q's tools first`],
      ["p", "subagent", "q", null],
      ["p", "output", "kid", "subagents run only as tools: they take no execution edges"],
      ["kid", "output", "q", "subagents run only as tools: they take no execution edges"],
    ];
    for (const [from, handle, to, problem] of cases) {
      expect(connectionProblem(nodes, edges, from, handle, to), `${from}:${handle} -> ${to}`).toBe(problem);
    }
    const withQ = [...edges, edge("p", "q", "subagent")];
    const nodesQ = nodes.map((n) => (n.id === "q" ? { ...n, tools: { subagents: true, web_search: false } } : n));
    expect(connectionProblem(nodesQ, withQ, "q", "subagent", "p")).toBe("p is in the flow; a subagent runs only as a tool");
    expect(connectionProblem(nodesQ, [...withQ, edge("q", "kid", "subagent")].slice(1), "kid", "subagent", "q")).not.toBeNull();
  });

  it("takes an if node's true as condition 0 and its else as its false handle, and every other name as it is", () => {
    const check = node("c", "if", { conditions: [{ operator: "contains", value: "a" }] as Node["conditions"] });
    expect(canonicalHandle(check, "true")).toBe("condition-0");
    expect(canonicalHandle(check, "else")).toBe("false");
    expect(canonicalHandle(check, "false")).toBe("false");
    expect(canonicalHandle(check, "condition-1")).toBe("condition-1");
    expect(canonicalHandle(node("a", "agent"), "else"), "only the if type has these other names").toBe("else");
    expect(canonicalHandle(undefined, "true"), "without the node, a name is what it says").toBe("true");
  });

  it("reads a handle's other names from the node-type catalogue", () => {
    const specs = (generated as NodeTypeSpec[]).map((t) => (t.type === "agent" ? { ...t, handleAliases: [{ alias: "failed", handle: "error" }] } : t));
    useNodeTypes.getState().set(specs);
    expect(canonicalHandle(node("a", "agent"), "failed")).toBe("error");
    useNodeTypes.getState().set((generated as NodeTypeSpec[]).map((t) => (t.type === "if" ? { ...t, handleAliases: [] } : t)));
    expect(canonicalHandle(node("c", "if"), "true"), "a catalogue without the alias resolves nothing").toBe("true");
  });

  it("takes which types can be a subagent from the node-type catalogue", () => {
    const nodes = [node("p", "agent", { tools: { subagents: true, web_search: false } }), node("x", "script"), node("q", "agent")];
    expect(connectionProblem(nodes, [], "p", "subagent", "x")).toBe("a subagent must be an agent");
    useNodeTypes.getState().set((generated as NodeTypeSpec[]).map((t) => (t.type === "script" ? { ...t, subagent: true } : t.type === "agent" ? { ...t, subagent: false } : t)));
    expect(connectionProblem(nodes, [], "p", "subagent", "x"), "a catalogue whose scripts can be subagents").toBeNull();
    expect(connectionProblem(nodes, [], "p", "subagent", "q"), "and whose agents cannot").toBe("a subagent must be an agent");
  });

  it("refuses a second connection by a handle an existing edge names by another name", () => {
    const nodes = [node("c", "if", { conditions: [{ operator: "contains", value: "a" }] as Node["conditions"] }), node("x", "agent")];
    expect(connectionProblem(nodes, [edge("c", "x", "true")], "c", "condition-0", "x")).toBe("these nodes are already connected this way");
    expect(connectionProblem(nodes, [edge("c", "x", "else")], "c", "false", "x")).toBe("these nodes are already connected this way");
    expect(connectionProblem(nodes, [edge("c", "x", "else")], "c", "condition-0", "x")).toBeNull();
  });
});

describe("source handles, computed once", () => {
  it("are the same list for nodes of one type, and follow a node's new conditions", () => {
    expect(sourceHandles(node("a", "agent"))).toBe(sourceHandles(node("b", "agent")));
    const before = [{ operator: "contains", value: "a" }] as Node["conditions"];
    const first = sourceHandles(node("c", "if", { conditions: before }));
    expect(sourceHandles(node("c", "if", { conditions: before }))).toBe(first);
    const after = [...before!, { operator: "contains", value: "b" }] as Node["conditions"];
    expect(sourceHandles(node("c", "if", { conditions: after })).map((h) => h.id)).toEqual(["condition-0", "condition-1", "false"]);
  });

  it("follow the node type definitions when the engine gives new ones", () => {
    const agent = node("a", "agent");
    expect(sourceHandles(agent).map((h) => h.id)).toContain("error");
    const specs = (generated as NodeTypeSpec[]).map((s) => (s.type === "agent" ? { ...s, handles: s.handles.filter((h) => h.id !== "error") } : s));
    useNodeTypes.getState().set(specs);
    expect(sourceHandles(agent).map((h) => h.id)).not.toContain("error");
  });
});
