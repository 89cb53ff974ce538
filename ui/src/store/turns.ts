// The conversations of the agents of the run shown: each model turn and tool call, as the run's journal keeps them
// (the Last run tab's Conversation). Fetched for one run at a time, only when asked (the tab is open), and again
// when the run has moved on since. Knows nothing of starting or showing runs.
import { create } from "zustand";
import type { TurnView_Serialize as TurnView } from "../bindings";
import { commands, unwrap } from "../api";
import { errorText } from "./messages";

export type { TurnView_Serialize as TurnView } from "../bindings";

type TurnsState = {
  /** The run the turns are of. */
  runId: string | null;
  /** Each agent's turns and tool calls, by node id, in order. */
  byNode: Record<string, TurnView[]>;
  /** Why they could not be read, if they could not. */
  error: string | null;
  /** What was last asked (`runId` and how far the run was): asking the same again does nothing. */
  asked: string | null;
  /** Reads the turns of `runId`, unless they were read at this `stamp` (how far the run was) already. */
  load: (runId: string, stamp: string) => Promise<void>;
  reset: () => void;
};

export const useTurns = create<TurnsState>((set, get) => ({
  runId: null,
  byNode: {},
  error: null,
  asked: null,
  load: async (runId, stamp) => {
    const asked = `${runId}\n${stamp}`;
    if (get().asked === asked) return;
    // Another run: its turns only, never the last run's while they come.
    set(get().runId === runId ? { asked } : { asked, runId, byNode: {}, error: null });
    try {
      const turns = await unwrap(commands.runTurns(runId));
      if (get().asked !== asked) return; // asked again since: the later answer wins
      const byNode: Record<string, TurnView[]> = {};
      for (const [node, list] of Object.entries(turns)) if (list) byNode[node] = list;
      set({ byNode, error: null });
    } catch (e) {
      if (get().asked !== asked) return;
      // Asked again when the run moves on, or the tab is opened again.
      set({ error: errorText(e), asked: null });
    }
  },
  reset: () => set({ runId: null, byNode: {}, error: null, asked: null }),
}));
