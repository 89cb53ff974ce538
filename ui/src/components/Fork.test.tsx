// Fork from here in the Last run tab, as a person uses it: a model turn's button opens a dialog with what the model
// said there, editable; Run fork starts the run through start_run with the fork; JSON is checked for a node with an
// output schema before anything runs; an agent that took no turns is forked at its result.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { Conversation } from "./Conversation";
import { ResultFork, forkAnswerProblem } from "./Fork";
import { useDocument } from "../store/document";
import { useMessages } from "../store/messages";
import { useRun, type NodeRun } from "../store/run";
import { useRunControl } from "../store/runControl";
import { useTurns, type TurnView } from "../store/turns";
import { useValidation } from "../store/validation";
import type { Workflow } from "../types";

const node = (extra: Partial<NodeRun> = {}): NodeRun => ({ status: "succeeded", iteration: 1, streamed: "", finishedSeq: 9, iterations: [], ...extra });

const turns: TurnView[] = [
  { kind: "turn", iteration: 1, at: "t0", number: 1, text: "Let me add them.", calls: [{ name: "test__add", arguments: { a: 1, b: 2 } }], tokens: 30, seq: null, ts: null, ms: null },
  { kind: "tool", iteration: 1, at: "c0", tool: "test__add", arguments: { a: 1, b: 2 }, output: 3, error: null, seq: null, ts: null, ms: null },
  { kind: "turn", iteration: 1, at: "t1", number: 2, text: "The sum is 3.", calls: [], tokens: 12, seq: null, ts: null, ms: null },
  { kind: "turn", iteration: 1, at: "c0/helper.t0", number: 1, text: "a subagent's turn", calls: [], tokens: null, seq: null, ts: null, ms: null },
];

const workflow = (schema: boolean) =>
  ({ switchyard: 1, name: "Sums", nodes: [{ id: "start", type: "start" }, { id: "adder", type: "agent", ...(schema ? { output_schema: { type: "object" } } : {}) }], edges: [{ from: "start", to: "adder" }] }) as unknown as Workflow;

function engine(byNode: Record<string, TurnView[]>) {
  const started: Record<string, unknown>[] = [];
  mockIPC((cmd, args) => {
    if (cmd === "run_turns") return byNode;
    if (cmd === "code_consent") return { steps: [], fingerprint: null, trusted: true };
    if (cmd === "start_run") {
      started.push((args as { request: Record<string, unknown> }).request);
      return "run-fork";
    }
    if (cmd === "list_runs") return [];
    return null;
  });
  return started;
}

function shown(schema = false) {
  useDocument.getState().load(workflow(schema), "/w/sums.yaml");
  useRun.setState({ runId: "run-first", status: "completed", nodes: { adder: node() } });
}

beforeEach(() => {
  useTurns.getState().reset();
  useValidation.getState().setReport({ errors: [], warnings: [] });
  useRunControl.setState({ mode: "model", answersPath: null, model: "", consent: null });
  useMessages.setState({ messages: [] });
});

afterEach(async () => {
  cleanup();
  await new Promise((r) => setTimeout(r, 0));
  clearMocks();
});

describe("Fork from here", () => {
  it("offers each of the agent's own turns, shows what the model said there, and runs the fork with the edited answer", async () => {
    const started = engine({ adder: turns });
    shown();
    render(<Conversation id="adder" iteration={1} />);
    await screen.findByTestId("conversation");
    // Turns 1 and 2 of the agent itself; a subagent's turn is not forked from here.
    expect(screen.getAllByRole("button", { name: /^Fork from here/ }).map((b) => b.getAttribute("aria-label"))).toEqual(["Fork from here: turn 1 of adder", "Fork from here: turn 2 of adder"]);
    fireEvent.click(screen.getByTestId("fork-turn-2"));
    const answer = (await screen.findByTestId("fork-answer")) as HTMLTextAreaElement;
    expect(answer.value).toBe("The sum is 3.");
    expect(screen.getByTestId("fork-dialog").textContent).toContain("run run-firs");
    fireEvent.change(answer, { target: { value: "The sum is 4." } });
    fireEvent.click(screen.getByTestId("fork-run"));
    await waitFor(() => expect(started).toHaveLength(1));
    expect(started[0]).toMatchObject({ fork: { run: "run-first", node: "adder", turn: 2, answer: "The sum is 4." }, reuseRun: null, fromNode: null, workflowPath: "/w/sums.yaml" });
    await waitFor(() => expect(useRun.getState().runId).toBe("run-fork"));
    expect(screen.queryByTestId("fork-dialog")).toBeNull();
    expect(useMessages.getState().messages.map((m) => m.text)).toEqual(["Forked run run-firs at turn 2 of adder: run run-fork goes on from the answer given"]);
  });

  it("checks the answer is JSON for a node with an output schema, and Cancel runs nothing", async () => {
    const started = engine({ adder: turns });
    shown(true);
    render(<Conversation id="adder" iteration={1} />);
    fireEvent.click(await screen.findByTestId("fork-turn-1"));
    const answer = await screen.findByTestId("fork-answer");
    fireEvent.change(answer, { target: { value: "{sum: 4" } });
    fireEvent.click(screen.getByTestId("fork-run"));
    expect((await screen.findByTestId("fork-problem")).textContent).toMatch(/^This node has an output schema, so the answer is JSON: /);
    expect(answer.getAttribute("aria-invalid")).toBe("true");
    fireEvent.click(screen.getByTestId("fork-cancel"));
    await waitFor(() => expect(screen.queryByTestId("fork-dialog")).toBeNull());
    expect(started).toEqual([]);
  });

  it("is not offered while a run is on the canvas", async () => {
    engine({ adder: turns });
    shown();
    render(<Conversation id="adder" iteration={1} />);
    await screen.findByTestId("conversation");
    act(() => useRun.setState({ status: "running" }));
    expect((screen.getByTestId("fork-turn-2") as HTMLButtonElement).disabled).toBe(true);
  });

  it("forks an agent that took no turns at its result, offered as its output", async () => {
    const started = engine({});
    shown(true);
    render(<ResultFork id="adder" iteration={1} data={{ sum: 3 }} />);
    fireEvent.click(screen.getByTestId("fork-result"));
    const answer = (await screen.findByTestId("fork-answer")) as HTMLTextAreaElement;
    expect(JSON.parse(answer.value)).toEqual({ sum: 3 });
    fireEvent.change(answer, { target: { value: '{"sum": 4}' } });
    fireEvent.click(screen.getByTestId("fork-run"));
    await waitFor(() => expect(started).toHaveLength(1));
    expect(started[0]).toMatchObject({ fork: { run: "run-first", node: "adder", turn: null, answer: '{"sum": 4}' } });
  });

  it("is not offered at the result of an agent whose turns can be forked, nor at a later iteration", async () => {
    engine({ adder: turns });
    shown();
    await act(() => useTurns.getState().load("run-first", "x"));
    const { rerender } = render(<ResultFork id="adder" iteration={1} data={{ text: "The sum is 3." }} />);
    expect(screen.queryByTestId("fork-result")).toBeNull();
    act(() => useTurns.getState().reset());
    rerender(<ResultFork id="adder" iteration={2} data={{ text: "The sum is 3." }} />);
    expect(screen.queryByTestId("fork-result")).toBeNull();
  });

  it("says what is wrong with an answer before anything runs", () => {
    expect(forkAnswerProblem("  ", false)).toMatch(/^Write what the model should have said/);
    expect(forkAnswerProblem("any text", false)).toBeNull();
    expect(forkAnswerProblem('{"a": 1}', true)).toBeNull();
    expect(forkAnswerProblem("not json", true)).toMatch(/output schema/);
  });
});
