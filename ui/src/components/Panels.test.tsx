import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen } from "@testing-library/react";
import { ApprovalDialog, BottomPanel } from "./Panels";
import { useValidation } from "../store/validation";
import { useDocument, emptyWorkflow } from "../store/document";

describe("panels", () => {
  it("the approval dialog shows what reached the step and sends the decision with the note", async () => {
    const onDecide = vi.fn().mockResolvedValue(undefined);
    const onClose = vi.fn();
    render(<ApprovalDialog approval={{ node: "review", message: "Publish?", previousOutput: "<b>draft</b>" }} onClose={onClose} onDecide={onDecide} />);
    expect(screen.getByTestId("approval-previous").textContent).toBe("<b>draft</b>"); // text, never HTML
    fireEvent.click(screen.getByText("Later"));
    expect(onClose).toHaveBeenCalled();
    fireEvent.change(screen.getByTestId("approval-note"), { target: { value: "ship it" } });
    fireEvent.click(screen.getByTestId("approval-approve"));
    expect(onDecide).toHaveBeenCalledWith("approve", "ship it");
    expect((screen.getByText("Later") as HTMLButtonElement).disabled).toBe(true); // no second decision in flight
  });

  it("lists problems and selects the node when one is clicked", () => {
    useDocument.getState().load(emptyWorkflow(), null);
    useValidation.getState().setReport({ errors: [{ code: "NO_TERMINAL_REACHABLE", message: "never ends", node: "loop" }], warnings: [] });
    render(<BottomPanel onDecide={() => {}} />);
    const item = screen.getByText("never ends", { exact: false });
    fireEvent.click(item);
    expect(useDocument.getState().selection.nodes).toEqual(["loop"]);
  });
});
