// The Last run tab's Conversation as a person sees it: an agent's turns in order with their tokens, what the model
// said, the tool calls and their results (an error in the error colour), read from the engine once per step the run
// takes.
import { beforeEach, describe, expect, it } from "vitest";
import { act, render, screen, waitFor } from "@testing-library/react";
import { mockIPC } from "@tauri-apps/api/mocks";
import { Conversation } from "./Conversation";
import { useRun, type NodeRun } from "../store/run";
import { useTurns, type TurnView } from "../store/turns";

const node = (extra: Partial<NodeRun> = {}): NodeRun => ({ status: "succeeded", iteration: 1, streamed: "", finishedSeq: 9, iterations: [], ...extra });

const triage: TurnView[] = [
  { kind: "turn", iteration: 1, at: "t0", number: 1, text: "I will look the alert up.\nline 2\nline 3\nline 4\nline 5", calls: [{ name: "s__search", arguments: { q: "disk full" } }], tokens: 120 },
  { kind: "tool", iteration: 1, at: "c0", tool: "s__search", arguments: { q: "disk full" }, output: { hits: 2 }, error: null },
  { kind: "tool", iteration: 1, at: "c1", tool: "s__page", arguments: { who: "ops" }, output: null, error: "pager is down" },
  { kind: "turn", iteration: 1, at: "t1", number: 2, text: "It is a full disk.", calls: [], tokens: null },
  { kind: "turn", iteration: 2, at: "t0", number: 1, text: "the second iteration", calls: [], tokens: 5 },
];

function engine(answer: (runId: string) => unknown) {
  const asked: string[] = [];
  mockIPC((cmd, args) => {
    if (cmd !== "run_turns") return null;
    const runId = (args as { runId: string }).runId;
    asked.push(runId);
    return answer(runId);
  });
  return asked;
}

beforeEach(() => {
  useTurns.getState().reset();
  useRun.setState({ runId: "r1", status: "completed", nodes: { triage: node() } });
});

describe("an agent's conversation in the Last run tab", () => {
  it("lists its turns in order with their tokens, what the model said, and each tool call with its result or error", async () => {
    engine(() => ({ triage }));
    render(<Conversation id="triage" iteration={1} />);
    await screen.findByTestId("conversation");
    const turns = screen.getAllByTestId(/^turn(-tool)?$/);
    expect(turns.map((t) => t.textContent!.trim())).toEqual([
      expect.stringMatching(/^Turn 1 · 120 tokensI will look the alert up\.\nline 2.*asks s__search\({"q":"disk full"}\)$/s),
      's__search({"q":"disk full"}) → {"hits":2}',
      's__page({"who":"ops"}) → error: pager is down',
      "Turn 2It is a full disk.",
    ]);
    expect(turns[1].querySelector("pre")!.className).toBe("");
    expect(turns[2].querySelector("pre")!.className).toBe("field-error");
    // The model's text is folded to a few lines until clicked.
    const text = screen.getAllByTestId("turn-text")[0];
    expect(text.className).toBe("turn-text collapsed");
    act(() => text.click());
    expect(text.className).toBe("turn-text");
    expect(screen.queryByText("the second iteration")).toBeNull();
  });

  it("reads the turns once per step of the run, and again when the node finishes again", async () => {
    const asked = engine(() => ({ triage }));
    const { rerender } = render(<Conversation id="triage" iteration={1} />);
    await screen.findByTestId("conversation");
    rerender(<Conversation id="triage" iteration={1} />);
    act(() => useRun.setState({ executions: [] }));
    expect(asked).toEqual(["r1"]);
    act(() => useRun.setState({ nodes: { triage: node({ iteration: 2, finishedSeq: 14 }) } }));
    rerender(<Conversation id="triage" iteration={2} />);
    await screen.findByText("the second iteration");
    expect(asked).toEqual(["r1", "r1"]);
  });

  it("never shows another run's turns, and shows nothing for a node that took none", async () => {
    engine((runId) => (runId === "r1" ? { triage } : {}));
    render(<Conversation id="triage" iteration={1} />);
    await screen.findByTestId("conversation");
    act(() => useRun.setState({ runId: "r2" }));
    await waitFor(() => expect(screen.queryByTestId("conversation")).toBeNull());
    expect(useTurns.getState()).toMatchObject({ runId: "r2", byNode: {} });
  });

  it("says why the conversation could not be read", async () => {
    engine(() => {
      throw { code: "RUN_NOT_FOUND", message: "no run r1" };
    });
    render(<Conversation id="triage" iteration={1} />);
    expect((await screen.findByTestId("conversation-error")).textContent).toBe("The conversation could not be read: no run r1");
  });
});
