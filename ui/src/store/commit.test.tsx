// Commands act on what the person sees: the field being typed in is committed before Save, Run, Export, closing.
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { ReactFlowProvider } from "@xyflow/react";
import type { Workflow } from "../types";
import { Inspector } from "../components/Inspector";
import { useDocument } from "./document";
import * as files from "./files";

const workflow = { switchyard: 1, name: "Greeting", nodes: [{ id: "start", type: "start", initial_input: "old input" }], edges: [] } as unknown as Workflow;

afterEach(async () => {
  cleanup();
  await new Promise((r) => setTimeout(r, 0));
  clearMocks();
});

function openWithStartSelected() {
  useDocument.getState().load(workflow, "/tmp/greeting.yaml");
  useDocument.getState().select({ nodes: ["start"], edges: [] });
  render(
    <ReactFlowProvider>
      <Inspector models={[]} />
    </ReactFlowProvider>,
  );
}

describe("the field being edited", () => {
  it("is saved by Save while it still has the focus", async () => {
    const saved: Workflow[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "save_file") saved.push((args as { workflow: Workflow }).workflow);
      return null;
    });
    openWithStartSelected();
    const field = screen.getByTestId("field-initial_input") as HTMLTextAreaElement;
    field.focus();
    fireEvent.change(field, { target: { value: "my cat is hungry" } });
    expect(document.activeElement).toBe(field);
    await files.save();
    expect(saved).toHaveLength(1);
    expect(saved[0].nodes[0].initial_input, "the file gets the text as typed").toBe("my cat is hungry");
    expect(useDocument.getState().dirty, "and the unsaved mark clears only then").toBe(false);
    expect(document.activeElement, "the focus stays in the field").toBe(field);
  });

  it("says whether the start input was read as text or as JSON", () => {
    mockIPC(() => null);
    openWithStartSelected();
    const field = screen.getByTestId("field-initial_input");
    fireEvent.change(field, { target: { value: '{"pet": "cat"}' } });
    expect(screen.getByTestId("input-read-as").textContent).toMatch(/JSON object/);
    fireEvent.change(field, { target: { value: "a cat" } });
    expect(screen.getByTestId("input-read-as").textContent).toMatch(/text/);
  });

  it("is in the document as it is typed: a click in the palette next (which takes no focus) keeps it", () => {
    mockIPC(() => null);
    openWithStartSelected();
    const field = screen.getByTestId("field-initial_input") as HTMLTextAreaElement;
    field.focus();
    fireEvent.change(field, { target: { value: "my cat is hungry" } });
    // The palette adds a node and selects it: the start node's fields go away with the focus still in them.
    useDocument.getState().addNode("agent", { x: 300, y: 0 });
    expect(useDocument.getState().workflow.nodes[0].initial_input).toBe("my cat is hungry");
  });
});
