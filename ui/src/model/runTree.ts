// History's rows as a tree: each child run (a `workflow` node's, or a workflow tool call's) under the run that ran
// it, so a parent and its children read as one piece of work (docs/subworkflows.md).
import type { RunSummary } from "../store/history";

/** One row of History: a run, how deep it is nested, and how many child runs of its own it lists. */
export type RunLine = { run: RunSummary; depth: number; children: number };

/**
 * Orders `runs` (newest first, as the stores list them) for History: a run whose parent is listed follows it, one
 * level deeper, with its siblings in the order they started, and only while the parent is open (`open`); a child
 * whose parent is not listed (filtered out, or not loaded yet) stands on its own. `top` cuts the list after that many
 * runs on their own, with their children.
 */
export function runTree(runs: readonly RunSummary[], open: ReadonlySet<string>, top = Infinity): RunLine[] {
  const listed = new Set(runs.map((r) => r.id));
  const childrenOf = new Map<string, RunSummary[]>();
  for (const r of runs) {
    if (r.parent && listed.has(r.parent.run) && r.parent.run !== r.id) {
      childrenOf.set(r.parent.run, [...(childrenOf.get(r.parent.run) ?? []), r]);
    }
  }
  for (const children of childrenOf.values()) children.sort((a, b) => a.started.localeCompare(b.started) || a.id.localeCompare(b.id));
  const lines: RunLine[] = [];
  const seen = new Set<string>();
  const visit = (run: RunSummary, depth: number) => {
    if (seen.has(run.id)) return;
    seen.add(run.id);
    const children = childrenOf.get(run.id) ?? [];
    lines.push({ run, depth, children: children.length });
    if (open.has(run.id)) for (const child of children) visit(child, depth + 1);
  };
  let roots = 0;
  for (const r of runs) {
    if (r.parent && listed.has(r.parent.run)) continue;
    if (roots++ >= top) break;
    visit(r, 0);
  }
  return lines;
}

/**
 * Whether this window can resume `run` itself: a paused or interrupted run of this computer's store that no window
 * runs now, and no child run (its parent's run takes it up, with the parent's answers and decisions).
 */
export function resumableHere(run: RunSummary): boolean {
  return (run.status === "paused" || run.status === "interrupted") && !run.live && !run.server && !run.parent;
}

/** How many runs History lists on their own (not under a parent it lists): what "Show more" pages through. */
export function rootCount(runs: readonly RunSummary[]): number {
  const listed = new Set(runs.map((r) => r.id));
  return runs.filter((r) => !(r.parent && listed.has(r.parent.run))).length;
}
