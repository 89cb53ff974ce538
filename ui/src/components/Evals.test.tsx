// The Evals tab as a person sees it: the cases, rows that update as their reports arrive, what failed, the compare
// view with both outputs and their differences, and the canvas's nodes coloured by what became of them.
import { beforeEach, describe, expect, it } from "vitest";
import { act, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { ReactFlowProvider } from "@xyflow/react";
import { mockIPC } from "@tauri-apps/api/mocks";
import type { Workflow } from "../types";
import type { Node, NodeProps } from "@xyflow/react";
import { BottomPanel } from "./Panels";
import { WorkflowNode, type CanvasNodeData } from "./WorkflowNode";
import { useDocument } from "../store/document";
import type { EvalReport } from "../store/evals";
import { caseChange, caseReport, evalReport, send, freshStores } from "../store/evals.fixtures";

const workflow = { switchyard: 1, name: "Loop", nodes: [{ id: "start", type: "start" }, { id: "fix", type: "agent", name: "Fix it" }, { id: "review", type: "agent" }], edges: [] } as unknown as Workflow;
const cases = [
  { id: "fixed-then-done", description: "the happy path", expectations: 3 },
  { id: "stops-after-three", description: null, expectations: 2 },
];

function engine(onRun: (args: { caseId: string | null; onCase: unknown }) => Promise<EvalReport> | EvalReport, exists = true) {
  mockIPC((cmd, args) => {
    if (cmd === "eval_suite") return { file: "/w/loop.evals.yaml", exists, cases: exists ? cases : [], last: null };
    if (cmd === "run_evals") return onRun(args as { caseId: string | null; onCase: unknown });
    if (cmd === "list_runs") return [];
    return null;
  });
}

const showTab = () => {
  render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
  fireEvent.click(screen.getByTestId("tab-evals"));
};

beforeEach(() => freshStores(workflow));

describe("the Evals tab", () => {
  it("says how to make test cases when the workflow has none", async () => {
    engine(() => evalReport([]), false);
    showTab();
    const empty = await screen.findByTestId("evals-empty");
    expect(empty.textContent).toMatch(/loop\.evals\.yaml does not exist/);
    expect(empty.textContent).toMatch(/Save as test case/);
  });

  it("says to save first when the workflow has no file", () => {
    useDocument.getState().load(workflow, null);
    engine(() => evalReport([]));
    showTab();
    expect(screen.getByTestId("evals-empty").textContent).toMatch(/no file yet/);
  });

  it("Run all: each row updates as its case's report arrives; a failed case shows what did not hold", async () => {
    let finish: (r: EvalReport) => void = () => {};
    let channel: unknown;
    engine(({ onCase }) => {
      channel = onCase;
      return new Promise((resolve) => (finish = resolve));
    });
    showTab();
    await screen.findByTestId("eval-case-stops-after-three");
    expect(screen.getByTestId("eval-case-fixed-then-done").textContent).toMatch(/not run yet/);
    fireEvent.click(screen.getByTestId("eval-run-all"));
    await waitFor(() => expect(screen.getByTestId("eval-case-fixed-then-done").dataset.verdict).toBe("running"));
    expect((screen.getByTestId("eval-run-all") as HTMLButtonElement).disabled).toBe(true);

    const failed = caseReport("stops-after-three", "failed", { failures: [{ node: "fix", expected: 'equals "Round 3"', actual: "Round 2" }], tokens: 120, cost: 0.0012, costText: "$0.0012", durationMs: 1500 });
    act(() => send(channel, 0, failed));
    const row = screen.getByTestId("eval-case-stops-after-three");
    expect(row.dataset.verdict).toBe("failed");
    expect(row.textContent).toContain("120");
    expect(row.textContent).toContain("1.5 s");
    expect(row.textContent).toContain("$0.0012");
    expect(screen.getByTestId("eval-case-fixed-then-done").dataset.verdict).toBe("running");
    const failures = screen.getByTestId("eval-failures-stops-after-three").textContent;
    expect(failures).toBe('Fix it: expected equals "Round 3", got Round 2');

    act(() => send(channel, 1, caseReport("fixed-then-done")));
    expect(screen.getByTestId("eval-case-fixed-then-done").dataset.verdict).toBe("passed");
    await act(async () => finish(evalReport([caseReport("fixed-then-done"), failed])));
    expect((screen.getByTestId("eval-run-all") as HTMLButtonElement).disabled).toBe(false);
  });

  it("a case that could not run shows its message in the app's words, with its code", async () => {
    engine(() => evalReport([caseReport("fixed-then-done", "error", { error: { code: "ANSWERS_UNREADABLE", message: "loop.script.yaml cannot be read" }, runId: undefined })]));
    showTab();
    fireEvent.click(await screen.findByTestId("eval-run-fixed-then-done"));
    await waitFor(() => expect(screen.getByTestId("eval-case-fixed-then-done").dataset.verdict).toBe("error"));
    expect(screen.getByTestId("eval-case-fixed-then-done").textContent).toMatch(/could not run/);
    expect(screen.getByTestId("eval-failures-fixed-then-done").textContent).toMatch(/^loop\.script\.yaml cannot be read\. Fix the answers .* ANSWERS_UNREADABLE$/);
    expect((screen.getByTestId("eval-open-fixed-then-done") as HTMLButtonElement).disabled).toBe(true);
  });

  it("after a comparison: the summary, each case's change, and the compare view of the selected case", async () => {
    const regressed = caseChange("stops-after-three", "regressed", [
      { node: "fix", change: "regressed", before: "Round 3 of three", after: "Round 2 of three" },
      { node: "review", change: "unchanged", before: "Not yet.", after: "Not yet." },
    ]);
    engine(() => evalReport([caseReport("fixed-then-done"), caseReport("stops-after-three", "failed")], [caseChange("fixed-then-done", "unchanged"), regressed]));
    showTab();
    fireEvent.click(await screen.findByTestId("eval-run-all"));
    await waitFor(() => expect(screen.getByTestId("eval-summary").textContent).toBe("vs the evaluation before: 1 regressed, 0 improved, 1 unchanged"));
    expect(screen.getByTestId("eval-change-stops-after-three").textContent).toMatch(/regressed/);
    expect(screen.getByTestId("tab-evals").textContent).toMatch(/Evals\s*1/); // the regressions are counted on the tab

    fireEvent.click(screen.getByTestId("eval-case-stops-after-three"));
    const outputs = screen.getByTestId("compare-outputs");
    expect(outputs.dataset.node).toBe("fix"); // the regressed node first
    expect(screen.getByTestId("compare-before").textContent).toBe("Round 3 of three");
    expect(screen.getByTestId("compare-after").textContent).toBe("Round 2 of three");
    expect([...screen.getByTestId("compare-before").querySelectorAll("mark.removed")].map((m) => m.textContent)).toEqual(["3"]);
    expect([...screen.getByTestId("compare-after").querySelectorAll("mark.added")].map((m) => m.textContent)).toEqual(["2"]);

    // Picking another node shows its outputs, and selects it on the canvas.
    fireEvent.click(screen.getByTestId("compare-node-review"));
    expect(screen.getByTestId("compare-outputs").dataset.node).toBe("review");
    expect(useDocument.getState().selection.nodes).toEqual(["review"]);
    expect(screen.getByTestId("compare-after").querySelectorAll("mark")).toHaveLength(0);
  });

  it("a case that asked a model again says which nodes and why in its row, and marks them on the canvas while it is shown", async () => {
    const asked = { fix: "its prompt, model, tools or schema changed", review: "what reached it changed" };
    engine(() => evalReport([caseReport("fixed-then-done", "passed", { asked }), caseReport("stops-after-three")]));
    showTab();
    fireEvent.click(await screen.findByTestId("eval-run-all"));
    const words = await screen.findByTestId("eval-asked-fixed-then-done");
    expect(words.textContent).toBe(" Asked the model again: Fix it (its prompt, model, tools or schema changed), review (what reached it changed)");
    expect(screen.queryByTestId("eval-asked-stops-after-three")).toBeNull();

    const fix = workflow.nodes[1];
    const canvas = render(
      <ReactFlowProvider>
        <WorkflowNode {...({ id: "fix", data: { node: fix }, selected: false, type: "workflow" } as unknown as NodeProps<Node<CanvasNodeData>>)} />
      </ReactFlowProvider>,
    );
    expect(canvas.queryByTestId("node-asked-fix")).toBeNull(); // no case is shown yet
    fireEvent.click(screen.getByTestId("eval-case-fixed-then-done"));
    const mark = await canvas.findByTestId("node-asked-fix");
    expect(mark.getAttribute("title")).toBe("asked the model again: its prompt, model, tools or schema changed");
    expect(canvas.getByTestId("node-fix").className).toContain("asked-again");
    fireEvent.click(screen.getByTestId("eval-case-stops-after-three"));
    await waitFor(() => expect(canvas.queryByTestId("node-asked-fix")).toBeNull());
  });

  it("names what failed as the canvas does: an if node's branch by its label, nodes by name (their id only where two share it)", async () => {
    const branching = {
      switchyard: 1,
      name: "Triage",
      nodes: [
        { id: "start", type: "start" },
        { id: "triage", type: "if", name: "Severity", conditions: [{ operator: "contains", value: "high" }] },
        { id: "agent_3", type: "agent", name: "Page" },
        { id: "agent_4", type: "agent", name: "Page" },
      ],
      edges: [{ from: "triage", to: "agent_3", handle: "condition-0" }, { from: "triage", to: "agent_4", handle: "false" }],
    } as unknown as Workflow;
    freshStores(branching);
    const failures = [
      { node: "triage", expected: 'equals {"branch":"condition-0"}', actual: '{"branch":"false"}' },
      { node: "triage", expected: "routes to agent_3", actual: "went to agent_4" },
    ];
    engine(() => evalReport([caseReport("fixed-then-done", "failed", { failures })]));
    showTab();
    fireEvent.click(await screen.findByTestId("eval-run-fixed-then-done"));
    await waitFor(() => expect(screen.getByTestId("eval-case-fixed-then-done").dataset.verdict).toBe("failed"));
    const lines = [...screen.getByTestId("eval-failures-fixed-then-done").querySelectorAll("li")].map((li) => li.textContent);
    expect(lines).toEqual(["Severity: expected equals branch “high”, got branch “else”", "Severity: expected routes to Page (agent_3), got went to Page (agent_4)"]);
  });

  it("a node that produced nothing reads “but it was skipped / waited for a decision / did not run”, never “got”", async () => {
    const failures = [
      { node: "fix", name: "Fix it (fix)", expected: 'contains "Round 3"', actual: "was skipped" },
      { node: "review", expected: "is decided approve", actual: "waited for a decision" },
      { node: "review", expected: 'contains "ok"', actual: "did not run" },
    ];
    engine(() => evalReport([caseReport("fixed-then-done", "failed", { failures })]));
    showTab();
    fireEvent.click(await screen.findByTestId("eval-run-fixed-then-done"));
    await waitFor(() => expect(screen.getByTestId("eval-case-fixed-then-done").dataset.verdict).toBe("failed"));
    const lines = [...screen.getByTestId("eval-failures-fixed-then-done").querySelectorAll("li")].map((li) => li.textContent);
    expect(lines).toEqual(['Fix it: expected contains "Round 3", but it was skipped', "review: expected is decided approve, but it waited for a decision", 'review: expected contains "ok", but it did not run']);
  });
});
