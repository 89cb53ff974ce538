// Run state, kept apart from the document and keyed by node id: a status change re-renders one node, not the
// canvas. Events arrive in batches and are applied once per animation frame.
import { create } from "zustand";
import type { Event, NodeResult } from "../types";
import type { PendingApproval_Serialize as PendingApproval } from "../bindings";
import { inAppWords } from "../model/words";
import { decidedSaid } from "../model/who";

export type NodeRunStatus = "pending" | "running" | "succeeded" | "failed" | "skipped" | "waiting" | "cancelled";

/** Node, run and stored-run statuses in the person's words (cards, the run list, History). */
export const STATUS_WORDS: Record<string, string> = { pending: "waiting to run", running: "running", succeeded: "succeeded", failed: "failed", skipped: "skipped", waiting: "waits for you", paused: "waits for you", completed: "completed", cancelled: "cancelled", interrupted: "interrupted", ready: "waits for a worker" };

export type Iteration = { iteration: number; instruction: string; result: NodeResult | null; durationMs: number | null; tokens: number | null };

/** One row of the run list: a node execution (or a skip, or a wait for approval), in the order it began. */
export type Execution = {
  node: string;
  iteration: number;
  status: NodeRunStatus;
  /** Sequence number of the event that began it: rows are kept in this order. */
  seq: number;
  durationMs: number | null;
  tokens: number | null;
  /** A one-line preview of the output (or the error). */
  preview: string;
  /** The node finished and the model is choosing which way the run goes on. */
  routing?: boolean;
  /** Its approval's decision, who made it and when: "approved by alice, 10:42" (`model/who.ts`). */
  decided?: string;
};

export type NodeRun = {
  status: NodeRunStatus;
  iteration: number;
  /** Text streamed so far by the running iteration. */
  streamed: string;
  /** Sequence number of the event that last gave this node a final state (orders completions). */
  finishedSeq: number | null;
  iterations: Iteration[];
  /** The model is choosing the route out of this node (natural-language `when` edges). */
  choosing?: boolean;
};

/** An approval node waiting, or (with `tool`) an agent's tool call waiting for a decision: the engine's one shape. */
export type { PendingApproval_Serialize as PendingApproval } from "../bindings";

type RunView = {
  runId: string | null;
  status: "idle" | "running" | "paused" | "completed" | "failed" | "cancelled";
  error: string | null;
  nodes: Record<string, NodeRun>;
  /** Edges followed, as "from->to". */
  followed: Record<string, true>;
  pending: PendingApproval[];
  executions: Execution[];
  /** Index of the run list's rows by node (its latest) and by `node#iteration`. */
  rowOf: Record<string, number>;
  events: Event[];
  begin: (runId: string, nodeIds: string[]) => void;
  apply: (events: Event[]) => void;
  reset: () => void;
};

const MAX_EVENTS = 5000;

/** Applies events to a copy of the state's maps; pure except for the copies it makes. */
export function reduce(state: Pick<RunView, "status" | "error" | "nodes" | "followed" | "pending"> & { executions?: Execution[]; rowOf?: Record<string, number> }, events: Event[]) {
  let { status, error } = state;
  let executions = state.executions ?? [];
  // Where each node's rows are: `node` → its latest row, `node#iteration` → that iteration's row.
  let rowOf = state.rowOf ?? {};
  let copied = false;
  /** The row of `node`'s latest execution (copied once per batch, so earlier states are never mutated). */
  const own = () => {
    if (copied) return;
    executions = [...executions];
    rowOf = { ...rowOf };
    copied = true;
  };
  const row = (node: string, iteration?: number): Execution | undefined => {
    const i = rowOf[iteration === undefined ? node : `${node}#${iteration}`];
    if (i === undefined) return undefined;
    own();
    return (executions[i] = { ...executions[i] });
  };
  const addRow = (r: Execution) => {
    own();
    rowOf[r.node] = executions.length;
    rowOf[`${r.node}#${r.iteration}`] = executions.length;
    executions.push(r);
  };
  const nodes = { ...state.nodes };
  const followed = { ...state.followed };
  let pending = state.pending;
  const node = (id: string): NodeRun => (nodes[id] = { ...(nodes[id] ?? { status: "pending", iteration: 0, streamed: "", finishedSeq: null, iterations: [] }) });
  for (const e of events) {
    switch (e.type) {
      case "workflow:start":
        status = "running";
        break;
      case "node:enter": {
        const n = node(e.node);
        n.status = "running";
        n.iteration = e.iteration;
        n.streamed = "";
        n.iterations = [...n.iterations, { iteration: e.iteration, instruction: e.instruction, result: null, durationMs: null, tokens: null }];
        addRow({ node: e.node, iteration: e.iteration, status: "running", seq: e.seq, durationMs: null, tokens: null, preview: "" });
        break;
      }
      case "node:progress": {
        const n = node(e.node);
        n.streamed += e.message;
        break;
      }
      case "node:exit": {
        const n = node(e.node);
        n.status = e.result.status === "success" ? "succeeded" : e.result.status === "failed" ? "failed" : "skipped";
        n.finishedSeq = e.seq;
        const its = [...n.iterations];
        const last = its.findIndex((it) => it.iteration === e.iteration);
        const tokens = e.usage ? e.usage.inputTokens + e.usage.outputTokens : null;
        const entry = { iteration: e.iteration, instruction: last >= 0 ? its[last].instruction : "", result: e.result, durationMs: e.durationMs ?? null, tokens };
        if (last >= 0) its[last] = entry;
        else its.push(entry);
        n.iterations = its;
        const r = row(e.node, e.iteration);
        const done = { status: n.status, durationMs: e.durationMs ?? null, tokens, preview: outputPreview(e.result) };
        if (r) Object.assign(r, done);
        else addRow({ node: e.node, iteration: e.iteration, seq: e.seq, ...done });
        break;
      }
      case "node:skipped": {
        const n = node(e.node);
        n.status = "skipped";
        n.finishedSeq = e.seq;
        addRow({ node: e.node, iteration: 0, status: "skipped", seq: e.seq, durationMs: null, tokens: null, preview: "" });
        break;
      }
      case "approval:requested": {
        node(e.node).status = "waiting";
        const r = row(e.node);
        if (r && r.status === "running") Object.assign(r, { status: "waiting", preview: e.message });
        else addRow({ node: e.node, iteration: 1, status: "waiting", seq: e.seq, durationMs: null, tokens: null, preview: e.message });
        pending = [...pending.filter((p) => p.node !== e.node), { node: e.node, message: e.message, previousOutput: e.previousOutput ?? "", ...(e.tool ? { tool: e.tool } : {}), ...(e.child ? { child: e.child } : {}) }];
        break;
      }
      case "approval:received": {
        // An agent whose tool call was decided goes on running; an approval node ends with its node:exit.
        if (pending.some((p) => p.node === e.node && p.tool)) {
          node(e.node).status = "running";
          const r = row(e.node);
          if (r && r.status === "waiting") Object.assign(r, { status: "running", preview: "" });
        }
        pending = pending.filter((p) => p.node !== e.node);
        const decided = row(e.node);
        if (decided) decided.decided = decidedSaid(e.decision, e.by, e.ts);
        break;
      }
      case "route": {
        if (e.to !== "(end)") followed[`${e.from}->${e.to}`] = true;
        // The tokens the model used to choose the route belong to the node it leaves.
        if (e.usage) {
          const used = e.usage.inputTokens + e.usage.outputTokens;
          const n = node(e.from);
          const its = [...n.iterations];
          const last = its.length - 1;
          if (last >= 0) its[last] = { ...its[last], tokens: (its[last].tokens ?? 0) + used };
          n.iterations = its;
          const r = row(e.from);
          if (r) r.tokens = (r.tokens ?? 0) + used;
        }
        if (nodes[e.from]?.choosing) {
          node(e.from).choosing = false;
          const r = row(e.from);
          if (r) r.routing = false;
        }
        break;
      }
      case "route:choosing": {
        node(e.node).choosing = true;
        const r = row(e.node);
        if (r) r.routing = true;
        break;
      }
      case "workflow:paused":
        status = "paused";
        break;
      case "workflow:resumed":
        status = "running";
        break;
      case "workflow:end":
        status = e.status === "running" ? "running" : e.status;
        error = e.error ?? null;
        if (status !== "paused" && status !== "running") {
          // The run is over: nothing waits for a person any more, and what was cut short by a cancel says so.
          pending = [];
          for (const id of Object.keys(nodes)) {
            if (nodes[id].status === "waiting" || nodes[id].status === "running") node(id).status = status === "cancelled" ? "cancelled" : "pending";
          }
          executions = executions.map((r) => (r.status === "waiting" || r.status === "running" ? { ...r, status: status === "cancelled" ? "cancelled" : r.status } : r));
        }
        break;
    }
  }
  return { status, error, nodes, followed, pending, executions, rowOf };
}

/** The first line of a result, short enough for a row or a node card. */
export function outputPreview(result: NodeResult, max = 90): string {
  if (result.error) return inAppWords(result.error, result.errorCode).split("\n")[0].slice(0, max);
  const data = result.data as unknown;
  // An `if` node's output names its branch by its condition (the label), not by its handle id.
  if (data && typeof data === "object" && typeof (data as { label?: unknown }).label === "string" && "branch" in data) return `→ ${(data as unknown as { label: string }).label}`;
  let text: string;
  if (data && typeof data === "object" && !Array.isArray(data) && typeof (data as { text?: unknown }).text === "string" && Object.keys(data).length === 1)
    text = (data as { text: string }).text;
  else text = data === undefined || data === null ? "" : typeof data === "string" ? data : JSON.stringify(data);
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export const useRun = create<RunView>((set) => ({
  runId: null,
  status: "idle",
  error: null,
  nodes: {},
  followed: {},
  pending: [],
  executions: [],
  rowOf: {},
  events: [],
  begin: (runId, nodeIds) =>
    set({
      runId,
      status: "running",
      error: null,
      nodes: Object.fromEntries(nodeIds.map((id) => [id, { status: "pending" as const, iteration: 0, streamed: "", finishedSeq: null, iterations: [] }])),
      followed: {},
      pending: [],
      executions: [],
      rowOf: {},
      events: [],
    }),
  apply: (events) =>
    set((s) => {
      const next = reduce(s, events);
      const all = s.events.length + events.length > MAX_EVENTS ? [...s.events, ...events].slice(-MAX_EVENTS) : [...s.events, ...events];
      return { ...next, events: all };
    }),
  reset: () => set({ runId: null, status: "idle", error: null, nodes: {}, followed: {}, pending: [], executions: [], rowOf: {}, events: [] }),
}));

/** One node's run state; components subscribe per node id. */
export const useNodeRun = (id: string) => useRun((s) => s.nodes[id]);

/** Queues event batches and applies everything queued once per animation frame. */
export function frameBatcher(apply: (events: Event[]) => void, schedule: (cb: () => void) => void = (cb) => requestAnimationFrame(cb)) {
  let queue: Event[] = [];
  let scheduled = false;
  return (batch: Event[]) => {
    queue.push(...batch);
    if (scheduled) return;
    scheduled = true;
    schedule(() => {
      scheduled = false;
      const events = queue;
      queue = [];
      apply(events);
    });
  };
}
