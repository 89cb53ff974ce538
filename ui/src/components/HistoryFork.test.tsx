// A fork is listed in History linked to the run it forked: the link says which, and opens that run.
import { describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { ReactFlowProvider } from "@xyflow/react";
import { mockIPC } from "@tauri-apps/api/mocks";
import { BottomPanel } from "./Panels";
import { useDocument, emptyWorkflow } from "../store/document";
import type { RunSummary } from "../store/history";

const row = (id: string, forkedFrom: string | null) =>
  ({ id, workflow: "Sums", workflowRef: "/w/sums.yaml", answersPath: null, status: "completed", started: "2026-11-28T10:00:00Z", durationMs: 12, pending: [], usage: {}, tokens: 0, prices: null, cost: null, costText: null, priced: null, eval: null, forkedFrom, origin: { via: "local", by: null }, cancelledBy: null, version: null, queue: null, ahead: null, waiting: null, parent: null, live: false, server: null }) as RunSummary;

describe("History and forks", () => {
  it("marks a fork with the run it forked, and opens that run when the mark is pressed", async () => {
    const opened: string[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "list_runs") return [row("fork-1234567", "first-1234567"), row("first-1234567", null)];
      if (cmd === "server_runs") return [];
      if (cmd === "open_run") opened.push((args as { runId: string }).runId);
      return null;
    });
    useDocument.getState().load({ ...emptyWorkflow(), name: "Sums" }, "/w/sums.yaml");
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-history"));
    const link = await screen.findByTestId("history-fork-fork-1234567");
    expect(link.textContent).toBe(" fork of first-12");
    expect(link.getAttribute("title")).toMatch(/^A fork of run first-1234567/);
    expect(screen.queryByTestId("history-fork-first-1234567")).toBeNull();
    fireEvent.click(link);
    await waitFor(() => expect(opened).toEqual(["first-1234567"]));
  });

  it("names who started a run and how, and who cancelled it", async () => {
    const started = { ...row("team-1234567", null), origin: { via: "api" as const, by: "alice" }, cancelledBy: "carol", status: "cancelled" as const };
    mockIPC((cmd) => (cmd === "list_runs" ? [started, row("mine-1234567", null)] : cmd === "server_runs" ? [] : null));
    useDocument.getState().load({ ...emptyWorkflow(), name: "Sums" }, "/w/sums.yaml");
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-history"));
    const said = await screen.findByTestId("history-origin-team-1234567");
    expect(said.textContent).toBe("started by alice via the API, cancelled by carol");
    expect(screen.queryByTestId("history-origin-mine-1234567")).toBeNull(); // a run of this machine names no one
  });

  it("nests a child run under its parent, closed at first, and its arrow shows it tagged with the node that ran it", async () => {
    const parent = { ...row("top-1234567", null), started: "2026-11-28T10:00:00Z" };
    const child = { ...row("kid-1234567", null), workflow: "Review a summary", started: "2026-11-28T10:00:05Z", parent: { run: "top-1234567", node: "summarize" } };
    mockIPC((cmd) => (cmd === "list_runs" ? [child, parent] : cmd === "server_runs" ? [] : null));
    useDocument.getState().load({ ...emptyWorkflow(), name: "Sums" }, "/w/sums.yaml");
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-history"));
    const toggle = await screen.findByTestId("history-children-top-1234567");
    expect(screen.getByTestId("history-top-1234567").textContent).toContain("1 child run");
    expect(screen.queryByTestId("history-kid-1234567")).toBeNull();
    fireEvent.click(toggle);
    const nested = await screen.findByTestId("history-kid-1234567");
    expect(nested.getAttribute("data-depth")).toBe("1");
    expect(screen.getByTestId("history-parent-kid-1234567").textContent).toContain("summarize");
    const rows = [...document.querySelectorAll('[data-testid="history"] tbody tr')].map((r) => r.getAttribute("data-testid"));
    expect(rows).toEqual(["history-top-1234567", "history-kid-1234567"]); // under its parent, though newer
    fireEvent.click(toggle);
    await waitFor(() => expect(screen.queryByTestId("history-kid-1234567")).toBeNull());
  });

  it("tags a server's run with the version of the workflow it ran, and says so in its tooltip", async () => {
    const served = { ...row("team-7654321", null), origin: { via: "api" as const, by: "alice" }, version: 3, server: "team.example:8080" };
    mockIPC((cmd) => (cmd === "list_runs" ? [row("mine-7654321", null)] : cmd === "server_runs" ? [served] : null));
    useDocument.getState().load({ ...emptyWorkflow(), name: "Sums" }, "/w/sums.yaml");
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-history"));
    const tag = await screen.findByTestId("history-version-team-7654321");
    expect(tag.textContent).toBe("v3");
    expect(tag.getAttribute("title")).toMatch(/^Ran version 3 of Sums, as the server served it then/);
    expect(screen.queryByTestId("history-version-mine-7654321")).toBeNull(); // a local run has no served version
  });
});
