// The Evals tab's store: the cases of the evaluation file beside the open workflow, each case's report applied as it
// arrives on the channel, the evaluation's comparison, and the colour of a node in the compare view.
import { beforeEach, describe, expect, it } from "vitest";
import { mockIPC } from "@tauri-apps/api/mocks";
import type { Workflow } from "../types";
import { useDocument } from "./document";
import { useLayoutPrefs } from "./layoutPrefs";
import { useMessages } from "./messages";
import { renderHook } from "@testing-library/react";
import { applyCaseReport, applyEvaluation, askedAgain, nodeMark, nodeToCompare, shownAttempt, summarize, useAskedMark, useCompareMark, useEvals, type CaseReport, type EvalReport } from "./evals";
import { attempt, caseChange, caseReport, evalReport, send, freshStores } from "./evals.fixtures";

const workflow = { switchyard: 1, name: "Loop", nodes: [{ id: "start", type: "start" }, { id: "fix", type: "agent" }, { id: "review", type: "agent" }], edges: [] } as unknown as Workflow;

const regressedLoop = caseChange("stops-after-three", "regressed", [
  { node: "fix", change: "regressed", before: "Round 3", after: "Round 2" },
  { node: "review", change: "changed", before: "Looks good.", after: "Looks bad." },
  { node: "start", change: "unchanged", before: "go", after: "go" },
]);

beforeEach(() => freshStores(workflow));

describe("the reports of an evaluation", () => {
  it("a case's report replaces its earlier one as it arrives, and the case stops running", () => {
    const state = { reports: { a: caseReport("a", "failed") }, running: ["a", "b"] };
    const next = applyCaseReport(state, caseReport("a"));
    expect(next.reports.a.verdict).toBe("passed");
    expect(next.running).toEqual(["b"]);
    expect(state.running).toEqual(["a", "b"]); // not changed in place
  });

  it("a finished evaluation of one case keeps the other cases' reports and comparisons", () => {
    const state = { reports: { a: caseReport("a"), b: caseReport("b") }, changes: { a: caseChange("a", "unchanged"), b: caseChange("b", "improved") } };
    const next = applyEvaluation(state, evalReport([caseReport("b", "failed")], [caseChange("b", "regressed")]));
    expect(next.reports.a.verdict).toBe("passed");
    expect(next.reports.b.verdict).toBe("failed");
    expect(next.changes.a.change).toBe("unchanged");
    expect(next.changes.b.change).toBe("regressed");
    expect(next.summary).toEqual({ regressed: 1, improved: 0, unchanged: 0, added: 0 });
    expect(next.running).toEqual([]);
  });

  it("a case run again with nothing to compare with loses its old comparison", () => {
    const next = applyEvaluation({ reports: {}, changes: { a: caseChange("a", "regressed") } }, evalReport([caseReport("a")]));
    expect(next.changes).toEqual({});
    expect(next.summary).toBeNull();
  });

  it("counts new cases apart", () => {
    expect(summarize(evalReport([caseReport("a"), caseReport("b")], [caseChange("a", "unchanged"), caseChange("b", "new")]))).toEqual({ regressed: 0, improved: 0, unchanged: 1, added: 1 });
  });

  it("shows a case by its first failed attempt, else its first", () => {
    const flaky: CaseReport = { id: "f", verdict: "flaky", attempts: [attempt({ runId: "r1" }), attempt({ passed: false, runId: "r2" }), attempt({ passed: false, runId: "r3" })] };
    expect(shownAttempt(flaky)?.runId).toBe("r2");
    expect(shownAttempt(caseReport("p"))?.runId).toBe("run-p");
    expect(shownAttempt(undefined)).toBeUndefined();
  });
});

describe("the compare view", () => {
  it("colours a node by what became of it, and leaves a node that ran in neither evaluation alone", () => {
    expect(nodeMark(regressedLoop, "fix")).toBe("regressed");
    expect(nodeMark(regressedLoop, "review")).toBe("changed");
    expect(nodeMark(regressedLoop, "start")).toBe("unchanged");
    expect(nodeMark(regressedLoop, "done")).toBeNull();
    expect(nodeMark(undefined, "fix")).toBeNull();
  });

  it("shows the selected node's outputs, else the first regressed, then the first changed", () => {
    expect(nodeToCompare(regressedLoop, null)?.node).toBe("fix");
    expect(nodeToCompare(regressedLoop, "start")?.node).toBe("start");
    expect(nodeToCompare(regressedLoop, "not-compared")?.node).toBe("fix");
    expect(nodeToCompare(caseChange("x", "unchanged", [{ node: "a", change: "unchanged", before: "1", after: "1" }, { node: "b", change: "changed", before: "1", after: "2" }]), null)?.node).toBe("b");
    expect(nodeToCompare(undefined, "fix")).toBeUndefined();
  });

  it("colours the canvas only while the Evals tab shows a case with a comparison", () => {
    useEvals.setState({ changes: { "stops-after-three": regressedLoop }, selected: "stops-after-three" });
    expect(renderHook(() => useCompareMark("fix")).result.current).toBeNull(); // the Problems tab is shown
    useLayoutPrefs.setState({ panel: "evals" });
    expect(renderHook(() => useCompareMark("fix")).result.current).toBe("regressed");
    expect(renderHook(() => useCompareMark("review")).result.current).toBe("changed");
    useEvals.getState().select(null);
    expect(renderHook(() => useCompareMark("fix")).result.current).toBeNull();
  });

  it("marks the nodes the shown case asked the model again, with the report's why, only while the Evals tab shows that case", () => {
    const asked = { fix: "its prompt, model, tools or schema changed", review: "what reached it changed" };
    // The failed attempt is the one shown, so its asked nodes are marked, not the passing attempt's.
    const report: CaseReport = { id: "edited", verdict: "flaky", attempts: [attempt({ asked: { start: "never recorded" } }), attempt({ passed: false, asked })] };
    useEvals.setState({ reports: { edited: report, plain: caseReport("plain") }, selected: "edited" });
    expect(askedAgain(report)).toEqual(Object.entries(asked));
    expect(askedAgain(caseReport("plain"))).toEqual([]);
    expect(renderHook(() => useAskedMark("fix")).result.current).toBeNull(); // the Problems tab is shown
    useLayoutPrefs.setState({ panel: "evals" });
    expect(renderHook(() => useAskedMark("fix")).result.current).toBe("its prompt, model, tools or schema changed");
    expect(renderHook(() => useAskedMark("review")).result.current).toBe("what reached it changed");
    expect(renderHook(() => useAskedMark("start")).result.current).toBeNull();
    useEvals.getState().select("plain");
    expect(renderHook(() => useAskedMark("fix")).result.current).toBeNull();
  });
});


describe("running the cases", () => {
  it("reads the cases and the last evaluation kept of the file", async () => {
    mockIPC((cmd) => {
      if (cmd === "eval_suite")
        return { file: "/w/loop.evals.yaml", exists: true, cases: [{ id: "a", description: null, expectations: 2 }, { id: "b", description: "second", expectations: 1 }], last: evalReport([caseReport("a"), caseReport("b", "failed")], [caseChange("a", "unchanged"), caseChange("b", "regressed")]) };
      return null;
    });
    await useEvals.getState().load("/w/loop.yaml");
    const s = useEvals.getState();
    expect(s.cases.map((c) => c.id)).toEqual(["a", "b"]);
    expect(s.reports.b.verdict).toBe("failed");
    expect(s.changes.b.change).toBe("regressed");
    expect(s.summary?.regressed).toBe(1);
  });

  it("says when the workflow has no evaluation file yet", async () => {
    mockIPC((cmd) => (cmd === "eval_suite" ? { file: "/w/loop.evals.yaml", exists: false, cases: [], last: null } : null));
    await useEvals.getState().load("/w/loop.yaml");
    expect(useEvals.getState()).toMatchObject({ exists: false, cases: [], problem: null });
  });

  it("keeps the problem of an evaluation file that cannot be used, with its code", async () => {
    mockIPC((cmd) => {
      if (cmd === "eval_suite") throw { code: "INVALID_EVALS", message: "case `a` expects nothing", problems: [] };
      return null;
    });
    await useEvals.getState().load("/w/loop.yaml");
    expect(useEvals.getState().problem).toEqual({ message: "case `a` expects nothing", code: "INVALID_EVALS" });
  });

  it("updates each case as its report arrives on the channel, then takes the evaluation's comparison", async () => {
    let finish: (r: EvalReport) => void = () => {};
    let channel: unknown;
    const calls: Record<string, unknown>[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "run_evals") {
        calls.push(args as Record<string, unknown>);
        channel = (args as { onCase: unknown }).onCase;
        return new Promise((resolve) => (finish = resolve));
      }
      if (cmd === "list_runs") return [];
      return null;
    });
    useEvals.setState({ path: "/w/loop.yaml", cases: [{ id: "a", description: null, expectations: 1 }, { id: "b", description: null, expectations: 1 }], reports: { a: caseReport("a", "failed") } });
    const done = useEvals.getState().run(null);
    expect(calls).toEqual([expect.objectContaining({ workflowPath: "/w/loop.yaml", caseId: null })]);
    expect(useEvals.getState().running).toEqual(["a", "b"]);
    expect(useEvals.getState().reports.a).toBeUndefined(); // its row shows it running, not its old result

    send(channel, 0, caseReport("b", "failed"));
    expect(useEvals.getState().running).toEqual(["a"]);
    expect(useEvals.getState().reports.b.verdict).toBe("failed");

    send(channel, 1, caseReport("a"));
    expect(useEvals.getState().running).toEqual([]);

    finish(evalReport([caseReport("a"), caseReport("b", "failed")], [caseChange("a", "unchanged"), caseChange("b", "regressed")]));
    await done;
    expect(useEvals.getState().changes.b.change).toBe("regressed");
    expect(useMessages.getState().messages.map((m) => m.text)).toEqual(["2 test cases: 1 of 2 passed; compared with the previous evaluation: 1 regressed, 0 improved"]);
  });

  it("runs one case and leaves the other rows as they were", async () => {
    mockIPC((cmd, args) => {
      if (cmd === "run_evals") return evalReport([caseReport((args as { caseId: string }).caseId)]);
      if (cmd === "list_runs") return [];
      return null;
    });
    useEvals.setState({ path: "/w/loop.yaml", cases: [{ id: "a", description: null, expectations: 1 }, { id: "b", description: null, expectations: 1 }], reports: { a: caseReport("a", "failed"), b: caseReport("b", "failed") } });
    await useEvals.getState().run("b");
    expect(useEvals.getState().reports.a.verdict).toBe("failed");
    expect(useEvals.getState().reports.b.verdict).toBe("passed");
  });

  it("runs offline only when Offline is ticked", async () => {
    const calls: Record<string, unknown>[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "run_evals") {
        calls.push(args as Record<string, unknown>);
        return evalReport([caseReport("a")]);
      }
      if (cmd === "list_runs") return [];
      return null;
    });
    useEvals.setState({ path: "/w/loop.yaml", cases: [{ id: "a", description: null, expectations: 1 }] });
    await useEvals.getState().run(null);
    useEvals.getState().setOffline(true);
    await useEvals.getState().run("a");
    expect(calls.map((c) => c.offline)).toEqual([false, true]);
    useEvals.getState().setOffline(false);
  });

  it("says what to do when the evaluation cannot run, and the rows stop running", async () => {
    mockIPC((cmd) => {
      if (cmd === "run_evals") throw { code: "INVALID_EVALS", message: "case `a` names node `reveiw`", problems: [] };
      if (cmd === "list_runs") return [];
      return null;
    });
    useEvals.setState({ path: "/w/loop.yaml", file: "/w/loop.evals.yaml", cases: [{ id: "a", description: null, expectations: 1 }] });
    await useEvals.getState().run(null);
    expect(useEvals.getState().running).toEqual([]);
    const [shown] = useMessages.getState().messages;
    expect(shown).toMatchObject({ kind: "error", code: "INVALID_EVALS" });
    expect(shown.text).toMatch(/^Could not run the test cases in loop\.evals\.yaml: case `a` names node `reveiw`\. Fix the evaluation file/);
  });

  it("asks for a file first when the workflow has none", async () => {
    useDocument.getState().load(workflow, null);
    await useEvals.getState().run(null);
    expect(useMessages.getState().messages.map((m) => m.text)).toEqual([expect.stringMatching(/^Save the workflow to a file first/)]);
  });

  it("opens a case's run through History", async () => {
    const opened: string[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "open_run") {
        opened.push((args as { runId: string }).runId);
        throw { code: "NO_SUCH_RUN", message: "gone", problems: [] };
      }
      return null;
    });
    useEvals.setState({ reports: { a: caseReport("a") } });
    await useEvals.getState().openRun("a");
    expect(opened).toEqual(["run-a"]);
  });
});
