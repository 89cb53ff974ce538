// The Last run tab's Conversation as a person sees it: an agent's turns in order with their tokens, what the model
// said, the tool calls and their results (an error in the error colour), read from the engine once per step the run
// takes.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { act, render, screen, waitFor } from "@testing-library/react";
import { mockIPC } from "@tauri-apps/api/mocks";
import { Conversation, took } from "./Conversation";
import { useReplay } from "../store/replay";
import { useRun, type NodeRun } from "../store/run";
import { useTurns, type TurnView } from "../store/turns";

const node = (extra: Partial<NodeRun> = {}): NodeRun => ({ status: "succeeded", iteration: 1, streamed: "", finishedSeq: 9, iterations: [], ...extra });

const triage: TurnView[] = [
  { kind: "turn", iteration: 1, at: "t0", number: 1, text: "I will look the alert up.\nline 2\nline 3\nline 4\nline 5", calls: [{ name: "s__search", arguments: { q: "disk full" } }], tokens: 120, seq: null, ts: null, ms: null },
  { kind: "tool", iteration: 1, at: "c0", tool: "s__search", arguments: { q: "disk full" }, output: { hits: 2 }, error: null, seq: null, ts: null, ms: null },
  { kind: "tool", iteration: 1, at: "c1", tool: "s__page", arguments: { who: "ops" }, output: null, error: "pager is down", seq: null, ts: null, ms: null },
  { kind: "turn", iteration: 1, at: "t1", number: 2, text: "It is a full disk.", calls: [], tokens: null, seq: null, ts: null, ms: null },
  { kind: "turn", iteration: 2, at: "t0", number: 1, text: "the second iteration", calls: [], tokens: 5, seq: null, ts: null, ms: null },
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

afterEach(() => useReplay.getState().discard());

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
      expect.stringMatching(/^Turn 1 · 120 tokens Fork from hereI will look the alert up\.\nline 2.*asks s__search\({"q":"disk full"}\)$/s),
      's__search({"q":"disk full"}) → {"hits":2}',
      's__page({"who":"ops"}) → error: pager is down',
      "Turn 2 Fork from hereIt is a full disk.",
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

  it("says how long each turn and tool call took, with when it ended as the tooltip, and nothing for a log with no times", async () => {
    const timed: TurnView[] = [
      { kind: "turn", iteration: 1, at: "t0", number: 1, text: "", calls: [{ name: "s__add", arguments: { a: 2, b: 3 } }], tokens: 40, seq: 3, ts: "2026-11-28T19:00:01.400Z", ms: 1400 },
      { kind: "tool", iteration: 1, at: "c0", tool: "s__add", arguments: { a: 2, b: 3 }, output: 5, error: null, seq: 3, ts: "2026-11-28T19:00:01.420Z", ms: 20 },
      { kind: "turn", iteration: 1, at: "t1", number: 2, text: "5", calls: [], tokens: 120, seq: 4, ts: "2026-11-28T19:02:06.420Z", ms: 125_000 },
      { kind: "turn", iteration: 1, at: "t2", number: 3, text: "older", calls: [], tokens: 7, seq: 5, ts: null, ms: null },
    ];
    engine(() => ({ triage: timed }));
    render(<Conversation id="triage" iteration={1} />);
    await screen.findByTestId("conversation");
    const heads = [...document.querySelectorAll(".turn-head")].map((h) => h.textContent!.replace("Fork from here", "").trim());
    expect(heads).toEqual(["Turn 1 · 40 tokens · 1.4 s", "Turn 2 · 120 tokens · 2m 05s", "Turn 3 · 7 tokens"]);
    expect(screen.getByTestId("turn-tool").textContent!.trim()).toBe("s__add({\"a\":2,\"b\":3}) → 5 · 20 ms");
    const first = screen.getAllByTestId("turn-took")[0];
    expect(first.title).toBe(`ended at ${new Date("2026-11-28T19:00:01.400Z").toLocaleTimeString()}`);
    expect([took(0), took(999), took(1000), took(59_949), took(60_000)]).toEqual(["0 ms", "999 ms", "1.0 s", "59.9 s", "1m 00s"]);
  });

  it("marks the turn a replay stands at and scrolls it into view, reading the turns the replay was given and no more", async () => {
    const asked = engine(() => ({ triage }));
    const scrolled: Element[] = [];
    Element.prototype.scrollIntoView = vi.fn(function (this: Element) {
      scrolled.push(this);
    });
    const at = (index: number) => ({ event: 0, turn: { node: "triage", index, turn: triage[index] } });
    useTurns.setState({ runId: "r1", byNode: { triage }, error: null, asked: "r1\nreplay" });
    useReplay.setState({ runId: "r1", steps: [{ event: 0, turn: null }, at(0), at(3)], at: 2 });
    render(<Conversation id="triage" iteration={1} />);
    const current = () => [...document.querySelectorAll(".turn.current")].map((li) => li.querySelector(".turn-head")?.textContent?.replace("Fork from here", "").trim());
    expect(current()).toEqual(["Turn 2"]);
    expect(scrolled.map((e) => e.textContent)).toEqual([expect.stringContaining("It is a full disk.")]);
    act(() => useReplay.setState({ at: 1 }));
    expect(current()).toEqual(["Turn 1 · 120 tokens"]);
    act(() => useReplay.setState({ at: 0 }));
    expect(current(), "at a step of no turn, nothing is marked").toEqual([]);
    act(() => useRun.setState({ nodes: { triage: node({ status: "running", finishedSeq: null }) } }));
    expect(asked, "a replay's turns are read once, when it starts").toEqual([]);
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
