// The parents a person came down through to the open workflow (Open child workflow on a `workflow` node), nearest
// last: the toolbar's breadcrumb goes back up. Opening a workflow any other way starts a new trail. Knows nothing
// of files: `files.ts` opens them and keeps this in step.
import { create } from "zustand";

type TrailState = {
  /** The files of the workflows above the open one, the top one first. */
  parents: string[];
  /** Came down from `parent` to one of its children. */
  descend: (parent: string) => void;
  /** Went back up to `parents[at]`: it and those below it leave the trail. */
  ascend: (at: number) => void;
  clear: () => void;
};

export const useTrail = create<TrailState>((set) => ({
  parents: [],
  descend: (parent) => set((s) => ({ parents: [...s.parents, parent] })),
  ascend: (at) => set((s) => ({ parents: s.parents.slice(0, at) })),
  clear: () => set({ parents: [] }),
}));
