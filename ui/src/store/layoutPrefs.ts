// The window's panes: whether the inspector is pinned open, which tab the bottom panel and the inspector show, and
// handles to collapse or expand the palette, the inspector and the bottom panel from commands and shortcuts. Pane
// sizes themselves are remembered by react-resizable-panels (useDefaultLayout, in the webview's local storage).
// Knows nothing of what the panes show.
import { create } from "zustand";
import type { RefObject } from "react";
import type { PanelImperativeHandle } from "react-resizable-panels";

type Pane = "palette" | "inspector" | "bottom";
/** The bottom panel's tabs. */
export type PanelTab = "run" | "problems" | "events" | "history" | "evals" | "notes";
/** The inspector's tabs for a node. */
export type InspectorTab = "settings" | "run";
type Refs = Record<Pane, RefObject<PanelImperativeHandle | null>>;

const PINNED_KEY = "switchyard-inspector-pinned";
const readPinned = () => {
  try {
    return localStorage.getItem(PINNED_KEY) === "1";
  } catch {
    return false;
  }
};

type LayoutPrefs = {
  /** The bottom panel's tab. */
  panel: PanelTab;
  /** The inspector's tab for a node, and which iteration its "Last run" tab shows (null: the latest). */
  inspector: { tab: InspectorTab; iteration: number | null };
  /** The inspector stays open with nothing selected. */
  inspectorPinned: boolean;
  /** Bumped to ask the bottom panel to open (a tab was picked, a run started). */
  bottomOpenRequest: number;
  /** The inspector's width on screen (0 when closed): messages keep clear of it. */
  inspectorPx: number;
  setInspectorPx: (px: number) => void;
  refs: Refs | null;
  attach: (refs: Refs) => void;
  setInspectorPinned: (pinned: boolean) => void;
  openBottom: () => void;
  toggle: (pane: Pane) => void;
  setPanel: (tab: PanelTab) => void;
  inspect: (tab: InspectorTab, iteration?: number | null) => void;
};

export const useLayoutPrefs = create<LayoutPrefs>((set, get) => ({
  panel: "problems",
  inspector: { tab: "settings", iteration: null },
  inspectorPinned: readPinned(),
  bottomOpenRequest: 0,
  inspectorPx: 0,
  setInspectorPx: (inspectorPx) => set({ inspectorPx: Math.round(inspectorPx) }),
  refs: null,
  attach: (refs) => set({ refs }),
  setInspectorPinned: (inspectorPinned) => {
    set({ inspectorPinned });
    try {
      localStorage.setItem(PINNED_KEY, inspectorPinned ? "1" : "0");
    } catch {
      /* a preference: failing to keep it changes nothing now */
    }
  },
  openBottom: () => set((s) => ({ bottomOpenRequest: s.bottomOpenRequest + 1 })),
  toggle: (pane) => {
    const p = get().refs?.[pane].current;
    if (!p) return;
    if (p.isCollapsed()) p.expand();
    else p.collapse();
  },
  setPanel: (panel) => set({ panel }),
  inspect: (tab, iteration = null) => set({ inspector: { tab, iteration } }),
}));
