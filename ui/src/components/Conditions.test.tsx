// An if node's conditions are edited with the operators the node-type catalogue lists, never a list of the UI's own.
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { ReactFlowProvider } from "@xyflow/react";
import type { Workflow } from "../types";
import generated from "../generated/node-types.json";
import { useNodeTypes, type NodeTypeSpec } from "../model/nodeTypes";
import { useDocument } from "../store/document";
import { Inspector } from "./Inspector";

/** The engine's catalogue, with the if node's operators replaced. */
const withOperators = (options: string[]) =>
  (generated as NodeTypeSpec[]).map((t) => (t.type !== "if" ? t : { ...t, fields: t.fields.map((f) => (f.kind === "conditions" ? { ...f, options } : f)) }));

function inspectIf(conditions: { operator: string; value: string }[]) {
  const workflow = { switchyard: 1, name: "Pets", nodes: [{ id: "start", type: "start" }, { id: "pick", type: "if", conditions }], edges: [] } as unknown as Workflow;
  useDocument.getState().load(workflow, null);
  useDocument.getState().select({ nodes: ["pick"], edges: [] });
  render(
    <ReactFlowProvider>
      <Inspector models={[]} />
    </ReactFlowProvider>,
  );
}

const conditionsOf = () => useDocument.getState().workflow.nodes.find((n) => n.id === "pick")?.conditions;

afterEach(() => useNodeTypes.getState().set(generated as NodeTypeSpec[]));

describe("an if node's conditions", () => {
  it("offer the operators the catalogue lists, in its order", () => {
    inspectIf([{ operator: "contains", value: "cat" }]);
    const operators = () => [...(screen.getByLabelText("condition 0 operator") as HTMLSelectElement).options].map((o) => o.value);
    expect(operators()).toEqual(["contains", "equal", "expression"]);
    cleanup();
    useNodeTypes.getState().set(withOperators(["expression", "contains"]));
    inspectIf([{ operator: "contains", value: "cat" }]);
    expect(operators(), "a catalogue with other operators gives other options").toEqual(["expression", "contains"]);
  });

  it("start a new condition with the catalogue's first operator", () => {
    useNodeTypes.getState().set(withOperators(["equal", "contains"]));
    inspectIf([{ operator: "contains", value: "cat" }]);
    fireEvent.click(screen.getByTestId("add-condition"));
    expect(conditionsOf()).toEqual([{ operator: "contains", value: "cat" }, { operator: "equal", value: "" }]);
  });

  it("start an if node added from the palette as the catalogue says a new one starts, under the id it gives", () => {
    const fresh = withOperators(["expression", "equal"]).map((t) => (t.type !== "if" ? t : { ...t, newId: "branch", newFields: { conditions: [{ operator: "expression", value: "" }] } }));
    useNodeTypes.getState().set(fresh);
    useDocument.getState().load({ switchyard: 1, name: "Pets", nodes: [], edges: [] } as unknown as Workflow, null);
    const id = useDocument.getState().addNode("if", { x: 0, y: 0 });
    expect(id).toBe("branch");
    expect(useDocument.getState().workflow.nodes.find((n) => n.id === id)?.conditions).toEqual([{ operator: "expression", value: "" }]);
    // The catalogue's fields are copied: a second node's conditions are its own.
    const second = useDocument.getState().addNode("if", { x: 0, y: 200 });
    expect(second).toBe("branch_2");
    expect(useDocument.getState().workflow.nodes.find((n) => n.id === second)?.conditions).not.toBe(useDocument.getState().workflow.nodes.find((n) => n.id === id)?.conditions);
  });
});
