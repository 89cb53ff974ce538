import { describe, expect, it, vi } from "vitest";
import type { Event } from "../types";
import { frameBatcher, reduce, useRun } from "./run";
import { useReplay } from "./replay";

const ev = (seq: number, body: Record<string, unknown>): Event => ({ seq, run: "r", ts: "", ...body }) as Event;
const empty = { status: "idle" as const, error: null, nodes: {}, followed: {}, pending: [] };

describe("run events", () => {
  it("moves nodes through running, final states and iterations", () => {
    const s = reduce(empty, [
      ev(1, { type: "workflow:start", workflow: "w", input: null }),
      ev(2, { type: "node:enter", node: "a", iteration: 1, instruction: "do it" }),
      ev(3, { type: "node:progress", node: "a", message: "Hel" }),
      ev(4, { type: "node:progress", node: "a", message: "lo" }),
    ]);
    expect(s.status).toBe("running");
    expect(s.nodes.a.status).toBe("running");
    expect(s.nodes.a.streamed).toBe("Hello");
    const t = reduce(s, [
      ev(5, { type: "node:exit", node: "a", iteration: 1, durationMs: 7, result: { status: "success", data: { text: "Hello" }, toolCalls: [] } }),
      ev(6, { type: "route", from: "a", to: "b", reason: "only path" }),
      ev(7, { type: "node:skipped", node: "c" }),
      ev(8, { type: "node:enter", node: "a", iteration: 2, instruction: "again" }),
      ev(9, { type: "node:exit", node: "a", iteration: 2, durationMs: 3, result: { status: "failed", data: { error: "x" }, toolCalls: [], error: "x" } }),
      ev(10, { type: "route", from: "a", to: "(end)", reason: "invalid route target" }),
    ]);
    expect(t.nodes.a.status).toBe("failed");
    expect(t.nodes.a.iterations.map((i) => [i.iteration, i.instruction, i.durationMs])).toEqual([[1, "do it", 7], [2, "again", 3]]);
    expect(t.nodes.c.status).toBe("skipped");
    expect(t.followed).toEqual({ "a->b": true });
    expect(s.nodes.a.status).toBe("running"); // the earlier state was not mutated
  });

  it("tracks several pending approvals and the run's pause and end", () => {
    let s = reduce(empty, [
      ev(1, { type: "approval:requested", node: "legal", message: "ok?", previousOutput: "draft" }),
      ev(2, { type: "approval:requested", node: "brand", message: "ok?", previousOutput: "draft" }),
      ev(3, { type: "workflow:paused", pending: ["legal", "brand"] }),
    ]);
    expect(s.status).toBe("paused");
    expect(s.pending.map((p) => p.node)).toEqual(["legal", "brand"]);
    expect(s.nodes.legal.status).toBe("waiting");
    s = reduce(s, [ev(4, { type: "workflow:resumed" }), ev(5, { type: "approval:received", node: "brand", decision: "reject", note: "" })]);
    expect(s.status).toBe("running");
    expect(s.pending.map((p) => p.node)).toEqual(["legal"]);
    s = reduce(s, [ev(6, { type: "workflow:end", status: "failed", results: {}, error: "boom" })]);
    expect([s.status, s.error]).toEqual(["failed", "boom"]);
  });

  it("a run cancelled while it waits for a person no longer shows anything waiting", () => {
    const waiting = reduce(empty, [
      ev(1, { type: "workflow:start", workflow: "w", input: null }),
      ev(2, { type: "node:enter", node: "review", iteration: 1, instruction: "" }),
      ev(3, { type: "approval:requested", node: "review", message: "Publish?", previousOutput: "" }),
      ev(4, { type: "workflow:paused", pending: ["review"] }),
      ev(5, { type: "workflow:end", status: "paused", results: {} }),
    ]);
    expect([waiting.status, waiting.pending.length, waiting.nodes.review.status]).toEqual(["paused", 1, "waiting"]);
    const cancelled = reduce(waiting, [ev(6, { type: "workflow:end", status: "cancelled", results: {}, error: "cancelled" })]);
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.pending).toEqual([]);
    expect(cancelled.nodes.review.status).toBe("cancelled");
    expect(cancelled.executions.map((r) => [r.node, r.status])).toEqual([["review", "cancelled"]]);
    expect(waiting.executions.map((r) => r.status)).toEqual(["waiting"]);
  });

  it("an agent waits while its tool call is decided, then runs on", () => {
    let s = reduce(
      { status: "running", error: null, nodes: {}, followed: {}, pending: [] },
      [
        ev(1, { type: "node:enter", node: "helper", iteration: 1, instruction: "" }),
        ev(2, { type: "approval:requested", node: "helper", message: "Allow?", previousOutput: "{}", tool: { tool: "files__write_file", input: { path: "a" } } }),
        ev(3, { type: "workflow:paused", pending: ["helper"] }),
      ],
    );
    expect(s.nodes.helper.status).toBe("waiting");
    expect(s.pending[0].tool?.tool).toBe("files__write_file");
    s = reduce(s, [ev(4, { type: "workflow:resumed" }), ev(5, { type: "approval:received", node: "helper", decision: "approve", note: "" })]);
    expect(s.nodes.helper.status).toBe("running");
    expect(s.pending).toEqual([]);
  });

  it("applies every queued batch once per frame, in order, losing nothing", () => {
    const frames: (() => void)[] = [];
    const applied: number[][] = [];
    const batch = frameBatcher((events) => applied.push(events.map((e) => e.seq)), (cb) => frames.push(cb));
    batch([ev(1, { type: "node:skipped", node: "a" })]);
    batch([ev(2, { type: "node:skipped", node: "b" }), ev(3, { type: "node:skipped", node: "c" })]);
    expect(frames).toHaveLength(1);
    frames.shift()!();
    expect(applied).toEqual([[1, 2, 3]]);
    batch([ev(4, { type: "node:skipped", node: "d" })]);
    frames.shift()!();
    expect(applied).toEqual([[1, 2, 3], [4]]);
  });

  it("keeps every final status through a burst of 10,000 events", () => {
    useRun.getState().begin("r", []);
    const frames: (() => void)[] = [];
    const batch = frameBatcher((events) => useRun.getState().apply(events), (cb) => frames.push(cb));
    const expected: Record<string, string> = {};
    for (let i = 0; i < 10_000; i += 2) {
      const node = `n${(i / 2) % 500}`;
      const status = i % 6 === 0 ? "failed" : "success";
      batch([
        ev(i, { type: "node:enter", node, iteration: 1, instruction: "" }),
        ev(i + 1, { type: "node:exit", node, iteration: 1, durationMs: 1, result: { status, data: {}, toolCalls: [] } }),
      ]);
      expected[node] = status === "success" ? "succeeded" : "failed";
      if (i % 1000 === 0) frames.splice(0).forEach((f) => f());
    }
    frames.splice(0).forEach((f) => f());
    const nodes = useRun.getState().nodes;
    const lost = Object.entries(expected).filter(([n, s]) => nodes[n]?.status !== s);
    expect(lost).toEqual([]);
    expect(useRun.getState().events.length).toBe(5000); // the panel keeps the latest 5,000
  });

  it("uses requestAnimationFrame by default", () => {
    const raf = vi.spyOn(window, "requestAnimationFrame").mockImplementation((cb) => (cb(0), 0));
    const seen: number[] = [];
    frameBatcher((events) => seen.push(...events.map((e) => e.seq)))([ev(1, { type: "node:skipped", node: "a" })]);
    expect(raf).toHaveBeenCalledTimes(1);
    expect(seen).toEqual([1]);
    raf.mockRestore();
  });

  it("keeps one run-list row per execution, in the order they began, each finished by its own exit", () => {
    const s = reduce(empty, [
      ev(1, { type: "node:enter", node: "a", iteration: 1, instruction: "" }),
      ev(2, { type: "node:enter", node: "b", iteration: 1, instruction: "" }),
      ev(3, { type: "node:exit", node: "a", iteration: 1, durationMs: 5, result: { status: "success", data: { text: "first" }, toolCalls: [] } }),
      ev(4, { type: "node:enter", node: "a", iteration: 2, instruction: "" }),
      ev(5, { type: "node:skipped", node: "c" }),
      ev(6, { type: "node:exit", node: "b", iteration: 1, durationMs: 9, result: { status: "failed", data: {}, toolCalls: [], error: "boom\nstack" } }),
      ev(7, { type: "node:exit", node: "a", iteration: 2, durationMs: 2, usage: { inputTokens: 3, outputTokens: 4 }, result: { status: "success", data: { n: 1 }, toolCalls: [] } }),
    ]);
    expect(s.executions.map((r) => [r.node, r.iteration, r.status, r.durationMs, r.preview])).toEqual([
      ["a", 1, "succeeded", 5, "first"],
      ["b", 1, "failed", 9, "boom"],
      ["a", 2, "succeeded", 2, '{"n":1}'],
      ["c", 0, "skipped", null, ""],
    ]);
    expect(s.executions[2].tokens).toBe(7);
  });
});

describe("replay", () => {
  const events = [
    ev(1, { type: "workflow:start" }),
    ev(2, { type: "node:enter", node: "a", iteration: 1, instruction: "" }),
    ev(3, { type: "node:progress", node: "a", message: "hel" }),
    ev(4, { type: "node:exit", node: "a", iteration: 1, result: { status: "success", data: { text: "hello" }, toolCalls: [] }, durationMs: 5 }),
    ev(5, { type: "route", from: "a", to: "b", reason: "" }),
    ev(6, { type: "node:enter", node: "b", iteration: 1, instruction: "" }),
    ev(7, { type: "node:exit", node: "b", iteration: 1, result: { status: "success", data: { text: "bye" }, toolCalls: [] }, durationMs: 5 }),
    ev(8, { type: "workflow:end", status: "completed" }),
  ];

  it("shows the run at the moment the timeline points to, earlier moments included", () => {
    useReplay.getState().load("r1", ["a", "b"], events);
    useReplay.getState().pause();
    const r = useReplay.getState();
    expect(r.steps.length, "progress is not a step of its own").toBe(7);
    r.seek(r.steps.length - 1);
    expect(useRun.getState().nodes.b.status).toBe("succeeded");
    expect(useRun.getState().status).toBe("completed");
    r.seek(2); // after a's exit
    expect(useRun.getState().nodes.a.status).toBe("succeeded");
    expect(useRun.getState().nodes.b.status, "b has not run yet at that moment").toBe("pending");
    expect(useRun.getState().followed["a->b"]).toBeUndefined();
    r.seek(3);
    expect(useRun.getState().followed["a->b"]).toBe(true);
    useReplay.getState().close();
    expect(useRun.getState().nodes.b.status, "closing shows the run as it ended").toBe("succeeded");
  });
});

describe("routing", () => {
  it("marks a node choosing its route until the route is chosen, and adds the tokens the choice used to it", () => {
    let s = reduce(empty, [
      ev(1, { type: "workflow:start" }),
      ev(2, { type: "node:enter", node: "triage", iteration: 1, instruction: "" }),
      ev(3, { type: "node:exit", node: "triage", iteration: 1, result: { status: "success", data: { text: "x" }, toolCalls: [] }, durationMs: 5, usage: { inputTokens: 10, outputTokens: 5 } }),
      ev(4, { type: "route:choosing", node: "triage", choices: ["fix", "skip"] }),
    ]);
    expect(s.nodes.triage.choosing).toBe(true);
    expect(s.executions[0].routing).toBe(true);
    s = reduce(s, [ev(5, { type: "route", from: "triage", to: "fix", reason: "model", usage: { inputTokens: 30, outputTokens: 2 } })]);
    expect(s.nodes.triage.choosing).toBe(false);
    expect(s.executions[0].routing).toBe(false);
    expect(s.executions[0].tokens).toBe(47);
    expect(s.nodes.triage.iterations[0].tokens).toBe(47);
  });

  it("names an if node's branch by its condition in the run list", () => {
    const s = reduce(empty, [ev(1, { type: "node:exit", node: "pet", iteration: 1, result: { status: "success", data: { branch: "condition-0", label: "cat" }, toolCalls: [] }, durationMs: 0 })]);
    expect(s.executions[0].preview).toBe("→ cat");
  });
});
