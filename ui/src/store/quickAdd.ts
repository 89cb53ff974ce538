// Which keyboard list is open (components/QuickAdd.tsx): the node types to add (Tab, A), or the nodes to connect the
// selected one to (C), and the node it starts from — the one selected when it opened. Knows nothing of the lists.
import { create } from "zustand";
import type { Node } from "../types";
import { useDocument } from "./document";
import { useMessages } from "./messages";

export type QuickMode = "add" | "connect";

type QuickAddState = {
  open: { mode: QuickMode; from: string | null } | null;
  show: (mode: QuickMode) => void;
  close: () => void;
};

/** The one node selected, if exactly one is (and no edge). */
export function selectedNode(): Node | undefined {
  const { selection, workflow } = useDocument.getState();
  if (selection.nodes.length !== 1 || selection.edges.length) return undefined;
  return workflow.nodes.find((n) => n.id === selection.nodes[0]);
}

export const useQuickAdd = create<QuickAddState>((set) => ({
  open: null,
  show: (mode) => {
    const from = selectedNode()?.id ?? null;
    if (mode === "connect" && !from) {
      useMessages.getState().info("Select the node to connect from first (click it, or find it with Ctrl+K), then press C.");
      return;
    }
    set({ open: { mode, from } });
  },
  close: () => set({ open: null }),
}));
