// Saving a stored run as a test case: the command's answer becomes a message, as does its refusal with its code.
import { beforeEach, describe, expect, it } from "vitest";
import { mockIPC } from "@tauri-apps/api/mocks";
import * as storedRuns from "./history";
import { useHistory, type RunSummary } from "./history";
import { useMessages } from "./messages";
import { useReplay } from "./replay";
import { useTurns } from "./turns";
import { useRunControl } from "./runControl";

function engine(answer: (args: Record<string, unknown>) => unknown) {
  const calls: { cmd: string; args: Record<string, unknown> }[] = [];
  mockIPC((cmd, args) => {
    calls.push({ cmd, args: args as Record<string, unknown> });
    if (cmd === "save_test_case") return answer(args as Record<string, unknown>);
    return null;
  });
  return calls;
}

beforeEach(() => {
  useMessages.setState({ messages: [] });
});

describe("save as test case", () => {
  it("asks the engine for the run and says where the case went", async () => {
    const calls = engine(() => ({ path: "/w/approval-flow.evals.yaml", caseId: "run-1a2b3c4d", expectations: 6, recordedCalls: 0 }));
    await storedRuns.saveTestCase("1a2b3c4d-5e6f");
    expect(calls.filter((c) => c.cmd === "save_test_case").map((c) => c.args)).toEqual([{ runId: "1a2b3c4d-5e6f", workflowPath: null }]);
    expect(useMessages.getState().messages).toEqual([
      expect.objectContaining({ kind: "info", text: "Saved as test case run-1a2b3c4d in approval-flow.evals.yaml (6 expectations)" }),
    ]);
  });

  it("says how many model calls a run on a model kept for the case", async () => {
    engine(() => ({ path: "/w/chain.evals.yaml", caseId: "run-9f8e7d6c", expectations: 4, recordedCalls: 3 }));
    await storedRuns.saveTestCase("9f8e7d6c-5b4a");
    expect(useMessages.getState().messages.map((m) => m.text)).toEqual(["Saved as test case run-9f8e7d6c in chain.evals.yaml (4 expectations, 3 model calls kept)"]);
  });

  it("shows a refusal with its code, in the app's words", async () => {
    engine(() => {
      throw { code: "RUN_NOT_ENDED", message: "run 1a2b3c4d-5e6f has not ended; resume it to let it end first", problems: [] };
    });
    await storedRuns.saveTestCase("1a2b3c4d-5e6f");
    const [shown] = useMessages.getState().messages;
    expect(shown.kind).toBe("error");
    expect(shown.code).toBe("RUN_NOT_ENDED");
    expect(shown.text).toMatch(/^Could not save run 1a2b3c4d as a test case: run 1a2b3c4d-5e6f has not ended; resume it to let it end first\. Its Resume button in History continues it\.$/);
  });
});

describe("a server's runs in History", () => {
  const row = (id: string, started: string) => ({ id, workflow: "w", workflowRef: null, answersPath: null, status: "paused", started, durationMs: 0, pending: [], usage: {}, tokens: 0, cost: null, eval: null, live: false });

  it("lists this computer's runs and the server's together, newest first, the server's marked", async () => {
    mockIPC((cmd) => {
      if (cmd === "list_runs") return [row("local-old", "2026-11-01T10:00:00Z"), row("local-new", "2026-11-03T10:00:00Z")];
      if (cmd === "server_runs") return [{ ...row("remote", "2026-11-02T10:00:00Z"), server: "sy.example.com:8080" }];
      return null;
    });
    await storedRuns.refresh();
    const { runs, serverProblem } = useHistory.getState();
    expect(runs.map((r) => [r.id, r.server ?? null])).toEqual([["local-new", null], ["remote", "sy.example.com:8080"], ["local-old", null]]);
    expect(serverProblem).toBeNull();
  });

  it("keeps this computer's runs and says why the server's could not be read", async () => {
    mockIPC((cmd) => {
      if (cmd === "list_runs") return [row("local", "2026-11-01T10:00:00Z")];
      if (cmd === "server_runs") throw { code: "SERVER_NO_TOKEN", message: "$SWITCHYARD_TOKEN is not set: it should hold a token for the server at http://sy:8080", problems: [] };
      return null;
    });
    await storedRuns.refresh();
    const { runs, serverProblem } = useHistory.getState();
    expect(runs.map((r) => r.id)).toEqual(["local"]);
    expect(serverProblem).toMatch(/SWITCHYARD_TOKEN is not set/);
  });
});

describe("opening a run that goes on elsewhere", () => {
  const row = { id: "remote-1", workflow: "w", workflowRef: null, answersPath: null, status: "interrupted", started: "2026-11-02T10:00:00Z", durationMs: 0, pending: [], usage: {}, tokens: 0, cost: null, eval: null };
  const opened = {
    document: { workflow: { switchyard: 1, name: "w", nodes: [{ id: "start", type: "start", position: { x: 0, y: 0 } }], edges: [] }, format: "switchyard", notes: [], path: "/srv/w.yaml" },
    events: [{ seq: 1, run: "remote-1", ts: "2026-11-02T10:00:00.000Z", type: "workflow:start", workflow: "w", input: null }],
    row,
  };

  it("follows a server's run whose worker died, since another worker takes it on, and does not offer Resume", async () => {
    const follows: Record<string, unknown>[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "list_runs") return [];
      if (cmd === "server_runs") return [{ ...row, live: false, server: "sy.example.com:8080" }];
      if (cmd === "open_run") return opened;
      if (cmd === "follow_run") follows.push(args as Record<string, unknown>);
      return null;
    });
    await storedRuns.refresh();
    await storedRuns.openRun("remote-1");
    expect(follows.map((f) => [f.runId, f.after])).toEqual([["remote-1", 1]]);
    const text = useMessages.getState().messages.map((m) => m.text).join("\n");
    expect(text).toMatch(/following it live/);
    expect(text).not.toMatch(/Resume/);
  });
});

describe("a stored run opened or resumed", () => {
  const doc = (path: string) => ({ workflow: { switchyard: 1, name: "w", nodes: [{ id: "start", type: "start", position: { x: 0, y: 0 } }], edges: [] }, format: "switchyard", notes: [], path });
  const row = (id: string, answersPath: string | null) => ({ id, workflow: "w", workflowRef: null, answersPath, status: "completed", started: "2026-11-02T10:00:00Z", durationMs: 0, pending: [], usage: {}, tokens: 0, cost: null, eval: null });
  const engine = (beside: Record<string, string>) =>
    mockIPC((cmd, args) => {
      const a = args as Record<string, string>;
      if (cmd === "list_runs") return [];
      if (cmd === "open_run") return { "run-b": { document: doc("/w/b.yaml"), events: [], row: row("run-b", null) }, "run-c": { document: doc("/w/c.yaml"), events: [], row: row("run-c", "/elsewhere/c-answers.yaml") } }[a.runId];
      if (cmd === "script_beside") return beside[a.workflowPath] ?? null;
      return null;
    });
  beforeEach(() => useRunControl.setState({ mode: "answers", answersPath: "/w/a.script.yaml" }));

  it("never keeps the answers file of the workflow shown before: a workflow with none runs on a model", async () => {
    engine({});
    await storedRuns.openRun("run-b");
    expect(useRunControl.getState()).toMatchObject({ mode: "model", answersPath: null });
  });

  it("takes the answers file beside its workflow's file, or the one the run ran on", async () => {
    engine({ "/w/b.yaml": "/w/b.script.yaml" });
    await storedRuns.openRun("run-b");
    expect(useRunControl.getState()).toMatchObject({ mode: "answers", answersPath: "/w/b.script.yaml" });
    await storedRuns.openRun("run-c");
    expect(useRunControl.getState()).toMatchObject({ mode: "answers", answersPath: "/elsewhere/c-answers.yaml" });
  });
});

describe("a stored run replayed", () => {
  const workflow = { switchyard: 1, name: "w", nodes: [{ id: "review", type: "agent", position: { x: 0, y: 0 } }], edges: [] };
  const row = { id: "run-r", workflow: "w", workflowRef: null, answersPath: null, status: "completed", started: "2026-11-02T10:00:00Z", durationMs: 0, pending: [], usage: {}, tokens: 0, cost: null, eval: null };
  const events = [
    { seq: 1, run: "run-r", ts: "2026-11-02T10:00:00.000Z", type: "workflow:start", workflow: "w", input: null },
    { seq: 2, run: "run-r", ts: "2026-11-02T10:00:00.100Z", type: "node:enter", node: "review", iteration: 1, instruction: "" },
    { seq: 3, run: "run-r", ts: "2026-11-02T10:00:01.000Z", type: "node:exit", node: "review", iteration: 1, result: { status: "success", data: { text: "5" }, toolCalls: [] }, durationMs: 900 },
    { seq: 4, run: "run-r", ts: "2026-11-02T10:00:01.000Z", type: "workflow:end", status: "completed" },
  ];
  const review = [{ kind: "turn", iteration: 1, at: "t0", number: 1, text: "5", calls: [], tokens: 9, seq: 3, ts: "2026-11-02T10:00:00.900Z", ms: 800 }];

  it("reads the run's turns once and steps through them inside their node", async () => {
    const asked: string[] = [];
    mockIPC((cmd) => {
      asked.push(cmd);
      if (cmd === "open_run") return { document: { workflow, format: "switchyard", notes: [], path: "/w/w.yaml" }, events, row };
      if (cmd === "run_events") return events;
      if (cmd === "run_turns") return { review };
      return null;
    });
    await storedRuns.replayRun("run-r");
    useReplay.getState().pause();
    expect(asked.filter((c) => c === "run_turns")).toEqual(["run_turns"]);
    const { steps } = useReplay.getState();
    expect(steps.map((s) => (s.turn ? `turn ${s.turn.turn.at}` : events[s.event].type))).toEqual(["workflow:start", "node:enter", "turn t0", "node:exit", "workflow:end"]);
    expect(useTurns.getState().byNode).toEqual({ review });
    useReplay.getState().discard();
  });
});

describe("the stored runs store", () => {
  it("keeps the list, the server's problem and what History asks for: refreshing, opening and replaying are the module's functions", () => {
    expect(Object.keys(useHistory.getState()).sort()).toEqual(["filter", "mine", "runs", "serverProblem", "shown"]);
    expect(["refresh", "openRun", "replayRun", "saveTestCase", "setFilter", "showMore"].every((f) => typeof (storedRuns as Record<string, unknown>)[f] === "function")).toBe(true);
  });
});

describe("History's filter", () => {
  const row = (id: string, status: string, workflow: string, workflowRef: string | null, started: string) =>
    ({ id, status, workflow, workflowRef, live: false, pending: [], started, durationMs: 0, tokens: 0, usage: {}, cost: null, eval: null, answersPath: null, forkedFrom: null, server: null }) as unknown as RunSummary;
  function engine(rows: RunSummary[]) {
    const asked: Record<string, unknown>[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "server_runs") return [];
      if (cmd !== "list_runs") return null;
      const f = (args as { filter: { limit: number; before: string | null; status: string[]; workflow?: string } }).filter;
      asked.push(f);
      const after = f.before ? rows.findIndex((r) => r.id === f.before) + 1 : 0;
      return rows.slice(after).filter((r) => (!f.status.length || f.status.includes(r.status)) && (!f.workflow || r.workflow === f.workflow || r.workflowRef === f.workflow)).slice(0, f.limit);
    });
    return asked;
  }
  beforeEach(() => useHistory.setState({ runs: [], filter: { status: "", search: "", since: "" }, mine: null, shown: storedRuns.PAGE_ROWS }));

  it("is asked of the stores, with a page more than it shows, so every run is found and Show more can count", async () => {
    const asked = engine([row("r1", "failed", "Deploy", "/w/deploy.yaml", "2026-11-03T10:00:00Z")]);
    await storedRuns.setFilter({ status: "failed", search: " ab12 ", since: "1h" }, null);
    expect(asked).toEqual([{ status: ["failed"], search: "ab12", since: "1h", limit: 200, before: null }]);
    expect(useHistory.getState().runs.map((r) => r.id)).toEqual(["r1"]);
  });

  it("of one workflow lists its file's runs, its runs before its first save, and every run that waits, once each", async () => {
    const rows = [
      row("file-run", "completed", "Deploy", "/w/deploy.yaml", "2026-11-05T10:00:00Z"),
      row("other-paused", "paused", "Publish", "/w/publish.yaml", "2026-11-04T10:00:00Z"),
      row("unsaved-run", "completed", "Deploy", null, "2026-11-03T10:00:00Z"),
      row("other-file", "completed", "Deploy", "/w/elsewhere/deploy.yaml", "2026-11-02T10:00:00Z"),
      row("paused-file-run", "paused", "Deploy", "/w/deploy.yaml", "2026-11-01T10:00:00Z"),
    ];
    engine(rows);
    await storedRuns.setFilter({ status: "", search: "", since: "" }, { path: "/w/deploy.yaml", name: "Deploy" });
    expect(useHistory.getState().runs.map((r) => r.id)).toEqual(["file-run", "other-paused", "unsaved-run", "paused-file-run"]);
  });

  it("pages through more runs than one list gives: Show more reads the next page", async () => {
    const rows = Array.from({ length: 1250 }, (_, i) => row(`run-${String(i).padStart(4, "0")}`, "completed", "W", "/w/w.yaml", new Date(Date.UTC(2026, 10, 1) - i * 1000).toISOString()));
    const asked = engine(rows);
    await storedRuns.refresh();
    expect(useHistory.getState().runs).toHaveLength(200);
    for (let i = 0; i < 10; i++) await storedRuns.showMore();
    expect(useHistory.getState().shown).toBe(1100);
    expect(useHistory.getState().runs.map((r) => r.id)).toEqual(rows.map((r) => r.id).slice(0, 1200));
    expect(asked.at(-1), "the second page of 1,000 begins after the first's last run").toMatchObject({ before: "run-0999", limit: 200 });
  });
});
