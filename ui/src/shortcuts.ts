// Every keyboard shortcut, defined once: the shortcuts panel lists this table and the window's key handler runs it,
// so a shortcut that is listed always works.
import { edgeKey, useDocument } from "./store/document";
import { useMessages } from "./store/messages";
import { useDialogs } from "./store/dialogs";
import * as files from "./store/files";
import * as runControl from "./store/runControl";
import { useView } from "./store/view";
import { selectedNode, useQuickAdd } from "./store/quickAdd";
import { desktopOnly, NOT_IN_BROWSER } from "./desktopOnly";

export type Shortcut = {
  /** As shown in the panel. */
  keys: string;
  does: string;
  /** Whether a key event is this shortcut. */
  matches: (e: KeyboardEvent) => boolean;
  run: () => void;
  /** Also while typing in a field (Ctrl+S, Ctrl+Enter…); otherwise the field keeps the key. */
  inFields?: boolean;
  /** Only the desktop app can do it (files on this computer, its settings): a browser does not offer it. */
  desktop?: true;
};

const mod = (e: KeyboardEvent) => e.ctrlKey || e.metaKey;
const key = (e: KeyboardEvent, k: string) => e.key.toLowerCase() === k;
const doc = () => useDocument.getState();
const dialogs = () => useDialogs.getState();
const view = () => useView.getState();
/** The focus is on the canvas (a node card, the pane) or nowhere in particular: not on a toolbar button or a panel. */
const onCanvas = (e: KeyboardEvent) => {
  const t = e.target as HTMLElement | null;
  return !t || t === document.body || t === document.documentElement || Boolean(t.closest?.(".react-flow"));
};
const plain = (e: KeyboardEvent) => !mod(e) && !e.altKey;

function deleteSelection() {
  const refused = doc().deleteSelection();
  if (refused) useMessages.getState().error(`Not deleted: ${refused}`);
}

export const SHORTCUTS: Shortcut[] = [
  { keys: "Ctrl+N", does: "new workflow", matches: (e) => mod(e) && key(e, "n"), run: desktopOnly(NOT_IN_BROWSER.new, () => void files.newWorkflow()), inFields: true, desktop: true },
  { keys: "Ctrl+O", does: "open a workflow (any supported format)", matches: (e) => mod(e) && !e.shiftKey && key(e, "o"), run: desktopOnly(NOT_IN_BROWSER.open, () => void files.openPicked()), inFields: true, desktop: true },
  { keys: "Ctrl+S", does: "save", matches: (e) => mod(e) && !e.shiftKey && key(e, "s"), run: desktopOnly(NOT_IN_BROWSER.save, () => void files.save()), inFields: true, desktop: true },
  { keys: "Ctrl+Shift+S", does: "save as", matches: (e) => mod(e) && e.shiftKey && key(e, "s"), run: desktopOnly(NOT_IN_BROWSER.save, () => void files.saveAs()), inFields: true, desktop: true },
  { keys: "Ctrl+Shift+E", does: "export canonical YAML", matches: (e) => mod(e) && e.shiftKey && key(e, "e"), run: desktopOnly(NOT_IN_BROWSER.export, () => void files.exportYaml()), inFields: true, desktop: true },
  { keys: "Ctrl+Z", does: "undo", matches: (e) => mod(e) && !e.shiftKey && key(e, "z"), run: () => doc().undo() },
  { keys: "Ctrl+Shift+Z / Ctrl+Y", does: "redo", matches: (e) => mod(e) && ((e.shiftKey && key(e, "z")) || key(e, "y")), run: () => doc().redo() },
  { keys: "Ctrl+C", does: "copy the selected nodes", matches: (e) => mod(e) && key(e, "c"), run: () => doc().copySelection() },
  { keys: "Ctrl+V", does: "paste", matches: (e) => mod(e) && key(e, "v"), run: () => doc().paste() },
  { keys: "Ctrl+D", does: "duplicate the selected nodes", matches: (e) => mod(e) && key(e, "d"), run: () => doc().duplicateSelection() },
  { keys: "Ctrl+A", does: "select everything", matches: (e) => mod(e) && key(e, "a"), run: () => { const w = doc().workflow; doc().select({ nodes: w.nodes.map((n) => n.id), edges: w.edges.map(edgeKey) }); } },
  { keys: "Delete / Backspace", does: "delete the selection", matches: (e) => !mod(e) && (e.key === "Delete" || e.key === "Backspace"), run: deleteSelection },
  { keys: "Escape", does: "leave a field; clear the selection; close a panel", matches: (e) => e.key === "Escape", run: () => { const d = dialogs().shown; if (d.help || d.find) { dialogs().setDialog("help", false); dialogs().setDialog("find", false); } else doc().select({ nodes: [], edges: [] }); } },
  { keys: "Tab", does: "add a node after the selected one, connected (with the focus on the canvas)", matches: (e) => e.key === "Tab" && !e.shiftKey && plain(e) && onCanvas(e) && Boolean(selectedNode()), run: () => useQuickAdd.getState().show("add") },
  { keys: "A", does: "add a node (after the selected one, connected, when one is selected)", matches: (e) => plain(e) && key(e, "a"), run: () => useQuickAdd.getState().show("add") },
  { keys: "C", does: "connect the selected node to another", matches: (e) => plain(e) && key(e, "c"), run: () => useQuickAdd.getState().show("connect") },
  { keys: "Ctrl+K / Ctrl+F", does: "find a node or a command", matches: (e) => mod(e) && (key(e, "k") || key(e, "f")), run: () => dialogs().setDialog("find", true), inFields: true },
  { keys: "Ctrl+L", does: "lay the workflow out", matches: (e) => mod(e) && key(e, "l"), run: () => void view().layout() },
  { keys: "Shift+1", does: "fit the whole workflow in view", matches: (e) => e.shiftKey && !mod(e) && (e.code === "Digit1" || e.key === "!"), run: () => view().requestView("fit") },
  { keys: "Ctrl+Enter", does: "run", matches: (e) => mod(e) && e.key === "Enter", run: () => void runControl.run(), inFields: true },
  { keys: "F1 or ?", does: "this help", matches: (e) => e.key === "F1" || e.key === "?", run: () => dialogs().setDialog("help", true) },
];

/** Shift-drag box selection and Shift/Ctrl-click are pointer gestures, listed in the panel but run by the canvas. */
export const GESTURES: [string, string][] = [
  ["Shift+drag", "box-select nodes and edges"],
  ["Shift/Ctrl+click", "add to the selection"],
  ["Right-click", "what applies to a node, an edge or the canvas"],
  ["Drag a handle onto empty canvas", "add a node already connected"],
];

/** Runs the shortcut a key event is, if any; returns whether it did. */
export function handleShortcut(e: KeyboardEvent): boolean {
  const target = e.target as HTMLElement | null;
  const typing = Boolean(target?.closest?.("input, textarea, select, [contenteditable=true]"));
  const modal = Boolean(document.querySelector('.modal-backdrop, [role="dialog"], [role="alertdialog"]'));
  // Escape leaves a field of the inspector (its edit is committed on blur), or any control in it, so the canvas's
  // keys work again; the next Escape clears the selection.
  if (!modal && e.key === "Escape" && (typing || target?.closest?.(".inspector"))) {
    (target as HTMLElement).blur();
    return true;
  }
  for (const s of SHORTCUTS) {
    if (!s.matches(e)) continue;
    if (typing && !s.inFields) return false;
    if (modal && s.keys !== "Escape") return false;
    e.preventDefault();
    s.run();
    return true;
  }
  return false;
}
