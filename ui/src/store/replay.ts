// Replaying a stored run on the canvas, step by step: the events of the replay (played again by the engine from the
// run's recording, with no model or tool call) are kept here, and the run store is set to the state at the moment
// the timeline points to — computed by the same pure reducer that follows a live run, so a replayed moment looks
// exactly as it did live. Seeking back is recomputing from the start; checkpoints keep that cheap on long runs.
// Inside each agent the timeline also stops at each model turn and tool call its journal kept (`timeline`), between
// the node's enter and exit: the node shows running there, and its Conversation marks the turn.
import { create } from "zustand";
import type { Event } from "../types";
import { reduce, useRun } from "./run";
import { useTurns, type TurnView } from "./turns";

/** Events that change what the canvas shows: the timeline steps from one to the next. */
const STEP_TYPES = new Set(["workflow:start", "node:enter", "node:exit", "node:skipped", "route", "route:choosing", "approval:requested", "approval:received", "workflow:paused", "workflow:resumed", "workflow:taken-over", "workflow:end"]);
/** How long each step shows while playing. */
export const STEP_MS = 350;
const CHECKPOINT_EVERY = 500;

type Base = Pick<ReturnType<typeof reduce>, "status" | "error" | "nodes" | "followed" | "pending" | "executions" | "rowOf">;

/** A model turn or tool call of an agent the timeline stops at: `index` is its place in the node's turns (`turns`). */
export type TurnStep = { node: string; index: number; turn: TurnView };

/** Where the timeline stops: after `events[event]`, at a turn inside a node when `turn` is set. */
export type Step = { event: number; turn: TurnStep | null };

type ReplayState = {
  runId: string | null;
  events: Event[];
  /** Where the timeline stops, in order (`timeline`); the last is the end. */
  steps: Step[];
  /** The step shown: the canvas shows the run after `events[steps[at].event]`. */
  at: number;
  playing: boolean;
  /** `turns`: each agent's turns and tool calls (the `run_turns` command), the timeline's steps inside nodes. */
  load: (runId: string, nodeIds: string[], events: Event[], turns?: Record<string, TurnView[]>) => void;
  seek: (step: number) => void;
  play: () => void;
  pause: () => void;
  close: () => void;
  /** Leaves the replay without touching the run store (something else is shown now). */
  discard: () => void;
};

let base: Base | null = null;
let checkpoints: Map<number, Base> = new Map();
let timer: ReturnType<typeof setInterval> | null = null;

const stop = () => {
  if (timer) clearInterval(timer);
  timer = null;
};

/**
 * The timeline's steps: after each event that changes what the canvas shows, and at each model turn and tool call
 * of each agent (`turns`, each node's in journal order), between that node's `node:enter` and `node:exit` of the same
 * iteration. A turn kept with `seq` (the number the run's next event had when it was kept) falls right after the
 * events before it; one without (a fork's turns taken from the run it forked, older logs) spreads evenly between its
 * neighbours. A pure function of its arguments.
 */
export function timeline(events: Event[], turns: Record<string, TurnView[]> = {}): Step[] {
  type Placed = { after: number; turn: TurnStep | null; order: number };
  const placed: Placed[] = events.flatMap((e, i) => (STEP_TYPES.has(e.type) ? [{ after: i, turn: null, order: 0 }] : []));
  const last = events.length - 1;
  // Where each execution of a node is: its enter and its exit (the end of the events if it has none).
  const spans = new Map<string, [number, number]>();
  events.forEach((e, i) => {
    if (e.type === "node:enter") spans.set(`${e.node}\n${e.iteration}`, [i, last]);
    else if (e.type === "node:exit") {
      const span = spans.get(`${e.node}\n${e.iteration}`);
      if (span && span[1] === last) span[1] = Math.max(span[0], i - 1);
    }
  });
  // The last event numbered before `seq`: events are in `seq` order.
  const before = (seq: number) => {
    let [lo, hi] = [0, last];
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (events[mid].seq < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return hi;
  };
  let order = 0;
  for (const [node, list] of Object.entries(turns)) {
    const groups = new Map<number, number[]>();
    list.forEach((t, index) => groups.set(t.iteration, [...(groups.get(t.iteration) ?? []), index]));
    for (const [iteration, indices] of groups) {
      const span = spans.get(`${node}\n${iteration}`);
      if (!span) continue; // the node never entered in these events
      const [enter, end] = span;
      const clamp = (i: number) => Math.max(enter, Math.min(end, i));
      const at: (number | null)[] = indices.map((index) => {
        const t = list[index];
        return t.kind !== "said" && t.seq != null ? clamp(before(t.seq)) : null;
      });
      // Untimed turns: evenly between the timed ones around them (or the node's enter and exit), never going back.
      let floor = enter;
      for (let k = 0; k < at.length; k++) {
        if (at[k] != null) {
          floor = Math.max(floor, at[k]!);
          at[k] = floor;
          continue;
        }
        let next = k;
        while (next < at.length && at[next] == null) next++;
        const ceiling = next < at.length ? Math.max(floor, at[next]!) : end;
        const gap = next - k;
        for (let j = 0; j < gap; j++) at[k + j] = floor + Math.floor(((j + 1) * (ceiling - floor)) / (gap + 1));
        k = next - 1;
        floor = at[next - 1]!;
      }
      indices.forEach((index, k) => placed.push({ after: at[k]!, turn: { node, index, turn: list[index] }, order: ++order }));
    }
  }
  // After its event, a turn comes after the event's own step; a node's turns in their order, other nodes' by `seq`.
  const seqOf = (t: TurnStep) => (t.turn.kind !== "said" ? t.turn.seq ?? -1 : -1);
  placed.sort((a, b) => {
    if (a.after !== b.after) return a.after - b.after;
    if (!a.turn || !b.turn) return (a.turn ? 1 : 0) - (b.turn ? 1 : 0);
    return a.turn.node === b.turn.node ? a.order - b.order : seqOf(a.turn) - seqOf(b.turn) || a.order - b.order;
  });
  const steps = placed.map(({ after, turn }) => ({ event: after, turn }));
  if (events.length && (!steps.length || steps[steps.length - 1].event !== last || steps[steps.length - 1].turn)) steps.push({ event: last, turn: null });
  return steps;
}

/** The run's state after the first `count` events. */
function stateAfter(events: Event[], count: number): Base {
  let from = 0;
  let state = base!;
  for (const [at, s] of checkpoints) if (at <= count && at > from) [from, state] = [at, s];
  for (let i = from; i < count; i += CHECKPOINT_EVERY) {
    const end = Math.min(count, i + CHECKPOINT_EVERY);
    state = reduce(state, events.slice(i, end));
    if (end % CHECKPOINT_EVERY === 0) checkpoints.set(end, state);
  }
  return state;
}

export const useReplay = create<ReplayState>((set, get) => ({
  runId: null,
  events: [],
  steps: [],
  at: 0,
  playing: false,

  load: (runId, nodeIds, events, turns = {}) => {
    stop();
    base = { status: "running", error: null, nodes: Object.fromEntries(nodeIds.map((id) => [id, { status: "pending" as const, iteration: 0, streamed: "", finishedSeq: null, iterations: [] }])), followed: {}, pending: [], executions: [], rowOf: {} };
    checkpoints = new Map();
    const steps = timeline(events, turns);
    // The Conversation reads these turns while the replay lasts, instead of asking the engine again at each step.
    useTurns.setState({ runId, byNode: turns, error: null, asked: `${runId}\nreplay` });
    set({ runId, events, steps, at: 0, playing: false });
    get().seek(0);
    get().play();
  },

  seek: (step) => {
    const { events, steps } = get();
    if (!steps.length || !base) return;
    const at = Math.max(0, Math.min(steps.length - 1, step));
    const count = steps[at].event + 1;
    // Approvals that waited are shown as they were, but nothing can be decided in a replay.
    useRun.setState({ ...stateAfter(events, count), pending: [], events: events.slice(0, count) });
    set({ at });
  },

  play: () => {
    stop();
    if (get().at >= get().steps.length - 1) get().seek(0);
    set({ playing: true });
    timer = setInterval(() => {
      const { at, steps } = get();
      if (at >= steps.length - 1) return get().pause();
      get().seek(at + 1);
    }, STEP_MS);
  },

  pause: () => {
    stop();
    set({ playing: false });
  },

  discard: () => {
    stop();
    base = null;
    checkpoints = new Map();
    set({ runId: null, events: [], steps: [], at: 0, playing: false });
  },

  close: () => {
    stop();
    const { events } = get();
    // Leaving the replay shows the run as it ended.
    if (events.length && base) useRun.setState({ ...stateAfter(events, events.length), pending: [], events });
    base = null;
    checkpoints = new Map();
    set({ runId: null, events: [], steps: [], at: 0, playing: false });
  },
}));

/** The run view starts anew: for run `runId` (its nodes pending), or empty (null); a replay on the canvas ends. */
export function freshRunView(runId: string | null, nodeIds: string[] = []): void {
  useReplay.getState().discard();
  if (runId === null) useRun.getState().reset();
  else useRun.getState().begin(runId, nodeIds);
}
