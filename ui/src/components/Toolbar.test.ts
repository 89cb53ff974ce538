import { describe, expect, it } from "vitest";
import type { Workflow } from "../types";
import { modelsNamed } from "./Toolbar";

describe("the models a workflow names", () => {
  const node = (id: string, model?: string, x = 0) => ({ id, type: "agent", model, position: { x, y: 0 } }) as Workflow["nodes"][number];
  const workflow: Workflow = { switchyard: 1, name: "w", defaults: { model: "local/a" }, nodes: [node("p", "openai/b"), node("q"), node("r", "openai/b")], edges: [] };

  it("are listed once each, the nodes' first, then the workflow's default", () => {
    expect(modelsNamed(workflow)).toBe("openai/b\nlocal/a");
  });

  it("stay the same value through a drag, so nothing that shows them renders again", () => {
    const dragged = { ...workflow, nodes: workflow.nodes.map((n) => (n.id === "q" ? node("q", undefined, 400) : n)) };
    expect(modelsNamed(dragged)).toBe(modelsNamed(workflow));
    const renamed = { ...workflow, nodes: workflow.nodes.map((n) => (n.id === "q" ? node("q", "anthropic/c") : n)) };
    expect(modelsNamed(renamed)).toBe("openai/b\nanthropic/c\nlocal/a");
  });
});
