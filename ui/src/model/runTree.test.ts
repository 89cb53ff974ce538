import { describe, expect, it } from "vitest";
import type { RunSummary } from "../store/history";
import { resumableHere, rootCount, runTree } from "./runTree";

const run = (id: string, started: string, parent?: { run: string; node: string }) =>
  ({ id, started, workflow: id, status: "completed", pending: [], parent: parent ?? null }) as unknown as RunSummary;

// Newest first, as the stores list them: two children of `p` (started after it), a grandchild, another run.
const runs = [
  run("other", "2026-12-04T10:09:00Z"),
  run("g1", "2026-12-04T10:03:00Z", { run: "c1", node: "inner" }),
  run("c2", "2026-12-04T10:02:00Z", { run: "p", node: "fan" }),
  run("c1", "2026-12-04T10:01:00Z", { run: "p", node: "fan" }),
  run("p", "2026-12-04T10:00:00Z"),
];
const ids = (lines: ReturnType<typeof runTree>) => lines.map((l) => `${"  ".repeat(l.depth)}${l.run.id}(${l.children})`);

describe("what this window resumes itself", () => {
  it("is a paused or interrupted run of its own, never a child run, whose parent takes it up", () => {
    const paused = { ...run("p", "2026-12-04T10:00:00Z"), status: "paused" } as RunSummary;
    const child = { ...run("c", "2026-12-04T10:01:00Z", { run: "p", node: "fan" }), status: "paused" } as RunSummary;
    const done = run("d", "2026-12-04T10:02:00Z");
    const live = { ...paused, id: "l", live: true } as RunSummary;
    expect([paused, child, done, live].filter(resumableHere).map((r) => r.id)).toEqual(["p"]);
  });
});

describe("History's run tree", () => {
  it("lists children under a closed parent only as a count", () => {
    expect(ids(runTree(runs, new Set()))).toEqual(["other(0)", "p(2)"]);
  });

  it("an open parent shows its children in the order they started, and an open child its own", () => {
    expect(ids(runTree(runs, new Set(["p"])))).toEqual(["other(0)", "p(2)", "  c1(1)", "  c2(0)"]);
    expect(ids(runTree(runs, new Set(["p", "c1"])))).toEqual(["other(0)", "p(2)", "  c1(1)", "    g1(0)", "  c2(0)"]);
  });

  it("a child whose parent is not listed stands on its own", () => {
    const found = runs.filter((r) => r.id !== "p");
    expect(ids(runTree(found, new Set()))).toEqual(["other(0)", "c2(0)", "c1(1)"]);
  });

  it("cuts after as many runs on their own as asked, with their children, and counts only those", () => {
    expect(ids(runTree(runs, new Set(["p"]), 1))).toEqual(["other(0)"]);
    expect(rootCount(runs)).toBe(2);
  });
});
