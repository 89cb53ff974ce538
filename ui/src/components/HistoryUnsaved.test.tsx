// Runs made before a workflow's first save name no file: History still lists them under the workflow's name, marked
// unsaved, and once the workflow is saved such a run is saved as a test case beside that file.
import { describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { ReactFlowProvider } from "@xyflow/react";
import { mockIPC } from "@tauri-apps/api/mocks";
import { BottomPanel } from "./Panels";
import { useDocument, emptyWorkflow } from "../store/document";
import { useHistory, type RunSummary } from "../store/history";

const row = (id: string, over: Partial<RunSummary>) =>
  ({ id, workflow: "Pets", workflowRef: null, answersPath: null, status: "completed", started: "2026-11-25T10:00:00Z", durationMs: 12, pending: [], usage: {}, tokens: 0, cost: null, eval: null, live: false, ...over }) as RunSummary;

const runs = [row("before-save", {}), row("other-unsaved", { workflow: "Cats" }), row("from-file", { workflowRef: "/w/pets.yaml" })];

function engine() {
  const saved: Record<string, unknown>[] = [];
  mockIPC((cmd, args) => {
    // As the stores answer a filter: a workflow's name (in any case) or file, and statuses.
    if (cmd === "list_runs") {
      const { workflow, status } = (args as { filter: { workflow?: string; status?: string[] } }).filter;
      return runs.filter((r) => (!workflow || r.workflow.toLowerCase() === workflow.toLowerCase() || r.workflowRef === workflow) && (!status?.length || status.includes(r.status)));
    }
    if (cmd === "server_runs") return [];
    if (cmd === "save_test_case") {
      saved.push(args as Record<string, unknown>);
      return { path: "/w/pets.evals.yaml", caseId: "run-before-s", expectations: 3, recordedCalls: 0 };
    }
    return null;
  });
  return saved;
}

const showHistory = () => {
  render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
  fireEvent.click(screen.getByTestId("tab-history"));
};

describe("History and runs made before the first save", () => {
  it("lists a run of this workflow made before it was saved, marked unsaved, and saves it as a test case beside the file", async () => {
    const saved = engine();
    useDocument.getState().load({ ...emptyWorkflow(), name: "Pets" }, "/w/pets.yaml");
    showHistory();
    await waitFor(() => expect(screen.getByTestId("history-before-save")).toBeTruthy());
    expect(screen.getByTestId("history-unsaved-before-save").textContent).toMatch(/unsaved/);
    expect(screen.getByTestId("history-from-file")).toBeTruthy();
    expect(screen.queryByTestId("history-unsaved-from-file")).toBeNull();
    expect(screen.queryByTestId("history-other-unsaved"), "another workflow's unsaved run is not this one's").toBeNull();
    fireEvent.click(screen.getByTestId("history-save-case-before-save"));
    fireEvent.click(screen.getByTestId("history-save-case-from-file"));
    await waitFor(() => expect(saved.length).toBe(2));
    expect(saved).toEqual([
      { runId: "before-save", workflowPath: "/w/pets.yaml" },
      { runId: "from-file", workflowPath: null },
    ]);
    useHistory.setState({ runs: [] });
  });

  it("while the workflow has no file, its runs are listed and Save as test case says to save the workflow first", async () => {
    engine();
    useDocument.getState().load({ ...emptyWorkflow(), name: "Pets" }, null);
    showHistory();
    const button = (await screen.findByTestId("history-save-case-before-save")) as HTMLButtonElement;
    expect(button.disabled).toBe(true);
    expect(button.title).toMatch(/Save the workflow first/);
    expect((screen.getByTestId("history-save-case-from-file") as HTMLButtonElement).disabled).toBe(false);
    useHistory.setState({ runs: [] });
  });
});
