// The Evals tab: the test cases in the evaluation file beside the open workflow (`NAME.evals.yaml`), each case's latest
// report, and how the latest evaluation compares with the one before it. Running the cases is the engine's
// (`run_evals`); each case's report arrives on a channel as it finishes and its row updates at once. Opening a case's
// run goes through History, the one way a stored run comes onto the canvas.
import { create } from "zustand";
import { Channel } from "@tauri-apps/api/core";
import type {
  CaseChange_Serialize as CaseChange,
  CaseReport_Deserialize,
  CaseReport_Serialize as CaseReport,
  Attempt_Serialize as Attempt,
  EvalCaseView_Serialize as EvalCase,
  EvalReport_Serialize as EvalReport,
  NodeChange_Serialize as NodeChange,
  NodeVerdict,
} from "../bindings";
import { commands, unwrap } from "../api";
import { commitEditing } from "./ask";
import { useDocument } from "./document";
import * as storedRuns from "./history";
import { useLayoutPrefs } from "./layoutPrefs";
import { failWith, useMessages } from "./messages";
import { baseName } from "../model/paths";
import { VERDICT_WORDS } from "../model/words";

export type { Attempt, CaseChange, CaseReport, EvalCase, EvalReport, NodeChange, NodeVerdict };

/** How the latest evaluation compares with the one before it, in numbers. */
export type Summary = { regressed: number; improved: number; unchanged: number; added: number };

type EvalsState = {
  /** The workflow file the tab shows the cases of (null: the workflow has no file). */
  path: string | null;
  /** The evaluation file beside it, and whether it exists yet. */
  file: string | null;
  exists: boolean;
  /** Why the evaluation file could not be read (it is not a valid evaluation file), with its code. */
  problem: { message: string; code?: string } | null;
  cases: EvalCase[];
  /** Each case's latest report, by case id. */
  reports: Record<string, CaseReport>;
  /** How each case compares with the evaluation before its latest, by case id (only after a comparison). */
  changes: Record<string, CaseChange>;
  /** The latest evaluation's comparison in numbers, when it had one. */
  summary: Summary | null;
  /** Cases running now, whose reports have not arrived yet. */
  running: string[];
  /** The case whose details (and comparison) are shown. */
  selected: string | null;
  /** The node the compare view shows when none is selected on the canvas. */
  compareNode: string | null;
  /** Run the cases offline: no model is called; calls the cases' answers and the recorded calls do not answer fail. */
  offline: boolean;
  setOffline: (offline: boolean) => void;
  /** Reads the evaluation file beside `path` and the last evaluation kept of it. */
  load: (path: string | null) => Promise<void>;
  /** Runs every case (`caseId` null) or one; rows update as each case's report arrives. */
  run: (caseId?: string | null) => Promise<void>;
  select: (caseId: string | null) => void;
  showNode: (node: string | null) => void;
  /** Shows a case's run on the canvas as History opens a run. */
  openRun: (caseId: string) => Promise<void>;
};

/** The attempt a case is shown by: the first that failed (or could not run), else the first (as the CLI shows). */
export function shownAttempt(report: CaseReport | undefined): Attempt | undefined {
  return report?.attempts.find((a) => !a.passed) ?? report?.attempts[0];
}

/** A case's report arrived: it replaces the case's earlier one, and the case no longer runs. */
export function applyCaseReport(state: Pick<EvalsState, "reports" | "running">, report: CaseReport): Pick<EvalsState, "reports" | "running"> {
  return { reports: { ...state.reports, [report.id]: report }, running: state.running.filter((id) => id !== report.id) };
}

/** A finished evaluation: its reports over the earlier ones (a one-case run leaves the others), and its comparison. */
export function applyEvaluation(state: Pick<EvalsState, "reports" | "changes">, report: EvalReport): Pick<EvalsState, "reports" | "changes" | "summary" | "running"> {
  const reports = { ...state.reports };
  for (const c of report.cases) reports[c.id] = c;
  const changes = { ...state.changes };
  // A case run this time without a comparison has nothing to compare with: its earlier comparison no longer holds.
  for (const c of report.cases) delete changes[c.id];
  for (const c of report.comparison?.cases ?? []) changes[c.id] = c;
  return { reports, changes, summary: summarize(report), running: [] };
}

/** The comparison's numbers; null when the evaluation had none to compare with. */
export function summarize(report: EvalReport): Summary | null {
  const c = report.comparison;
  if (!c) return null;
  return { regressed: c.regressed, improved: c.improved, unchanged: c.unchanged, added: c.cases.filter((x) => x.change === "new").length };
}

/** What became of a node in a case's comparison, for its colour on the canvas; null when it ran in neither. */
export function nodeMark(change: CaseChange | undefined, node: string): NodeVerdict | null {
  return change?.nodes.find((n) => n.node === node)?.change ?? null;
}

/**
 * The nodes a case's shown attempt asked the model again (the recorded calls did not answer them), each with why as
 * the report says it: "its prompt, model, tools or schema changed", "what reached it changed", "never recorded".
 */
export function askedAgain(report: CaseReport | undefined): [string, string][] {
  return Object.entries(shownAttempt(report)?.asked ?? {}).filter((e): e is [string, string] => typeof e[1] === "string");
}

/** Why the selected case asked `node`'s model again, for its mark on the canvas; null when it did not. */
export function askedMark(report: CaseReport | undefined, node: string): string | null {
  return shownAttempt(report)?.asked?.[node] ?? null;
}

/** The node the compare view shows first: the selected one when it is compared, else the first regressed, then changed. */
export function nodeToCompare(change: CaseChange | undefined, selected: string | null): NodeChange | undefined {
  if (!change) return undefined;
  const order: NodeVerdict[] = ["regressed", "changed", "unchanged"];
  return change.nodes.find((n) => n.node === selected) ?? order.map((v) => change.nodes.find((n) => n.change === v)).find(Boolean);
}

/** A case's one line of outcome: its verdict in the app's words. */
export const verdictWord = (report: CaseReport | undefined): string => (report ? VERDICT_WORDS[report.verdict] : "");

let generation = 0;

const fresh = { file: null, exists: false, problem: null, cases: [], reports: {}, changes: {}, summary: null, running: [], selected: null, compareNode: null };

export const useEvals = create<EvalsState>((set, get) => ({
  path: null,
  offline: false,
  ...fresh,

  setOffline: (offline) => set({ offline }),

  load: async (path) => {
    if (!path) {
      set({ path: null, ...fresh });
      return;
    }
    const same = path === get().path;
    try {
      const suite = await unwrap(commands.evalSuite(path));
      if (useDocument.getState().path !== path && useDocument.getState().path !== null) return; // another file opened meanwhile
      const last = (suite.last ?? null) as EvalReport | null;
      set((s) => {
        const base = same ? { reports: s.reports, changes: s.changes, summary: s.summary } : { reports: {}, changes: {}, summary: null };
        // The last evaluation kept fills in what this window has not run itself.
        const fromLast = last && !Object.keys(base.reports).length ? applyEvaluation({ reports: {}, changes: {} }, last) : null;
        return {
          path,
          file: suite.file,
          exists: suite.exists,
          problem: null,
          cases: suite.cases as EvalCase[],
          ...(fromLast ? { reports: fromLast.reports, changes: fromLast.changes, summary: fromLast.summary } : base),
          ...(same ? {} : { running: [], selected: null, compareNode: null }),
        };
      });
    } catch (e) {
      const code = (e as { code?: string }).code;
      set({ path, ...fresh, exists: true, problem: { message: e instanceof Error ? e.message : String(e), code } });
    }
  },

  run: async (caseId = null) => {
    commitEditing();
    const path = useDocument.getState().path;
    if (!path) return useMessages.getState().error("Save the workflow to a file first: its test cases are in the evaluation file beside it.");
    if (get().running.length) return;
    const ids = caseId ? [caseId] : get().cases.map((c) => c.id);
    const mine = ++generation;
    set((s) => {
      const reports = { ...s.reports };
      for (const id of ids) delete reports[id];
      return { path, reports, running: ids };
    });
    const channel = new Channel<CaseReport_Deserialize>();
    // The generated channel type names the deserialize side; what arrives is what Rust serialized.
    channel.onmessage = (report) => {
      if (mine === generation) set((s) => applyCaseReport(s, report as unknown as CaseReport));
    };
    try {
      const report = (await unwrap(commands.runEvals(path, caseId, get().offline, channel))) as EvalReport;
      if (mine !== generation) return;
      set((s) => applyEvaluation(s, report));
      const n = report.cases.length;
      const counts = summarize(report);
      const compared = counts ? `; compared with the previous evaluation: ${counts.regressed} regressed, ${counts.improved} improved` : "";
      useMessages.getState().info(`${caseId ? `Test case ${caseId}` : `${n} test case${n === 1 ? "" : "s"}`}: ${report.passed} of ${n} passed${compared}`);
    } catch (e) {
      if (mine === generation) set({ running: [] });
      failWith(`Could not run the test cases in ${baseName(get().file ?? "the evaluation file")}`, e);
    }
    // The cases' runs are kept: History lists them.
    void storedRuns.refresh();
  },

  select: (selected) => set({ selected, compareNode: null }),

  showNode: (compareNode) => set({ compareNode }),

  openRun: async (caseId) => {
    const runId = shownAttempt(get().reports[caseId])?.runId;
    if (!runId) return useMessages.getState().error(`Test case ${caseId} has no stored run: run it first.`);
    await storedRuns.openRun(runId);
  },
}));

/**
 * What became of a node in the compare view, for its colour on the canvas: only while the Evals tab shows a case
 * with a comparison.
 */
export function useCompareMark(node: string): NodeVerdict | null {
  const shown = useLayoutPrefs((s) => s.panel === "evals");
  return useEvals((s) => (shown && s.selected ? nodeMark(s.changes[s.selected], node) : null));
}

/**
 * Why the case the Evals tab shows asked `node`'s model again (the report's words), for a mark on the canvas: only
 * while the Evals tab shows a case whose run asked it.
 */
export function useAskedMark(node: string): string | null {
  const shown = useLayoutPrefs((s) => s.panel === "evals");
  return useEvals((s) => (shown && s.selected ? askedMark(s.reports[s.selected], node) : null));
}
