// Reports of evaluations, as the engine sends them, for the Evals tab's tests.
import type { Workflow } from "../types";
import { useDocument } from "./document";
import { useEvals, type CaseChange, type CaseReport, type EvalReport } from "./evals";
import { useHistory } from "./history";
import { useLayoutPrefs } from "./layoutPrefs";
import { useMessages } from "./messages";

export const attempt = (over: Partial<CaseReport["attempts"][number]> = {}): CaseReport["attempts"][number] => ({
  passed: true,
  status: "completed",
  failures: [],
  error: null,
  tokens: 0,
  durationMs: 3,
  cost: 0,
  costText: "$0.00",
  outputs: {},
  runId: "run-1",
  ...over,
});

export const caseReport = (id: string, verdict: CaseReport["verdict"] = "passed", over: Partial<CaseReport["attempts"][number]> = {}): CaseReport => ({
  id,
  verdict,
  attempts: [attempt({ passed: verdict === "passed", runId: `run-${id}`, ...over })],
});

export const caseChange = (id: string, change: CaseChange["change"], nodes: CaseChange["nodes"] = []): CaseChange => ({
  id,
  change,
  before: "passed",
  after: change === "regressed" ? "failed" : "passed",
  changedNodes: nodes.filter((n) => n.change !== "unchanged").map((n) => n.node),
  nodes,
  tokens: [0, 0],
  durationMs: [3, 2],
});

export const evalReport = (cases: CaseReport[], changes?: CaseChange[]): EvalReport => ({
  id: "eval-2",
  started: "2026-11-25T10:00:00Z",
  file: "/w/loop.evals.yaml",
  workflow: "loop.yaml",
  cases,
  passed: cases.filter((c) => c.verdict === "passed").length,
  failed: cases.filter((c) => c.verdict === "failed").length,
  flaky: 0,
  errors: 0,
  passRate: 1,
  tokens: 0,
  durationMs: 9,
  cost: 0,
  costText: "$0.00",
  calls: { modelCalls: 0, reused: 0, tokensSaved: 0 },
  ...(changes && {
    comparison: {
      baseline: "eval-1",
      regressed: changes.filter((c) => c.change === "regressed").length,
      improved: changes.filter((c) => c.change === "improved").length,
      unchanged: changes.filter((c) => c.change === "unchanged").length,
      cases: changes,
    },
  }),
});

/** Sends a message on a channel the store handed to the mocked command, as the app's Rust side does. */
export function send(channel: unknown, index: number, message: unknown) {
  const id = (channel as { id: number }).id;
  (window as unknown as { __TAURI_INTERNALS__: { runCallback: (id: number, data: unknown) => void } }).__TAURI_INTERNALS__.runCallback(id, { index, message });
}

/** Every store the Evals tab reads, as a fresh window has them, with `workflow` open from /w/loop.yaml. */
export function freshStores(workflow: Workflow) {
  useDocument.getState().load(workflow, "/w/loop.yaml");
  useEvals.setState({ path: null, file: null, exists: false, problem: null, cases: [], reports: {}, changes: {}, summary: null, running: [], selected: null, compareNode: null });
  useMessages.setState({ messages: [] });
  useHistory.setState({ runs: [] });
  useLayoutPrefs.setState({ panel: "problems" });
}
