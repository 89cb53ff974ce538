// The replay's timeline inside agents: a step for each model turn and tool call, between its node's enter and exit,
// placed where its log kept it (or evenly when it kept no place), and what the bar says at each step.
import { afterEach, describe, expect, it } from "vitest";
import type { Event } from "../types";
import { timeline, useReplay, type Step } from "./replay";
import { useRun } from "./run";
import { useTurns, type TurnView } from "./turns";
import { describe as say } from "../components/ReplayBar";

const ev = (seq: number, body: Record<string, unknown>): Event => ({ seq, run: "r", ts: `2026-11-28T19:00:${String(seq).padStart(2, "0")}.000Z`, ...body }) as Event;
const exit = (seq: number, node: string, iteration = 1) => ev(seq, { type: "node:exit", node, iteration, result: { status: "success", data: { text: "5" }, toolCalls: [] }, durationMs: 5 });

// start → review (an agent: turn 1 asks add(2, 3), add → 5, turn 2 says 5) → done, with a parallel `other` node.
const events: Event[] = [
  ev(1, { type: "workflow:start", workflow: "w", input: null }),
  ev(2, { type: "node:enter", node: "review", iteration: 1, instruction: "" }),
  ev(3, { type: "node:enter", node: "other", iteration: 1, instruction: "" }),
  ev(4, { type: "tool:call", node: "review", tool: "math__add", input: { a: 2, b: 3 }, callId: "c0" }),
  ev(5, { type: "tool:result", node: "review", tool: "math__add", output: 5, callId: "c0" }),
  exit(6, "other"),
  ev(7, { type: "node:progress", node: "review", message: "5" }),
  exit(8, "review"),
  ev(9, { type: "route", from: "review", to: "done", reason: "" }),
  ev(10, { type: "workflow:end", status: "completed" }),
];
const turn = (at: string, number: number, seq: number | null, extra: Partial<TurnView> = {}): TurnView =>
  ({ kind: "turn", iteration: 1, at, number, text: "", calls: [], tokens: 10, seq, ts: null, ms: null, ...extra }) as TurnView;
const tool = (at: string, seq: number | null, output: unknown): TurnView =>
  ({ kind: "tool", iteration: 1, at, tool: "math__add", arguments: { a: 2, b: 3 }, output, error: null, seq, ts: null, ms: null }) as TurnView;
const review: TurnView[] = [
  turn("t0", 1, 4, { calls: [{ name: "math__add", arguments: { a: 2, b: 3 } }] }), // kept before tool:call (seq 4)
  tool("c0", 6, 5), // kept after tool:result (seq 5), before other's exit
  turn("t1", 2, 7, { text: "The sum is 5.\nDone." }),
];

/** The timeline as `[event's seq, turn's place]`. */
const shape = (steps: Step[]) => steps.map((s) => [events[s.event].seq, s.turn ? `${s.turn.node}:${s.turn.turn.at}` : null]);

afterEach(() => useReplay.getState().discard());

describe("the replay's timeline inside agents", () => {
  it("stops at each turn and tool call right after the events before it was kept, between the node's enter and exit", () => {
    expect(shape(timeline(events, { review }))).toEqual([
      [1, null],
      [2, null],
      [3, null],
      [3, "review:t0"],
      [5, "review:c0"],
      [6, null],
      [6, "review:t1"],
      [8, null],
      [9, null],
      [10, null],
    ]);
    expect(shape(timeline(events)).filter(([, t]) => t), "with no turns, the same steps as before").toEqual([]);
  });

  it("spreads turns its log kept no place for evenly between the node's enter and exit, in their order", () => {
    const untimed = review.map((t) => ({ ...t, seq: null }) as TurnView);
    const steps = shape(timeline(events, { review: untimed })).filter(([, t]) => t);
    // review runs from its enter (the 2nd event) to the event before its exit (the 7th): three turns spread over it.
    expect(steps).toEqual([[3, "review:t0"], [4, "review:c0"], [5, "review:t1"]]);
    // A fork's turns taken from the run it forked (no place), then its own (kept with their place).
    const forked = [untimed[0], untimed[1], review[2]];
    expect(shape(timeline(events, { review: forked })).filter(([, t]) => t)).toEqual([[3, "review:t0"], [4, "review:c0"], [6, "review:t1"]]);
  });

  it("leaves out turns of a node that never entered, and keeps each iteration's turns within that iteration", () => {
    const again: Event[] = [
      ev(1, { type: "workflow:start" }),
      ev(2, { type: "node:enter", node: "loop", iteration: 1, instruction: "" }),
      exit(3, "loop", 1),
      ev(4, { type: "node:enter", node: "loop", iteration: 2, instruction: "" }),
      exit(6, "loop", 2),
      ev(7, { type: "workflow:end", status: "completed" }),
    ];
    const loop = [turn("t0", 1, 3), { ...turn("t0", 1, 5), iteration: 2 } as TurnView];
    const steps = timeline(again, { loop, ghost: [turn("t0", 1, 2)] });
    expect(steps.filter((s) => s.turn).map((s) => [again[s.event].seq, s.turn!.turn.iteration])).toEqual([[2, 1], [4, 2]]);
    expect(steps[steps.length - 1]).toEqual({ event: again.length - 1, turn: null });
  });

  it("says what each turn and tool call did", () => {
    const steps = timeline(events, { review });
    const said = steps.map((s) => say(s, events));
    expect(said).toContain("review: turn 1 — asks add(2, 3)");
    expect(said).toContain("review: add → 5");
    expect(said).toContain("review: turn 2 — says “The sum is 5.”");
    const failed: TurnView = { ...tool("c0", 6, null), error: "no such tool" } as TurnView;
    expect(say({ event: 3, turn: { node: "review", index: 1, turn: failed } }, events)).toBe("review: add → error: no such tool");
    const sub = turn("c0/checker.t0", 1, 5, { calls: [{ name: "lookup", arguments: "disk" }] });
    expect(say({ event: 3, turn: { node: "review", index: 0, turn: sub } }, events)).toBe('review (checker): turn 1 — asks lookup("disk")');
    expect(say({ event: 1, turn: null }, events)).toBe("review starts");
  });

  it("shows the node running at its turns, and the Conversation reads the turns the replay was given", () => {
    useReplay.getState().load("r", ["review", "other", "done"], events, { review });
    useReplay.getState().pause();
    const r = useReplay.getState();
    const at = r.steps.findIndex((s) => s.turn?.turn.at === "t1");
    r.seek(at);
    expect(useRun.getState().nodes.review.status).toBe("running");
    expect(useRun.getState().nodes.other.status, "the parallel node had ended by then").toBe("succeeded");
    r.seek(at + 1);
    expect(useRun.getState().nodes.review.status).toBe("succeeded");
    expect(useTurns.getState()).toMatchObject({ runId: "r", byNode: { review } });
  });
});
