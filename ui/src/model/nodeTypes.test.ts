// What the editor knows about a node type comes from the engine's node-type catalogue, not from the type's name.
import { afterEach, describe, expect, it } from "vitest";
import type { Node } from "../types";
import generated from "../generated/node-types.json";
import { nodeSummary } from "../components/WorkflowNode";
import { emptyWorkflow } from "../store/document";
import { canBeSubagent, entryType, fieldPlaceholder, routesByConditions, useNodeTypes, type NodeTypeSpec } from "./nodeTypes";

const catalogue = generated as NodeTypeSpec[];
afterEach(() => useNodeTypes.getState().set(catalogue));

describe("the node-type catalogue", () => {
  it("says which types can be a subagent, where a run begins and which route by their conditions", () => {
    expect(catalogue.filter((t) => canBeSubagent(t.type)).map((t) => t.type)).toEqual(["agent"]);
    expect(entryType()).toBe("start");
    expect(catalogue.filter((t) => routesByConditions(t.type)).map((t) => t.type)).toEqual(["if"]);
  });

  it("gives a new workflow one node of the entry type, as a new node of that type", () => {
    expect(emptyWorkflow().nodes).toEqual([{ id: "start", type: "start", position: { x: 0, y: 0 } }]);
    useNodeTypes.getState().set(catalogue.map((t) => (t.type === "start" ? { ...t, newId: "begin" } : t)));
    expect(emptyWorkflow().nodes.map((n) => n.id)).toEqual(["begin"]);
  });

  it("shows an approval that asks nothing of its own with the question it asks, the engine's default", () => {
    const asks = fieldPlaceholder("approval", "message");
    expect(asks).toBe(catalogue.find((t) => t.type === "approval")?.newFields.message);
    expect(nodeSummary({ id: "r", type: "approval" } as Node)).toBe(asks);
    expect(nodeSummary({ id: "r", type: "approval", message: "Ship it?" } as Node)).toBe("Ship it?");
  });
});
