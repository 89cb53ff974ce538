// Replaying a stored run on the canvas, step by step: the events of the replay (played again by the engine from the
// run's recording, with no model or tool call) are kept here, and the run store is set to the state at the moment
// the timeline points to — computed by the same pure reducer that follows a live run, so a replayed moment looks
// exactly as it did live. Seeking back is recomputing from the start; checkpoints keep that cheap on long runs.
import { create } from "zustand";
import type { Event } from "../types";
import { reduce, useRun } from "./run";

/** Events that change what the canvas shows: the timeline steps from one to the next. */
const STEP_TYPES = new Set(["workflow:start", "node:enter", "node:exit", "node:skipped", "route", "route:choosing", "approval:requested", "approval:received", "workflow:paused", "workflow:resumed", "workflow:end"]);
/** How long each step shows while playing. */
export const STEP_MS = 350;
const CHECKPOINT_EVERY = 500;

type Base = Pick<ReturnType<typeof reduce>, "status" | "error" | "nodes" | "followed" | "pending" | "executions" | "rowOf">;

type ReplayState = {
  runId: string | null;
  events: Event[];
  /** Indices into `events` after which the timeline stops (one per step), ascending; the last is the end. */
  steps: number[];
  /** The step shown: the canvas shows the run after `events[steps[at]]`. */
  at: number;
  playing: boolean;
  load: (runId: string, nodeIds: string[], events: Event[]) => void;
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

  load: (runId, nodeIds, events) => {
    stop();
    base = { status: "running", error: null, nodes: Object.fromEntries(nodeIds.map((id) => [id, { status: "pending" as const, iteration: 0, streamed: "", finishedSeq: null, iterations: [] }])), followed: {}, pending: [], executions: [], rowOf: {} };
    checkpoints = new Map();
    const steps = events.flatMap((e, i) => (STEP_TYPES.has(e.type) ? [i] : []));
    if (!steps.length || steps[steps.length - 1] !== events.length - 1) steps.push(events.length - 1);
    set({ runId, events, steps, at: 0, playing: false });
    get().seek(0);
    get().play();
  },

  seek: (step) => {
    const { events, steps } = get();
    if (!steps.length || !base) return;
    const at = Math.max(0, Math.min(steps.length - 1, step));
    const count = steps[at] + 1;
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
