// Which dialogs are open: help, Settings, Find, "save before closing?" (and before New, Open, a stored run), and the
// approval dialogs of a run — the one the person asked to review, those put off with "Later", and the notes typed in
// them. Knows nothing of what a dialog does once answered.
import { create } from "zustand";

export type DialogName = "help" | "settings" | "find" | "close";

/** What a person answers about unsaved changes: saved them (Save went through), let them go, or stay. */
export type UnsavedAnswer = "save" | "discard" | "cancel";

/** "Save changes before …?", asked before another document replaces this one: what would replace it; the answer. */
export type UnsavedQuestion = { doing: string; answer: (a: UnsavedAnswer) => void };

type DialogsState = {
  shown: Record<DialogName, boolean>;
  /** Notes typed in approval dialogs, kept when a dialog is put off with "Later". */
  approvalNotes: Record<string, string>;
  /** The approval the person asked to review, and those put off. */
  reviewing: string | null;
  dismissed: string[];
  /** The unsaved-changes question asked before another document replaces this one, while it waits for an answer. */
  unsaved: UnsavedQuestion | null;
  /** Asks Save / Don't save / Cancel before `doing` ("opening another workflow"); resolves with the answer. */
  askUnsaved: (doing: string) => Promise<UnsavedAnswer>;
  /** Answers the question asked, and closes it. */
  answerUnsaved: (a: UnsavedAnswer) => void;
  setDialog: (name: DialogName, open: boolean) => void;
  setApprovalNote: (node: string, note: string) => void;
  review: (node: string | null) => void;
  dismissApproval: (node: string) => void;
  /** The approval of `node` was decided: its note goes, and the dialog closes. */
  approvalDecided: (node: string) => void;
  /** Approvals start anew (another document or run): none put off or under review; `notes`: the notes go too. */
  resetApprovals: (notes: boolean) => void;
};

export const useDialogs = create<DialogsState>((set, get) => ({
  shown: { help: false, settings: false, find: false, close: false },
  approvalNotes: {},
  reviewing: null,
  dismissed: [],
  unsaved: null,
  askUnsaved: (doing) =>
    new Promise((resolve) => {
      get().unsaved?.answer("cancel"); // a question still open is left unanswered: whatever asked it does not happen
      set({ unsaved: { doing, answer: resolve } });
    }),
  answerUnsaved: (a) => {
    const asked = get().unsaved;
    set({ unsaved: null });
    asked?.answer(a);
  },
  setDialog: (name, open) => set((s) => ({ shown: { ...s.shown, [name]: open } })),
  setApprovalNote: (node, note) => set((s) => ({ approvalNotes: { ...s.approvalNotes, [node]: note } })),
  review: (node) => set((s) => ({ reviewing: node, dismissed: node ? s.dismissed.filter((d) => d !== node) : s.dismissed })),
  dismissApproval: (node) => set((s) => ({ dismissed: [...s.dismissed, node], reviewing: null })),
  approvalDecided: (node) =>
    set((s) => {
      const notes = { ...s.approvalNotes };
      delete notes[node];
      return { approvalNotes: notes, reviewing: null };
    }),
  resetApprovals: (notes) => set(notes ? { dismissed: [], reviewing: null, approvalNotes: {} } : { dismissed: [], reviewing: null }),
}));
