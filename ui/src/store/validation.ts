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

/** Validates `workflow` shortly; a later call supersedes an earlier one. */
export function scheduleValidation(workflow: Workflow, scripted: boolean, delayMs = 80) {
  clearTimeout(timer);
  const mine = ++generation;
  timer = setTimeout(async () => {
    try {
      const r = await commands.validate(workflow, scripted);
      if (mine !== generation) return;
      if (r.status === "ok") useValidation.getState().setReport(r.data);
      else useValidation.setState({ failure: r.error });
    } catch (e) {
      useValidation.setState({ failure: String(e) });
    }
  }, delayMs);
}
