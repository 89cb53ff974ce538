import { describe, expect, it } from "vitest";
import { mockIPC } from "@tauri-apps/api/mocks";
import type { Workflow } from "../types";
import { index, sameButPositions, scheduleValidation, useValidation } from "./validation";

describe("validation display", () => {
  it("indexes findings by node and edge with their level", () => {
    const { byNode, byEdge } = index({
      errors: [{ code: "UNBOUNDED_CYCLE", message: "loop", node: "a" }, { code: "EDGE_TARGET_MISSING", message: "x", edge: "a->ghost" }],
      warnings: [{ code: "UNREACHABLE_NODE", message: "lost", node: "a" }],
    });
    expect(byNode.a.map((f) => [f.code, f.level])).toEqual([["UNBOUNDED_CYCLE", "error"], ["UNREACHABLE_NODE", "warning"]]);
    expect(byEdge["a->ghost"][0].level).toBe("error");
  });

  it("asks the engine on edits and keeps only the latest answer", async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd !== "validate") return null;
      asked.push(args);
      const wf = (args as { workflow: Workflow }).workflow;
      return { errors: wf.nodes.length > 1 ? [] : [{ code: "NO_START", message: "add a start", node: null }], warnings: [] };
    });
    const one: Workflow = { switchyard: 1, name: "w", nodes: [{ id: "a", type: "agent" } as Workflow["nodes"][number]], edges: [] };
    const two: Workflow = { ...one, nodes: [...one.nodes, { id: "start", type: "start" } as Workflow["nodes"][number]] };
    scheduleValidation(one, true, 5);
    scheduleValidation(two, true, 5); // supersedes the first before it runs
    await new Promise((r) => setTimeout(r, 20));
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ scripted: true });
    expect(useValidation.getState().report.errors).toEqual([]);
    scheduleValidation(one, false, 0);
    await new Promise((r) => setTimeout(r, 20));
    expect(useValidation.getState().report.errors[0].code).toBe("NO_START");
  });
});

describe("the system a document was read from", () => {
  it("travels with each check, and a change of it alone is checked again", async () => {
    const asked: { format?: string | null }[] = [];
    mockIPC((cmd, args) => {
      if (cmd !== "validate") return null;
      asked.push(args as { format?: string | null });
      return { errors: [], warnings: [] };
    });
    const { validateOnEdit } = await import("./validation");
    const workflow: Workflow = { switchyard: 1, name: "w", nodes: [{ id: "start", type: "start" } as Workflow["nodes"][number]], edges: [] };
    let state = { workflow, format: "sweny" };
    const listeners: ((s: typeof state, p: typeof state) => void)[] = [];
    const document = { getState: () => state, subscribe: (f: (s: typeof state, p: typeof state) => void) => (listeners.push(f), () => undefined) };
    const stop = validateOnEdit(document, () => true, () => () => undefined);
    await new Promise((r) => setTimeout(r, 10));
    // Saved as a workflow of our own: the same graph, held to our rules now.
    const previous = state;
    state = { workflow, format: "switchyard" };
    listeners.forEach((f) => f(state, previous));
    await new Promise((r) => setTimeout(r, 10));
    stop();
    expect(asked.map((a) => a.format)).toEqual(["sweny", "switchyard"]);
  });
});

describe("the open file", () => {
  it("travels with each check, so children are found beside it, and a first save checks the document again", async () => {
    const asked: { workflowPath?: string | null }[] = [];
    mockIPC((cmd, args) => {
      if (cmd !== "validate") return null;
      asked.push(args as { workflowPath?: string | null });
      return { errors: [], warnings: [] };
    });
    const { validateOnEdit } = await import("./validation");
    const workflow: Workflow = { switchyard: 1, name: "w", nodes: [{ id: "start", type: "start" } as Workflow["nodes"][number]], edges: [] };
    let state: { workflow: Workflow; path: string | null } = { workflow, path: null };
    const listeners: ((s: typeof state, p: typeof state) => void)[] = [];
    const document = { getState: () => state, subscribe: (f: (s: typeof state, p: typeof state) => void) => (listeners.push(f), () => undefined) };
    const stop = validateOnEdit(document, () => true, () => () => undefined);
    await new Promise((r) => setTimeout(r, 10));
    // Saved for the first time: the same graph, whose children can be found now.
    const previous = state;
    state = { workflow, path: "/work/flows/parent.yaml" };
    listeners.forEach((f) => f(state, previous));
    await new Promise((r) => setTimeout(r, 10));
    stop();
    expect(asked.map((a) => a.workflowPath)).toEqual([null, "/work/flows/parent.yaml"]);
  });
});

describe("what needs validating again", () => {
  const base: Workflow = { switchyard: 1, name: "w", nodes: [{ id: "start", type: "start", position: { x: 0, y: 0 } } as Workflow["nodes"][number], { id: "a", type: "agent", position: { x: 300, y: 0 } } as Workflow["nodes"][number]], edges: [] };
  it("skips a change of positions only, and not any other change", () => {
    const moved = { ...base, nodes: base.nodes.map((n) => (n.id === "a" ? { ...n, position: { x: 320, y: 10 } } : n)) };
    expect(sameButPositions(base, moved)).toBe(true);
    const prompted = { ...base, nodes: base.nodes.map((n) => (n.id === "a" ? { ...n, user_prompt: "hi" } : n)) };
    expect(sameButPositions(base, prompted)).toBe(false);
    expect(sameButPositions(base, { ...base, edges: [{ from: "start", to: "a" } as Workflow["edges"][number]] })).toBe(false);
    expect(sameButPositions(base, { ...base, name: "renamed" })).toBe(false);
    expect(sameButPositions(base, { ...base, nodes: base.nodes.slice(0, 1) })).toBe(false);
  });
});
