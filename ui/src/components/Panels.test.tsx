import { describe, expect, it, vi } from "vitest";
import { act, fireEvent, render, screen } from "@testing-library/react";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { ReactFlowProvider } from "@xyflow/react";
import type { Event } from "../types";
import { ApprovalDialog, Approvals, BottomPanel, HelpPanel, PROBLEMS_SHOWN } from "./Panels";
import { useValidation } from "../store/validation";
import { useDocument, emptyWorkflow } from "../store/document";
import { useRun } from "../store/run";
import { useDialogs } from "../store/dialogs";
import { useHistory, type RunSummary } from "../store/history";
import { SHORTCUTS } from "../shortcuts";
import { useRunControl } from "../store/runControl";
import { TOKENS_UNREPORTED } from "../model/usage";

const ev = (seq: number, body: Record<string, unknown>): Event => ({ seq, run: "r", ts: "", ...body }) as Event;

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

  it("the approval dialog for a tool call shows the tool and its arguments, and rejecting sends the note", () => {
    const onDecide = vi.fn().mockResolvedValue(undefined);
    const approval = { node: "helper", message: "Allow?", previousOutput: "", tool: { tool: "files__write_file", input: { path: "notes.txt" } } };
    render(<ApprovalDialog approval={approval} onClose={() => {}} onDecide={onDecide} />);
    expect(screen.getByTestId("approval-tool").textContent).toBe("files__write_file");
    expect(JSON.parse(screen.getByTestId("approval-previous").textContent ?? "")).toEqual({ path: "notes.txt" });
    fireEvent.change(screen.getByTestId("approval-note"), { target: { value: "not there" } });
    fireEvent.click(screen.getByTestId("approval-reject"));
    expect(onDecide).toHaveBeenCalledWith("reject", "not there");
    useDialogs.setState({ approvalNotes: {} });
  });

  it("the approval dialog for a child run's approval names its path and asks what the child asks, not a tool call", () => {
    const onDecide = vi.fn().mockResolvedValue(undefined);
    const approval = {
      node: "summarize",
      message: "Publish this summary?",
      previousOutput: "a summary",
      tool: { tool: "review", input: { childRun: "b0c96d8c-1111", message: "Publish this summary?", previousOutput: "a summary" } },
      child: { run: "b0c96d8c-1111", node: "review" },
    };
    render(<ApprovalDialog approval={approval} onClose={() => {}} onDecide={onDecide} />);
    expect(screen.getByTestId("approval-path").textContent).toBe("Approval: summarize › review");
    expect(screen.getByTestId("approval-child").textContent).toContain("b0c96d8c");
    expect(screen.getByTestId("approval-previous").textContent).toBe("a summary");
    expect(screen.queryByTestId("approval-tool")).toBeNull();
    fireEvent.click(screen.getByTestId("approval-approve"));
    expect(onDecide).toHaveBeenCalledWith("approve", "");
  });

  it("when a colleague decides an approval whose dialog is open, the dialog says who and when and keeps the note typed in it", () => {
    useRun.getState().begin("r", ["start", "review"]);
    const at = new Date(2026, 10, 25, 10, 42, 7).toISOString();
    act(() => useRun.getState().apply([ev(1, { type: "approval:requested", node: "review", message: "Ship it?", previousOutput: "draft" })]));
    render(<Approvals />);
    fireEvent.change(screen.getByTestId("approval-note"), { target: { value: "check the numbers first" } });
    act(() => useRun.getState().apply([ev(2, { type: "approval:received", node: "review", decision: "approve", note: "", by: "bob", ts: at })]));
    expect(screen.getByTestId("approval-decided-elsewhere").textContent).toContain("bob approved this at 10:42");
    const note = screen.getByTestId("approval-note") as HTMLTextAreaElement;
    expect(note.value).toBe("check the numbers first");
    expect(note.readOnly).toBe(true); // kept to copy, never sent
    expect(screen.queryByTestId("approval-approve")).toBeNull();
    // The run list says who decided, from the same event.
    expect(useRun.getState().executions.find((r) => r.node === "review")?.decided).toBe("approved by bob, 10:42");
    fireEvent.click(screen.getByTestId("approval-close"));
    expect(screen.queryByTestId("approval-dialog")).toBeNull();
    expect(useDialogs.getState().approvalNotes.review).toBeUndefined();
    useRun.getState().reset();
  });

  it("an approval decided from its own dialog closes when the decision lands, however late, and never says a colleague decided it", async () => {
    useRun.getState().begin("r", ["start", "review"]);
    act(() => useRun.getState().apply([ev(1, { type: "approval:requested", node: "review", message: "Ship it?", previousOutput: "draft" })]));
    // As on a server: the decision is kept at once, and a worker applies it later.
    const decided: unknown[] = [];
    mockIPC((cmd, args) => (cmd === "decide" ? (decided.push(args), null) : null));
    render(<Approvals />);
    await act(async () => fireEvent.click(screen.getByTestId("approval-approve")));
    expect(decided).toMatchObject([{ runId: "r", node: "review", decision: "approve" }]);
    expect(screen.getByTestId("approval-dialog")).toBeTruthy(); // still waiting for the worker
    act(() => useRun.getState().apply([ev(2, { type: "approval:received", node: "review", decision: "approve", note: "", by: "browser", ts: new Date().toISOString() })]));
    expect(screen.queryByTestId("approval-decided-elsewhere")).toBeNull();
    expect(screen.queryByTestId("approval-dialog")).toBeNull();
    // A second round of the same approval, decided by a colleague this time, is said to be theirs.
    act(() => useRun.getState().apply([ev(3, { type: "approval:requested", node: "review", message: "Ship it now?", previousOutput: "draft 2" })]));
    expect(screen.getByTestId("approval-dialog")).toBeTruthy();
    act(() => useRun.getState().apply([ev(4, { type: "approval:received", node: "review", decision: "reject", note: "", by: "bob", ts: new Date().toISOString() })]));
    expect(screen.getByTestId("approval-decided-elsewhere").textContent).toContain("bob rejected this");
    clearMocks();
    useRun.getState().reset();
  });

  it("keeps a note typed in the approval dialog when it is put off with Later", () => {
    const approval = { node: "legal", message: "OK?", previousOutput: "" };
    const first = render(<ApprovalDialog approval={approval} onClose={() => {}} onDecide={vi.fn()} />);
    fireEvent.change(screen.getByTestId("approval-note"), { target: { value: "check clause 4" } });
    fireEvent.click(screen.getByText("Later"));
    first.unmount();
    render(<ApprovalDialog approval={approval} onClose={() => {}} onDecide={vi.fn()} />);
    expect((screen.getByTestId("approval-note") as HTMLTextAreaElement).value).toBe("check clause 4");
    useDialogs.setState({ approvalNotes: {} });
  });

  it("lists problems and selects the node when one is clicked", () => {
    useDocument.getState().load(emptyWorkflow(), null);
    useValidation.getState().setReport({ errors: [{ code: "NO_TERMINAL_REACHABLE", message: "never ends", node: "loop" }], warnings: [] });
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-problems"));
    fireEvent.click(screen.getByText("never ends", { exact: false }));
    expect(useDocument.getState().selection.nodes).toEqual(["loop"]);
  });

  it("names a problem's node, edge and branch as the canvas does, never by their ids", () => {
    const workflow = {
      ...emptyWorkflow(),
      nodes: [
        { id: "start", type: "start" },
        { id: "triage", type: "if", name: "Severity", conditions: [{ operator: "contains", value: "high" }] },
        { id: "agent_3", type: "agent", name: "Page" },
      ],
      edges: [{ from: "start", to: "triage" }, { from: "triage", to: "agent_3", max_iterations: 0 }],
    } as unknown as Parameters<ReturnType<typeof useDocument.getState>["load"]>[0];
    useDocument.getState().load(workflow, null);
    useValidation.getState().setReport({
      errors: [{ code: "MAX_ITERATIONS_BELOW_ONE", message: "edge triage->agent_3 has max_iterations 0; it must be at least 1 (1 means one retry)", edge: "triage->agent_3" }],
      warnings: [
        { code: "UNCONNECTED_BRANCH", message: "branch `condition-0` is not connected; when it matches, the branch ends here", node: "triage" },
        { code: "UNCONNECTED_BRANCH", message: "branch `false` is not connected; when nothing matches, the branch ends here", node: "triage" },
      ],
    });
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-problems"));
    const items = [...screen.getByTestId("problems").querySelectorAll("li")].map((li) => li.textContent);
    expect(items).toEqual([
      "Severity → Page edge Severity → Page has max_iterations 0; it must be at least 1 (1 means one retry) MAX_ITERATIONS_BELOW_ONE",
      "Severity branch “high” is not connected; when it matches, the branch ends here UNCONNECTED_BRANCH",
      "Severity branch “else” is not connected; when nothing matches, the branch ends here UNCONNECTED_BRANCH",
    ]);
  });

  it("lists the first problems of thousands, and all of them when asked", () => {
    const nodes = [{ id: "start", type: "start" }, ...Array.from({ length: 1000 }, (_, i) => ({ id: `n${i}`, type: "agent" }))];
    useDocument.getState().load({ ...emptyWorkflow(), nodes } as unknown as Parameters<ReturnType<typeof useDocument.getState>["load"]>[0], null);
    const many = Array.from({ length: 1000 }, (_, i) => ({ code: "UNREACHABLE", message: `node \`n${i}\` is unreachable`, node: `n${i}` }));
    act(() => useValidation.getState().setReport({ errors: many, warnings: [] }));
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-problems"));
    const rows = () => screen.getByTestId("problems").querySelectorAll("li[data-code]");
    expect(rows()).toHaveLength(PROBLEMS_SHOWN);
    expect(screen.getByTestId("problems-more").textContent).toBe(`Show ${1000 - PROBLEMS_SHOWN} more`);
    fireEvent.click(screen.getByTestId("problems-more"));
    expect(rows()).toHaveLength(1000);
    expect(screen.queryByTestId("problems-more")).toBeNull();
    // The next report starts short again.
    act(() => useValidation.getState().setReport({ errors: many.slice(1), warnings: [] }));
    expect(rows()).toHaveLength(PROBLEMS_SHOWN);
  });

  it("the run list shows one row per execution, grows streamed text in place, and selects a node on click", () => {
    useDocument.getState().load(emptyWorkflow(), null);
    useRun.getState().begin("r", ["start", "draft"]);
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    act(() =>
      useRun.getState().apply([
        ev(1, { type: "workflow:start", workflow: "w", input: null }),
        ev(2, { type: "node:enter", node: "draft", iteration: 1, instruction: "write" }),
        ...Array.from({ length: 30 }, (_, i) => ev(3 + i, { type: "node:progress", node: "draft", message: `w${i} ` })),
      ]),
    );
    fireEvent.click(screen.getByTestId("tab-run"));
    const rows = () => screen.getByTestId("run-list").querySelectorAll("tbody tr");
    expect(rows()).toHaveLength(1); // thirty tokens, one row
    expect(screen.getByTestId("run-row-draft-1").textContent).toContain("w29");
    act(() => useRun.getState().apply([ev(40, { type: "node:exit", node: "draft", iteration: 1, durationMs: 1500, usage: { inputTokens: 10, outputTokens: 32 }, result: { status: "success", data: { text: "the draft" }, toolCalls: [] } })]));
    const row = screen.getByTestId("run-row-draft-1");
    expect(row.dataset.status).toBe("succeeded");
    expect(row.textContent).toContain("1.5 s");
    expect(row.textContent).toContain("42");
    expect(row.textContent).toContain("the draft");
    fireEvent.click(row);
    expect(useDocument.getState().selection.nodes).toEqual(["draft"]);
  });

  it("the run list says a streamed local model step's tokens were not reported, instead of nothing or 0", () => {
    const workflow = { ...emptyWorkflow(), nodes: [...emptyWorkflow().nodes, { id: "draft", type: "agent", position: { x: 300, y: 0 } }] } as ReturnType<typeof emptyWorkflow>;
    useDocument.getState().load(workflow, null);
    useRunControl.setState({ mode: "model" });
    useRun.getState().begin("r", ["start", "draft"]);
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    act(() =>
      useRun.getState().apply([
        ev(1, { type: "workflow:start", workflow: "w", input: null }),
        ev(2, { type: "node:enter", node: "draft", iteration: 1, instruction: "write" }),
        ev(3, { type: "node:progress", node: "draft", message: "streamed " }),
        ev(4, { type: "node:exit", node: "draft", iteration: 1, durationMs: 900, result: { status: "success", data: { text: "streamed" }, toolCalls: [] } }),
      ]),
    );
    fireEvent.click(screen.getByTestId("tab-run"));
    const cell = screen.getByTestId("run-tokens-draft-1");
    expect(cell.textContent).toBe("not reported");
    expect(cell.title).toContain(TOKENS_UNREPORTED);
    act(() => useRunControl.setState({ mode: "answers" }));
    expect(screen.getByTestId("run-tokens-draft-1").textContent, "an answers file calls no model: nothing to report").toBe("");
  });

  it("the events tab filters the raw events", () => {
    useRun.getState().begin("r", ["a"]);
    useRun.getState().apply([
      ev(1, { type: "workflow:start", workflow: "w", input: null }),
      ev(2, { type: "route", from: "start", to: "a", reason: "only path" }),
      ev(3, { type: "node:skipped", node: "b" }),
    ]);
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-events"));
    expect(screen.getByTestId("events").querySelectorAll("li")).toHaveLength(3);
    fireEvent.change(screen.getByTestId("events-filter"), { target: { value: "route" } });
    expect(screen.getByTestId("events").querySelectorAll("li")).toHaveLength(1);
  });

  it("the help panel lists every shortcut the key handler runs", () => {
    render(<HelpPanel onClose={() => {}} />);
    for (const s of SHORTCUTS) expect(screen.getByText(s.keys)).toBeTruthy();
    expect(SHORTCUTS.some((s) => s.keys === "Ctrl+Shift+E")).toBe(true);
  });

  it("History shows each run's cost as the engine wrote it, nothing for a run that used no tokens, and marks the runs of test cases", () => {
    useDocument.getState().load(emptyWorkflow(), null);
    const row = (id: string, over: Partial<RunSummary>) => ({ id, workflow: "Pets", workflowRef: "/w/pets.yaml", answersPath: null, status: "completed", started: "2026-11-25T10:00:00Z", durationMs: 12, pending: [], usage: {}, tokens: 0, cost: null, costText: null, priced: null, eval: null, live: false, ...over }) as RunSummary;
    useHistory.setState({
      runs: [
        row("priced", { tokens: 300, cost: 0.0012, costText: "$0.0012", priced: "kept" }),
        row("offline", { eval: "eval-1", cost: 0, costText: "$0.00", priced: "kept" }),
        row("unpriced", { tokens: 40 }),
        row("older", { tokens: 12, cost: 0.006, costText: "$0.006", priced: "current" }),
      ],
    });
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-history"));
    expect(screen.getByTestId("history-cost-priced").textContent).toBe("$0.0012");
    expect(screen.getByTestId("history-cost-priced").title).toMatch(/prices the run kept/);
    expect(screen.getByTestId("history-cost-older").textContent).toBe("$0.006*");
    expect(screen.getByTestId("history-cost-older").title).toMatch(/priced with your current settings/);
    expect(screen.getByTestId("history-cost-offline").textContent).toBe("");
    expect(screen.getByTestId("history-cost-unpriced").textContent).toBe("—");
    expect(screen.getByTestId("history-cost-unpriced").title).toMatch(/no price/);
    expect(screen.getByTestId("history-eval-offline").textContent).toMatch(/test case/);
    expect(screen.queryByTestId("history-eval-priced")).toBeNull();
    useHistory.setState({ runs: [] });
  });

  it("History's columns have fixed widths beside the inspector, and a cell cut short shows its whole text on hover", () => {
    useDocument.getState().load(emptyWorkflow(), null);
    const long = "Alert triage for the on-call team with a very long name";
    const run = { id: "r1", workflow: long, workflowRef: "/w/triage.yaml", answersPath: null, status: "paused", started: "2026-11-25T10:00:00Z", durationMs: 12, pending: ["review", "sign_off"], usage: {}, tokens: 0, cost: null, eval: null, live: false } as unknown as RunSummary;
    useHistory.setState({ runs: [run] });
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-history"));
    const heads = [...screen.getByTestId("history").querySelectorAll("thead th")].map((th) => th.className);
    expect(heads.every((c) => /\bcol-/.test(c)), "every column has its width").toBe(true);
    const cells = [...screen.getByTestId("history-r1").querySelectorAll("td")];
    expect(cells[2].title).toBe(`${long} — /w/triage.yaml`);
    expect(cells[3].title, "the start in full").toBe(new Date(run.started).toLocaleString());
    expect(cells[7].title).toBe("review, sign_off");
    expect(cells[0].title).toBe("waits for you");
    useHistory.setState({ runs: [] });
  });
});
