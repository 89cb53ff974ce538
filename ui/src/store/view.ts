// Requests to the canvas to move its viewport (a newly opened workflow shown readably, the whole workflow fitted),
// and the last one it drew; Layout, which moves the nodes and then fits them. Knows nothing of files or runs.
import { create } from "zustand";
import { layout } from "../model/layout";
import { useDocument } from "./document";

/** A request to the canvas to move its viewport: `open` shows a newly opened workflow readably. */
export type ViewRequest = { kind: "open" | "fit"; nonce: number };

type ViewState = {
  request: ViewRequest;
  /** The nonce of the last view request the canvas has drawn (the open view included). */
  shown: number;
  requestView: (kind: ViewRequest["kind"]) => void;
  /** The canvas drew the view asked for with this nonce. */
  viewShown: (nonce: number) => void;
  /** Lays the workflow out (ELK) and fits it in view. */
  layout: () => Promise<void>;
};

export const useView = create<ViewState>((set, get) => ({
  request: { kind: "open", nonce: 0 },
  shown: -1,
  requestView: (kind) => set((s) => ({ request: { kind, nonce: s.request.nonce + 1 } })),
  viewShown: (nonce) => set({ shown: nonce }),
  layout: async () => {
    const laid = await layout(useDocument.getState().workflow);
    // Only the positions are taken, onto the document as it is now: an edit made while ELK worked is kept.
    const at = new Map(laid.nodes.map((n) => [n.id, n.position]));
    useDocument.getState().edit((w) => ({ ...w, nodes: w.nodes.map((n) => (at.has(n.id) ? { ...n, position: at.get(n.id) } : n)) }));
    get().requestView("fit");
  },
}));
