// Findings of the engine's validator for the current document, re-run on every edit (debounced a little so typing
// stays smooth), indexed by node and edge for the canvas markers.
import { create } from "zustand";
import type { Finding, Report, Workflow } from "../types";
import { commands } from "../bindings";

/** A finding with its level (the report keeps errors and warnings in separate lists). */
export type Marked = Finding & { level: "error" | "warning" };

type ValidationState = {
  report: Report;
  byNode: Record<string, Marked[]>;
  byEdge: Record<string, Marked[]>;
  failure: string | null;
  setReport: (report: Report) => void;
};

export const useValidation = create<ValidationState>((set) => ({
  report: { errors: [], warnings: [] },
  byNode: {},
  byEdge: {},
  failure: null,
  setReport: (report) => set({ report, failure: null, ...index(report) }),
}));

export function index(report: Report) {
  const byNode: Record<string, Marked[]> = {};
  const byEdge: Record<string, Marked[]> = {};
  const all: Marked[] = [...report.errors.map((f) => ({ ...f, level: "error" as const })), ...report.warnings.map((f) => ({ ...f, level: "warning" as const }))];
  for (const f of all) {
    if (f.node) (byNode[f.node] ??= []).push(f);
    if (f.edge) (byEdge[f.edge] ??= []).push(f);
  }
  return { byNode, byEdge };
}

let timer: ReturnType<typeof setTimeout> | undefined;
let generation = 0;
let last: { workflow: Workflow; scripted: boolean } | null = null;

/** Whether two documents differ at most in node positions, which validation never looks at (a drag). */
export function sameButPositions(a: Workflow, b: Workflow): boolean {
  if (a === b) return true;
  if (a.edges !== b.edges || a.nodes.length !== b.nodes.length) return false;
  const { nodes: _an, ...restA } = a; // eslint-disable-line @typescript-eslint/no-unused-vars
  const { nodes: _bn, ...restB } = b; // eslint-disable-line @typescript-eslint/no-unused-vars
  for (const k of new Set([...Object.keys(restA), ...Object.keys(restB)])) if ((restA as Record<string, unknown>)[k] !== (restB as Record<string, unknown>)[k]) return false;
  for (let i = 0; i < a.nodes.length; i++) {
    const x = a.nodes[i];
    const y = b.nodes[i];
    if (x === y) continue;
    for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) if (k !== "position" && (x as Record<string, unknown>)[k] !== (y as Record<string, unknown>)[k]) return false;
  }
  return true;
}

/**
 * Validates `workflow`: at once by default (the engine works while the window draws the edit), or after `delayMs`
 * so that a burst of calls is validated once. A later call supersedes an earlier one (only the latest answer is
 * shown), and a change of positions only (a drag) is not validated again.
 */
export function scheduleValidation(workflow: Workflow, scripted: boolean, delayMs = 0, force = false, format?: string, path?: string | null) {
  if (!force && last && last.scripted === scripted && sameButPositions(last.workflow, workflow)) {
    last = { workflow, scripted };
    return;
  }
  last = { workflow, scripted };
  clearTimeout(timer);
  const mine = ++generation;
  const ask = async () => {
    try {
      // The system the document was read from: a SWEny file is held to SWEny's own graph rules, as `validate` holds it.
      // The open file: its `workflow` nodes' children are found beside it and checked (never saved: not yet).
      const r = await commands.validate(workflow, scripted, format ?? null, path ?? null);
      if (mine !== generation) return;
      if (r.status === "ok") useValidation.getState().setReport(r.data);
      else useValidation.setState({ failure: r.error.message });
    } catch (e) {
      if (mine === generation) useValidation.setState({ failure: String(e) });
    }
  };
  if (delayMs > 0) timer = setTimeout(ask, delayMs);
  else void ask();
}

/**
 * Validates the open document on every edit, from the moment it is made (not after the canvas has redrawn), and
 * again when the run mode changes what is checked (providers are checked unless the run is scripted).
 */
export function validateOnEdit(document: { getState: () => Doc; subscribe: (f: (s: Doc, p: Doc) => void) => () => void }, scripted: () => boolean, onModeChange: (f: () => void) => () => void) {
  const ask = (d: Doc, force = false) => scheduleValidation(d.workflow, scripted(), 0, force, d.format, d.path);
  ask(document.getState());
  // Read from another system (a SWEny file) or saved as ours: its graph rules change, so it is validated again; so
  // is a document saved to a file (or as another): its children are found beside it now.
  const stopDocument = document.subscribe((s, p) => {
    const again = s.format !== p.format || s.path !== p.path;
    if (s.workflow !== p.workflow || again) ask(s, again);
  });
  // What the app knows changed (the run source, the model found, consent given): validated again even if the graph did not.
  const stopMode = onModeChange(() => ask(document.getState(), true));
  return () => {
    stopDocument();
    stopMode();
  };
}

/** What validation reads of the document: the workflow, the system it was read from, and its file. */
type Doc = { workflow: Workflow; format?: string; path?: string | null };
