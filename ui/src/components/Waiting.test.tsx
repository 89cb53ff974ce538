import { afterEach, describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen } from "@testing-library/react";
import { ReactFlowProvider } from "@xyflow/react";

// Served by `switchyard serve`: the transport says so.
vi.mock("../transport", async (importOriginal) => ({ ...(await importOriginal<typeof import("../transport")>()), onServer: () => true }));

import { BottomPanel } from "./Panels";
import { useDocument, emptyWorkflow } from "../store/document";
import { useRun } from "../store/run";
import { useHistory, type RunSummary } from "../store/history";

const row = (id: string, over: Partial<RunSummary>) =>
  ({ id, workflow: "Pets", workflowRef: "/w/pets.yaml", answersPath: null, status: "completed", started: "2026-12-02T08:00:00Z", durationMs: 12, pending: [], usage: {}, tokens: 0, cost: null, costText: null, priced: null, eval: null, live: false, queue: "batch", ahead: null, waiting: null, ...over }) as RunSummary;

describe("a run waiting for a worker", () => {
  afterEach(() => {
    useHistory.setState({ runs: [] });
    useRun.getState().reset();
  });

  it("is listed in History as waiting for a worker, with how many go before it, never as running", () => {
    useDocument.getState().load(emptyWorkflow(), null);
    useHistory.setState({ runs: [row("queued", { status: "ready", ahead: 3, waiting: "waiting for a worker (3 ahead) in queue `batch`" }), row("done", {})] });
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    fireEvent.click(screen.getByTestId("tab-history"));
    const status = screen.getByTestId("history-queued").querySelector("td.status");
    expect(status?.textContent).toBe("waiting for a worker (3 ahead) in queue `batch`");
    expect(screen.getByTestId("history-done").querySelector("td.status")?.textContent).toBe("completed");
  });

  it("started from the browser, says in the Run tab that it waits for a worker until the worker's first event", () => {
    useDocument.getState().load(emptyWorkflow(), null);
    useRun.getState().begin("asked", []);
    useHistory.setState({ runs: [row("asked", { status: "ready", ahead: 2, waiting: "waiting for a worker (2 ahead)" })] });
    render(<ReactFlowProvider><BottomPanel /></ReactFlowProvider>);
    expect(screen.getByTestId("run-waiting").textContent).toBe("· waiting for a worker (2 ahead)");
    expect(screen.getByTestId("tab-run").textContent).not.toMatch(/running/);
  });
});
